"""pydelta over Spark Connect: a real Connect server (pyspark's own, no jar, no setting of
pydelta's), a client session with pydelta enabled. Reads, writes, skipping, time travel, the
DeltaTable API and Delta's own SQL statements; deltalake (delta-rs) checks what the Connect
client committed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.errors import PySparkAttributeError
from pyspark.sql import functions as F

from pydelta import DeltaTable
from pydelta.errors import DeltaAnalysisError, DeltaNotImplementedError

pytestmark = pytest.mark.spark


def _rows(df, *cols):
    return sorted(tuple(r) for r in df.select(*cols).collect())


def _commit(path, version) -> list[dict]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _deltalake_rows(path, *cols):
    from deltalake import DeltaTable as RsTable

    table = RsTable(str(path)).to_pyarrow_table(columns=list(cols))
    return sorted(zip(*(table.column(c).to_pylist() for c in cols), strict=True))


def test_the_session_is_connect(spark):
    assert type(spark).__module__.startswith("pyspark.sql.connect")
    with pytest.raises(PySparkAttributeError, match="JVM_ATTRIBUTE_NOT_SUPPORTED"):
        _ = spark._jsparkSession  # no JVM on this side


def test_write_read_partitioned_and_time_travel(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.range(0, 60, 1, 3).selectExpr("id", "id % 3 AS p", "CAST(id AS STRING) AS s")
    df.write.format("delta").partitionBy("p").save(path)                                     # v0
    df.filter("id < 10").write.format("delta").mode("append").save(path)                     # v1
    t = spark.read.format("delta").load(path)
    assert t.count() == 70
    assert t.columns == ["id", "p", "s"]
    meta = next(a["metaData"] for a in _commit(path, 0) if "metaData" in a)
    assert meta["partitionColumns"] == ["p"]
    adds = [a["add"] for a in _commit(path, 1) if "add" in a]
    assert adds and all(json.loads(a["stats"])["numRecords"] > 0 for a in adds)
    assert spark.read.format("delta").option("versionAsOf", 0).load(path).count() == 60
    with pytest.raises(Exception, match=r"DELTA_PATH_EXISTS|already exists"):
        df.write.format("delta").save(path)
    df.limit(5).write.format("delta").mode("overwrite").save(path)                           # v2
    assert spark.read.format("delta").load(path).count() == 5
    assert _deltalake_rows(path, "id", "p") == _rows(spark.read.format("delta").load(path), "id", "p")
    assert _deltalake_rows(path, "id")[:3] == [(0,), (1,), (2,)]


def test_filters_skip_files_and_keep_the_answer(spark, tmp_path):
    path = str(tmp_path / "skip")
    # Ten files, each holding one decade of ids.
    spark.range(0, 100, 1, 10).selectExpr("id", "CAST(id AS STRING) AS s") \
        .write.format("delta").save(path)
    t = spark.read.format("delta").load(path)
    assert t._pydelta_files.num_rows == 10
    by_column = t.filter(t.id < 20)
    assert by_column._pydelta_files.num_rows == 2
    assert _rows(by_column, "id") == [(i,) for i in range(20)]
    by_text = t.filter("id >= 95 OR id IN (3, 4)")
    assert by_text._pydelta_files.num_rows == 2
    assert _rows(by_text, "id") == [(3,), (4,), (95,), (96,), (97,), (98,), (99,)]
    # Chained filters, with column references taken from the earlier DataFrames.
    chained = by_column.filter(by_column.id >= 15).where(F.col("s") != "17")
    assert chained._pydelta_files.num_rows == 1
    assert _rows(chained, "id") == [(15,), (16,), (18,), (19,)]
    nothing = t.filter(t.id > 1000)
    assert nothing.count() == 0 and nothing.columns == ["id", "s"]
    # What pydelta cannot translate never skips: a string column compared with a number.
    cast_compare = t.filter("s < 5")
    assert cast_compare._pydelta_files.num_rows == 10
    plain = spark.range(0, 100).selectExpr("CAST(id AS STRING) AS s").filter("s < 5")
    assert cast_compare.count() == plain.count() > 0
    assert t.filter(F.length("s") == 1)._pydelta_files.num_rows == 10


def test_delta_table_dml_and_history(spark, tmp_path):
    path = str(tmp_path / "dml")
    spark.range(0, 10).selectExpr("id", "id * 10 AS v").write.format("delta").save(path)    # v0
    table = DeltaTable.forPath(spark, path)
    table.delete("id = 1")                                                                     # v1
    table.update(F.col("id") == 2, {"v": F.lit(-1)})                                          # v2
    source = spark.range(8, 12).selectExpr("id", "id * 100 AS v")
    (table.alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())                              # v3
    expected = [(0, 0), (2, -1)] + [(i, i * 10) for i in range(3, 8)] + [(i, i * 100) for i in range(8, 12)]
    assert _rows(table.toDF(), "id", "v") == expected
    assert _deltalake_rows(path, "id", "v") == expected
    ops = [(r.version, r.operation) for r in table.history().select("version", "operation").collect()]
    assert ops == [(3, "MERGE"), (2, "UPDATE"), (1, "DELETE"), (0, "WRITE")]
    assert table.detail().select("numFiles").collect()[0][0] >= 1
    table.restoreToVersion(0)                                                                  # v4
    assert _rows(spark.read.format("delta").load(path), "id", "v") == [(i, i * 10) for i in range(10)]


def test_optimize_and_vacuum(spark, tmp_path):
    path = str(tmp_path / "opt")
    spark.range(0, 40, 1, 8).write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)
    metrics = table.optimize().executeCompaction().collect()[0]["metrics"]
    assert metrics["numFilesRemoved"] == 8 and metrics["numFilesAdded"] == 1
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    table.vacuum(0)
    parquet = [p for p in Path(path).glob("*.parquet")]
    assert len(parquet) == 1
    assert spark.read.format("delta").load(path).count() == 40


def test_optimize_where_a_partition_predicate(spark, tmp_path):
    """The client has no SQL parser: the server's analysis decides that the predicate names only
    partition columns, the client's own translation gives the commit its read predicate."""
    path = str(tmp_path / "opt_where")
    spark.range(0, 40, 1, 8).selectExpr("id", "CAST(id % 2 AS STRING) AS p").write.format("delta") \
        .partitionBy("p").save(path)
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(DeltaAnalysisError, match="must reference only the partition columns"):
        table.optimize().where("id = 1").executeCompaction()
    assert table.history().count() == 1
    metrics = table.optimize().where("p = '1'").executeCompaction().collect()[0]["metrics"]
    assert metrics["numFilesAdded"] == 1 and metrics["numFilesRemoved"] == 8
    files = {a["add"]["partitionValues"]["p"] for a in _commit(path, 1) if "add" in a}
    assert files == {"1"}
    (info,) = [a["commitInfo"] for a in _commit(path, 1) if "commitInfo" in a]
    assert info["operation"] == "OPTIMIZE" and json.loads(info["operationParameters"]["predicate"]) == ["p = '1'"]
    assert _rows(spark.read.format("delta").load(path), "id") == [(i,) for i in range(40)]


def test_change_data_feed(spark, tmp_path):
    path = str(tmp_path / "cdf")
    spark.range(0, 4).selectExpr("id", "'a' AS v").write.format("delta") \
        .option("delta.enableChangeDataFeed", "true").save(path)                              # v0
    DeltaTable.forPath(spark, path).update("id = 1", {"v": "'b'"})                            # v1
    changes = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1)
               .load(path))
    assert _rows(changes, "id", "v", "_change_type", "_commit_version") == [
        (1, "a", "update_preimage", 1), (1, "b", "update_postimage", 1)]


def test_delta_sql_statements(spark, tmp_path):
    path = str(tmp_path / "sql")
    spark.range(0, 10).selectExpr("id", "id % 2 AS even").write.format("delta").save(path)
    spark.range(10, 12).selectExpr("id", "id % 2 AS even").write.format("delta").mode("append").save(path)
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`")
    assert [r.version for r in history.select("version").collect()] == [1, 0]
    assert spark.sql(f"DESCRIBE DETAIL delta.`{path}`").select("format").collect()[0][0] == "delta"
    joined = spark.sql(f"SELECT count(*) AS n FROM delta.`{path}` a JOIN delta.`{path}` VERSION AS OF 0 b "
                       "ON a.id = b.id WHERE a.even = 0")
    assert joined.collect()[0].n == 5
    assert spark.sql(f"SELECT max(id) AS m FROM delta.`{path}` VERSION AS OF 0").collect()[0].m == 9
    assert spark.sql("SELECT 1 AS one").collect()[0].one == 1  # no Delta table: Spark's, untouched
    assert spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1").collect()[0].num_affected_rows == 1
    assert spark.read.format("delta").load(path).count() == 11


def test_catalog_tables(spark, tmp_path):
    spark.range(0, 5).selectExpr("id", "'x' AS v").write.format("delta").saveAsTable("connect_names")
    try:
        assert spark.read.table("connect_names").count() == 5
        assert spark.table("connect_names").columns == ["id", "v"]
        spark.range(5, 7).selectExpr("id", "'y' AS v").write.format("delta").mode("append") \
            .saveAsTable("connect_names")
        assert _rows(spark.table("connect_names"), "id") == [(i,) for i in range(7)]
        table = DeltaTable.forName(spark, "connect_names")
        table.delete("id < 2")
        assert table.toDF().count() == 5
        assert table.history().collect()[0].operation == "DELETE"
        assert spark.table("connect_names").filter("id = 6").collect()[0].v == "y"
        # Queries read Delta tables by name too (CTE names shadow tables).
        by_name = spark.sql("WITH connect_names AS (SELECT 1 AS id) SELECT count(*) AS n FROM connect_names")
        assert by_name.collect()[0].n == 1
        joined = spark.sql("SELECT count(*) AS n FROM connect_names a JOIN connect_names VERSION AS OF 0 b "
                           "ON a.id = b.id")
        assert joined.collect()[0].n == 3  # ids 2, 3, 4 were there at version 0 and still are
        # Delta SQL on catalog names (the grammar's statements; tests/connect/test_connect_sql.py has more).
        spark.sql("INSERT INTO connect_names VALUES (9, 'z')")
        spark.sql("DELETE FROM connect_names WHERE id = 2")
        spark.sql("CREATE TABLE connect_other (id INT) USING delta")
        assert _rows(spark.table("connect_names"), "id", "v") == [(3, "x"), (4, "x"), (5, "y"), (6, "y"), (9, "z")]
        assert spark.catalog.tableExists("connect_other")
        spark.range(1).selectExpr("id", "'w' AS v").writeTo("connect_names").append()
        assert table.toDF().count() == 6 and table.history().collect()[0].operation == "WRITE"
    finally:
        spark.sql("DROP TABLE IF EXISTS connect_names")
        spark.sql("DROP TABLE IF EXISTS connect_other")


def test_write_to(spark):
    try:
        df = spark.range(0, 6).selectExpr("id", "id % 3 AS p")
        df.writeTo("connect_v2").using("delta").partitionedBy(F.col("p")).tableProperty("team", "core").create()
        location = spark.sql("DESCRIBE DETAIL connect_v2").collect()[0].location
        from deltalake import DeltaTable as RsTable

        meta = RsTable(location).metadata()
        assert meta.partition_columns == ["p"] and meta.configuration["team"] == "core"
        spark.range(6, 8).selectExpr("id", "id % 3 AS p").writeTo("connect_v2").append()
        spark.range(100, 101).selectExpr("id", "0 AS p").writeTo("connect_v2").overwrite(F.expr("p = 0"))
        assert _rows(spark.table("connect_v2"), "id") == [(1,), (2,), (4,), (5,), (7,), (100,)]
        spark.range(200, 201).selectExpr("id", "1 AS p").writeTo("connect_v2").overwritePartitions()
        assert _rows(spark.table("connect_v2"), "id") == [(2,), (5,), (100,), (200,)]
        with pytest.raises(DeltaNotImplementedError, match="SQL string"):
            spark.range(1).selectExpr("id", "0 AS p").writeTo("connect_v2").overwrite(F.col("p") == 0)
        spark.range(3).writeTo("connect_v2").using("delta").createOrReplace()
        assert spark.table("connect_v2").columns == ["id"] and spark.table("connect_v2").count() == 3
        assert [h["operation"] for h in reversed(RsTable(location).history())] == [
            "CREATE TABLE AS SELECT", "WRITE", "WRITE", "WRITE", "CREATE OR REPLACE TABLE AS SELECT"]
    finally:
        spark.sql("DROP TABLE IF EXISTS connect_v2")


def test_streaming_source(spark, tmp_path):
    src, out = str(tmp_path / "src"), str(tmp_path / "out")
    spark.range(0, 10).write.format("delta").save(src)
    spark.range(10, 15).write.format("delta").mode("append").save(src)
    query = (spark.readStream.format("delta").load(src).writeStream.format("parquet")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(out))
    query.awaitTermination(300)
    assert _rows(spark.read.parquet(out), "id") == [(i,) for i in range(15)]


def test_filters_skip_through_selects_and_renames(spark, tmp_path):
    path = str(tmp_path / "through")
    spark.range(0, 100, 1, 10).selectExpr("id", "CAST(id AS STRING) AS s", "id % 3 AS k") \
        .write.format("delta").save(path)
    t = spark.read.format("delta").load(path)
    selected = t.select("id", "s").withColumn("twice", F.col("id") * 2).alias("x")
    kept = selected.filter("x.id < 20").where(selected.twice > 10)
    assert kept._pydelta_files.num_rows == 2
    assert _rows(kept, "id", "twice") == [(i, 2 * i) for i in range(6, 20)]
    # A column a step recomputes or renames is no longer the table's: its conditions never skip.
    rebound = t.withColumn("id", F.col("id") + 1000).filter("id < 20")
    assert rebound._pydelta_files.num_rows == 10 and rebound.count() == 0
    renamed = t.withColumnRenamed("s", "id2").drop("k").withColumnRenamed("id", "s").filter("s < 20")
    assert renamed._pydelta_files.num_rows == 10 and renamed.count() == 20
    aliased = t.select(F.col("k").alias("id"), "s").filter("id < 20")
    assert aliased._pydelta_files.num_rows == 10 and aliased.count() == 100
    star = t.select("*", (F.col("k") + 1).alias("k1")).filter(F.col("id") >= 90)
    assert star._pydelta_files.num_rows == 1 and _rows(star, "id") == [(i,) for i in range(90, 100)]


def _join_files(df) -> tuple[int, int | None]:
    """(files the left Delta scan reads, files the right one reads or None) of a filtered join."""
    join = df._pydelta_join
    return join.left.files.num_rows, join.right.files.num_rows if join.right is not None else None


def test_filters_skip_through_joins(spark, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    spark.range(0, 100, 1, 10).selectExpr("id AS k", "id % 7 AS v").write.format("delta").save(a)
    spark.range(0, 100, 1, 5).selectExpr("id AS k", "id AS w").write.format("delta").save(b)
    ta, tb = spark.read.format("delta").load(a), spark.read.format("delta").load(b)
    inner = ta.join(tb, ta.k == tb.k).filter(ta.k < 10).filter(tb.w < 5)
    assert _join_files(inner) == (1, 1)
    assert sorted((r[0], r[3]) for r in inner.collect()) == [(i, i) for i in range(5)]
    # by alias, and unqualified names that are only one side's
    x, y = ta.alias("x"), tb.select("k", "w").alias("y")
    aliased = x.join(y, F.col("x.k") == F.col("y.k")).where("x.k >= 90 AND w >= 95 AND v = 4")
    assert _join_files(aliased) == (1, 1)
    assert sorted(r[0] for r in aliased.collect()) == [95]
    # `k` is both sides' (the USING column): a filter on it skips only where the join allows
    using = ta.join(tb, "k", "left").filter(F.col("k") < 10).filter(tb.w.isNull())
    assert _join_files(using) == (10, 5) and using.count() == 0
    # a left join keeps every file of its null-supplying right side
    left = ta.join(tb, (ta.k == tb.k) & (tb.w < 50), "left_outer").filter(ta.k >= 90).filter(tb.w.isNull())
    assert _join_files(left) == (1, 5) and sorted(r[0] for r in left.collect()) == list(range(90, 100))
    full = ta.join(tb, ta.k == tb.k, "full").filter(ta.k < 10)
    assert _join_files(full) == (10, 5) and full.count() == 10
    semi = ta.join(tb.filter(tb.w < 20), "k", "left_semi").filter(ta.v == 0)
    assert _join_files(semi) == (10, 1) and sorted(r.k for r in semi.collect()) == [0, 7, 14]
    # a right side that is not a Delta read: only the left skips; its column names are never the table's
    plain = spark.range(0, 100).selectExpr("id AS k", "id AS v2")
    mixed = ta.join(plain, "k").filter(plain.v2 < 10).filter(ta.k < 10).filter("v = 1")
    assert _join_files(mixed) == (1, None) and sorted(r.k for r in mixed.collect()) == [1, 8]
    # a Delta read on the right of a plain DataFrame: the right skips (inner), or not (left outer)
    mirrored = plain.join(ta, "k").filter(ta.k >= 90).filter(plain.v2 < 95)
    assert mirrored._pydelta_join.left is None and mirrored._pydelta_join.right.files.num_rows == 1
    assert sorted(r.k for r in mirrored.collect()) == list(range(90, 95))
    outer = plain.join(ta, "k", "left").filter(ta.k >= 90)
    assert outer._pydelta_join.right.files.num_rows == 10 and outer.count() == 10
    assert type(plain.join(plain.alias("q"), "k")).__name__ == "DataFrame"  # no Delta read: untouched


def test_filters_skip_through_joins_of_joins(spark, tmp_path):
    a, b, c = str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "c")
    spark.range(0, 100, 1, 10).selectExpr("id AS k", "id % 7 AS v").write.format("delta").save(a)
    spark.range(0, 100, 1, 5).selectExpr("id AS k", "id AS w").write.format("delta").save(b)
    spark.range(0, 100, 1, 4).selectExpr("id AS k2", "id * 2 AS z").write.format("delta").save(c)
    ta, tb, tc = (spark.read.format("delta").load(p) for p in (a, b, c))
    # ((a JOIN b) JOIN c): a filter above the outer join reaches every scan
    chained = ta.join(tb, "k").join(tc, F.col("k") == tc.k2).filter(ta.k < 10).filter(tb.w < 5).filter("z < 20")
    inner = chained._pydelta_join.left
    assert (inner.left.files.num_rows, inner.right.files.num_rows, chained._pydelta_join.right.files.num_rows) \
        == (1, 1, 1)
    assert sorted((r.k, r.z) for r in chained.collect()) == [(i, 2 * i) for i in range(5)]
    # c JOIN (a JOIN b): a join on the right side, and an outer join that keeps its null-supplying side whole
    mirrored = tc.join(ta.join(tb, "k"), F.col("k2") == F.col("k"), "left").filter(tc.k2 >= 75).filter(ta.v == 0)
    nested = mirrored._pydelta_join.right
    assert mirrored._pydelta_join.left.files.num_rows == 1
    assert (nested.left.files.num_rows, nested.right.files.num_rows) == (10, 5)  # null-supplying: read whole
    assert sorted(r.k2 for r in mirrored.collect()) == [77, 84, 91, 98]
    # a plain DataFrame joined with a join of Delta reads: the Delta sides still skip
    plain = spark.range(0, 100).selectExpr("id AS k", "id AS p")
    outer = plain.join(ta.join(tb, "k"), "k").filter(tb.w >= 80)
    assert (outer._pydelta_join.right.left.files.num_rows, outer._pydelta_join.right.right.files.num_rows) == (10, 1)
    assert outer.count() == 20


def test_metadata_of_a_version_without_files_over_connect(spark, tmp_path):
    path = str(tmp_path / "empty")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta")
    df = spark.read.format("delta").load(path).select("id", "_metadata.file_path", "_metadata.row_index")
    assert df.collect() == [] and df.columns == ["id", "file_path", "row_index"]
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1)")
    (row,) = spark.sql(f"SELECT id, _metadata.file_path AS f FROM delta.`{path}` WHERE id = 1").collect()
    assert row.f.startswith("file:") and row.f.endswith(".parquet")
    spark.sql(f"DELETE FROM delta.`{path}`")
    assert spark.sql(f"SELECT _metadata.file_path FROM delta.`{path}`").collect() == []
