"""UniForm (Iceberg): every pydelta commit on a table with `delta.universalFormat.enabledFormats =
iceberg` leaves Iceberg metadata that pyiceberg (an independent reader) reads with the same rows
and schema as pydelta, at every converted version; commits made without conversion are caught
up by the next one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyiceberg.table import StaticTable

import pydelta
from pydelta import errors
from pydelta.log.storage import LocalStorage
from pydelta.txn.transaction import OptimisticTransaction
from pydelta.uniform.iceberg_converter import DELTA_VERSION, latest_metadata_location

pytestmark = pytest.mark.spark

UNIFORM = ("'delta.enableIcebergCompatV2' = 'true', 'delta.universalFormat.enabledFormats' = 'iceberg'")


def _iceberg(path: str) -> StaticTable:
    """The table as an Iceberg reader finds it (pyiceberg follows metadata/version-hint.text)."""
    return StaticTable.from_metadata(path)


def _rows(arrow) -> list[tuple]:
    return sorted(tuple(r.values()) for r in arrow.to_pylist())


def _delta_rows(spark, path: str, version: int | None = None) -> list[tuple]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(path).collect())


def test_every_commit_reads_the_same_in_iceberg(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"""CREATE TABLE delta.`{path}` (id BIGINT, name STRING, d DATE, p STRING) USING delta
                  PARTITIONED BY (p) TBLPROPERTIES ({UNIFORM})""")
    statements = [
        f"INSERT INTO delta.`{path}` VALUES (1, 'a', DATE'2024-01-01', 'x'), (2, 'b', NULL, 'y'), (3, NULL, NULL, 'x')",
        f"INSERT INTO delta.`{path}` VALUES (4, 'd', DATE'2024-02-29', NULL)",
        f"UPDATE delta.`{path}` SET name = 'u' WHERE id = 3",
        f"DELETE FROM delta.`{path}` WHERE p = 'y'",
        f"OPTIMIZE delta.`{path}`",
        f"ALTER TABLE delta.`{path}` ADD COLUMNS (extra DOUBLE)",
        f"INSERT INTO delta.`{path}` VALUES (5, 'e', NULL, 'x', 2.5)",
    ]
    for statement in statements:
        spark.sql(statement)
    latest = pydelta.load_snapshot(path).version
    table = _iceberg(path)
    assert table.metadata.format_version == 2
    assert table.properties[DELTA_VERSION] == str(latest)
    assert [f.name for f in table.schema().fields] == ["id", "name", "d", "p", "extra"]
    assert _rows(table.scan().to_arrow()) == _delta_rows(spark, path)
    # one Iceberg snapshot per Delta commit that changed files, each reading as its Delta version
    operations = [s.summary.operation.value for s in table.snapshots()]
    assert operations == ["append", "append", "overwrite", "delete", "replace", "append"]
    changed = [v for v in range(1, latest + 1) if v != 6]  # version 6 (ADD COLUMNS) changed no file
    for snapshot, version in zip(table.snapshots(), changed, strict=True):
        ours = _delta_rows(spark, path, version)
        theirs = _rows(table.scan(snapshot_id=snapshot.snapshot_id).to_arrow())
        width = len(theirs[0]) if theirs else 0
        assert theirs == [r[:width] for r in ours], f"Iceberg snapshot of Delta version {version}"
    # partition pruning and statistics work on the Iceberg side
    assert _rows(table.scan(row_filter="p = 'x'").to_arrow()) == [r for r in _delta_rows(spark, path) if r[3] == "x"]
    assert len(list(table.scan(row_filter="id > 100").plan_files())) == 0
    # the metadata files are where delta-spark's converter puts them
    metadata = Path(path) / "metadata"
    assert (metadata / "version-hint.text").read_text() == Path(latest_metadata_location(LocalStorage(), path)).name
    # one metadata file per Delta version, the CREATE's included (a table with no snapshot yet)
    assert sorted(p.name[:5] for p in metadata.glob("*.metadata.json")) == [f"{n:05d}" for n in range(latest + 1)]


def test_commits_without_conversion_are_caught_up(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta TBLPROPERTIES ({UNIFORM})")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b')")
    # two commits by a writer that does not convert (the log core with its post-commit work off)
    snap = pydelta.load_snapshot(path)
    add = json.loads(next(line for line in (Path(path) / "_delta_log" / f"{1:020d}.json").read_text().splitlines()
                          if line.startswith('{"add"')))["add"]
    txn = OptimisticTransaction(path, snap, post_commit_hooks=False)
    txn.commit([{"remove": {"path": add["path"], "dataChange": True, "deletionTimestamp": 1}}], "DELETE")
    assert _iceberg(path).properties[DELTA_VERSION] == "1"  # not converted
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 'c')")
    table = _iceberg(path)
    assert table.properties[DELTA_VERSION] == "3" and table.properties["base-delta-version"] == "1"
    assert [s.summary.operation.value for s in table.snapshots()] == ["append", "delete", "append"]
    rows = _delta_rows(spark, path)
    assert (3, "c") in rows and len(rows) < 3  # the removed file took one or both of the first rows
    assert _rows(table.scan().to_arrow()) == rows


def test_enabling_on_a_table_with_history_converts_it_whole(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta "
              "TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1), (2)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3)")
    assert not (Path(path) / "metadata").exists()
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.universalFormat.enabledFormats' = 'iceberg')")
    table = _iceberg(path)
    assert table.properties[DELTA_VERSION] == "3"
    assert [s.summary.operation.value for s in table.snapshots()] == ["append"]
    assert _rows(table.scan().to_arrow()) == [(1,), (2,), (3,)]


def test_uniform_needs_iceberg_compat(spark, tmp_path):
    path = str(tmp_path / "t")
    with pytest.raises(errors.IcebergCompatViolationError) as e:
        spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta "
                  "TBLPROPERTIES ('delta.universalFormat.enabledFormats' = 'iceberg')")
    assert e.value.error_class == "DELTA_UNIVERSAL_FORMAT_VIOLATION.ICEBERG_COMPAT_REQUIRED"
    assert not (Path(path) / "_delta_log").exists() or not list((Path(path) / "_delta_log").glob("*.json"))


def test_a_converter_that_loses_its_metadata_number_converts_on_top_of_the_winner(spark, tmp_path):
    """Two converters at once: the metadata file of number N is created only if absent, so the
    one that finds it taken starts again from it (here the rival's file is put there first)."""
    import shutil
    import uuid

    from pydelta.uniform.iceberg_converter import convert

    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta TBLPROPERTIES ({UNIFORM})")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1)")
    snap = pydelta.load_snapshot(path)
    txn = OptimisticTransaction(path, snap, post_commit_hooks=False)
    txn.commit([], "WRITE")  # a commit nobody converted
    metadata = Path(path) / "metadata"
    newest = Path(latest_metadata_location(LocalStorage(), path))
    assert newest.name.startswith("00001-")
    # the rival took number 2 first (its file: a valid metadata, still at Delta version 1)
    rival = metadata / f"00002-{uuid.uuid5(uuid.NAMESPACE_URL, f'delta-uniform:{snap.metadata.id}/2')}.metadata.json"
    shutil.copy(newest, rival)
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (2)")  # version 3: its conversion loses number 2, writes 3
    assert sorted(p.name[:5] for p in metadata.glob("*.metadata.json")) == ["00000", "00001", "00002", "00003"]
    table = _iceberg(path)
    assert table.properties[DELTA_VERSION] == "3" and (metadata / "version-hint.text").read_text().startswith("00003-")
    assert _rows(table.scan().to_arrow()) == [(1,), (2,)]
    assert convert(pydelta.load_snapshot(path)) is None  # converted already: nothing to do


def test_the_command_line_says_where_the_iceberg_metadata_is(spark, tmp_path):
    import subprocess
    import sys

    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta TBLPROPERTIES ({UNIFORM})")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1)")
    out = subprocess.run([sys.executable, "-m", "pydelta.cli", "describe", path, "--json"],
                         capture_output=True, text=True, check=True).stdout
    info = json.loads(out)
    assert info["icebergConvertedVersion"] == 1
    assert info["icebergMetadataLocation"] == latest_metadata_location(LocalStorage(), path)
    assert StaticTable.from_metadata(info["icebergMetadataLocation"]).properties[DELTA_VERSION] == "1"
