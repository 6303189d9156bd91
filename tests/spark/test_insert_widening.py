"""INSERT under schema evolution widens columns; no write path stores a changed value.

With `delta.enableTypeWidening` and schema evolution (autoMerge, mergeSchema, INSERT WITH
SCHEMA EVOLUTION), delta-spark's INSERT keeps a wider source type where it widens
automatically (TypeWidening.isTypeChangeSupportedForSchemaEvolution) and records
`delta.typeChanges`. Otherwise a value that does not fit its column fails the statement,
as Spark's ANSI store assignment does (also for DOUBLE -> FLOAT overflow, which Spark would
store as infinity, and with spark.sql.ansi.enabled=false), and nothing is committed.

Witnesses: the _delta_log JSON (schema, typeChanges, the commit files themselves), the data
files the log lists read with pyarrow against a Python model of the rows (deltalake does not
read typeWidening tables yet), and `deltalake` for tables without the feature.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from pydelta import errors
from pydelta.spark.base.pyspark_compat import pyspark_before
from tests.helpers import session_conf

pytestmark = pytest.mark.spark

AUTO_MERGE = "spark.databricks.delta.schema.autoMerge.enabled"
WIDENING = "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
BIG = 5_000_000_000


def log_files(path: str) -> dict[str, bytes]:
    """Every file of the _delta_log with its bytes: equal before and after = nothing committed."""
    log = os.path.join(path, "_delta_log")
    return {name: open(os.path.join(log, name), "rb").read() for name in sorted(os.listdir(log))
            if not name.startswith(".")}


def actions(path: str) -> list[dict]:
    out = []
    for name, data in log_files(path).items():
        if name.endswith(".json") and name[:20].isdigit():
            out += [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    return out


def field(path: str, name: str) -> dict:
    """The column `name` of the newest schema in the log."""
    schema = [a["metaData"]["schemaString"] for a in actions(path) if "metaData" in a][-1]
    return next(f for f in json.loads(schema)["fields"] if f["name"] == name)


def file_rows(path: str, columns: tuple[str, ...]) -> list[tuple]:
    """The live rows, read with pyarrow from the data files the log lists (partition values from the log)."""
    import pyarrow.parquet as pq

    live: dict[str, dict] = {}
    for a in actions(path):
        if "add" in a:
            live[a["add"]["path"]] = a["add"]
        elif "remove" in a:
            live.pop(a["remove"]["path"], None)
    rows = []
    for add in live.values():
        for row in pq.read_table(os.path.join(path, add["path"])).to_pylist():
            row.update(add["partitionValues"])
            rows.append(tuple(row.get(c) for c in columns))
    return sorted(rows, key=repr)


def dl_rows(path: str) -> list[tuple]:
    import deltalake

    t = deltalake.DeltaTable(path).to_pyarrow_table()
    return sorted(zip(*[t.column(c).to_pylist() for c in t.column_names], strict=True), key=repr)


# ---- widening ------------------------------------------------------------------------------------


def test_insert_widens_float_and_int_columns_instead_of_changing_values(spark, tmp_path):
    """The issue: 1e300 was stored as inf, 123456789.123457 as 123456792.0, BIGINT failed."""
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, f FLOAT, i INT) USING delta {WIDENING}")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (0, 1.5, 1)")
    with session_conf(spark, {AUTO_MERGE: "true"}):
        spark.sql(f"INSERT INTO delta.`{path}` SELECT 1, 1e300D, {BIG}L UNION ALL SELECT 2, -1e300D, -{BIG}L "
                  "UNION ALL SELECT 3, 123456789.123457D, 7")
    assert field(path, "f")["type"] == "double"
    assert field(path, "f")["metadata"]["delta.typeChanges"] == [{"fromType": "float", "toType": "double"}]
    assert field(path, "i")["type"] == "long"
    assert field(path, "i")["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert field(path, "id")["type"] == "integer" and "delta.typeChanges" not in field(path, "id")["metadata"]
    assert file_rows(path, ("id", "f", "i")) == sorted(
        [(0, 1.5, 1), (1, 1e300, BIG), (2, -1e300, -BIG), (3, 123456789.123457, 7)], key=repr)


def _widening_table(spark: Any, tmp_path: Any, name: str) -> str:
    path = str(tmp_path / name)
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (id INT, v INT, p STRING) USING delta PARTITIONED BY (p) "
              f"LOCATION '{path}' {WIDENING}")
    spark.sql(f"INSERT INTO {name} VALUES (1, 10, 'a'), (2, 20, 'b')")
    return path


def _new_rows(spark: Any) -> Any:
    return spark.createDataFrame([(3, BIG, "a")], "id INT, v BIGINT, p STRING")


def _by_position_rows(spark: Any) -> Any:
    """insertInto is an INSERT by position: `id` DOUBLE is cast to the INT column (not an automatic widening)."""
    return spark.createDataFrame([(3.0, BIG, "a")], "id DOUBLE, v BIGINT, p STRING")


INITIAL = [(1, 10, "a"), (2, 20, "b")]
APPENDED = sorted([*INITIAL, (3, BIG, "a")], key=repr)
FORMS = {  # form -> (session autoMerge, write, expected rows)
    "insert_overwrite": (True, lambda s, n: s.sql(f"INSERT OVERWRITE {n} SELECT 3, {BIG}L, 'a'"), [(3, BIG, "a")]),
    "replace_where": (True, lambda s, n: s.sql(f"INSERT INTO {n} REPLACE WHERE p = 'a' SELECT 3, {BIG}L, 'a'"),
                      [(2, 20, "b"), (3, BIG, "a")]),
    "column_list": (True, lambda s, n: s.sql(f"INSERT INTO {n} (v, id, p) SELECT {BIG}L, 3, 'a'"), APPENDED),
    "static_partition": (True, lambda s, n: s.sql(f"INSERT INTO {n} PARTITION (p = 'a') SELECT 3, {BIG}L"), APPENDED),
    "with_schema_evolution": (False, lambda s, n: s.sql(f"INSERT WITH SCHEMA EVOLUTION INTO {n} SELECT 3, {BIG}L, 'a'"),
                              APPENDED),
    "insert_into_api": (True, lambda s, n: _by_position_rows(s).write.insertInto(n), APPENDED),
    "insert_into_merge_option": (False, lambda s, n: _by_position_rows(s).write.option("mergeSchema", "true")
                                 .insertInto(n), APPENDED),
    "insert_into_overwrite": (True, lambda s, n: _by_position_rows(s).write.insertInto(n, overwrite=True),
                              [(3, BIG, "a")]),
    # writeTo(...).append() is a DataFrame write (no casts, as delta-spark); it widened before this fix too
    "write_to_append": (True, lambda s, n: _new_rows(s).writeTo(n).append(), APPENDED),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_every_insert_form_widens_under_schema_evolution(spark, tmp_path, form):
    auto_merge, write, expected = FORMS[form]
    name = f"widen_{form}"
    path = _widening_table(spark, tmp_path, name)
    if form == "with_schema_evolution" and pyspark_before(4, 2):  # Spark before 4.2 lacks the form
        with pytest.raises(errors.DeltaNotImplementedError, match=r"needs Spark 4\.2 or newer"):
            write(spark, name)
        assert field(path, "v")["type"] == "integer"  # nothing changed
        return
    with session_conf(spark, {AUTO_MERGE: "true"} if auto_merge else {}):
        write(spark, name)
    assert field(path, "v")["type"] == "long"
    assert field(path, "v")["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert field(path, "id")["type"] == "integer"
    assert file_rows(path, ("id", "v", "p")) == sorted(expected, key=repr)
    spark.sql(f"DROP TABLE {name}")


def test_nested_fields_widen_and_other_changes_are_cast(spark, tmp_path):
    """A struct field widens (typeChanges on the struct's field); INT -> DOUBLE is not an automatic
    widening in delta-spark, so that column keeps its type and gets the value cast."""
    path = str(tmp_path / "nested")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, s STRUCT<x: SMALLINT>, n INT) USING delta {WIDENING}")
    with session_conf(spark, {AUTO_MERGE: "true"}):
        spark.sql(f"INSERT INTO delta.`{path}` SELECT 1, named_struct('x', 100000), 7.0D")
    s = field(path, "s")
    assert s["type"]["fields"][0]["type"] == "integer"
    assert s["type"]["fields"][0]["metadata"]["delta.typeChanges"] == [{"fromType": "short", "toType": "integer"}]
    assert field(path, "n")["type"] == "integer" and "delta.typeChanges" not in field(path, "n")["metadata"]
    assert file_rows(path, ("id", "s", "n")) == [(1, {"x": 100000}, 7)]


# ---- a value that does not fit raises, nothing is committed ----------------------------------------

REFUSED = {  # case -> (table properties, session confs, statement, error class)
    "no_schema_evolution": (WIDENING, {}, "SELECT 3, {big}L, 1.0D", "CAST_OVERFLOW_IN_TABLE_INSERT"),
    "widening_disabled": ("", {AUTO_MERGE: "true"}, "SELECT 3, {big}L, 1.0D", "CAST_OVERFLOW_IN_TABLE_INSERT"),
    "not_an_automatic_widening": (WIDENING, {AUTO_MERGE: "true"}, "SELECT 3, 5e9D, 1.0D",
                                  "CAST_OVERFLOW_IN_TABLE_INSERT"),
    "double_into_float": ("", {}, "SELECT 3, 1, 1e300D", "CAST_OVERFLOW_IN_TABLE_INSERT"),
    "text_into_int": ("", {}, "SELECT 3, 'abc', 1.0D", "CAST_INVALID_INPUT"),
    "ansi_off": ("", {"spark.sql.ansi.enabled": "false"}, "SELECT 3, {big}L, 1.0D", "CAST_OVERFLOW_IN_TABLE_INSERT"),
    "ansi_off_text": ("", {"spark.sql.ansi.enabled": "false"}, "SELECT 3, '', 1.0D", "CAST_INVALID_INPUT"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_insert_of_a_value_that_does_not_fit_raises(spark, tmp_path, case):
    from pyspark.errors import PySparkException

    props, confs, query, condition = REFUSED[case]
    path = str(tmp_path / case)
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, i INT, f FLOAT) USING delta {props}")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1, 0.5)")
    before = log_files(path)
    with session_conf(spark, confs), pytest.raises(errors.DeltaCastError) as raised:
        spark.sql(f"INSERT INTO delta.`{path}` {query.format(big=BIG)}")
    assert isinstance(raised.value, PySparkException) and raised.value.getCondition() == condition
    assert log_files(path) == before
    assert file_rows(path, ("id", "i", "f")) == [(1, 1, 0.5)]


def test_every_insert_form_refuses_an_overflow(spark, tmp_path):
    """Without widening: INSERT OVERWRITE, REPLACE WHERE, column lists, static partition values,
    insertInto and nested fields all fail rather than store a changed value."""
    name = "refuse_forms"
    path = str(tmp_path / name)
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (id INT, v INT, p INT, s STRUCT<x: INT>, arr ARRAY<INT>, m MAP<STRING, FLOAT>) "
              f"USING delta PARTITIONED BY (p) LOCATION '{path}'")
    spark.sql(f"INSERT INTO {name} VALUES (1, 10, 1, named_struct('x', 1), array(1), map('k', 1.5F))")
    before, rows = log_files(path), dl_rows(path)
    statements = [
        f"INSERT OVERWRITE {name} SELECT 2, {BIG}L, 1, null, null, null",
        f"INSERT INTO {name} REPLACE WHERE p = 1 SELECT 2, {BIG}L, 1, null, null, null",
        f"INSERT INTO {name} (v, id, p) SELECT {BIG}L, 2, 1",
        f"INSERT INTO {name} PARTITION (p = '{BIG}') SELECT 2, 3, null, null, null",
        f"INSERT INTO {name} SELECT 2, 3, 1, named_struct('x', {BIG}L), null, null",
        f"INSERT INTO {name} SELECT 2, 3, 1, null, array(1L, {BIG}L), null",
        f"INSERT INTO {name} SELECT 2, 3, 1, null, null, map('k', 1e300D)",
    ]
    for statement in statements:
        with pytest.raises(errors.DeltaCastError):
            spark.sql(statement)
    big = spark.createDataFrame([(2, BIG, 1, None, None, None)],
                                "id INT, v BIGINT, p INT, s STRUCT<x: INT>, arr ARRAY<INT>, m MAP<STRING, FLOAT>")
    with pytest.raises(errors.DeltaCastError):
        big.write.insertInto(name)
    assert log_files(path) == before and dl_rows(path) == rows
    spark.sql(f"DROP TABLE {name}")


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_update_and_merge_values_that_do_not_fit_raise(spark, tmp_path, ansi):
    """UPDATE SET and MERGE assignments are cast to the column type the same way."""
    path = str(tmp_path / "dml")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, i INT, f FLOAT) USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1, 0.5), (2, 2, 1.5)")
    before, rows = log_files(path), dl_rows(path)
    spark.createDataFrame([(1, BIG, 1e300)], "id INT, big BIGINT, huge DOUBLE").createOrReplaceTempView("dml_src")
    statements = [
        f"UPDATE delta.`{path}` SET i = {BIG}L WHERE id = 1",
        f"UPDATE delta.`{path}` SET f = 1e300D WHERE id = 1",
        f"MERGE INTO delta.`{path}` t USING dml_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.i = s.big",
        f"MERGE INTO delta.`{path}` t USING dml_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.f = s.huge",
    ]
    with session_conf(spark, {"spark.sql.ansi.enabled": ansi}):
        for statement in statements:
            with pytest.raises(errors.DeltaCastError):
                spark.sql(statement)
    assert log_files(path) == before and dl_rows(path) == rows


def test_dataframe_append_of_long_into_double_is_refused(spark, tmp_path):
    """A BIGINT column appended to a DOUBLE column would be rounded above 2^53: refused (as delta-spark)."""
    path = str(tmp_path / "dbl")
    spark.createDataFrame([(1.5,)], "v DOUBLE").write.format("delta").save(path)
    before = log_files(path)
    with pytest.raises(errors.SchemaMismatchError):
        spark.createDataFrame([(2**53 + 1,)], "v BIGINT").write.format("delta").mode("append").save(path)
    assert log_files(path) == before and dl_rows(path) == [(1.5,)]
    spark.createDataFrame([(7,)], "v INT").write.format("delta").mode("append").save(path)  # INT fits exactly
    assert dl_rows(path) == [(1.5,), (7.0,)]
