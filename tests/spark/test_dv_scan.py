"""Reads of tables where only some files have deletion vectors.

Files without one are read by a scan of their own, with no row filter; the files with one
by a second scan whose deleted rows an anti join drops. The read must still give exactly
the live rows, keep `_metadata` selectable, and skip files in both scans without reading
any row twice.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pydelta import DeltaTable, load_snapshot

pytestmark = pytest.mark.spark

ROWS, FILES = 400, 4  # ids 0-99 in the first file, 100-199 in the second, ...


@pytest.fixture(scope="module")
def half_deleted(spark, tmp_path_factory):
    """Four files; rows deleted through DVs in the first two only."""
    path = str(tmp_path_factory.mktemp("dvscan") / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.range(0, ROWS, numPartitions=1).selectExpr("id", "CAST(id AS STRING) AS v") \
        .repartitionByRange(FILES, "id").write.format("delta").mode("append").save(path)
    DeltaTable.forPath(spark, path).delete("id < 200 AND id % 7 = 0")
    return path


def _live() -> set[int]:
    return {i for i in range(ROWS) if not (i < 200 and i % 7 == 0)}


def _relations(df) -> list[str]:
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    return [line for line in plan.splitlines() if "Relation" in line and "parquet" in line]


def test_only_files_with_deletion_vectors_pay_for_the_row_filter(spark, half_deleted):
    files = load_snapshot(half_deleted).files()
    assert files.column("deletion_vector").null_count == 2  # the fixture's premise
    df = spark.read.format("delta").load(half_deleted)
    assert {r.id for r in df.collect()} == _live()
    assert df.count() == len(_live())
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("Join LeftAnti") == 1 and "Union" in plan
    assert len(_relations(df)) == 2


def test_metadata_stays_selectable(spark, half_deleted):
    df = spark.read.format("delta").load(half_deleted)
    assert "_metadata" not in df.columns
    rows = df.select("id", "_metadata.file_path", "_metadata.row_index", "_metadata.file_size").collect()
    assert {r.id for r in rows} == _live()
    by_file: dict[str, list[int]] = {}
    for r in rows:
        by_file.setdefault(r.file_path, []).append(r.row_index)
    assert len(by_file) == FILES
    gapped = [ix for ix in by_file.values() if sorted(ix) != list(range(len(ix)))]
    assert len(gapped) == 2  # the two files with deletion vectors keep their physical row indexes
    in_sql = spark.sql(f"SELECT DISTINCT _metadata.file_path FROM delta.`{half_deleted}` WHERE id % 2 = 1").collect()
    assert len(in_sql) == FILES


@pytest.mark.parametrize("condition, expected", [
    ("id >= 300", {i for i in _live() if i >= 300}),  # only a file without a DV
    ("id < 100", {i for i in _live() if i < 100}),  # only a file with one
    ("id BETWEEN 150 AND 250", {i for i in _live() if 150 <= i <= 250}),  # one of each
    ("id > 1000", set()),  # no file at all
])
def test_filters_skip_files_in_both_scans_without_reading_twice(spark, half_deleted, condition, expected):
    df = spark.read.format("delta").load(half_deleted).filter(condition)
    ids = [r.id for r in df.collect()]
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids))
    assert len(df.inputFiles()) <= FILES
    via_sql = spark.sql(f"SELECT id FROM delta.`{half_deleted}` WHERE {condition}").collect()
    assert sorted(r.id for r in via_sql) == sorted(expected)


def test_a_filtered_read_prunes_the_files(spark, half_deleted):
    read = spark.read.format("delta").load(half_deleted)
    clean_only = read.filter(F.col("id") >= 300)
    assert len(clean_only.inputFiles()) == 1 and clean_only.count() == 100
    dv_only = read.filter(F.col("id") < 100)
    assert len(dv_only.inputFiles()) == 1 and dv_only.count() == len({i for i in _live() if i < 100})
    assert dv_only.select("_metadata.file_name").distinct().count() == 1
    nothing = read.filter(F.col("id") > 1000)
    assert len(nothing.inputFiles()) == 1 and nothing.count() == 0  # one file, so `_metadata` stays
