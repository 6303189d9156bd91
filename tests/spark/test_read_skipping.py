"""Filtered reads open fewer files: partition pruning and min/max/nullCount skipping."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def skipping_table(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("skip") / "t")
    # 8 partitions x 4 files; `id` ranges are disjoint per file so stats separate them.
    df = spark.range(0, 3200, numPartitions=32).selectExpr(
        "id", "cast(id div 400 as int) as part", "case when id % 100 = 0 then null else id * 2 end as v"
    )
    df.repartitionByRange(32, "id").sortWithinPartitions("id").write.format("delta").partitionBy("part").save(path)
    return path


def _files_read(df) -> int:
    return len(df.inputFiles())


def test_full_scan_reads_all_files(spark, skipping_table):
    df = spark.read.format("delta").load(skipping_table)
    assert df.count() == 3200
    assert _files_read(df) >= 8


def test_partition_pruning_reduces_files(spark, skipping_table):
    df = spark.read.format("delta").load(skipping_table)
    total = _files_read(df)
    one = df.where("part = 3")
    assert _files_read(one) < total
    assert sorted(r.id for r in one.select("id").collect()) == list(range(1200, 1600))


def test_min_max_skipping_reduces_files(spark, skipping_table):
    df = spark.read.format("delta").load(skipping_table)
    total = _files_read(df)
    from pyspark.sql import functions as F

    few = df.filter(F.col("id") < 50)
    assert _files_read(few) < total
    assert sorted(r.id for r in few.select("id").collect()) == list(range(50))
    between = df.where("id >= 1000 AND id <= 1010")
    assert _files_read(between) <= 2
    assert between.count() == 11


def test_null_count_skipping(spark, skipping_table):
    df = spark.read.format("delta").load(skipping_table)
    nulls = df.where("v IS NULL")
    assert sorted(r.id for r in nulls.select("id").collect()) == list(range(0, 3200, 100))


def test_skipping_never_drops_rows_for_or_and_not(spark, skipping_table):
    df = spark.read.format("delta").load(skipping_table)
    plain = spark.read.parquet(*df.inputFiles())  # no pruning at all (no partition column)
    for cond in ["id < 10 OR id > 3190", "NOT (id < 3000)", "id IN (5, 2500, 9999)", "v = 4 OR part = 7", "id != 5"]:
        got = sorted(r.id for r in df.where(cond).select("id").collect())
        if "part" in cond:
            continue
        want = sorted(r.id for r in plain.where(cond).select("id").collect())
        assert got == want, cond


def test_chained_filters_prune_further(spark, skipping_table):
    df = spark.read.format("delta").load(skipping_table)
    one = df.where("part = 1")
    two = one.where("id < 420")
    assert _files_read(two) <= _files_read(one)
    assert sorted(r.id for r in two.select("id").collect()) == list(range(400, 420))
