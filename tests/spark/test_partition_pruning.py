"""Partition pruning wherever a Delta scan sits in a Spark plan (not only on a direct filter).

Each test runs a query shape and counts the data files Spark's scans actually read
(the `numFiles` metric of the executed file scans), against the table's layout:
4 values of `p` x 3 of `s` = 12 partitions, one file each.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

pytestmark = pytest.mark.spark


def _scans(plan, out):
    name = plan.getClass().getSimpleName()
    if name == "AdaptiveSparkPlanExec":
        return _scans(plan.executedPlan(), out)
    if name.endswith("QueryStageExec"):
        return _scans(plan.plan(), out)
    if name == "FileSourceScanExec":
        out.append(plan)
    children = plan.children()
    for i in range(children.size()):
        _scans(children.apply(i), out)
    subqueries = plan.subqueries()
    for i in range(subqueries.size()):
        _scans(subqueries.apply(i), out)
    return out


def files_read(df, root: str | None = None) -> tuple[list, int]:
    """(rows, data files read by the query's Parquet scans; only scans of the table at `root` when given)."""
    rows = df.collect()
    scans = _scans(df._jdf.queryExecution().executedPlan(), [])
    total = 0
    for scan in scans:
        if root is not None and root not in str(scan.relation().location().rootPaths().head()):
            continue
        metric = scan.metrics().get("numFiles")
        if metric.isDefined():
            total += int(metric.get().value())
    return rows, total


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("prune") / "t")
    (spark.range(1200).selectExpr("id", "id % 4 AS p", "CAST(id % 3 AS STRING) AS s", "id * 2 AS v")
     .repartition(1).write.format("delta").partitionBy("p", "s").save(path))
    return path


def delta(spark, path):
    return spark.read.format("delta").load(path)


def test_direct_filter_and_after_select(spark, table):
    rows, n = files_read(delta(spark, table).where("p = 1"))
    assert len(rows) == 300 and n == 3
    rows, n = files_read(delta(spark, table).select("id", "p").where("p = 1"))
    assert len(rows) == 300 and n == 3
    rows, n = files_read(delta(spark, table).withColumn("w", F.col("v") + 1).where("p = 2 AND s = '1'"))
    assert len(rows) == 100 and n == 1


def test_in_lists_is_null_and_literal_casts(spark, table):
    rows, n = files_read(delta(spark, table).where("p IN (1, 3)"))
    assert len(rows) == 600 and n == 6
    rows, n = files_read(delta(spark, table).where("s IS NULL"))
    assert rows == [] and n == 0
    rows, n = files_read(delta(spark, table).where("p = CAST('2' AS INT)"))
    assert len(rows) == 300 and n == 3
    rows, n = files_read(delta(spark, table).where("s LIKE '1%'"))
    assert len(rows) == 400 and n == 4


def test_both_sides_of_a_join(spark, table):
    left = delta(spark, table).where("p = 0").alias("a")
    right = delta(spark, table).where("p = 1 AND s = '2'").alias("b")
    joined = left.join(right, left.v + 2 == right.v).select("a.id", "b.id")
    rows, n = files_read(joined)
    assert n == 3 + 1 and len(rows) > 0


def test_sql_query_by_path(spark, table):
    rows, n = files_read(spark.sql(f"SELECT count(*) FROM (SELECT id, p FROM delta.`{table}`) x WHERE p = 3"))
    assert rows[0][0] == 300 and n == 3


def test_dynamic_partition_pruning_from_a_small_dimension(spark, table, tmp_path):
    dim_path = str(tmp_path / "dim")
    spark.createDataFrame([(0, "zero"), (1, "one"), (2, "two"), (3, "three")], "p long, name string") \
        .write.format("delta").save(dim_path)
    fact = delta(spark, table)
    dim = delta(spark, dim_path).where("name = 'two'")
    query = fact.join(dim, "p").select("id", "name")
    rows, n = files_read(query, table)
    assert len(rows) == 300
    assert n == 3  # the fact side reads only p=2 (3 of 12 files)
    assert "dynamicpruning" in query._jdf.queryExecution().executedPlan().toString().lower()


def test_pruned_answers_equal_unpruned(spark, table):
    full = {r.id for r in delta(spark, table).collect() if r.p in (1, 3) and r.s != "0"}
    got = {r.id for r in delta(spark, table).select("id", "p", "s").where("p IN (1, 3) AND s <> '0'").collect()}
    assert got == full
