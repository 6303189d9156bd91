"""INSERT, UPDATE, DELETE and MERGE through spark.sql on Delta tables (names and paths)."""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pytest

import pydelta
from pydelta import errors

pytestmark = pytest.mark.spark


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def _version(path: str) -> int:
    return pydelta.load_snapshot(path).version


def _last_info(path: str) -> dict:
    log = Path(path) / "_delta_log"
    last = sorted(log.glob("*.json"))[-1]
    return next(json.loads(line)["commitInfo"] for line in last.read_text().splitlines() if "commitInfo" in line)


@pytest.fixture
def people(spark, tmp_path):
    path = str(tmp_path / "people")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING, country STRING) USING delta "
              "PARTITIONED BY (country)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'Ann', 'NL'), (2, 'Bob', 'NL'), (3, 'Cid', 'DE'), "
              "(4, 'Dee', 'FR')")
    return path


def test_insert_values_queries_column_lists_and_partition_clauses(spark, people):
    t = f"delta.`{people}`"
    spark.sql(f"INSERT INTO {t} (name, id, country) VALUES ('Eve', 5, 'DE')")
    spark.sql(f"INSERT INTO {t} (id, country) VALUES (6, 'BE')")  # name is NULL
    spark.sql(f"INSERT INTO {t} PARTITION (country = 'US') VALUES (7, 'Gus')")
    spark.sql(f"INSERT INTO {t} SELECT id + 100, upper(name), country FROM {t} WHERE id <= 2")
    rows = _rows(spark.sql(f"SELECT id, name, country FROM {t}"))
    assert (5, "Eve", "DE") in rows and (6, None, "BE") in rows and (7, "Gus", "US") in rows
    assert (101, "ANN", "NL") in rows and len(rows) == 9
    assert deltalake.DeltaTable(people).to_pyarrow_table().num_rows == 9


def test_insert_overwrite_whole_table_static_partition_and_replace_where(spark, people):
    t = f"delta.`{people}`"
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (country = 'NL') VALUES (10, 'Nel')")
    assert _rows(spark.sql(f"SELECT id, country FROM {t}")) == [(3, "DE"), (4, "FR"), (10, "NL")]
    spark.sql(f"INSERT INTO {t} REPLACE WHERE country = 'DE' SELECT 30, 'Dirk', 'DE'")
    assert _rows(spark.sql(f"SELECT id, country FROM {t}")) == [(4, "FR"), (10, "NL"), (30, "DE")]
    assert _last_info(people)["operationParameters"]["predicate"] == json.dumps(["country = 'DE'"])
    spark.sql(f"INSERT OVERWRITE {t} SELECT 1, 'One', 'XX'")
    assert _rows(spark.sql(f"SELECT id FROM {t}")) == [(1,)]


def test_insert_errors_leave_table_unchanged(spark, people):
    t = f"delta.`{people}`"
    before = _version(people)
    with pytest.raises(errors.DeltaAnalysisError, match="INSERT_COLUMN_ARITY_MISMATCH"):
        spark.sql(f"INSERT INTO {t} VALUES (1, 'too few')")
    with pytest.raises(errors.DeltaAnalysisError, match="nope"):
        spark.sql(f"INSERT INTO {t} (id, nope, country) VALUES (1, 'x', 'NL')")
    with pytest.raises(errors.DeltaCastError, match="CAST_INVALID_INPUT"):
        spark.sql(f"INSERT INTO {t} VALUES ('not a number', 'x', 'NL')")
    assert _version(people) == before


def test_update_and_delete_return_affected_rows(spark, people):
    t = f"delta.`{people}`"
    updated = spark.sql(f"UPDATE {t} SET name = concat(name, '!') WHERE country = 'NL'").collect()
    assert updated[0].num_affected_rows == 2
    assert spark.sql(f"UPDATE {t} AS p SET p.name = 'Zed' WHERE p.id = 4").first().num_affected_rows == 1
    assert _rows(spark.sql(f"SELECT id, name FROM {t}")) == [(1, "Ann!"), (2, "Bob!"), (3, "Cid"), (4, "Zed")]
    assert spark.sql(f"DELETE FROM {t} p WHERE p.id > 3").first().num_affected_rows == 1
    assert spark.sql(f"DELETE FROM {t} WHERE country = 'NL'").first().num_affected_rows == 2
    assert _rows(spark.sql(f"SELECT id FROM {t}")) == [(3,)]
    info = _last_info(people)
    # delta-spark: simpleString, no ids
    assert info["operation"] == "DELETE" and json.loads(info["operationParameters"]["predicate"]) == ["(country = NL)"]
    spark.sql(f"DELETE FROM {t}")
    assert spark.sql(f"SELECT * FROM {t}").count() == 0


def test_update_delete_bad_column_are_clear_and_commit_nothing(spark, people):
    t = f"delta.`{people}`"
    before = _version(people)
    with pytest.raises(errors.DeltaAnalysisError):
        spark.sql(f"UPDATE {t} SET nope = 1")
    with pytest.raises(errors.DeltaAnalysisError):
        spark.sql(f"DELETE FROM {t} WHERE nope = 1")
    assert _version(people) == before


def test_merge_every_clause_kind_and_metrics(spark, people):
    spark.createDataFrame([(2, "Bobby", "NL"), (3, None, "DE"), (9, "Ida", "IT")],
                          "id BIGINT, name STRING, country STRING") \
        .createOrReplaceTempView("changes")
    result = spark.sql(f"""
        MERGE INTO delta.`{people}` AS t USING changes AS s ON t.id = s.id
        WHEN MATCHED AND s.name IS NULL THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.name = s.name
        WHEN NOT MATCHED AND s.country = 'IT' THEN INSERT (id, name, country) VALUES (s.id, s.name, s.country)
        WHEN NOT MATCHED BY SOURCE AND t.country = 'FR' THEN UPDATE SET t.name = 'gone'
        WHEN NOT MATCHED BY SOURCE THEN DELETE""").first()
    assert (result.num_affected_rows, result.num_updated_rows, result.num_deleted_rows,
            result.num_inserted_rows) == (5, 2, 2, 1)
    assert _rows(spark.sql(f"SELECT id, name FROM delta.`{people}`")) == [(2, "Bobby"), (4, "gone"), (9, "Ida")]
    assert _last_info(people)["operation"] == "MERGE"


def test_merge_star_actions_subquery_source_and_schema_evolution(spark, people, tmp_path):
    src = str(tmp_path / "src")
    spark.sql(f"CREATE TABLE delta.`{src}` (id BIGINT, name STRING, country STRING, age INT) USING delta")
    spark.sql(f"INSERT INTO delta.`{src}` VALUES (1, 'Ann2', 'NL', 30), (8, 'Hal', 'NO', 40)")
    spark.sql(f"""MERGE WITH SCHEMA EVOLUTION INTO delta.`{people}` t
        USING (SELECT * FROM delta.`{src}` WHERE age > 10) s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    rows = _rows(spark.sql(f"SELECT id, name, age FROM delta.`{people}`"))
    assert (1, "Ann2", 30) in rows and (8, "Hal", 40) in rows and (2, "Bob", None) in rows
    assert "age" in pydelta.load_snapshot(people).schema.field_names


def test_merge_multiple_matches_error(spark, people):
    spark.createDataFrame([(1, "a"), (1, "b")], "id BIGINT, name STRING").createOrReplaceTempView("dups")
    before = _version(people)
    with pytest.raises(errors.DeltaError, match=r"(?i)multiple source rows"):
        spark.sql(f"MERGE INTO delta.`{people}` t USING dups s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET t.name = s.name")
    assert _version(people) == before


def test_dml_on_catalog_names_and_non_delta_tables_pass_through(spark):
    try:
        spark.sql("CREATE TABLE dml_named (id INT, v STRING) USING delta")
        spark.sql("INSERT INTO dml_named VALUES (1, 'a'), (2, 'b')")
        spark.sql("UPDATE default.dml_named SET v = 'z' WHERE id = 2")
        spark.sql("DELETE FROM spark_catalog.default.dml_named WHERE id = 1")
        assert _rows(spark.table("dml_named")) == [(2, "z")]
        spark.sql("CREATE TABLE dml_parquet (id INT) USING parquet")
        spark.sql("INSERT INTO dml_parquet VALUES (1)")  # Spark's own path
        assert _rows(spark.sql("SELECT * FROM dml_parquet")) == [(1,)]
    finally:
        spark.sql("DROP TABLE IF EXISTS dml_named")
        spark.sql("DROP TABLE IF EXISTS dml_parquet")


def test_insert_select_with_repeated_auto_names_maps_by_position(spark, tmp_path):
    """`SELECT id, CAST(id AS STRING)` names both columns `id`: INSERT maps them by position."""
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, label STRING, p INT) USING delta PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {t} SELECT id, CAST(id AS STRING), CAST(id % 2 AS INT) FROM range(4)")
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(0, "0", 0), (1, "1", 1), (2, "2", 0), (3, "3", 1)]
