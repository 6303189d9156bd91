"""RENAME COLUMN and DROP COLUMN(S) on column-mapped tables: metadata-only, as delta-spark does them.

Witnesses: the data files on disk (none rewritten), pydelta's reader, deltalake's SQL engine
(it resolves column mapping), DML and the change feed after the change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import pydelta
from pydelta import DeltaTable, errors

pytestmark = pytest.mark.spark


def _mapped_table(spark, path: str, mode: str = "name") -> None:
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING, s STRUCT<a: INT, b: STRING>, p INT) USING delta "
              f"PARTITIONED BY (p) TBLPROPERTIES ('delta.columnMapping.mode' = '{mode}', "
              "'delta.enableChangeDataFeed' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'one', named_struct('a', 10, 'b', 'x'), 0), "
              "(2, 'two', named_struct('a', 20, 'b', 'y'), 1), (3, 'three', named_struct('a', 30, 'b', 'z'), 0)")


def _data_files(path: str) -> set[str]:
    return {str(p.relative_to(path)) for p in Path(path).rglob("*.parquet") if "_delta_log" not in p.parts}


def _deltalake(path: str, sql: str) -> list[dict]:
    import deltalake

    dt = deltalake.DeltaTable(path)
    return pa.table(deltalake.QueryBuilder().register("t", dt).execute(sql).read_all()).to_pylist()


def _last_commit_info(path: str) -> dict:
    log = sorted(Path(path, "_delta_log").glob("*.json"))[-1]
    return next(json.loads(line)["commitInfo"] for line in log.read_text().splitlines() if "commitInfo" in line)


def _version(path: str) -> int:
    return pydelta.load_snapshot(path).version


@pytest.mark.parametrize("mode", ["name", "id"])
def test_rename_columns_without_rewriting_data(spark, tmp_path, mode):
    path = str(tmp_path / "t")
    _mapped_table(spark, path, mode)
    files = _data_files(path)
    t = f"delta.`{path}`"
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN v TO label")
    assert _last_commit_info(path)["operation"] == "RENAME COLUMN"
    assert _last_commit_info(path)["operationParameters"] == {"oldColumnPath": "v", "newColumnPath": "label"}
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN s.a TO amount")  # a nested field
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN p TO part")  # a partition column
    assert _data_files(path) == files  # metadata only
    snap = pydelta.load_snapshot(path)
    assert [f.name for f in snap.schema.fields] == ["id", "label", "s", "part"]
    assert snap.partition_columns == ["part"]
    rows = sorted((r.id, r.label, r.s.amount, r.part) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(1, "one", 10, 0), (2, "two", 20, 1), (3, "three", 30, 0)]
    assert sorted((r["id"], r["label"], r["part"]) for r in _deltalake(path, "SELECT id, label, part FROM t")) == \
        [(1, "one", 0), (2, "two", 1), (3, "three", 0)]
    # Writes, DML and skipping work under the new names; old and new files read alike.
    spark.sql(f"INSERT INTO {t} VALUES (4, 'four', named_struct('amount', 40, 'b', 'w'), 1)")
    DeltaTable.forPath(spark, path).update("id = 1", {"label": "'uno'"})
    DeltaTable.forPath(spark, path).delete("s.amount = 30")
    got = sorted((r.id, r.label, r.s.amount, r.part) for r in spark.sql(f"SELECT * FROM {t}").collect())
    assert got == [(1, "uno", 10, 0), (2, "two", 20, 1), (4, "four", 40, 1)]
    assert [r.id for r in spark.sql(f"SELECT id FROM {t} WHERE label = 'four'").collect()] == [4]
    # The change feed reads the commits after the rename under the new names.
    rename_version = _version(path) - 3
    changes = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", rename_version + 1)
               .load(path).select("id", "label", "_change_type").collect())
    assert ("uno" in {r.label for r in changes}) and {r._change_type for r in changes} >= {"insert", "delete"}


def test_drop_columns_and_re_add_a_dropped_name(spark, tmp_path):
    path = str(tmp_path / "t")
    _mapped_table(spark, path)
    files = _data_files(path)
    t = f"delta.`{path}`"
    old_physical = pydelta.load_snapshot(path).schema.field("v").metadata["delta.columnMapping.physicalName"]
    spark.sql(f"ALTER TABLE {t} DROP COLUMN v")
    assert _last_commit_info(path)["operation"] == "DROP COLUMNS"
    assert _last_commit_info(path)["operationParameters"] == {"columns": '["v"]'}
    spark.sql(f"ALTER TABLE {t} DROP COLUMNS (s.b)")
    assert _data_files(path) == files
    assert [f.name for f in pydelta.load_snapshot(path).schema.fields] == ["id", "s", "p"]
    rows = sorted((r.id, r.s.a, r.p) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(1, 10, 0), (2, 20, 1), (3, 30, 0)]
    assert len(spark.read.format("delta").load(path).columns) == 3
    # Re-adding the name makes a new column: the old values never come back.
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (v STRING)")
    field = pydelta.load_snapshot(path).schema.field("v")
    assert field.metadata["delta.columnMapping.physicalName"] != old_physical
    spark.sql(f"INSERT INTO {t} VALUES (5, named_struct('a', 50), 1, 'five')")
    got = sorted((r.id, r.v) for r in spark.sql(f"SELECT id, v FROM {t}").collect())
    assert got == [(1, None), (2, None), (3, None), (5, "five")]
    assert sorted((r["id"], r["v"]) for r in _deltalake(path, "SELECT id, v FROM t")) == got
    spark.sql(f"ALTER TABLE {t} DROP COLUMN IF EXISTS nope")  # IF EXISTS: nothing to do


def _refused(spark, path: str, statement: str, match: str) -> None:
    before = _version(path)
    with pytest.raises(errors.DeltaAnalysisError, match=match):
        spark.sql(statement)
    assert _version(path) == before


def test_refusals_leave_the_table_unchanged(spark, tmp_path):
    path = str(tmp_path / "t")
    _mapped_table(spark, path)
    t = f"delta.`{path}`"
    spark.sql(f"ALTER TABLE {t} ADD CONSTRAINT positive CHECK (id > 0)")
    _refused(spark, path, f"ALTER TABLE {t} DROP COLUMN p", "DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN")
    _refused(spark, path, f"ALTER TABLE {t} RENAME COLUMN id TO ident", "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE")
    _refused(spark, path, f"ALTER TABLE {t} DROP COLUMN id", "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE")
    _refused(spark, path, f"ALTER TABLE {t} RENAME COLUMN v TO ID", "DELTA_DUPLICATE_COLUMNS_FOUND")
    _refused(spark, path, f"ALTER TABLE {t} DROP COLUMN nope", "Couldn't find column nope")
    gen = str(tmp_path / "g")
    spark.sql(f"CREATE TABLE delta.`{gen}` (a INT, b INT GENERATED ALWAYS AS (a * 2)) USING delta "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    _refused(spark, gen, f"ALTER TABLE delta.`{gen}` RENAME COLUMN a TO c",
             "DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE")
    one = str(tmp_path / "one")
    spark.sql(f"CREATE TABLE delta.`{one}` (a INT) USING delta TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    _refused(spark, one, f"ALTER TABLE delta.`{one}` DROP COLUMN a", "DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA")


# ---- property: random add / rename / drop / widen / write sequences agree with a plain model --------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_STEPS = st.lists(st.tuples(st.sampled_from(["add", "rename", "drop", "widen", "write"]), st.integers(0, 1000)),
                  min_size=3, max_size=8)


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=_STEPS)
def test_schema_changes_agree_with_a_model(spark, tmp_path_factory, steps):
    path = str(tmp_path_factory.mktemp("model") / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, c0 INT) USING delta TBLPROPERTIES ("
              "'delta.columnMapping.mode' = 'name', 'delta.enableTypeWidening' = 'true')")
    columns = {"c0": "INT"}  # the model: columns in order with their types, and rows (id -> {column: value})
    rows: dict[int, dict[str, int | None]] = {}
    fresh = 1
    for op, n in steps:
        names = list(columns)
        if op == "add":
            name = f"c{fresh}"
            fresh += 1
            spark.sql(f"ALTER TABLE {t} ADD COLUMNS ({name} INT)")
            columns[name] = "INT"
            for r in rows.values():
                r[name] = None
        elif op == "rename" and names:
            old, new = names[n % len(names)], f"c{fresh}"
            fresh += 1
            spark.sql(f"ALTER TABLE {t} RENAME COLUMN {old} TO {new}")
            columns = {(new if c == old else c): ty for c, ty in columns.items()}
            for r in rows.values():
                r[new] = r.pop(old)
        elif op == "drop" and names:
            victim = names[n % len(names)]
            spark.sql(f"ALTER TABLE {t} DROP COLUMN {victim}")
            del columns[victim]
            for r in rows.values():
                r.pop(victim)
        elif op == "widen" and names:
            target = names[n % len(names)]
            if columns[target] == "INT":
                spark.sql(f"ALTER TABLE {t} ALTER COLUMN {target} TYPE BIGINT")
                columns[target] = "BIGINT"
        elif op == "write":
            rid = len(rows)
            values = {c: (2**40 + n + i if ty == "BIGINT" else n + i) for i, (c, ty) in enumerate(columns.items())}
            listed = ", ".join(["id", *columns])
            spark.sql(f"INSERT INTO {t} ({listed}) VALUES ({', '.join(str(v) for v in [rid, *values.values()])})")
            rows[rid] = values
        df = spark.read.format("delta").load(path)
        assert df.columns == ["id", *columns]
        assert [f.dataType.simpleString() for f in df.schema.fields[1:]] == [
            "int" if ty == "INT" else "bigint" for ty in columns.values()]
        got = {r["id"]: {c: r[c] for c in columns} for r in df.collect()}
        assert got == rows
