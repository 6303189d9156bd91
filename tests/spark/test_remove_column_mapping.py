"""Removing column mapping with ALTER TABLE SET/UNSET TBLPROPERTIES, as delta-spark's
RemoveColumnMappingCommand: one REMOVE COLUMN MAPPING commit rewrites every file with the
logical names; the result is read back by Spark, by `deltalake` and from the Parquet footers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import QueryBuilder

import pydelta
from pydelta import errors

pytestmark = pytest.mark.spark

_MAPPING_KEYS = ("delta.columnMapping.id", "delta.columnMapping.physicalName", "delta.columnMapping.nested.ids",
                 "parquet.field.id", "parquet.field.nested.ids")


def _commit(path: str, version: int) -> list[dict]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _of(actions: list[dict], kind: str) -> list[dict]:
    return [a[kind] for a in actions if kind in a]


def _plain(value, *, spark: bool = False):
    """Structs as tuples, maps as lists of (key, value): Spark gives Rows and dicts for them,
    Arrow dicts and lists of pairs."""
    if isinstance(value, dict):
        return [(k, _plain(v, spark=spark)) for k, v in value.items()] if spark else _plain(tuple(value.values()))
    if isinstance(value, list):
        return [_plain(v, spark=spark) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v, spark=spark) for v in value)
    return value


def _rows(spark, path: str) -> list[tuple]:
    return sorted((_plain(r, spark=True) for r in spark.read.format("delta").load(path).collect()), key=repr)


def _rs_rows(path: str) -> list[tuple]:
    """`deltalake`'s rows: its SQL engine (to_pyarrow_table refuses the deletionVectors reader feature)."""
    table = pa.table(QueryBuilder().register("t", RsTable(path)).execute("SELECT * FROM t").read_all())
    return sorted((_plain(r) for r in table.to_pylist()), key=repr)


def _assert_removed(spark, path: str, before: int, rows: list[tuple], *, unset: bool = False) -> dict:
    """The commit after `before` is REMOVE COLUMN MAPPING and the table reads `rows` everywhere."""
    actions = _commit(path, before + 1)
    info = _of(actions, "commitInfo")[0]
    assert info["operation"] == "REMOVE COLUMN MAPPING" and info["operationParameters"] == {}
    metadata = _of(actions, "metaData")[0]
    conf = metadata["configuration"]
    assert "delta.columnMapping.maxColumnId" not in conf
    assert (("delta.columnMapping.mode" not in conf) if unset else conf["delta.columnMapping.mode"] == "none")
    assert not any(k in json.dumps(metadata["schemaString"]) for k in _MAPPING_KEYS)
    assert not _of(actions, "protocol")  # the columnMapping feature stays
    assert pydelta.load_snapshot(path).protocol.has_feature("columnMapping")
    adds, removes = _of(actions, "add"), _of(actions, "remove")
    assert adds and removes and not any(a["dataChange"] for a in adds + removes)
    assert not any(a.get("deletionVector") for a in adds)
    logical = [f["name"] for f in json.loads(metadata["schemaString"])["fields"]
               if f["name"] not in metadata["partitionColumns"]]
    for add in adds:  # Parquet column names are the logical names, without field ids
        schema = pq.read_schema(pydelta.load_snapshot(path).absolute_path(add["path"]))
        assert schema.names == logical
        assert "PARQUET:field_id" not in schema.to_string(show_field_metadata=True)  # at any depth
    assert _rows(spark, path) == rows
    assert _rs_rows(path) == rows
    return info


def test_set_mode_none_rewrites_renamed_and_dropped_partitioned_table(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, label STRING COMMENT 'the label', gone INT, "
              "s STRUCT<a: INT, b: STRING>, p STRING) USING delta PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x', 7, named_struct('a', 1, 'b', 'u'), 'p1'), "
              "(2, 'y', 8, named_struct('a', 2, 'b', 'v'), 'p2')")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN label TO name")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN s.b TO c")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN gone")
    rows = _rows(spark, path)
    before = pydelta.load_snapshot(path).version

    assert spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')").collect() == []

    info = _assert_removed(spark, path, before, rows)
    assert pydelta.load_snapshot(path).version == before + 1
    assert info["operationMetrics"]["numRewrittenFiles"] == "2" and info["operationMetrics"]["numCopiedRows"] == "2"
    fields = {f.name: f for f in pydelta.load_snapshot(path).metadata.schema.fields}
    assert fields["name"].metadata == {"comment": "the label"}  # other metadata stays
    adds = _of(_commit(path, before + 1), "add")
    assert sorted(a["partitionValues"]["p"] for a in adds) == ["p1", "p2"]
    assert all(a["path"].startswith(("p=p1/", "p=p2/")) for a in adds)
    assert rows == [(1, "x", (1, "u"), "p1"), (2, "y", (2, "v"), "p2")]
    arrow = RsTable(path).to_pyarrow_table()
    assert arrow.column_names == ["id", "name", "s", "p"]
    assert sorted((_plain(r) for r in arrow.to_pylist()), key=repr) == rows
    spark.sql(f"INSERT INTO {t} VALUES (3, 'z', named_struct('a', 3, 'c', 'w'), 'p1')")  # still writable
    assert len(_rows(spark, path)) == 3 and len(_rs_rows(path)) == 3


def test_unset_mode_on_id_mode_table_with_deletion_vectors(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, arr ARRAY<STRUCT<x: INT>>, m MAP<STRING, STRUCT<y: INT>>) "
              "USING delta TBLPROPERTIES ('delta.columnMapping.mode' = 'id', 'delta.enableDeletionVectors' = 'true')")
    spark.range(0, 30, numPartitions=2).selectExpr(
        "id", "CAST(id AS STRING) AS v", "array(named_struct('x', CAST(id AS INT))) AS arr",
        "map('k', named_struct('y', CAST(id AS INT))) AS m").write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM {t} WHERE id % 3 = 0")
    assert any(a.get("deletionVector") for a in _of(_commit(path, 2), "add"))
    rows = _rows(spark, path)
    assert len(rows) == 20

    spark.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('delta.columnMapping.mode')")

    info = _assert_removed(spark, path, 2, rows, unset=True)
    assert info["operationMetrics"]["numDeletionVectorsRemoved"] == "2"
    assert info["operationMetrics"]["numCopiedRows"] == "20"


def test_row_ids_survive_the_rewrite(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING delta TBLPROPERTIES ("
              "'delta.columnMapping.mode' = 'name', 'delta.enableRowTracking' = 'true')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c')")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN v TO w")

    def row_ids() -> dict[int, tuple[int, int]]:
        df = spark.read.format("delta").load(path).select("id", "_metadata.row_id", "_metadata.row_commit_version")
        return {r[0]: (r[1], r[2]) for r in df.collect()}

    ids, rows = row_ids(), _rows(spark, path)
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')")
    info = _commit(path, 4)[0]["commitInfo"]
    assert info["operation"] == "REMOVE COLUMN MAPPING" and info["tags"] == {"delta.rowTracking.preserved": "true"}
    assert row_ids() == ids and _rows(spark, path) == rows


def test_invalid_names_are_refused_and_nothing_is_committed(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, `my col` STRING, s STRUCT<`x=y`: INT>) USING delta "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', named_struct('x=y', 1))")
    version = pydelta.load_snapshot(path).version
    for statement in (f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none', 'k' = 'v')",
                      f"ALTER TABLE {t} UNSET TBLPROPERTIES ('delta.columnMapping.mode')"):
        with pytest.raises(errors.DeltaAnalysisError) as e:
            spark.sql(statement)
        assert str(e.value).startswith("[DELTA_INVALID_COLUMN_NAMES_WHEN_REMOVING_COLUMN_MAPPING] Found invalid "
                                       "character(s) among ' ,;{}()\\n\\t=' in the column names of your schema. "
                                       "Invalid column names: my col, s.x=y. Column mapping cannot be removed")
        assert pydelta.load_snapshot(path).version == version
    assert pydelta.load_snapshot(path).metadata.configuration["delta.columnMapping.mode"] == "name"


def test_allow_removal_false_refuses_the_mode_change(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING delta TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    version = pydelta.load_snapshot(path).version
    spark.conf.set("spark.databricks.delta.columnMapping.allowRemoval", "false")
    try:
        for statement in (f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')",
                          f"ALTER TABLE {t} UNSET TBLPROPERTIES ('delta.columnMapping.mode')"):
            with pytest.raises(errors.DeltaAnalysisError, match=r"^\[DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE\] "
                               "Changing column mapping mode from 'name' to 'none' is not supported.$"):
                spark.sql(statement)
    finally:
        spark.conf.unset("spark.databricks.delta.columnMapping.allowRemoval")
    assert pydelta.load_snapshot(path).version == version


def test_other_properties_follow_in_a_second_commit(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING delta TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
              "'k' = 'v', 'delta.appendOnly' = 'false')")
    spark.sql(f"INSERT INTO {t} VALUES (1)")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none', 'a' = 'b')")
    _assert_removed(spark, path, 1, [(1,)])
    second = _commit(path, 3)
    assert _of(second, "commitInfo")[0]["operation"] == "SET TBLPROPERTIES"
    assert json.loads(_of(second, "commitInfo")[0]["operationParameters"]["properties"]) == {
        "delta.columnMapping.mode": "none", "a": "b"}
    assert _of(second, "metaData")[0]["configuration"] == {"delta.columnMapping.mode": "none", "k": "v",
                                                           "delta.appendOnly": "false", "a": "b"}

    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")  # and back again
    spark.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('delta.columnMapping.mode', 'k')")
    _assert_removed(spark, path, 4, [(1,)], unset=True)
    assert _of(_commit(path, 6), "commitInfo")[0]["operation"] == "UNSET TBLPROPERTIES"
    assert pydelta.load_snapshot(path).metadata.configuration == {"delta.appendOnly": "false", "a": "b"}
    assert pydelta.load_snapshot(path).version == 6


def test_mode_none_on_a_table_without_mapping_is_a_plain_property(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING delta")
    spark.sql(f"INSERT INTO {t} VALUES (1)")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')")
    actions = _commit(path, 2)
    assert _of(actions, "commitInfo")[0]["operation"] == "SET TBLPROPERTIES" and not _of(actions, "add")
    assert pydelta.load_snapshot(path).metadata.configuration == {"delta.columnMapping.mode": "none"}


def test_clustered_table_keeps_its_clustering_by_logical_name(spark, tmp_path):
    from pydelta import DeltaTable

    path, dropped = str(tmp_path / "clustered"), str(tmp_path / "dropped")
    for p in (path, dropped):
        spark.sql(f"CREATE TABLE delta.`{p}` (id BIGINT, s STRUCT<k: INT>) USING delta CLUSTER BY (s.k) "
                  "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
        spark.sql(f"INSERT INTO delta.`{p}` SELECT id, named_struct('k', CAST(id % 3 AS INT)) FROM range(12)")
        physical = json.loads(pydelta.load_snapshot(p).domain_metadata["delta.clustering"])["clusteringColumns"]
        assert physical[0][0].startswith("col-")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')")
    spark.sql(f"ALTER TABLE delta.`{dropped}` DROP FEATURE columnMapping")
    for p in (path, dropped):
        snap = pydelta.load_snapshot(p)
        assert json.loads(snap.domain_metadata["delta.clustering"]) == {"clusteringColumns": [["s", "k"]]}
        assert spark.sql(f"DESCRIBE DETAIL delta.`{p}`").first().clusteringColumns == ["s.k"]
        DeltaTable.forPath(spark, p).optimize().executeCompaction()  # clustering still runs on s.k
        assert DeltaTable.forPath(spark, p).history(1).first().operationParameters["clusterBy"] == '["s.k"]'
        assert spark.read.format("delta").load(p).where("s.k = 1").count() == 4
