"""DeltaTable.restoreToVersion / restoreToTimestamp on real Spark tables."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from pydelta.errors import DeltaIllegalArgumentError, MissingDataFileError
from pydelta.log.snapshot import load_snapshot
from pydelta.spark.maintenance.restore import RestoreMissingFilesError
from pydelta.tables import DeltaTable
from tests.spark.test_maintenance_support import (
    commit_actions,
    commit_infos,
    deltalake_rows,
    latest_version,
    set_mtime,
    spark_rows,
)

pytestmark = pytest.mark.spark

COLS = ["id", "part"]


@pytest.fixture
def history(spark, tmp_path: Path):
    """v0: ids 0..9; v1: append 10..14; v2: overwrite part=0 with 100..103 (even ids)."""
    path = str(tmp_path / "t")
    spark.range(0, 10).selectExpr("id", "cast(id % 2 as int) as part").write.format("delta") \
        .partitionBy("part").save(path)
    spark.range(10, 15).selectExpr("id", "cast(id % 2 as int) as part").write.format("delta") \
        .mode("append").save(path)
    spark.range(100, 104, 2).selectExpr("id", "cast(0 as int) as part").write.format("delta") \
        .mode("overwrite").option("replaceWhere", "part = 0").save(path)
    return path


def _rows_at(spark, path: str, version: int) -> list[tuple]:
    return spark_rows(spark.read.format("delta").option("versionAsOf", version).load(path), COLS)


def test_restore_to_version(spark, history):
    table = DeltaTable.forPath(spark, history)
    expected = _rows_at(spark, history, 0)
    v0_files = load_snapshot(history, version=0).files()
    latest_files = load_snapshot(history).files()
    result = table.restoreToVersion(0)
    assert result.columns == ["table_size_after_restore", "num_of_files_after_restore", "num_removed_files",
                              "num_restored_files", "removed_files_size", "restored_files_size"]
    row = result.collect()[0]
    v0_paths = set(v0_files.column("path").to_pylist())
    latest_paths = set(latest_files.column("path").to_pylist())
    assert row.num_of_files_after_restore == v0_files.num_rows
    assert row.table_size_after_restore == sum(v0_files.column("size").to_pylist())
    assert row.num_restored_files == len(v0_paths - latest_paths)
    assert row.num_removed_files == len(latest_paths - v0_paths)
    assert row.num_restored_files > 0 and row.num_removed_files > 0

    assert latest_version(history) == 3
    assert spark_rows(spark.read.format("delta").load(history), COLS) == expected
    assert deltalake_rows(history, COLS) == expected
    info = commit_infos(history)[3]
    assert info["operation"] == "RESTORE"
    assert info["operationParameters"] == {"version": 0, "timestamp": None}
    assert info["operationMetrics"] == {
        "numRestoredFiles": str(row.num_restored_files), "restoredFilesSize": str(row.restored_files_size),
        "numRemovedFiles": str(row.num_removed_files), "removedFilesSize": str(row.removed_files_size),
        "numOfFilesAfterRestore": str(row.num_of_files_after_restore),
        "tableSizeAfterRestore": str(row.table_size_after_restore),
    }
    actions = commit_actions(history, 3)
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    assert all(a["dataChange"] for a in adds + removes)
    assert {a["path"] for a in adds} == v0_paths - latest_paths
    # restored adds are the old add actions (stats, modificationTime kept)
    old = {r["path"]: r for r in v0_files.to_pylist()}
    for a in adds:
        assert a["stats"] == old[a["path"]]["stats"] and a["modificationTime"] == old[a["path"]]["modification_time"]
    assert any("metaData" in a for a in actions)


def test_restore_can_be_undone(spark, history):
    table = DeltaTable.forPath(spark, history)
    latest = _rows_at(spark, history, 2)
    table.restoreToVersion(1)
    assert spark_rows(table.toDF(), COLS) == _rows_at(spark, history, 1)
    table.restoreToVersion(2)  # the version before the restore
    assert spark_rows(table.toDF(), COLS) == latest
    assert deltalake_rows(history, COLS) == latest
    ops = [commit_infos(history)[v]["operation"] for v in (3, 4)]
    assert ops == ["RESTORE", "RESTORE"]


def test_restore_brings_back_the_old_schema_and_properties(spark, tmp_path: Path):
    from dataclasses import replace

    from pydelta.txn.commit_info import Operation
    from pydelta.txn.transaction import OptimisticTransaction

    path = str(tmp_path / "t")
    spark.range(0, 5).selectExpr("id").write.format("delta").save(path)
    spark.range(5, 8).selectExpr("id", "'x' as extra").write.format("delta").mode("append") \
        .option("mergeSchema", "true").save(path)
    snap = load_snapshot(path)
    txn = OptimisticTransaction(snap.table_root, snap)
    txn.update_metadata(replace(snap.metadata, configuration={**snap.metadata.configuration, "custom.key": "v"}))
    txn.commit([], Operation.set_table_properties({"custom.key": "v"}))
    table = DeltaTable.forPath(spark, path)
    assert table.snapshot().schema.field_names == ["id", "extra"]
    assert table.snapshot().configuration.get("custom.key") == "v"
    protocol_before = table.snapshot().protocol
    table.restoreToVersion(0)
    snap = table.snapshot()
    assert snap.schema.field_names == ["id"]
    assert "custom.key" not in snap.configuration
    assert snap.metadata.id == load_snapshot(path, version=0).metadata.id
    assert snap.protocol == protocol_before  # never downgraded
    assert spark_rows(table.toDF(), ["id"]) == [(i,) for i in range(5)]
    assert deltalake_rows(path, ["id"]) == [(i,) for i in range(5)]


def test_protocol_is_never_downgraded(spark, history):
    table = DeltaTable.forPath(spark, history)
    table.upgradeTableProtocol(1, 4)
    table.restoreToVersion(0)
    snap = table.snapshot()
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (1, 4)
    assert spark_rows(table.toDF(), COLS) == _rows_at(spark, history, 0)


def test_restore_to_timestamp(spark, history):
    log = Path(history) / "_delta_log"
    base = int(time.time() * 1000) - 3_600_000
    for v in range(3):  # commits one minute apart, an hour ago
        set_mtime(log / f"{v:020d}.json", base + v * 60_000)
    zone = ZoneInfo(spark.conf.get("spark.sql.session.timeZone"))
    between = datetime.fromtimestamp((base + 90_000) / 1000, tz=zone)  # after v1, before v2
    text = between.strftime("%Y-%m-%d %H:%M:%S")
    expected = _rows_at(spark, history, 1)
    DeltaTable.forPath(spark, history).restoreToTimestamp(text)
    assert spark_rows(spark.read.format("delta").load(history), COLS) == expected
    params = commit_infos(history)[3]["operationParameters"]
    assert params["version"] is None and params["timestamp"] == text + ".0"
    with pytest.raises(Exception, match="before the earliest version"):
        DeltaTable.forPath(spark, history).restoreToTimestamp("2000-01-01 00:00:00")


def test_restore_refuses_the_latest_version_and_bad_arguments(spark, history):
    table = DeltaTable.forPath(spark, history)
    with pytest.raises(DeltaIllegalArgumentError,
                       match=r"Version to restore \(2\)should be less then last available version \(2\)"):
        table.restoreToVersion(2)
    with pytest.raises(DeltaIllegalArgumentError):
        table.restoreToVersion(-1)
    from pydelta.spark.maintenance.restore import restore

    with pytest.raises(DeltaIllegalArgumentError, match="Either the version or timestamp"):
        restore(table)
    assert latest_version(history) == 2


def test_restore_fails_when_files_were_vacuumed(spark, history):
    table = DeltaTable.forPath(spark, history)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        table.vacuum(0)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    version = latest_version(history)
    with pytest.raises(MissingDataFileError, match="Not all files from version 0 are available") as e:
        table.restoreToVersion(0)
    assert isinstance(e.value, RestoreMissingFilesError) and isinstance(e.value, DeltaIllegalArgumentError)
    assert "spark.sql.files.ignoreMissingFiles" in str(e.value)
    assert latest_version(history) == version
    assert spark_rows(table.toDF(), COLS) == _rows_at(spark, history, 2)
    json.dumps(commit_infos(history))  # the log is intact


def test_restore_across_a_deletion_vector(spark, tmp_path: Path):
    from tests.spark.test_maintenance_support import delete_rows_with_dv

    path = str(tmp_path / "t")
    spark.range(0, 10).repartition(1).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    table = DeltaTable.forPath(spark, path)
    rel = table.snapshot().files().column("path").to_pylist()[0]
    delete_rows_with_dv(path, rel, [0, 5])
    assert spark_rows(table.toDF(), ["id"]) == [(i,) for i in range(10) if i not in (0, 5)]
    row = table.restoreToVersion(0).collect()[0]
    assert (row.num_restored_files, row.num_removed_files) == (1, 1)  # same path, without / with the DV
    actions = commit_actions(path, 2)
    assert [a["add"].get("deletionVector") for a in actions if "add" in a] == [None]
    assert [bool(a["remove"].get("deletionVector")) for a in actions if "remove" in a] == [True]
    assert spark_rows(table.toDF(), ["id"]) == [(i,) for i in range(10)]
    assert deltalake_rows(path, ["id"]) == [(i,) for i in range(10)]
    table.restoreToVersion(1)  # and back to the version with the DV
    assert spark_rows(table.toDF(), ["id"]) == [(i,) for i in range(10) if i not in (0, 5)]
