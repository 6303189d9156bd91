"""Sessions and builders set up for delta-spark, taken over (pydelta.spark.migration).

tests/migration/ runs whole delta-spark programs in their own processes; these check the two
take-overs on the test session and on a builder: what changes, what stays, one warning each."""

from __future__ import annotations

import warnings

import pytest

import pydelta
from pydelta.errors import DeltaSparkConfWarning
from pydelta.spark.migration import (
    DELTA_SPARK_CATALOG,
    DELTA_SPARK_EXTENSION,
    EXTENSIONS_KEY,
    PACKAGES_KEY,
    SESSION_CATALOG_KEY,
    strip_builder,
)

pytestmark = pytest.mark.spark


def test_enable_takes_over_a_session_catalog_set_for_delta_spark(spark, tmp_path):
    spark.conf.set(SESSION_CATALOG_KEY, DELTA_SPARK_CATALOG)
    try:
        with pytest.raises(Exception, match="CANNOT_LOAD_CATALOG"):
            spark.sql("SHOW TABLES").collect()
        with pytest.warns(DeltaSparkConfWarning) as caught:
            pydelta.enable(spark)
    finally:
        if spark.conf.get(SESSION_CATALOG_KEY, None) == DELTA_SPARK_CATALOG:
            spark.conf.unset(SESSION_CATALOG_KEY)
    assert len([w for w in caught if issubclass(w.category, DeltaSparkConfWarning)]) == 1
    assert SESSION_CATALOG_KEY in str(caught[0].message)
    assert spark.conf.get(SESSION_CATALOG_KEY, None) is None
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT) USING delta")
    assert spark.sql(f"SELECT count(*) FROM delta.`{path}`").first()[0] == 0
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        pydelta.enable(spark)
    assert not [w for w in again if issubclass(w.category, DeltaSparkConfWarning)]


def test_configure_spark_with_delta_pip_strips_delta_sparks_settings_only():
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    keys = (EXTENSIONS_KEY, SESSION_CATALOG_KEY, PACKAGES_KEY)
    saved = {k: builder._options.get(k) for k in keys}
    try:
        builder.config(EXTENSIONS_KEY, f"com.example.Other,{DELTA_SPARK_EXTENSION}")
        builder.config(SESSION_CATALOG_KEY, DELTA_SPARK_CATALOG)
        builder.config(PACKAGES_KEY, "io.delta:delta-spark_2.13:4.0.0,org.example:kept:1.0")
        with pytest.warns(DeltaSparkConfWarning, match="removed io.delta:delta-spark_2.13:4.0.0|delta-spark's jars"):
            notes = strip_builder(builder, ["org.apache.hadoop:hadoop-aws:3.4.1"])
        assert len(notes) == 3
        assert builder._options[EXTENSIONS_KEY] == "com.example.Other"
        assert SESSION_CATALOG_KEY not in builder._options
        assert builder._options[PACKAGES_KEY] == "org.example:kept:1.0,org.apache.hadoop:hadoop-aws:3.4.1"
        with warnings.catch_warnings(record=True) as again:  # nothing of delta-spark's left: no warning
            warnings.simplefilter("always")
            assert strip_builder(builder) == []
        assert not [w for w in again if issubclass(w.category, DeltaSparkConfWarning)]
    finally:
        for key, value in saved.items():
            if value is None:
                builder._options.pop(key, None)
            else:
                builder._options[key] = value


def test_configure_spark_returns_a_builder_whose_session_is_enabled(spark):
    from pyspark.sql import SparkSession

    builder = pydelta.configure_spark(SparkSession.builder)
    assert builder.getOrCreate() is spark  # the running session, enabled (idempotent)
    assert getattr(builder.getOrCreate, "_pydelta_enables", False)
