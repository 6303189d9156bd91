"""Interop with the independent `deltalake` package (delta-rs), both ways."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import pyarrow as pa
import pytest

import pydelta

pytestmark = pytest.mark.spark

ALL_TYPES = (
    "b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INT, i64 BIGINT, f32 FLOAT, f64 DOUBLE, d DECIMAL(20,4), "
    "s STRING, bin BINARY, dt DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, "
    "st STRUCT<a: INT, b: STRING>, arr ARRAY<INT>, m MAP<STRING, INT>"
)


def _all_types_df(spark):
    rows = [
        (True, 1, 2, 3, 4, 1.5, 2.5, Decimal("12.3456"), "hello", b"\x00\x01", dt.date(2020, 1, 2),
         dt.datetime(2021, 3, 4, 5, 6, 7, 123456), dt.datetime(2021, 3, 4, 5, 6, 7), (1, "x"), [1, 2], {"k": 1}),
        (False, -1, -2, -3, -4, -0.5, -2.25, Decimal("-1.0000"), "wörld", b"", dt.date(1999, 12, 31),
         dt.datetime(1970, 1, 1, 0, 0, 0), dt.datetime(2000, 1, 1), (None, None), [], {}),
        (None,) * 16,
    ]
    return spark.createDataFrame(rows, ALL_TYPES)


def _dl_table(path):
    import deltalake

    return deltalake.DeltaTable(path)


def _canon(v):
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.UTC)
    if isinstance(v, dict):
        return tuple(sorted(v.items()))
    if isinstance(v, list) and v and isinstance(v[0], tuple):
        return tuple(sorted(v))
    if isinstance(v, list):
        return tuple(v)
    if isinstance(v, bytearray):
        return bytes(v)
    return v


def _spark_rows(spark, path):
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        t = spark.read.format("delta").load(path).toArrow()
    finally:
        spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    return sorted((tuple(_canon(v) for v in r.values()) for r in t.to_pylist()), key=repr)


def _dl_rows(path, columns):
    t = _dl_table(path).to_pyarrow_table().select(columns)
    return sorted((tuple(_canon(v) for v in r.values()) for r in t.to_pylist()), key=repr)


@pytest.mark.parametrize("partition_by", [None, ["s"], ["dt", "i32"]])
def test_all_types_read_by_deltalake(spark, tmp_path, partition_by):
    path = str(tmp_path / "all")
    df = _all_types_df(spark)
    writer = df.write.format("delta")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(path)
    assert _spark_rows(spark, path) == _dl_rows(path, df.columns)
    assert _dl_table(path).version() == 0


def test_history_version_and_checkpoints_after_25_commits(spark, tmp_path):
    path = str(tmp_path / "many")
    for i in range(25):
        spark.range(i * 10, i * 10 + 10).selectExpr("id", "id % 3 AS p") \
            .write.format("delta").mode("append").partitionBy("p").save(path)
    log = os.path.join(path, "_delta_log")
    assert os.path.exists(os.path.join(log, f"{10:020d}.checkpoint.parquet"))
    assert os.path.exists(os.path.join(log, f"{20:020d}.checkpoint.parquet"))
    with open(os.path.join(log, "_last_checkpoint")) as f:
        last = json.load(f)
    assert last["version"] == 20 and "checksum" in last
    dl = _dl_table(path)
    assert dl.version() == 24
    assert dl.to_pyarrow_table().num_rows == 250
    assert len(dl.history()) == 25
    ours = pydelta.DeltaTable.forPath(spark, path).history().collect()
    assert [r.version for r in ours] == list(range(24, -1, -1))
    assert [h["operation"] for h in dl.history()] == [r.operation for r in ours]
    # deltalake must start from our checkpoint alone: delete the commits it covers
    for v in range(0, 21):
        os.unlink(os.path.join(log, f"{v:020d}.json"))
    assert _dl_table(path).to_pyarrow_table().num_rows == 250
    assert pydelta.load_snapshot(path).version == 24
    assert spark.read.format("delta").load(path).count() == 250


def test_after_overwrite(spark, tmp_path):
    path = str(tmp_path / "ow")
    spark.range(100).write.format("delta").save(path)
    spark.range(5).write.format("delta").mode("overwrite").save(path)
    assert sorted(_dl_table(path).to_pyarrow_table().column("id").to_pylist()) == list(range(5))


def test_pydelta_appends_to_deltalake_table_and_reads_its_appends(spark, tmp_path):
    import deltalake

    path = str(tmp_path / "rs")
    deltalake.write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["a", "b"]}), partition_by=["p"])
    spark.createDataFrame([(3, "a")], "id BIGINT, p STRING").write.format("delta").mode("append").save(path)
    deltalake.write_deltalake(path, pa.table({"id": pa.array([4], pa.int64()), "p": ["c"]}), mode="append")
    ours = sorted(r.id for r in spark.read.format("delta").load(path).collect())
    theirs = sorted(_dl_table(path).to_pyarrow_table().column("id").to_pylist())
    assert ours == theirs == [1, 2, 3, 4]
    assert pydelta.load_snapshot(path).version == _dl_table(path).version() == 2


def test_stats_are_exact(spark, tmp_path):
    """Per-file stats in our add actions equal min/max/null counts computed from the data."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    path = str(tmp_path / "stats")
    df = spark.range(0, 1000, numPartitions=4).selectExpr(
        "id", "CASE WHEN id % 7 = 0 THEN NULL ELSE id * 1.5 END AS x",
        "concat('name-', cast(id as string)) AS s", "timestamp_micros(id * 1000001) AS ts")
    df.write.format("delta").save(path)
    files = pydelta.load_snapshot(path).files()
    for rel, stats in zip(files.column("path").to_pylist(), files.column("stats").to_pylist(), strict=True):
        data = pq.read_table(os.path.join(path, rel))
        st = json.loads(stats)
        assert st["numRecords"] == data.num_rows
        for col in ("id", "x", "s"):
            mm = pc.min_max(data.column(col)).as_py()
            assert st["minValues"][col] == mm["min"] and st["maxValues"][col] == mm["max"], col
            assert st["nullCount"][col] == data.column(col).null_count
        mm = pc.min_max(data.column("ts")).as_py()
        assert st["minValues"]["ts"] == (mm["min"].strftime("%Y-%m-%dT%H:%M:%S.")
                                         + f"{mm['min'].microsecond // 1000:03d}Z")
