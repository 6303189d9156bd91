"""DROP FEATURE in the log core (pydelta.txn.drop_feature): real tables, deltalake as witness."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import DeltaAnalysisError, DeltaTableFeatureError
from pydelta.log.checkpoint_writer import write_checkpoint
from pydelta.protocol.actions import Protocol
from pydelta.txn.drop_feature import PROTECTION_VERSION_KEY, drop_feature
from pydelta.txn.transaction import Operation, OptimisticTransaction

from .writers import append, create_table, deltalake_rows, rows_of

TWO_DAYS_MS = 2 * 86_400_000


def _later() -> int:
    return int(time.time() * 1000) + TWO_DAYS_MS


def _table(tmp_path: Path, configuration: dict[str, str]) -> str:
    root = str(tmp_path / "t")
    create_table(root, configuration=configuration)
    append(root, [{"id": 1, "part": "a", "value": "x"}, {"id": 2, "part": "a", "value": "y"}])
    append(root, [{"id": 3, "part": "b", "value": "z"}])
    return root


def _history(root: str) -> list[dict]:
    """commitInfo of every retained version, oldest first."""
    from pydelta.log.history import history

    return [e.commit_info for e in reversed(history(pydelta.load_snapshot(root)))]


def _operations(root: str) -> list[str]:
    return [c["operation"] for c in _history(root)]


def _check_readers_agree(root: str) -> None:
    version, rows = deltalake_rows(root)
    assert version == pydelta.load_snapshot(root).version
    assert sorted(rows, key=repr) == rows_of(root)


def test_writer_feature_drops_in_one_commit_and_normalizes(tmp_path: Path) -> None:
    root = _table(tmp_path, {"delta.enableInCommitTimestamps": "true"})
    before = pydelta.load_snapshot(root)
    assert "inCommitTimestamp" in (before.protocol.writer_features or ())
    version = drop_feature(root, "inCommitTimestamp")
    after = pydelta.load_snapshot(root)
    assert after.version == version == before.version + 2  # UNSET TBLPROPERTIES, then DROP FEATURE
    assert after.protocol == Protocol(1, 2)  # (1,7,[appendOnly, inCommitTimestamp, invariants]) normalized
    assert after.metadata.configuration["delta.enableInCommitTimestamps"] == "false"
    assert not any(k.startswith("delta.inCommitTimestampEnablement") for k in after.metadata.configuration)
    assert _operations(root)[-2:] == ["UNSET TBLPROPERTIES", "DROP FEATURE"]
    last = _history(root)[-1]
    assert last["operationParameters"] == {"featureName": "inCommitTimestamp", "truncateHistory": False}
    assert "checkpointProtection" not in (after.protocol.writer_features or ())
    _check_readers_agree(root)
    append(root, [{"id": 4, "part": "c", "value": "w"}])  # still writable
    assert len(rows_of(root)) == 4


def test_check_constraints_must_be_dropped_first(tmp_path: Path) -> None:
    root = _table(tmp_path, {"delta.constraints.positive": "id > 0"})
    before = pydelta.load_snapshot(root)
    assert before.protocol == Protocol(1, 3)
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE.*positive"):
        drop_feature(root, "checkConstraints")
    assert pydelta.load_snapshot(root).version == before.version
    snap = pydelta.load_snapshot(root)
    conf = {k: v for k, v in snap.metadata.configuration.items() if not k.startswith("delta.constraints.")}
    txn = OptimisticTransaction(root, snap)
    from dataclasses import replace

    txn.update_metadata(replace(snap.metadata, configuration=conf))
    txn.commit([], Operation("DROP CONSTRAINT", {"name": "positive"}))
    drop_feature(root, "checkConstraints")
    assert pydelta.load_snapshot(root).protocol == Protocol(1, 2)
    _check_readers_agree(root)


@pytest.mark.parametrize(
    ("feature", "truncate", "error_class"),
    [
        ("deletionVectors", False, "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"),
        ("appendOnly", False, "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE"),
        ("invariants", False, "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE"),
        ("noSuchFeature", False, "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE"),
        ("delta.appendOnly", False, "DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY"),
        ("inCommitTimestamp", True, "DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED"),
        ("checkpointProtection", False, "DELTA_FEATURE_CAN_ONLY_DROP_CHECKPOINT_PROTECTION_WITH_HISTORY_TRUNCATION"),
    ],
)
def test_refusals_leave_the_table_as_it_was(tmp_path: Path, feature: str, truncate: bool, error_class: str) -> None:
    root = _table(tmp_path, {"delta.enableInCommitTimestamps": "true",
                             "delta.feature.checkpointProtection": "supported"})
    log = Path(root) / "_delta_log"
    before = sorted(p.name for p in log.iterdir())
    with pytest.raises(DeltaTableFeatureError, match=error_class):
        drop_feature(root, feature, truncate)
    assert sorted(p.name for p in log.iterdir()) == before


def test_reader_writer_feature_fast_drop_writes_protected_barrier_checkpoints(tmp_path: Path) -> None:
    root = _table(tmp_path, {"delta.checkpointPolicy": "v2"})
    write_checkpoint(pydelta.load_snapshot(root))
    before = pydelta.load_snapshot(root)
    assert before.segment.checkpoint is not None and before.segment.checkpoint.kind == "v2"
    assert "v2Checkpoint" in (before.protocol.reader_features or ())
    version = drop_feature(root, "v2Checkpoint")
    after = pydelta.load_snapshot(root)
    assert after.version == version
    assert after.protocol == Protocol(1, 7, None, frozenset({"appendOnly", "invariants", "checkpointProtection"}))
    assert after.metadata.configuration[PROTECTION_VERSION_KEY] == str(version)
    assert after.metadata.configuration["delta.checkpointPolicy"] == "classic"
    assert _operations(root)[-5:] == ["SET TBLPROPERTIES", "Empty Commit", "Empty Commit", "Empty Commit",
                                      "DROP FEATURE"]
    log = Path(root) / "_delta_log"
    for v in range(version - 3, version + 1):  # three barriers and the protected one after the drop
        assert (log / f"{v:020d}.checkpoint.parquet").exists()
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == version
    _check_readers_agree(root)


def test_vacuum_protocol_check_drop(tmp_path: Path) -> None:
    root = _table(tmp_path, {"delta.feature.vacuumProtocolCheck": "supported"})
    assert "vacuumProtocolCheck" in (pydelta.load_snapshot(root).protocol.reader_features or ())
    drop_feature(root, "vacuumProtocolCheck")
    assert pydelta.load_snapshot(root).protocol.reader_features is None
    _check_readers_agree(root)


def test_domain_metadata_drop_removes_the_domains(tmp_path: Path) -> None:
    root = _table(tmp_path, {"delta.feature.domainMetadata": "supported"})
    snap = pydelta.load_snapshot(root)
    txn = OptimisticTransaction(root, snap)
    txn.add_domain_metadata("my.domain", '{"k":1}')
    txn.commit([], Operation("SET DOMAIN"))
    assert pydelta.load_snapshot(root).domain_metadata == {"my.domain": '{"k":1}'}
    drop_feature(root, "domainMetadata")
    after = pydelta.load_snapshot(root)
    assert after.domain_metadata == {}
    assert after.protocol == Protocol(1, 2)
    assert _operations(root)[-2:] == ["DOMAIN METADATA CLEANUP", "DROP FEATURE"]


def test_truncate_history_journey(tmp_path: Path) -> None:
    root = _table(tmp_path, {"delta.checkpointPolicy": "v2"})
    write_checkpoint(pydelta.load_snapshot(root))
    with pytest.raises(DeltaTableFeatureError, match="DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"):
        drop_feature(root, "v2Checkpoint", truncate_history=True)
    snap = pydelta.load_snapshot(root)
    assert "v2Checkpoint" in (snap.protocol.reader_features or ())  # traces gone, feature still there
    assert snap.metadata.configuration["delta.checkpointPolicy"] == "classic"
    # Too early: the retained history still has versions with the v2 checkpoint policy.
    with pytest.raises(DeltaTableFeatureError, match="DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST"):
        drop_feature(root, "v2Checkpoint", truncate_history=True)
    assert "v2Checkpoint" in (pydelta.load_snapshot(root).protocol.reader_features or ())
    # Once the TRUNCATE HISTORY retention (24 hours) has passed, history is cut and the feature goes.
    version = drop_feature(root, "v2Checkpoint", truncate_history=True, now_ms=_later)
    after = pydelta.load_snapshot(root)
    assert after.version == version
    assert after.protocol == Protocol(1, 2)  # no checkpointProtection on this path
    assert PROTECTION_VERSION_KEY not in after.metadata.configuration
    log = Path(root) / "_delta_log"
    assert not (log / f"{0:020d}.json").exists()
    _check_readers_agree(root)


def test_checkpoint_protection_drops_only_with_truncated_history(tmp_path: Path) -> None:
    root = _table(tmp_path, {"delta.feature.vacuumProtocolCheck": "supported"})
    protected = drop_feature(root, "vacuumProtocolCheck")
    assert pydelta.load_snapshot(root).metadata.configuration[PROTECTION_VERSION_KEY] == str(protected)
    with pytest.raises(DeltaTableFeatureError,
                       match="DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"):
        drop_feature(root, "checkpointProtection", truncate_history=True)
    assert "checkpointProtection" in (pydelta.load_snapshot(root).protocol.writer_features or ())
    drop_feature(root, "checkpointProtection", truncate_history=True, now_ms=_later)
    after = pydelta.load_snapshot(root)
    assert after.protocol == Protocol(1, 2)
    assert PROTECTION_VERSION_KEY not in after.metadata.configuration
    log = Path(root) / "_delta_log"
    assert not any((log / f"{v:020d}.json").exists() for v in range(protected))
    _check_readers_agree(root)


def test_row_tracking_drop_unbackfills_then_downgrades(tmp_path: Path) -> None:
    root = _table(tmp_path, {"delta.enableRowTracking": "true"})
    before = pydelta.load_snapshot(root)
    assert before.files().column("base_row_id").null_count == 0
    assert "delta.rowTracking" in before.domain_metadata
    drop_feature(root, "rowTracking")
    after = pydelta.load_snapshot(root)
    assert not after.protocol.has_feature("rowTracking")
    assert after.protocol.has_feature("domainMetadata")  # delta-spark keeps the feature it required
    assert "checkpointProtection" not in (after.protocol.writer_features or ())  # no history protection
    conf = after.metadata.configuration
    assert not [k for k in conf if k.startswith("delta.rowTracking") or k in ("delta.enableRowTracking",)]
    assert "delta.rowTracking" not in after.domain_metadata
    files = after.files()
    assert files.column("base_row_id").null_count == files.num_rows
    assert files.column("default_row_commit_version").null_count == files.num_rows
    assert sorted(files.column("path").to_pylist()) == sorted(before.files().column("path").to_pylist())
    assert _operations(root)[-3:] == ["SET TBLPROPERTIES", "ROW TRACKING UNBACKFILL", "DROP FEATURE"]
    unbackfill = _history(root)[-2]
    assert unbackfill["operationParameters"] == {"batchId": "0"}
    _check_readers_agree(root)
    append(root, [{"id": 4, "part": "c", "value": "w"}])  # new files carry no row IDs any more
    grown = pydelta.load_snapshot(root)
    assert grown.num_files == files.num_rows + 1
    assert grown.files().column("base_row_id").null_count == grown.num_files


def test_row_tracking_cannot_be_enabled_and_suspended(tmp_path: Path) -> None:
    from pydelta.errors import InvalidTableError

    root = _table(tmp_path, {"delta.enableRowTracking": "true"})
    snap = pydelta.load_snapshot(root)
    conf = {**snap.metadata.configuration, "delta.rowTrackingSuspended": "true"}
    txn = OptimisticTransaction(root, snap)
    with pytest.raises(InvalidTableError, match="DELTA_ROW_TRACKING_ILLEGAL_PROPERTY_COMBINATION"):
        from dataclasses import replace

        txn.update_metadata(replace(snap.metadata, configuration=conf))
    assert pydelta.load_snapshot(root).version == snap.version
