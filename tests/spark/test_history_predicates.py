"""History records predicates as delta-spark's text without Spark's expression ids.

delta-spark records the analyzed condition's simpleString, e.g. `(id#72 = 2)`; the
`#72` is internal to one Spark session, so pydelta records `(id = 2)`, whether the
condition was a Column or a SQL string, for DELETE, UPDATE, MERGE (condition and
every clause), OPTIMIZE ... WHERE and replaceWhere writes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pydelta import DeltaTable

pytestmark = pytest.mark.spark

EXPR_ID = re.compile(r"[\w`]#\d+")


def make_table(spark: Any, path: str) -> DeltaTable:
    rows = [(i, f"n{i}", i % 2) for i in range(1, 21)]
    spark.createDataFrame(rows, "id INT, name STRING, part INT").repartition(2) \
        .write.format("delta").partitionBy("part").save(path)
    return DeltaTable.forPath(spark, path)


def last_parameters(table: DeltaTable) -> dict[str, str]:
    return table.history(1).collect()[0].operationParameters


def predicates(table: DeltaTable) -> list[str]:
    return json.loads(last_parameters(table)["predicate"])


def test_delete_records_sql_text_for_columns_and_strings(spark, tmp_path):
    from pyspark.sql import functions as F

    table = make_table(spark, str(tmp_path / "t"))
    table.delete(F.col("id") == 2)
    assert predicates(table) == ["(id = 2)"]
    table.delete("id = 3")
    assert predicates(table) == ["(id = 3)"]
    table.delete((F.col("id") > 15) & F.col("name").isin("n16", "n17"))
    assert predicates(table) == ["((id > 15) AND name IN (n16,n17))"]
    table.alias("t").delete("t.id = 4 AND t.part = 0")
    assert predicates(table) == ["((id = 4) AND (part = 0))"]
    # only references lose their ids: a literal that looks like one is kept
    table.update("id = 5", {"name": "'x#12'"})  # a row for it to delete: a DELETE of no row commits nothing
    table.delete(F.col("name") == "x#12")
    assert predicates(table) == ["(name = x#12)"]


def test_update_records_sql_text(spark, tmp_path):
    from pyspark.sql import functions as F

    table = make_table(spark, str(tmp_path / "t"))
    table.update(F.col("id") == 5, {"name": F.lit("five")})
    assert predicates(table) == ["(id = 5)"]
    table.alias("t").updateExpr("t.id = 6", {"name": "'six'"})
    assert predicates(table) == ["(id = 6)"]
    table.update(set={"name": F.upper("name")})
    assert predicates(table) == []


def test_merge_records_condition_and_clause_predicates(spark, tmp_path):
    from pyspark.sql import functions as F

    table = make_table(spark, str(tmp_path / "t"))
    source = spark.createDataFrame([(1, "x", 1), (50, "y", 0)], "id INT, name STRING, part INT")
    (table.alias("t").merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdate("s.name = 'x'", {"name": "s.name"})
        .whenMatchedDelete()
        .whenNotMatchedInsert(F.col("s.id") > 10, {"id": "s.id", "name": "s.name", "part": "s.part"})
        .whenNotMatchedBySourceDelete("t.id > 18")
        .execute())
    params = last_parameters(table)
    assert json.loads(params["predicate"]) == ["(id = id)"]
    assert json.loads(params["matchedPredicates"]) == [
        {"predicate": "(name = x)", "actionType": "update"}, {"actionType": "delete"}]
    assert json.loads(params["notMatchedPredicates"]) == [{"predicate": "(id > 10)", "actionType": "insert"}]
    assert json.loads(params["notMatchedBySourcePredicates"]) == [{"predicate": "(id > 18)", "actionType": "delete"}]
    assert not EXPR_ID.search(json.dumps(params))


def test_optimize_and_replace_where_record_sql_text(spark, tmp_path):
    path = str(tmp_path / "t")
    table = make_table(spark, path)
    spark.createDataFrame([(99, "z", 1)], "id INT, name STRING, part INT").write.format("delta") \
        .mode("append").save(path)
    table.optimize().where("part = 1").executeCompaction()
    assert predicates(table) == ["('part = 1)"]  # delta-spark records the parsed, unresolved text
    assert json.loads(last_parameters(table)["zOrderBy"]) == []

    spark.createDataFrame([(100, "w", 1)], "id INT, name STRING, part INT").write.format("delta") \
        .mode("overwrite").option("replaceWhere", "part = 1").save(path)
    assert predicates(table) == ["part = 1"]  # the user's text, as delta-spark records it


def test_optimize_and_reorg_predicates_as_delta_spark_records_them(spark, tmp_path):
    """delta-spark's DeltaReorgSuite expects `["'part IN (0,2)"]` for REORG ... WHERE part IN (0, 2)."""
    path = str(tmp_path / "t")
    spark.range(0, 9).selectExpr("id", "CAST(id % 3 AS INT) AS part").repartition(3).write.format("delta") \
        .partitionBy("part").option("delta.enableDeletionVectors", "true").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id IN (0, 2)")
    spark.sql(f"REORG TABLE delta.`{path}` WHERE part IN (0, 2) APPLY (PURGE)")
    table = DeltaTable.forPath(spark, path)
    assert last_parameters(table)["predicate"] == '["\'part IN (0,2)"]'
    spark.sql(f"OPTIMIZE delta.`{path}` WHERE part = 1 AND part >= 0 ZORDER BY (id)")
    assert predicates(table) == ["(('part = 1) AND ('part >= 0))"]
    spark.range(1).selectExpr("id + 100 AS id", "1 AS part").write.format("delta").mode("append").save(path)
    table.optimize().where("part IN (1)").executeCompaction()
    assert predicates(table) == ["'part IN (1)"]


def test_no_history_entry_has_expression_ids(spark, tmp_path):
    from pyspark.sql import functions as F

    table = make_table(spark, str(tmp_path / "t"))
    table.delete(F.col("id") < 3)
    table.update(F.col("part") == 1, {"name": F.concat(F.col("name"), F.lit("!"))})
    source = spark.createDataFrame([(4, "four", 0)], "id INT, name STRING, part INT")
    table.alias("t").merge(source.alias("s"), F.col("t.id") == F.col("s.id")).whenMatchedUpdateAll().execute()
    table.optimize().where("part = 0").executeZOrderBy("id")
    for row in table.history().collect():
        assert not EXPR_ID.search(json.dumps(row.operationParameters)), row
