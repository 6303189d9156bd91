"""The `_metadata` hidden column on Delta reads, as Spark's file sources have it.

Paths reported must be the table's real data files (checked against the log), row
indexes the physical positions in those files (so rows hidden by deletion vectors leave
gaps), and `_metadata` must not show up in `select("*")`.
"""

from __future__ import annotations

import os

import pytest
from pyspark.sql import functions as F

from pydelta import load_snapshot
from pydelta.spark.read import spark_file_uri
from tests.golden_paths import DELTA_SPARK

pytestmark = pytest.mark.spark

FIELDS = ["file_path", "file_name", "file_size", "file_block_start", "file_block_length",
          "file_modification_time", "row_index"]


def live_uris(path: str) -> dict[str, int]:
    snap = load_snapshot(path)
    files = snap.files()
    return {spark_file_uri(snap.absolute_path(p)): size
            for p, size in zip(files.column("path").to_pylist(), files.column("size").to_pylist())}


def check(spark, path: str) -> list:
    df = spark.read.format("delta").load(path)
    assert "_metadata" not in df.columns and "_metadata" not in df.select("*").columns
    rows = df.select(*[F.col(f"_metadata.{f}").alias(f) for f in FIELDS], F.input_file_name().alias("ifn")).collect()
    files = live_uris(path)
    assert rows and {r.file_path for r in rows} == set(files)
    for r in rows:
        assert r.file_name == os.path.basename(r.file_path.split(":", 1)[1])
        assert r.file_size == files[r.file_path]
        assert r.ifn.replace("file:///", "file:/") == r.file_path  # Spark's own two spellings of a URI
    return rows


def test_partitioned_table(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(20).selectExpr("id", "id % 3 AS p").write.format("delta").partitionBy("p").save(path)
    rows = check(spark, path)
    assert len(rows) == 20
    with_values = spark.read.format("delta").load(path).select("id", "p", "_metadata.file_path").collect()
    assert all(f"/p={r.p}/" in r.file_path for r in with_values)


def test_deletion_vectors_keep_physical_row_indexes(spark):
    path = str(DELTA_SPARK / "dv-partitioned-with-checkpoint" / "delta")
    rows = check(spark, path)
    total = spark.read.format("delta").load(path).count()
    assert len(rows) == total
    # some rows were deleted through DVs: the surviving row indexes are not all dense 0..n-1
    by_file: dict[str, list[int]] = {}
    for r in rows:
        by_file.setdefault(r.file_path, []).append(r.row_index)
    assert any(sorted(ix) != list(range(len(ix))) for ix in by_file.values())


def test_column_mapping_and_after_filters(spark):
    path = str(DELTA_SPARK / "table-with-columnmapping-mode-name" / "delta")
    check(spark, path)
    df = spark.read.format("delta").load(path)
    first = df.columns[0]
    filtered = df.filter(F.col(first).isNotNull()).select("_metadata.file_path")
    assert {r[0] for r in filtered.collect()} <= set(live_uris(path))


def test_zorder_on_a_partitioned_table_then_metadata(spark, tmp_path):
    from pydelta import DeltaTable

    path = str(tmp_path / "z")
    spark.range(40).selectExpr("id", "id % 2 AS p", "id * 7 % 13 AS v").repartition(4).write.format(
        "delta").partitionBy("p").save(path)
    DeltaTable.forPath(spark, path).optimize().executeZOrderBy("v")
    check(spark, path)
