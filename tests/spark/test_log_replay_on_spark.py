"""Log replay as a Spark job (spark/base/log_replay.py) gives the driver replay's state exactly."""

from __future__ import annotations

import json

import pytest

import pydelta
from pydelta import DeltaTable
from pydelta.log.segment import build_segment
from pydelta.log.snapshot import Snapshot
from pydelta.log.storage import LocalStorage
from pydelta.spark.base.log_replay import MIN_BYTES_CONF, replay_segment_on_spark
from tests.golden_paths import DELTA_RS, DELTA_SPARK

pytestmark = pytest.mark.spark


def _sorted_files(table):
    return sorted(table.to_pylist(), key=lambda row: json.dumps(row, sort_keys=True, default=str))


def _same_state(spark, path: str) -> Snapshot:
    storage = LocalStorage()
    driver = pydelta.load_snapshot(path)
    segment = build_segment(storage, driver.table_root)
    state = replay_segment_on_spark(spark, storage, driver.table_root, segment)
    on_spark = Snapshot(driver.table_root, storage, segment, state)
    assert on_spark.version == driver.version
    assert on_spark.protocol == driver.protocol and on_spark.metadata == driver.metadata
    assert _sorted_files(on_spark.files()) == _sorted_files(driver.files())
    assert _sorted_files(on_spark.tombstones()) == _sorted_files(driver.tombstones())
    assert on_spark._state.txns == driver._state.txns and on_spark._state.domains == driver._state.domains
    return on_spark


def test_checkpoint_commits_removes_dvs_txns_and_domains(spark, tmp_path):
    path = str(tmp_path / "t")
    (spark.range(0, 300, numPartitions=3).selectExpr("id", "CAST(id % 3 AS INT) AS p").write.format("delta")
     .partitionBy("p").option("delta.enableDeletionVectors", "true").option("delta.enableRowTracking", "true")
     .save(path))
    table = DeltaTable.forPath(spark, path)
    table.delete("id % 10 = 0")  # deletion vectors: remove + add of the same path
    spark.range(300, 310).selectExpr("id", "1 AS p").write.format("delta").mode("append") \
        .option("txnAppId", "app").option("txnVersion", 7).save(path)
    pydelta.load_snapshot(path)  # no checkpoint yet: commits only
    _same_state(spark, path)
    from pydelta.log.checkpoint_writer import write_checkpoint

    write_checkpoint(pydelta.load_snapshot(path))
    table.update("id = 5", {"id": "-5"})
    table.optimize().executeCompaction()  # removes after the checkpoint
    state = _same_state(spark, path)
    assert state.num_files >= 1 and state._state.txns["app"].version == 7


def test_v2_checkpoint_with_sidecars_and_later_commits(spark, tmp_path):
    from pydelta.log.checkpoint_writer import write_checkpoint

    path = str(tmp_path / "t")
    (spark.range(0, 400, numPartitions=4).selectExpr("id", "CAST(id % 2 AS INT) AS p").write.format("delta")
     .partitionBy("p").option("delta.checkpointPolicy", "v2").option("delta.enableDeletionVectors", "true")
     .save(path))
    table = DeltaTable.forPath(spark, path)
    table.delete("id % 7 = 0")
    spark.range(400, 410).selectExpr("id", "0 AS p").write.format("delta").mode("append") \
        .option("txnAppId", "app").option("txnVersion", 3).save(path)
    write_checkpoint(pydelta.load_snapshot(path), parts=3)  # a Parquet top-level file and three sidecars
    segment = build_segment(LocalStorage(), pydelta.load_snapshot(path).table_root)
    assert segment.checkpoint is not None and segment.checkpoint.kind == "v2"
    table.delete("id < 50")  # removes after the checkpoint
    state = _same_state(spark, path)
    assert state._state.txns["app"].version == 3
    assert spark.read.format("delta").load(path).count() == 410 - len([i for i in range(400) if i % 7 == 0 or i < 50])


def test_missing_sidecar_is_reported(spark, tmp_path):
    import glob
    import os

    from pydelta.errors import MissingDataFileError
    from pydelta.log.checkpoint_writer import write_checkpoint

    path = str(tmp_path / "t")
    spark.range(0, 10).write.format("delta").option("delta.checkpointPolicy", "v2").save(path)
    snapshot = pydelta.load_snapshot(path)
    write_checkpoint(snapshot)
    segment = build_segment(LocalStorage(), snapshot.table_root)
    sidecars = glob.glob(os.path.join(path, "_delta_log", "_sidecars", "*.parquet"))
    assert sidecars
    for sidecar in sidecars:
        os.remove(sidecar)
    with pytest.raises(MissingDataFileError, match="sidecar"):
        replay_segment_on_spark(spark, LocalStorage(), snapshot.table_root, segment)


@pytest.mark.parametrize("name", [
    "v2-checkpoint-json", "v2-checkpoint-parquet", "dv-partitioned-with-checkpoint", "log-replay-dv-key-cases",
    "log-replay-special-characters", "canonicalized-paths-special-a", "canonicalized-paths-special-b",
    "log-replay-special-characters-a", "multi-part-checkpoint", "delete-re-add-same-file-different-transactions",
    "basic-with-inserts-deletes-checkpoint",
])
def test_golden_tables(spark, name):
    import os

    path = os.path.join(DELTA_SPARK, name)
    if os.path.isdir(os.path.join(path, "delta")):
        path = os.path.join(path, "delta")
    assert os.path.isdir(os.path.join(path, "_delta_log")), f"golden table {name} missing"
    _same_state(spark, path)


@pytest.mark.parametrize("name", ["checkpoint-v2-table", "delta-1.2.1-only-struct-stats",
                                  "delta-checkpoint-stats-optional"])
def test_delta_rs_golden_tables(spark, name):
    import os

    path = os.path.join(DELTA_RS, name)
    assert os.path.isdir(os.path.join(path, "_delta_log")), f"golden table {name} missing"
    _same_state(spark, path)


def test_load_snapshot_switches_to_spark_above_the_threshold(spark, tmp_path):
    """Each session's engine replays by its own threshold (a second session of the process
    keeps the default); the log core's own `load_snapshot` has no engine and replays here."""
    path = str(tmp_path / "t")
    spark.range(0, 20, numPartitions=4).write.format("delta").save(path)
    import pydelta.spark.base.log_replay as log_replay

    calls = []
    original = log_replay.replay_segment_on_spark

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    other = pydelta.enable(spark.newSession())
    log_replay.replay_segment_on_spark = counting
    spark.conf.set(MIN_BYTES_CONF, "1")
    try:
        assert other.read.format("delta").load(path).count() == 20
        assert not calls  # the other session's threshold: the default
        assert pydelta.load_snapshot(path).num_files == 4 and not calls  # no engine: the driver replays
        assert spark.read.format("delta").load(path).count() == 20
        assert calls
    finally:
        spark.conf.unset(MIN_BYTES_CONF)
        log_replay.replay_segment_on_spark = original
