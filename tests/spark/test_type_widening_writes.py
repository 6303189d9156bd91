"""Type widening on the write side (seed 002): ALTER COLUMN TYPE, mergeSchema widening, DROP FEATURE.

Witnesses: the schema JSON on disk (delta.typeChanges exactly as the RFC specifies), the data
files (none rewritten by a type change), reads of old and new files in the wider type, data
skipping on widened columns, and the protocol.
"""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from pathlib import Path

import pytest

import pydelta
from pydelta import DeltaTable, errors

pytestmark = pytest.mark.spark


def _schema(path: str) -> dict:
    return json.loads(pydelta.load_snapshot(path).metadata.schema_string)


def _field(path: str, name: str) -> dict:
    return next(f for f in _schema(path)["fields"] if f["name"] == name)


def _data_files(path: str) -> set[str]:
    return {str(p.relative_to(path)) for p in Path(path).rglob("*.parquet") if "_delta_log" not in p.parts}


def _version(path: str) -> int:
    return pydelta.load_snapshot(path).version


def _widening_table(spark, path: str, enabled: bool = True) -> None:
    # date -> timestamp_ntz needs the timestampNtz feature too (delta-spark asks for it explicitly)
    props = ("TBLPROPERTIES ('delta.enableTypeWidening' = 'true', 'delta.feature.timestampNtz' = 'supported')"
             if enabled else "")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, d DECIMAL(5,2), dt DATE, f FLOAT, arr ARRAY<SMALLINT>, "
              f"m MAP<INT, FLOAT>, st STRUCT<x: TINYINT>) USING delta {props}")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES "
              "(1, 1.25, DATE'2024-01-01', 1.5, array(1S, 2S), map(1, 0.5F), named_struct('x', 1Y)), "
              "(2, 2.50, DATE'2024-01-02', 2.5, array(3S), map(2, 1.5F), named_struct('x', 2Y))")


def test_alter_column_type_records_type_changes_without_rewriting(spark, tmp_path):
    path = str(tmp_path / "t")
    _widening_table(spark, path)
    files = _data_files(path)
    t = f"delta.`{path}`"
    for statement in ("ALTER COLUMN id TYPE BIGINT", "ALTER COLUMN d TYPE DECIMAL(8,3)",
                      "ALTER COLUMN dt TYPE TIMESTAMP_NTZ", "ALTER COLUMN f TYPE DOUBLE",
                      "ALTER COLUMN arr.element TYPE INT", "ALTER COLUMN m.key TYPE BIGINT",
                      "ALTER COLUMN m.value TYPE DOUBLE", "ALTER COLUMN st.x TYPE INT",
                      "ALTER COLUMN id TYPE DECIMAL(22,1)"):
        spark.sql(f"ALTER TABLE {t} {statement}")
    assert _data_files(path) == files  # metadata only
    snap = pydelta.load_snapshot(path)
    assert {"typeWidening"} <= set(snap.protocol.reader_features or ()) and snap.protocol.min_reader_version == 3
    assert _field(path, "id")["type"] == "decimal(22,1)"
    assert _field(path, "id")["metadata"]["delta.typeChanges"] == [
        {"toType": "long", "fromType": "integer"}, {"toType": "decimal(22,1)", "fromType": "long"}]
    assert _field(path, "d")["metadata"]["delta.typeChanges"] == [
        {"toType": "decimal(8,3)", "fromType": "decimal(5,2)"}]
    assert _field(path, "dt")["metadata"]["delta.typeChanges"] == [{"toType": "timestamp_ntz", "fromType": "date"}]
    assert _field(path, "arr")["metadata"]["delta.typeChanges"] == [
        {"toType": "integer", "fromType": "short", "fieldPath": "element"}]
    assert _field(path, "m")["metadata"]["delta.typeChanges"] == [
        {"toType": "long", "fromType": "integer", "fieldPath": "key"},
        {"toType": "double", "fromType": "float", "fieldPath": "value"}]
    inner = _field(path, "st")["type"]["fields"][0]
    assert inner["type"] == "integer" and inner["metadata"]["delta.typeChanges"] == [
        {"toType": "integer", "fromType": "byte"}]
    history = DeltaTable.forPath(spark, path).history(1).first()
    assert history.operation == "CHANGE COLUMN"
    # Old files read in the wide types; new rows use the full range.
    spark.sql(f"INSERT INTO {t} VALUES (12345678901234567890.5, 3.125, TIMESTAMP_NTZ'2024-01-03 10:00:00', 1e300, "
              "array(100000), map(5000000000, 1e200), named_struct('x', 70000))")
    rows = {r.id: r for r in spark.read.format("delta").load(path).collect()}
    assert set(rows) == {Decimal("1.0"), Decimal("2.0"), Decimal("12345678901234567890.5")}
    old = rows[Decimal("1.0")]
    assert old.d == Decimal("1.250") and old.dt == datetime.datetime(2024, 1, 1) and old.f == 1.5
    assert old.arr == [1, 2] and old.m == {1: 0.5} and old.st.x == 1
    # Skipping on widened columns stays right with old files' stats in the old types.
    assert [r.id for r in spark.sql(f"SELECT id FROM {t} WHERE id > 100").collect()] == [
        Decimal("12345678901234567890.5")]
    assert sorted(r.id for r in spark.sql(f"SELECT id FROM {t} WHERE dt < TIMESTAMP_NTZ'2024-01-02 12:00:00'")
                  .collect()) == [Decimal("1.0"), Decimal("2.0")]
    assert [r.id for r in spark.sql(f"SELECT id FROM {t} WHERE d = 2.5").collect()] == [Decimal("2.0")]


def _refused(spark, path: str, statement: str, match: str) -> None:
    before = _version(path)
    with pytest.raises(errors.DeltaAnalysisError, match=match):
        spark.sql(statement)
    assert _version(path) == before


def test_unsupported_type_changes_are_refused(spark, tmp_path):
    off = str(tmp_path / "off")
    _widening_table(spark, off, enabled=False)
    _refused(spark, off, f"ALTER TABLE delta.`{off}` ALTER COLUMN id TYPE BIGINT",
             "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP.*delta.enableTypeWidening")
    path = str(tmp_path / "t")
    _widening_table(spark, path)
    t = f"delta.`{path}`"
    for change in ("id TYPE SMALLINT", "id TYPE STRING", "d TYPE DECIMAL(5,3)", "id TYPE DECIMAL(9,0)",
                   "f TYPE DECIMAL(20,2)", "arr.element TYPE TINYINT"):
        _refused(spark, path, f"ALTER TABLE {t} ALTER COLUMN {change}", "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP")
    spark.sql(f"ALTER TABLE {t} ADD CONSTRAINT small CHECK (id < 1000)")
    _refused(spark, path, f"ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT", "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE")


def test_merge_schema_writes_widen_when_enabled(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, v SMALLINT) USING delta "
              "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1S)")
    wide = spark.createDataFrame([(2, 5_000_000_000)], "id INT, v BIGINT")
    with pytest.raises(errors.SchemaMismatchError):
        wide.write.format("delta").mode("append").save(path)  # no schema evolution: refused
    wide.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    assert _field(path, "v")["type"] == "long"
    assert _field(path, "v")["metadata"]["delta.typeChanges"] == [{"toType": "long", "fromType": "short"}]
    assert sorted((r.id, r.v) for r in spark.read.format("delta").load(path).collect()) == [(1, 1), (2, 5_000_000_000)]
    # Not enabled: mergeSchema does not widen.
    other = str(tmp_path / "off")
    spark.sql(f"CREATE TABLE delta.`{other}` (id INT, v SMALLINT) USING delta")
    with pytest.raises(errors.SchemaMismatchError):
        wide.write.format("delta").mode("append").option("mergeSchema", "true").save(other)


def test_drop_type_widening_rewrites_old_files(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, v SMALLINT, p INT) USING delta PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1S, 0), (2, 2S, 1)")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN v TYPE INT")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 100000, 0)")  # written in the new type: kept
    before = {p for p in _data_files(path)}
    spark.sql(f"ALTER TABLE delta.`{path}` DROP FEATURE typeWidening")
    snap = pydelta.load_snapshot(path)
    assert not snap.protocol.has_feature("typeWidening")
    assert "delta.typeChanges" not in _field(path, "v")["metadata"]
    live = set(snap.files().column("path").to_pylist())
    assert len(live & before) == 1  # only the file written after the change survives unrewritten
    import pyarrow.parquet as pq

    for p in live:
        assert str(pq.read_schema(snap.absolute_path(p)).field("v").type) == "int32"
    assert sorted((r.id, r.v, r.p) for r in spark.read.format("delta").load(path).collect()) == [
        (1, 1, 0), (2, 2, 1), (3, 100000, 0)]
    import deltalake

    assert sorted(deltalake.DeltaTable(path).to_pyarrow_table().column("v").to_pylist()) == [1, 2, 100000]


def test_merge_with_schema_evolution_widens_star_assignments(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, v INT) USING delta "
              "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 10), (2, 20)")
    files = _data_files(path)
    source = spark.createDataFrame([(2, 5_000_000_000), (3, 7)], "id INT, v BIGINT")
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().withSchemaEvolution().execute())
    assert _field(path, "v")["type"] == "long"
    assert _field(path, "v")["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert sorted((r.id, r.v) for r in spark.read.format("delta").load(path).collect()) == [
        (1, 10), (2, 5_000_000_000), (3, 7)]
    assert files & _data_files(path)  # the untouched file was not rewritten, it reads upcast


def test_merge_with_schema_evolution_widens_explicit_source_assignments(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, v SMALLINT, w INT) USING delta "
              "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 10, 1), (2, 20, 2)")
    source = spark.createDataFrame([(2, 100_000, 5), (3, 7, 6)], "id INT, amount INT, w BIGINT")
    source.createOrReplaceTempView("widen_src")
    spark.sql(f"""MERGE WITH SCHEMA EVOLUTION INTO delta.`{path}` t USING widen_src s ON t.id = s.id
                  WHEN MATCHED THEN UPDATE SET t.v = s.amount, w = s.w + 0
                  WHEN NOT MATCHED THEN INSERT (id, v, w) VALUES (s.id, s.amount, 1)""")
    assert _field(path, "v")["type"] == "integer"  # SET v = s.amount: a source column, wider
    assert _field(path, "v")["metadata"]["delta.typeChanges"] == [{"fromType": "short", "toType": "integer"}]
    assert _field(path, "w")["type"] == "integer"  # an expression does not widen (its value is cast)
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == [
        (1, 10, 1), (2, 100_000, 5), (3, 7, 1)]
