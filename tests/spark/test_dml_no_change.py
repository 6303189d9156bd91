"""DELETE, UPDATE and MERGE that change no row commit nothing, as delta-spark 4.4's do (its DML
commits with commitIfNeeded): in SQL and through DeltaTable, with and without deletion vectors
and the change data feed, and the metrics they return are zeros. tests/witness/
test_dml_no_change_witness.py has delta-spark itself do the same statements."""

from __future__ import annotations

from pathlib import Path

import pytest

from pydelta import DeltaTable

pytestmark = pytest.mark.spark

PROPERTIES = {
    "plain": "",
    "dv_cdf": "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', 'delta.enableChangeDataFeed' = 'true')",
}
# Statements that touch no row of a table holding ids 1 and 2, with the metrics row SQL returns.
NO_CHANGE_SQL = [
    ("DELETE FROM {t} WHERE id = 5", [0]),
    ("UPDATE {t} SET v = 'x' WHERE id = 5", [0]),
    ("MERGE INTO {t} t USING (SELECT 5L AS id, 'z' AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
     [0, 0, 0, 0]),
    ("MERGE INTO {t} t USING (SELECT 1L AS id, 'z' AS v) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *",
     [0, 0, 0, 0]),
    ("MERGE INTO {t} t USING (SELECT 1L AS id, 'z' AS v WHERE false) s ON t.id = s.id "
     "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *", [0, 0, 0, 0]),
    ("DELETE FROM {t} WHERE id = 5 AND v = 'q'", [0]),
]


def make(spark, path: Path, kind: str) -> str:
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING delta {PROPERTIES[kind]}")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    return t


def versions(path: Path) -> list[str]:
    return sorted(p.name for p in (path / "_delta_log").glob("*.json"))


@pytest.mark.parametrize("kind", sorted(PROPERTIES))
def test_sql_dml_that_changes_no_row_commits_nothing(spark, tmp_path, kind):
    path = tmp_path / "t"
    t = make(spark, path, kind)
    before = versions(path)
    for statement, metrics in NO_CHANGE_SQL:
        rows = spark.sql(statement.format(t=t)).collect()
        assert [list(r) for r in rows] == [metrics], statement
        assert versions(path) == before, statement
    assert sorted(tuple(r) for r in spark.read.format("delta").load(str(path)).collect()) == [(1, "a"), (2, "b")]
    spark.sql(f"DELETE FROM {t} WHERE id = 2")  # a DML that changes a row still commits
    assert len(versions(path)) == len(before) + 1


@pytest.mark.parametrize("kind", sorted(PROPERTIES))
def test_delta_table_dml_that_changes_no_row_commits_nothing(spark, tmp_path, kind):
    path = tmp_path / "t"
    make(spark, path, kind)
    before = versions(path)
    table = DeltaTable.forPath(spark, str(path))
    table.delete("id = 7")
    table.update("id = 7", {"v": "'q'"})
    source = spark.createDataFrame([(9, "n")], "id BIGINT, v STRING")
    (table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute())
    empty = source.where("false")
    (table.alias("t").merge(empty.alias("s"), "t.id = s.id").whenMatchedDelete().whenNotMatchedInsertAll().execute())
    assert versions(path) == before
    assert [r.operation for r in table.history().collect()] == ["WRITE", "CREATE TABLE"]


def test_merge_with_schema_evolution_that_adds_a_column_still_commits(spark, tmp_path):
    """No row changes, but the schema does: delta-spark commits the new metadata."""
    path = tmp_path / "t"
    make(spark, path, "plain")
    before = versions(path)
    source = spark.createDataFrame([(9, "n", 1)], "id BIGINT, v STRING, extra INT")
    (DeltaTable.forPath(spark, str(path)).alias("t").merge(source.alias("s"), "t.id = s.id")
     .withSchemaEvolution().whenMatchedUpdateAll().execute())
    assert len(versions(path)) == len(before) + 1
    assert "extra" in spark.read.format("delta").load(str(path)).columns
