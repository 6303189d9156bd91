"""Optimized writes (delta-spark's optimizeWrite): the writer option, the session conf and the
table property each give one file per partition value; counted with deltalake (delta-rs)."""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark


def _files_per_partition(path: str) -> dict[str, int]:
    """Data files per value of partition column `p`, as delta-rs lists them."""
    out: dict[str, int] = {}
    for add in pa.table(deltalake.DeltaTable(path).get_add_actions(flatten=True)).to_pylist():
        out[str(add["partition.p"])] = out.get(str(add["partition.p"]), 0) + 1
    return out


def _last_commit(path: str) -> dict:
    last = sorted((Path(path) / "_delta_log").glob("*.json"))[-1]
    return next(json.loads(line)["commitInfo"] for line in last.read_text().splitlines() if "commitInfo" in line)


def _data(spark):
    """120 rows in 4 input partitions, each holding every value of p: 12 files without optimizeWrite."""
    return spark.range(0, 120, 1, 4).selectExpr("id", "id % 3 AS p")


def test_plain_write_has_a_file_per_task_and_partition(spark, tmp_path):
    path = str(tmp_path / "plain")
    _data(spark).write.format("delta").partitionBy("p").save(path)
    assert _files_per_partition(path) == {"0": 4, "1": 4, "2": 4}


def test_optimize_write_option_writes_one_file_per_partition(spark, tmp_path):
    path = str(tmp_path / "opt")
    _data(spark).write.format("delta").partitionBy("p").option("optimizeWrite", "true").save(path)
    assert _files_per_partition(path) == {"0": 1, "1": 1, "2": 1}
    info = _last_commit(path)
    assert info["operation"] == "WRITE" and info["operationMetrics"]["numFiles"] == "3"
    assert info["operationMetrics"]["numOutputRows"] == "120"
    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 120


def test_optimize_write_session_conf_and_table_property(spark, tmp_path):
    path = str(tmp_path / "conf")
    spark.conf.set("spark.databricks.delta.optimizeWrite.enabled", "true")
    try:
        _data(spark).write.format("delta").partitionBy("p").save(path)
    finally:
        spark.conf.unset("spark.databricks.delta.optimizeWrite.enabled")
    assert _files_per_partition(path) == {"0": 1, "1": 1, "2": 1}
    prop = str(tmp_path / "prop")
    spark.sql(f"CREATE TABLE delta.`{prop}` (id BIGINT, p BIGINT) USING DELTA PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.autoOptimize.optimizeWrite' = 'true')")
    _data(spark).write.format("delta").mode("append").save(prop)
    assert _files_per_partition(prop) == {"0": 1, "1": 1, "2": 1}
    _data(spark).write.format("delta").mode("append").option("optimizeWrite", "false").save(prop)
    assert _files_per_partition(prop) == {"0": 5, "1": 5, "2": 5}  # the option wins over the property


def test_optimize_write_unpartitioned_bins_by_size(spark, tmp_path):
    path = str(tmp_path / "flat")
    spark.range(0, 1000, 1, 4).write.format("delta").option("optimizeWrite", "true").save(path)
    assert len(deltalake.DeltaTable(path).file_uris()) == 1  # far below one 512 MiB bin
    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 1000


def test_a_partition_larger_than_a_bin_is_split(spark, tmp_path):
    """delta-spark bins by size: a partition value holding several bins of data gets several files,
    a small one still gets one."""
    path = str(tmp_path / "bins")
    rows = spark.range(0, 200_000, 1, 4).selectExpr(
        "id", "CASE WHEN id < 199000 THEN 0 ELSE 1 END AS p", "sha2(CAST(id AS STRING), 256) AS payload")
    spark.conf.set("spark.databricks.delta.optimizeWrite.binSize", "2m")
    try:
        rows.write.format("delta").partitionBy("p").option("optimizeWrite", "true").save(path)
    finally:
        spark.conf.unset("spark.databricks.delta.optimizeWrite.binSize")
    files = _files_per_partition(path)
    assert files["1"] == 1 and files["0"] > 1
    sizes = [a["size_bytes"] for a in pa.table(deltalake.DeltaTable(path).get_add_actions(flatten=True)).to_pylist()]
    assert max(sizes) < 6 * 1024 * 1024  # no file far beyond the 2 MiB bins
    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 200_000


def test_without_adaptive_execution(spark, tmp_path):
    path = str(tmp_path / "no_aqe")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        _data(spark).write.format("delta").partitionBy("p").option("optimizeWrite", "true").save(path)
        spark.range(0, 1000, 1, 4).write.format("delta").option("optimizeWrite", "true").save(path + "_flat")
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    assert _files_per_partition(path) == {"0": 1, "1": 1, "2": 1}
    assert len(deltalake.DeltaTable(path + "_flat").file_uris()) == 1
