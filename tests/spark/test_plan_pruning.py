"""Min/max data skipping wherever a Delta scan sits in a plan (spark/read/plan_pruning.py).

The table has 10 files holding contiguous `id` ranges (0-99, 100-199, ...), so a filter
on `id` can skip files by their stats. Each test counts the data files the executed
Parquet scans read, and checks the rows against the same query over plain Parquet.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from tests.spark.test_partition_pruning import files_read

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("stats_prune") / "t")
    (spark.range(0, 1000, numPartitions=10)
     .selectExpr("id", "id * 2 AS v",
                 "CASE WHEN id % 100 = 0 THEN NULL ELSE CONCAT('k', LPAD(CAST(id AS STRING), 4, '0')) END AS name",
                 "CASE WHEN id >= 900 THEN NULL ELSE id END AS maybe")
     .write.format("delta").save(path))
    return path


def delta(spark, path):
    return spark.read.format("delta").load(path)


def plain(spark, path):
    """The same rows without pydelta's pruning: all of the table's Parquet files."""
    return delta(spark, path).toDF(*delta(spark, path).columns)


def test_the_table_has_ten_files_with_disjoint_ranges(spark, table):
    rows, n = files_read(delta(spark, table))
    assert len(rows) == 1000 and n == 10


def test_filter_after_select_and_with_column(spark, table):
    df = delta(spark, table).select("id", "v").withColumn("w", F.col("v") + 1).filter(F.col("id") < 150)
    rows, n = files_read(df)
    assert n == 2 and sorted(r.id for r in rows) == list(range(150))


def test_filter_on_a_renamed_column(spark, table):
    df = delta(spark, table).withColumnRenamed("id", "key").where("key >= 950")
    rows, n = files_read(df)
    assert n == 1 and len(rows) == 50


def test_both_sides_of_a_join(spark, table):
    left = delta(spark, table).select("id", "v")
    right = delta(spark, table).select(F.col("id").alias("rid"), F.col("name"))
    joined = left.join(right, (left.id == right.rid) & (left.id < 100) & (right.rid < 250))
    rows, n = files_read(joined)
    assert len(rows) == 100
    assert n == 2  # one file on each side


def test_filter_after_a_join_with_a_small_table(spark, table):
    dim = spark.createDataFrame([(i, f"d{i}") for i in range(10)], "k long, label string")
    joined = dim.join(delta(spark, table), dim.k == F.col("id")).filter(F.col("v") >= 1900)
    rows, n = files_read(joined)
    assert rows == [] and n == 1


def test_in_lists_short_and_long(spark, table):
    rows, n = files_read(delta(spark, table).select("id").filter(F.col("id").isin(5, 305)))
    assert sorted(r.id for r in rows) == [5, 305] and n == 2
    many = [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 930]
    rows, n = files_read(delta(spark, table).select("id").filter(F.col("id").isin(*many)))  # becomes InSet
    assert sorted(r.id for r in rows) == many and n == 2


def test_like_prefix_and_is_null(spark, table):
    rows, n = files_read(delta(spark, table).select("id", "name").filter(F.col("name").like("k04%")))
    assert len(rows) == 99 and n == 1  # k0400 is null (id % 100 == 0)
    rows, n = files_read(delta(spark, table).select("id", "maybe").filter(F.col("maybe").isNull()))
    assert len(rows) == 100 and n == 1
    rows, n = files_read(delta(spark, table).select("id", "maybe")
                         .filter(F.col("maybe").isNotNull() & (F.col("id") > 850)))
    assert len(rows) == 49 and n == 1


def test_casts_of_literals(spark, table):
    rows, n = files_read(delta(spark, table).select("id").filter(F.col("id") < F.lit("120").cast("int")))
    assert len(rows) == 120 and n == 2


def test_sql_over_a_temp_view_of_a_delta_read(spark, table):
    delta(spark, table).select("id", "v").createOrReplaceTempView("pruned_view")
    try:
        rows, n = files_read(spark.sql("SELECT count(*) AS c FROM pruned_view WHERE id BETWEEN 420 AND 440"))
        assert rows[0].c == 21 and n == 1
    finally:
        spark.catalog.dropTempView("pruned_view")


def test_no_file_can_match(spark, table):
    df = delta(spark, table).select("id").filter(F.col("id") > 5000)
    rows, n = files_read(df)
    assert rows == [] and n == 0
    assert df.count() == 0


def test_cached_plans_keep_their_scans(spark, table):
    cached = delta(spark, table).select("id", "v").cache()
    try:
        assert cached.count() == 1000
        rows, _ = files_read(cached.filter(F.col("id") < 10))
        assert len(rows) == 10
        assert "InMemoryTableScan" in cached.filter(F.col("id") < 10)._jdf.queryExecution().executedPlan().toString()
    finally:
        cached.unpersist()


def test_results_equal_an_unpruned_read(spark, table):
    """Same rows with and without pruning for a mix of shapes."""
    full = spark.read.parquet(*delta(spark, table).inputFiles())
    cases = [
        lambda d: d.select("id", "name").filter((F.col("id") < 120) | (F.col("id") > 980)),
        lambda d: d.filter(~(F.col("id") >= 30)).select("id"),
        lambda d: d.filter(F.col("name") >= "k0990"),
        lambda d: d.filter(F.col("maybe").isNull() | (F.col("id") == 7)),
    ]
    for make in cases:
        ours = sorted(tuple(r) for r in make(delta(spark, table)).collect())
        theirs = sorted(tuple(r) for r in make(full).collect())
        assert ours == theirs


def test_column_mapped_tables_prune_by_logical_names(spark, tmp_path):
    path = str(tmp_path / "cm")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v BIGINT) USING delta "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.range(0, 400, numPartitions=4).selectExpr("id", "id * 3 AS v").write.format("delta").mode("append").save(path)
    df = delta(spark, path).select(F.col("v").alias("x"), "id").filter(F.col("x") < 30)
    rows, n = files_read(df)
    assert sorted(r.id for r in rows) == list(range(10)) and n == 1


@pytest.mark.parametrize("layout", ["plain", "partitioned", "partitioned_column_mapping", "deletion_vectors"])
def test_filter_on_the_read_keeps_column_references_valid(spark, tmp_path, layout):
    """`df.filter(df.id ...)` prunes files yet `df.id` / `df.v` still resolve afterwards."""
    path = str(tmp_path / layout)
    data = spark.range(0, 400, numPartitions=4).selectExpr("id", "id * 2 AS v", "CAST(id DIV 100 AS INT) AS p")
    writer = data.write.format("delta")
    if layout.startswith("partitioned"):
        writer = writer.partitionBy("p")
    if layout == "partitioned_column_mapping":
        writer = writer.option("delta.columnMapping.mode", "name")
    if layout == "deletion_vectors":
        writer = writer.option("delta.enableDeletionVectors", "true")
    writer.save(path)
    if layout == "deletion_vectors":
        from pydelta import DeltaTable

        DeltaTable.forPath(spark, path).delete("id % 7 = 0")
    df = delta(spark, path)
    query = df.filter(df.p == 3).filter(df.id >= 350).withColumn("w", df.v + 1).select(df.id, "w")
    rows, n = files_read(query)
    expected = sorted((i, 2 * i + 1) for i in range(350, 400) if layout != "deletion_vectors" or i % 7)
    assert sorted((r.id, r.w) for r in rows) == expected
    assert n == 1
    assert df.filter(df.id > 10_000).select(df.v).collect() == []
