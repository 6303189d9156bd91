"""Delta SQL through spark.sql on a Spark Connect session: DML and DDL read by pydelta's own
grammar on the client, run by pydelta, checked on disk and by deltalake."""

from __future__ import annotations

import json

import deltalake
import pytest

from pydelta.errors import DeltaNotImplementedError

# Seed 004's tutorial, verbatim: the same test the classic suite runs, here on the Connect session.
from tests.spark.test_sql_tutorial import mydb, test_delta_lake_101_tutorial  # noqa: F401


def _rows(df, *order):
    return [tuple(r) for r in df.orderBy(*order).collect()]


def _operations(path) -> list[str]:
    return [h["operation"] for h in reversed(deltalake.DeltaTable(str(path)).history())]


def test_dml_on_a_path_table(spark, tmp_path):
    path = tmp_path / "t"
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, v STRING, p STRING COMMENT 'part') USING delta "
              "PARTITIONED BY (p) TBLPROPERTIES ('delta.enableChangeDataFeed' = true)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y')")
    spark.sql(f"INSERT INTO {t} (p, id, v) SELECT 'y', id + 10, CAST(id AS STRING) FROM range(2)")
    assert spark.sql(f"UPDATE {t} AS u SET v = upper(u.v) WHERE id <= 2").collect()[0].num_affected_rows == 2
    assert spark.sql(f"DELETE FROM {t} WHERE p = 'y' AND id > 10").collect()[0].num_affected_rows == 1
    spark.sql(f"""MERGE INTO {t} AS target
                  USING (SELECT * FROM VALUES (1, 'one'), (3, 'drop'), (7, 'seven') AS s(id, v)) AS source
                  ON target.id = source.id
                  WHEN MATCHED AND source.v = 'drop' THEN DELETE
                  WHEN MATCHED THEN UPDATE SET v = CASE WHEN source.v = 'one' THEN 'ONE' ELSE source.v END
                  WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (source.id, source.v, 'z')
                  WHEN NOT MATCHED BY SOURCE AND target.id = 10 THEN UPDATE SET v = 'ten'""")
    expected = [(1, "ONE", "x"), (2, "B", "x"), (7, "seven", "z"), (10, "ten", "y")]
    assert _rows(spark.sql(f"SELECT * FROM {t}"), "id") == expected
    theirs = deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r["v"], r["p"]) for r in theirs) == expected
    assert _operations(path) == ["CREATE TABLE", "WRITE", "WRITE", "UPDATE", "DELETE", "MERGE"]
    meta = deltalake.DeltaTable(str(path)).metadata()
    assert meta.partition_columns == ["p"] and meta.configuration == {"delta.enableChangeDataFeed": "true"}
    changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 5).load(str(path))
    assert sorted((r.id, r._change_type) for r in changes.collect()) == [
        (1, "update_postimage"), (1, "update_preimage"), (3, "delete"), (7, "insert"),
        (10, "update_postimage"), (10, "update_preimage")]
    # INSERT OVERWRITE of one partition, then TRUNCATE.
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (p = 'x') SELECT 5, 'five'")
    assert _rows(spark.sql(f"SELECT id, p FROM {t}"), "id") == [(5, "x"), (7, "z"), (10, "y")]
    spark.sql(f"TRUNCATE TABLE {t}")
    assert spark.sql(f"SELECT count(*) AS n FROM {t}").collect()[0].n == 0
    assert _operations(path)[-2:] == ["WRITE", "TRUNCATE"]


def test_catalog_names_ctas_and_alter(spark, tmp_path):
    spark.range(0, 4).selectExpr("id", "'s' AS v").write.format("delta").save(str(tmp_path / "src"))
    try:
        spark.sql(f"CREATE TABLE connect_ctas USING delta PARTITIONED BY (even) AS "
                  f"SELECT id, id % 2 = 0 AS even FROM delta.`{tmp_path / 'src'}`")
        assert _rows(spark.table("connect_ctas"), "id") == [(0, True), (1, False), (2, True), (3, False)]
        spark.sql("ALTER TABLE connect_ctas ADD COLUMNS (note STRING COMMENT 'free text' AFTER id)")
        spark.sql("ALTER TABLE connect_ctas SET TBLPROPERTIES ('delta.appendOnly' = 'false', 'team' = 'core')")
        spark.sql("ALTER TABLE connect_ctas ADD CONSTRAINT id_positive CHECK (id >= 0)")
        assert spark.table("connect_ctas").columns == ["id", "note", "even"]
        location = spark.sql("DESCRIBE DETAIL connect_ctas").collect()[0].location
        meta = deltalake.DeltaTable(location).metadata()
        assert meta.configuration["team"] == "core"
        assert meta.configuration["delta.constraints.id_positive"] == "id >= 0"
        schema = json.loads(deltalake.DeltaTable(location).schema().to_json())
        assert [f["metadata"].get("comment") for f in schema["fields"]] == [None, "free text", None]
        with pytest.raises(Exception, match="id_positive"):
            spark.sql("INSERT INTO connect_ctas VALUES (-1, 'bad', false)")
        assert spark.table("connect_ctas").count() == 4  # the refused write committed nothing
        spark.range(0, 2).selectExpr("id", "'m' AS v").createOrReplaceTempView("connect_source_view")
        spark.sql("""MERGE INTO connect_ctas USING connect_source_view ON connect_ctas.id = connect_source_view.id
                     WHEN MATCHED THEN UPDATE SET note = connect_source_view.v""")
        assert _rows(spark.sql("SELECT id, note FROM connect_ctas WHERE note IS NOT NULL"), "id") == [
            (0, "m"), (1, "m")]
        spark.sql("ALTER TABLE connect_ctas DROP CONSTRAINT id_positive")
        spark.sql("CREATE OR REPLACE TABLE connect_ctas (k INT) USING delta")
        assert spark.table("connect_ctas").columns == ["k"] and spark.table("connect_ctas").count() == 0
    finally:
        spark.sql("DROP TABLE IF EXISTS connect_ctas")


def test_statements_pydelta_cannot_serve_over_connect(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    for statement in (f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta CLUSTERED BY (id) INTO 4 BUCKETS",
                      f"SELECT * FROM delta.`{path}` TIMESTAMP AS OF current_timestamp()"):
        with pytest.raises(DeltaNotImplementedError, match="Spark Connect"):
            spark.sql(statement)
    assert deltalake.DeltaTable(path).version() == 0  # nothing committed


def _files_read(df) -> int:
    return len(df.inputFiles())


def test_queries_skip_files_by_their_where_clause(spark, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    spark.range(0, 40, 1, 1).selectExpr("id AS k", "id % 4 AS p", "id AS x").write.format("delta") \
        .partitionBy("p").save(a)  # 4 files, one per p
    spark.range(0, 40, 1, 4).selectExpr("id AS k", "id AS y").write.format("delta").save(b)  # 4 files by y ranges
    ta, tb = f"delta.`{a}`", f"delta.`{b}`"
    assert _files_read(spark.sql(f"SELECT * FROM {ta} JOIN {tb} USING (k)")) == 8
    single = spark.sql(f"SELECT k FROM {ta} WHERE p = 1 AND upper(CAST(x AS STRING)) <> 'Z'")
    assert _files_read(single) == 1 and sorted(r.k for r in single.collect()) == list(range(1, 40, 4))
    # an inner join: each side by its own conjuncts (qualified, or unqualified and only its column)
    joined = spark.sql(f"SELECT t.k, u.y FROM {ta} AS t JOIN {tb} u ON t.k = u.k WHERE t.p = 2 AND y < 10")
    assert _files_read(joined) == 2
    assert sorted(tuple(r) for r in joined.collect()) == [(2, 2), (6, 6)]
    # a LEFT JOIN keeps every file of its null-supplying side: rows of b's skipped files would match
    outer = spark.sql(f"SELECT t.k, u.y FROM {ta} t LEFT JOIN {tb} u ON t.k = u.k AND u.y < 10 "
                      "WHERE t.p = 3 AND u.y IS NULL")
    assert _files_read(outer) == 1 + 4
    assert sorted(r.k for r in outer.collect()) == list(range(11, 40, 4))
    # a name qualified by another relation's alias is never taken for the table's own column
    other = spark.sql(f"SELECT t.k FROM {ta} t JOIN {tb} p ON t.k = p.k WHERE p.y = 5")
    assert _files_read(other) == 4 + 1 and [r.k for r in other.collect()] == [5]


def test_subqueries_and_set_operations_skip_by_their_own_where(spark, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    spark.range(0, 40, 1, 1).selectExpr("id AS k", "id % 4 AS p").write.format("delta").partitionBy("p").save(a)
    spark.range(0, 40, 1, 4).selectExpr("id AS k", "id AS y").write.format("delta").save(b)  # 4 files by y
    ta, tb = f"delta.`{a}`", f"delta.`{b}`"
    union = spark.sql(f"SELECT k FROM {ta} WHERE p = 1 UNION ALL SELECT k FROM {tb} WHERE y >= 35")
    assert _files_read(union) == 1 + 1
    assert sorted(r.k for r in union.collect()) == sorted([*range(1, 40, 4), *range(35, 40)])
    grouped = spark.sql(f"SELECT p, count(*) AS n FROM (SELECT * FROM {ta} WHERE p >= 2) s GROUP BY p")
    assert _files_read(grouped) == 2 and sorted(tuple(r) for r in grouped.collect()) == [(2, 10), (3, 10)]
    cte = spark.sql(f"WITH small AS (SELECT k FROM {tb} WHERE y < 10) "
                    f"SELECT t.k FROM {ta} t JOIN small ON t.k = small.k WHERE t.p = 0")
    assert _files_read(cte) == 1 + 1 and sorted(r.k for r in cte.collect()) == [0, 4, 8]
    # IN (SELECT ...): the subquery's block skips; the conjunct holding it skips nothing
    nested = spark.sql(f"SELECT k FROM {ta} WHERE p = 3 AND k IN (SELECT k FROM {tb} WHERE y < 20)")
    assert sorted(r.k for r in nested.collect()) == [3, 7, 11, 15, 19]
    # a correlated reference to the outer table is never taken for the subquery table's column
    correlated = spark.sql(f"SELECT k FROM {ta} t WHERE EXISTS (SELECT 1 FROM {tb} u WHERE u.k = t.k AND u.y > 30)"
                           " AND t.p = 1")
    assert sorted(r.k for r in correlated.collect()) == [33, 37]
