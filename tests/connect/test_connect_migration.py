"""A Connect session set up for delta-spark (its catalog in the session conf) taken over by pydelta.enable."""

from __future__ import annotations

import warnings

import pytest

import pydelta
from pydelta.errors import DeltaSparkConfWarning
from pydelta.spark.migration import DELTA_SPARK_CATALOG, SESSION_CATALOG_KEY

pytestmark = pytest.mark.spark


def test_enable_unsets_delta_sparks_catalog_over_connect(spark, tmp_path):
    spark.conf.set(SESSION_CATALOG_KEY, DELTA_SPARK_CATALOG)
    try:
        with pytest.raises(Exception, match=r"CANNOT_LOAD_CATALOG|ClassNotFound|DeltaCatalog"):
            spark.sql("SHOW TABLES").collect()  # what a delta-spark program meets without the jars
        with pytest.warns(DeltaSparkConfWarning, match="unset spark.sql.catalog.spark_catalog"):
            pydelta.enable(spark)
    finally:
        if spark.conf.get(SESSION_CATALOG_KEY, None) == DELTA_SPARK_CATALOG:
            spark.conf.unset(SESSION_CATALOG_KEY)
    assert spark.conf.get(SESSION_CATALOG_KEY, None) is None
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1), (2)")
    assert spark.sql(f"SELECT count(*) AS n FROM delta.`{path}`").first().n == 2
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        pydelta.enable(spark)  # taken over once: nothing left to say
    assert not [w for w in records if issubclass(w.category, DeltaSparkConfWarning)]
