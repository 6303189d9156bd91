"""DeltaTable.vacuum on real Spark tables: what is deleted, what is kept, history, time travel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pydelta.errors import DeltaIllegalArgumentError, MissingDataFileError
from pydelta.spark.maintenance.vacuum import vacuum, vacuum_dry_run
from pydelta.tables import DeltaTable
from tests.spark.test_maintenance_support import (
    commit_infos,
    data_files_on_disk,
    deltalake_rows,
    latest_version,
    live_paths,
    now_ms,
    set_mtime,
    spark_rows,
)

pytestmark = pytest.mark.spark

DAY_MS = 86_400_000
CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
COLS = ["id", "part"]


@pytest.fixture
def overwritten(spark, tmp_path: Path):
    """v0: ids 0..29, v1: overwrite with ids 100..119 (v0's files tombstoned now)."""
    path = str(tmp_path / "t")
    spark.range(0, 30).selectExpr("id", "cast(id % 2 as int) as part").repartition(2) \
        .write.format("delta").partitionBy("part").save(path)
    spark.range(100, 120).selectExpr("id", "cast(id % 2 as int) as part").repartition(1) \
        .write.format("delta").mode("overwrite").partitionBy("part").save(path)
    return path


@pytest.fixture
def no_check(spark):
    spark.conf.set(CHECK, "false")
    yield
    spark.conf.unset(CHECK)


def test_default_retention_keeps_recently_removed_files(spark, overwritten):
    before = data_files_on_disk(overwritten)
    table = DeltaTable.forPath(spark, overwritten)
    result = table.vacuum()
    assert result.columns == [] and result.count() == 0  # delta-spark's python API: an empty DataFrame
    assert data_files_on_disk(overwritten) == before
    infos = commit_infos(overwritten)
    assert [infos[v]["operation"] for v in (2, 3)] == ["VACUUM START", "VACUUM END"]
    assert infos[2]["operationParameters"] == {"retentionCheckEnabled": True, "defaultRetentionMillis": 604800000}
    assert infos[2]["operationMetrics"] == {"numFilesToDelete": "0", "sizeOfDataToDelete": "0"}
    assert infos[3]["operationParameters"] == {"status": "COMPLETED"}
    assert infos[3]["operationMetrics"] == {"numDeletedFiles": "0", "numVacuumedDirectories": "3"}
    # time travel to v0 still works: its files were kept
    assert spark.read.format("delta").option("versionAsOf", 0).load(overwritten).count() == 30


def test_vacuum_deletes_expired_files_and_time_travel_then_fails(spark, overwritten, no_check):
    live = live_paths(overwritten)
    old = data_files_on_disk(overwritten) - live
    assert old and live
    table = DeltaTable.forPath(spark, overwritten)
    assert vacuum_dry_run(table, 0) == sorted(old)
    v_before = latest_version(overwritten)
    table.vacuum(0)
    assert data_files_on_disk(overwritten) == live
    infos = commit_infos(overwritten)
    start, end = infos[v_before + 1], infos[v_before + 2]
    assert start["operation"] == "VACUUM START"
    assert start["operationParameters"] == {
        "retentionCheckEnabled": False, "defaultRetentionMillis": 604800000, "specifiedRetentionMillis": 0,
    }
    assert start["operationMetrics"]["numFilesToDelete"] == str(len(old))
    assert int(start["operationMetrics"]["sizeOfDataToDelete"]) > 0
    assert end["operation"] == "VACUUM END"
    assert end["operationMetrics"] == {"numDeletedFiles": str(len(old)), "numVacuumedDirectories": "3"}
    # the current version reads the same rows, in Spark and in deltalake
    expected = [(i, i % 2) for i in range(100, 120)]
    assert spark_rows(spark.read.format("delta").load(overwritten), COLS) == expected
    assert deltalake_rows(overwritten, COLS) == expected
    # the vacuumed version is gone for time travel
    with pytest.raises(MissingDataFileError):
        spark.read.format("delta").option("versionAsOf", 0).load(overwritten).collect()


def test_retention_check_refuses_short_retention(spark, overwritten):
    table = DeltaTable.forPath(spark, overwritten)
    before = data_files_on_disk(overwritten)
    version = latest_version(overwritten)
    with pytest.raises(DeltaIllegalArgumentError,
                       match="Are you sure you would like to vacuum files with such a low retention period"):
        table.vacuum(1)
    with pytest.raises(DeltaIllegalArgumentError, match="low retention period"):
        vacuum_dry_run(table, 0.2)
    assert data_files_on_disk(overwritten) == before
    assert latest_version(overwritten) == version  # nothing committed
    table.vacuum(168)  # exactly the table's retention is fine
    assert data_files_on_disk(overwritten) == before


def test_dry_run_lists_without_deleting_or_committing(spark, overwritten):
    table = DeltaTable.forPath(spark, overwritten)
    before = data_files_on_disk(overwritten)
    version = latest_version(overwritten)
    future = now_ms() + 8 * DAY_MS  # a week and a day later, every tombstone has expired
    paths = vacuum_dry_run(table, now_ms=future)
    assert sorted(paths) == sorted(before - live_paths(overwritten))
    df = vacuum(table, dry_run=True, now_ms=future)
    assert df.columns == ["path"]
    assert sorted(r.path for r in df.collect()) == sorted(f"file:{p}" for p in paths)
    assert data_files_on_disk(overwritten) == before
    assert latest_version(overwritten) == version
    # and the real run at that time deletes exactly those
    vacuum(table, now_ms=future)
    assert data_files_on_disk(overwritten) == live_paths(overwritten)


def test_untracked_files_age_by_modification_time(spark, tmp_path: Path):
    path = tmp_path / "t"
    spark.range(0, 10).write.format("delta").save(str(path))
    old = path / "orphan-old.parquet"
    new = path / "orphan-new.parquet"
    hidden = path / "_hidden" / "orphan.parquet"
    for p in (old, new, hidden):
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"not really parquet")
    set_mtime(old, now_ms() - 8 * DAY_MS)
    set_mtime(hidden, now_ms() - 8 * DAY_MS)
    (path / "empty_dir").mkdir()
    table = DeltaTable.forPath(spark, str(path))
    table.vacuum()
    assert not old.exists() and new.exists() and hidden.exists()
    assert not (path / "empty_dir").exists()
    end = commit_infos(path)[latest_version(path)]
    assert end["operationMetrics"]["numDeletedFiles"] == "2"  # the old orphan and the empty directory
    assert spark_rows(table.toDF(), ["id"]) == [(i,) for i in range(10)]


def test_logging_can_be_switched_off(spark, overwritten, no_check):
    spark.conf.set("spark.databricks.delta.vacuum.logging.enabled", "false")
    try:
        version = latest_version(overwritten)
        DeltaTable.forPath(spark, overwritten).vacuum(0)
        assert latest_version(overwritten) == version
        assert data_files_on_disk(overwritten) == live_paths(overwritten)
    finally:
        spark.conf.unset("spark.databricks.delta.vacuum.logging.enabled")


def test_vacuum_keeps_deletion_vector_files_of_live_files(spark, tmp_path: Path, no_check):
    from tests.spark.test_maintenance_support import delete_rows_with_dv

    path = str(tmp_path / "t")
    spark.range(0, 20).repartition(1).write.format("delta") \
        .option("delta.enableDeletionVectors", "true").save(path)
    table = DeltaTable.forPath(spark, path)
    rel = table.snapshot().files().column("path").to_pylist()[0]
    delete_rows_with_dv(path, rel, [0, 1, 2])
    dv_files = {str(p) for p in Path(path).glob("deletion_vector_*.bin")}
    assert len(dv_files) == 1
    table.vacuum(0)
    assert {str(p) for p in Path(path).glob("deletion_vector_*.bin")} == dv_files
    assert os.path.exists(live_paths(path).pop())
    assert spark_rows(table.toDF(), ["id"]) == [(i,) for i in range(3, 20)]
    assert deltalake_rows(path, ["id"]) == [(i,) for i in range(3, 20)]


def test_vacuum_protocol_check(spark, tmp_path: Path):
    """The writer must support every feature of the table (vacuumProtocolCheck tables included)."""
    from pydelta.errors import UnsupportedFeatureError
    from tests.log.test_checkpoint_writer import TableBuilder, field

    ok = tmp_path / "ok"
    TableBuilder(ok, [field("id", "long")], protocol={
        "minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["vacuumProtocolCheck"], "writerFeatures": ["vacuumProtocolCheck"],
    })
    stray = ok / "stray.parquet"
    stray.write_bytes(b"x")
    set_mtime(stray, now_ms() - 8 * DAY_MS)
    DeltaTable.forPath(spark, str(ok)).vacuum()
    assert not stray.exists()

    refused = tmp_path / "refused"
    TableBuilder(refused, [field("id", "long")], protocol={
        "minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["vacuumProtocolCheck"], "writerFeatures": ["vacuumProtocolCheck", "someFutureWriterFeature"],
    })
    stray = refused / "stray.parquet"
    stray.write_bytes(b"x")
    set_mtime(stray, now_ms() - 8 * DAY_MS)
    table = DeltaTable.forPath(spark, str(refused))
    with pytest.raises(UnsupportedFeatureError, match="someFutureWriterFeature"):
        table.vacuum()
    with pytest.raises(UnsupportedFeatureError):
        vacuum_dry_run(table)
    assert stray.exists() and latest_version(refused) == 0
