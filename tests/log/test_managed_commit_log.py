"""Managed commits and log maintenance: checkpoints, cleanup of `_commits/`, VACUUM, catalog-managed reads."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import CatalogManagedTableError, CommitOwnerError, UnsupportedFeatureError
from pydelta.log.checkpoint_writer import write_checkpoint
from pydelta.log.cleanup import cleanup_expired_logs
from pydelta.log.commit_owners import CommitOwnerClient
from pydelta.log.vacuum_plan import plan_vacuum
from pydelta.txn.transaction import Operation, OptimisticTransaction
from tests.txn.test_commit_owner_support import OWNERS, committed_versions, owner_conf
from tests.txn.writers import append, create_table, make_metadata, remove_action, rows_of, write_data_file

_YEAR_MS = 365 * 86_400_000


def _row(i: int) -> list[dict]:
    return [{"id": i, "part": "a", "value": f"v{i}"}]


def _log(root: str) -> Path:
    return Path(root) / "_delta_log"


@pytest.fixture(params=OWNERS)
def managed(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    root = str(tmp_path / "t")
    create_table(root, configuration={**owner_conf(request.param, tmp_path), "delta.checkpointInterval": "2"})
    return root


def test_post_commit_checkpoints_cover_backfilled_versions(managed: str) -> None:
    for i in range(1, 5):
        append(managed, _row(i))
    assert (_log(managed) / f"{2:020d}.checkpoint.parquet").exists()
    assert (_log(managed) / f"{4:020d}.checkpoint.parquet").exists()
    snap = pydelta.load_snapshot(managed)
    assert snap.segment.checkpoint.version == 4 and snap.version == 4


def test_checkpoint_of_an_unbackfilled_version_backfills_first_or_refuses(managed: str, monkeypatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)
        assert append(managed, _row(1)) == 1
        snap = pydelta.load_snapshot(managed)
        assert snap.version == 1 and committed_versions(managed) == [0]
        with pytest.raises(CommitOwnerError, match="not backfilled"):
            write_checkpoint(snap)
        assert not (_log(managed) / f"{1:020d}.checkpoint.parquet").exists()
    write_checkpoint(snap)  # the owner backfills on request, then the checkpoint is allowed
    assert committed_versions(managed) == [0, 1]
    assert (_log(managed) / f"{1:020d}.checkpoint.parquet").exists()


def test_cleanup_deletes_old_unbackfilled_files_and_keeps_a_backfilled_commit(managed: str) -> None:
    for i in range(1, 6):
        append(managed, _row(i))
    stray = _log(managed) / "_commits" / f"{1:020d}.{uuid.uuid4()}.json"  # a failed attempt's leftover
    stray.write_text("{}\n")
    snap = pydelta.load_snapshot(managed)
    deleted = cleanup_expired_logs(snap, now_ms=int(time.time() * 1000) + _YEAR_MS)
    assert any("_commits" in p for p in deleted) and not stray.exists()
    remaining = sorted(p.name[:20] for p in (_log(managed) / "_commits").iterdir())
    assert remaining == [f"{5:020d}"]  # un-backfilled files <= the cutoff checkpoint (4) are gone
    assert committed_versions(managed) == [4, 5]  # >= 1 backfilled commit (the checkpoint's) kept
    assert pydelta.load_snapshot(managed).version == 5
    assert rows_of(managed) == [(i, "a", f"v{i}") for i in range(1, 6)]


def test_vacuum_and_time_travel_across_unbackfilled_versions(managed: str, monkeypatch) -> None:
    append(managed, _row(1))
    monkeypatch.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)
    snap = pydelta.load_snapshot(managed)
    first = snap.files().to_pylist()[0]
    add = write_data_file(managed, _row(2))
    txn = OptimisticTransaction(managed, snap)
    rm = remove_action({"path": first["path"], "partitionValues": first["partition_values"], "size": first["size"]})
    assert txn.commit([rm, add], Operation("UPDATE")) == 2
    assert committed_versions(managed) == [0, 1]
    latest = pydelta.load_snapshot(managed)
    assert latest.version == 2
    plan = plan_vacuum(latest, 0, now_ms=int(time.time() * 1000) + _YEAR_MS, check_enabled=False)
    doomed = {Path(f.path).name for f in plan.files}
    assert Path(first["path"]).name in doomed  # removed in the un-backfilled version 2
    assert Path(add["add"]["path"]).name not in doomed  # added in the un-backfilled version 2
    assert rows_of(managed, version=2) == [(2, "a", "v2")]
    assert rows_of(managed, version=1) == [(1, "a", "v1")]


# ---- catalog-managed tables (the successor feature) --------------------------------------


def _catalog_table(root: Path, feature: str) -> None:
    """A catalog-managed log by hand: versions 0-1 published, version 2 only staged."""
    log = root / "_delta_log"
    (log / "_staged_commits").mkdir(parents=True)
    md = make_metadata(configuration={"delta.enableInCommitTimestamps": "true"}).to_dict()
    ts = int(time.time() * 1000)
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [feature, "vacuumProtocolCheck"],
                "writerFeatures": [feature, "inCommitTimestamp", "vacuumProtocolCheck"]}

    def commit(version: int, *actions: dict) -> str:
        info = {"commitInfo": {"inCommitTimestamp": ts + version, "timestamp": ts + version, "operation": "WRITE"}}
        return "\n".join(json.dumps(a) for a in (info, *actions)) + "\n"

    (log / f"{0:020d}.json").write_text(commit(0, {"protocol": protocol}, {"metaData": md},
                                              write_data_file(str(root), _row(0))))
    (log / f"{1:020d}.json").write_text(commit(1, write_data_file(str(root), _row(1))))
    staged = log / "_staged_commits" / f"{2:020d}.{uuid.uuid4()}.json"
    staged.write_text(commit(2, write_data_file(str(root), _row(2))))


@pytest.mark.parametrize("feature", ["catalogManaged", "catalogOwned-preview"])
def test_catalog_managed_tables_of_other_catalogs_are_neither_read_nor_written(tmp_path: Path, feature: str) -> None:
    """PROTOCOL.md: readers must ask the table's catalog for its ratified commits and latest
    version; a table of a catalog pydelta has no client for (no io.pydelta.catalog) cannot be read
    from its published files alone, nor written (tests/txn/test_catalog_managed.py: pydelta's own)."""
    root = tmp_path / "t"
    _catalog_table(root, feature)
    with pytest.raises(CatalogManagedTableError, match=f"{feature}.*catalog pydelta has no"):
        pydelta.load_snapshot(str(root))
    txn = OptimisticTransaction(str(tmp_path / "new"), None)
    with pytest.raises(CatalogManagedTableError, match=feature):
        txn.update_metadata(make_metadata(configuration={f"delta.feature.{feature}": "supported"}))


def test_the_unreleased_catalog_owned_spelling_is_an_unknown_reader_feature(tmp_path: Path) -> None:
    """delta-rs's catalog-owned test logs name the feature `catalogOwned` (no `-preview`): no
    Delta client defines that name, so it is refused by name like any unknown reader feature
    (delta-rs refuses those logs too)."""
    root = tmp_path / "t"
    _catalog_table(root, "catalogOwned")
    with pytest.raises(UnsupportedFeatureError, match="catalogOwned"):
        pydelta.load_snapshot(str(root))
