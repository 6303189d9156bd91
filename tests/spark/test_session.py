"""Session set-up: a clear error without Java, idempotent enable, builder configuration."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def test_missing_java_is_a_clear_error():
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = os.path.dirname(sys.executable)  # python only, no java
    code = "from pydelta.spark.base.jvm import check_java; check_java()"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert "JavaNotFoundError" in out.stderr and "Java 17" in out.stderr


@pytest.mark.spark
def test_enable_is_idempotent(spark, tmp_path):
    import pydelta

    assert pydelta.enable(spark) is spark
    assert pydelta.enable(spark) is spark
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    assert spark.read.format("delta").load(path).count() == 3
    # other formats are untouched by the hooks
    spark.range(2).write.format("parquet").save(str(tmp_path / "p"))
    assert spark.read.format("parquet").load(str(tmp_path / "p")).count() == 2


@pytest.mark.spark
def test_configure_spark_adds_settings():
    from pyspark.sql import SparkSession

    import pydelta

    builder = pydelta.configure_spark(SparkSession.builder)
    assert builder._options.get("spark.sql.parquet.fieldId.read.enabled") == "true"


@pytest.mark.spark
def test_is_delta_table(spark, tmp_path):
    from pydelta import DeltaTable
    from tests.conftest import GOLDEN

    assert DeltaTable.isDeltaTable(spark, str(GOLDEN / "delta-spark" / "checkpoint" / "delta"))
    assert not DeltaTable.isDeltaTable(spark, str(tmp_path))
    # a table pydelta cannot read is still a Delta table
    assert DeltaTable.isDeltaTable(spark, str(GOLDEN / "delta-rs" / "simple_table_features"))
