"""df.writeTo(name): DataFrameWriterV2 on Delta tables, as delta-spark serves it."""

from __future__ import annotations

import pytest

import pydelta
from pydelta import errors
from pydelta.spark.base import catalog

pytestmark = pytest.mark.spark


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def test_create_append_overwrite_replace(spark):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(1, "a", 10), (2, "b", 20)], "id INT, p STRING, v INT")
    try:
        df.writeTo("v2_t").using("delta").partitionedBy(F.col("p")).tableProperty("delta.appendOnly", "false").create()
        path = catalog.table_location(spark, "v2_t")
        snap = pydelta.load_snapshot(path)
        assert snap.partition_columns == ["p"] and snap.configuration == {"delta.appendOnly": "false"}
        with pytest.raises(errors.TableAlreadyExistsError):
            df.writeTo("v2_t").using("delta").create()
        spark.createDataFrame([(3, "c", 30)], df.schema).writeTo("v2_t").append()
        spark.createDataFrame([(4, "a", 40)], df.schema).writeTo("v2_t").overwrite(F.col("p") == "a")
        assert _rows(spark.table("v2_t")) == [(2, "b", 20), (3, "c", 30), (4, "a", 40)]
        spark.createDataFrame([(5, "b", 50)], df.schema).writeTo("v2_t").overwritePartitions()
        assert _rows(spark.table("v2_t")) == [(3, "c", 30), (4, "a", 40), (5, "b", 50)]
        spark.createDataFrame([("x",)], "s STRING").writeTo("v2_t").using("delta").createOrReplace()
        assert _rows(spark.table("v2_t")) == [("x",)]
        ops = [r.operation for r in spark.sql("DESCRIBE HISTORY v2_t").collect()]
        assert ops == ["CREATE OR REPLACE TABLE AS SELECT", "WRITE", "WRITE", "WRITE", "CREATE TABLE AS SELECT"]
        with pytest.raises(errors.DeltaAnalysisError):
            df.writeTo("v2_missing").using("delta").replace()
        with pytest.raises(errors.DeltaTableNotFoundError):
            df.writeTo("v2_missing").using("delta").append()
    finally:
        spark.sql("DROP TABLE IF EXISTS v2_t")


def test_non_delta_v2_writes_stay_sparks(spark):
    try:
        spark.range(2).writeTo("v2_parquet").using("parquet").create()
        assert catalog.lookup(spark, "v2_parquet").provider == "parquet"
        assert spark.table("v2_parquet").count() == 2
    finally:
        spark.sql("DROP TABLE IF EXISTS v2_parquet")
