"""Catalog-managed tables (PROTOCOL.md) with pydelta's own SQLite and PostgreSQL stores as the catalog.

Writers stage each commit in `_delta_log/_staged_commits/<v>.<uuid>.json` and the catalog
ratifies it; ratified commits are published to `<v>.json` in order. Readers take the
catalog's latest ratified version as the table's: unratified staged files and published files
past it are not part of the table; ratified commits are, published or not.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import (
    CatalogManagedOperationBlockedError,
    CatalogManagedTableError,
    CommitOwnerMismatchError,
    CommitOwnerUnavailableError,
    InvalidTableError,
)
from pydelta.log.catalog_maintenance import grant_maintenance
from pydelta.log.cleanup import cleanup_expired_logs
from pydelta.log.commit_owners import CommitOwnerClient, owner_of, register_commit_owner
from pydelta.log.commit_owners.registry import CATALOG_KEY
from pydelta.log.commit_owners.sqlite_owner import SqliteCommitOwner
from pydelta.txn.catalog_migration import migrate_to_catalog
from pydelta.txn.commit_checks import require_maintenance_permitted
from pydelta.txn.transaction import Operation, OptimisticTransaction
from tests.txn.test_commit_owner_support import OWNERS, committed_versions, owner_conf, spawn
from tests.txn.writers import append, create_table, make_metadata, rows_of, write_data_file

_YEAR_MS = 365 * 86_400_000


def _row(i: int) -> list[dict]:
    return [{"id": i, "part": "a", "value": f"v{i}"}]


def _log(root: str) -> Path:
    return Path(root) / "_delta_log"


def _actions(root: str, version: int) -> list[dict]:
    return [json.loads(line) for line in (_log(root) / f"{version:020d}.json").read_text().splitlines()]


@pytest.fixture(params=OWNERS)
def catalog_table(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    root = str(tmp_path / "t")
    create_table(root, configuration=owner_conf(request.param, tmp_path, "catalogManaged"))
    return root


def test_creation_and_commits_follow_the_spec(catalog_table: str) -> None:
    root = catalog_table
    protocol = next(a["protocol"] for a in _actions(root, 0) if "protocol" in a)
    assert (protocol["minReaderVersion"], protocol["minWriterVersion"]) == (3, 7)
    assert {"catalogManaged", "vacuumProtocolCheck"} <= set(protocol["readerFeatures"])
    assert {"catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck"} <= set(protocol["writerFeatures"])
    assert pydelta.load_snapshot(root).configuration["delta.enableInCommitTimestamps"] == "true"
    assert append(root, _row(1)) == 1 and append(root, _row(2)) == 2
    staged = sorted((_log(root) / "_staged_commits").iterdir())
    assert [p.name[:20] for p in staged] == [f"{1:020d}", f"{2:020d}"]
    snap = pydelta.load_snapshot(root)
    owner = owner_of(snap.metadata, snap.protocol)
    assert owner is not None and owner.commits_dir == "_staged_commits"
    ratified = owner.ratified_commits(snap.metadata.id)
    assert [c.file_name for c in ratified] == [p.name for p in staged]  # the catalog ratified exactly these
    previous = 0
    for version, path in ((1, staged[0]), (2, staged[1])):
        assert (_log(root) / f"{version:020d}.json").read_bytes() == path.read_bytes()  # published as ratified
        info = _actions(root, version)[0]["commitInfo"]  # commitInfo first, with ICT and txnId
        assert list(info)[0] == "inCommitTimestamp" and info["inCommitTimestamp"] > previous
        assert isinstance(info.get("txnId"), str) and info["txnId"]
        previous = info["inCommitTimestamp"]
    assert rows_of(root) == [(1, "a", "v1"), (2, "a", "v2")]


def test_readers_see_ratified_commits_and_nothing_unratified(catalog_table: str, monkeypatch) -> None:
    root = catalog_table
    append(root, _row(1))
    # A writer that died before its catalog answered leaves a staged file nobody ratified, and a
    # writer that ignores the catalog publishes <L+1>.json directly: neither is part of the table.
    stray = write_data_file(root, _row(98))
    info = {"commitInfo": {"inCommitTimestamp": int(time.time() * 1000) + 10, "operation": "WRITE"}}
    body = "\n".join(json.dumps(a) for a in (info, stray)) + "\n"
    (_log(root) / "_staged_commits" / f"{2:020d}.{uuid.uuid4()}.json").write_text(body)
    (_log(root) / f"{2:020d}.json").write_text(body)
    snap = pydelta.load_snapshot(root)
    assert snap.version == 1 and rows_of(root) == [(1, "a", "v1")]
    (_log(root) / f"{2:020d}.json").unlink()
    # A ratified commit that nobody published yet is part of the table.
    with monkeypatch.context() as m:
        m.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)
        assert append(root, _row(2)) == 2
        assert committed_versions(root) == [0, 1]
        latest = pydelta.load_snapshot(root)
        assert latest.version == 2 and [v for v, _ in latest.unbackfilled_commits] == [2]
        assert rows_of(root) == [(1, "a", "v1"), (2, "a", "v2")]
    assert pydelta.load_snapshot(root).version == 2 and committed_versions(root) == [0, 1, 2]  # a reader published


def test_kill_9_between_ratification_and_publish(catalog_table: str) -> None:
    root = catalog_table
    append(root, _row(1))
    worker = spawn("die-before-publish", root)
    out, err = worker.communicate(timeout=120)
    assert worker.returncode == -9, err  # killed by SIGKILL at the kill point
    ids = json.loads(out.splitlines()[0])["ids"]
    assert committed_versions(root) == [0, 1]  # ratified but not published when it died
    snap = pydelta.load_snapshot(root)  # the catalog says version 2 exists: readers see it
    assert snap.version == 2 and ids[0] in {r[0] for r in rows_of(root)}
    assert committed_versions(root) == [0, 1, 2]  # and the reader published it, as any client may
    assert append(root, _row(3)) == 3


def test_an_unreachable_catalog_is_a_clear_error_and_commits_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    store = tmp_path / "catalog"
    store.mkdir()
    conf = {CATALOG_KEY: "sqlite", "io.pydelta.catalog.conf": json.dumps({"path": str(store / "c.sqlite3")})}
    create_table(root, configuration=conf)
    append(root, _row(1))
    snap = pydelta.load_snapshot(root)
    store.rename(tmp_path / "catalog-away")
    store.write_text("not a directory")  # the catalog's database cannot be opened any more
    register_commit_owner("sqlite", SqliteCommitOwner.from_conf)  # drop this process's open connections
    try:
        with pytest.raises(CommitOwnerUnavailableError, match="unavailable"):
            pydelta.load_snapshot(root)
        txn = OptimisticTransaction(root, snap)
        with pytest.raises(CommitOwnerUnavailableError):
            txn.commit([write_data_file(root, _row(2))], Operation.write("Append", []))
        assert committed_versions(root) == [0, 1]
    finally:
        store.unlink()
        (tmp_path / "catalog-away").rename(store)
        register_commit_owner("sqlite", SqliteCommitOwner.from_conf)
    assert pydelta.load_snapshot(root).version == 1 and rows_of(root) == [(1, "a", "v1")]


def test_maintenance_only_where_the_catalog_permits_it(catalog_table: str) -> None:
    root = catalog_table
    for i in range(1, 12):  # a checkpoint at 10 (checkpoints are always allowed)
        append(root, _row(i))
    assert (_log(root) / f"{10:020d}.checkpoint.parquet").exists()
    snap = pydelta.load_snapshot(root)
    later = int(time.time() * 1000) + _YEAR_MS
    assert cleanup_expired_logs(snap, now_ms=later) == []  # no metadata cleanup by default
    for operation in ("vacuum", "optimize", "reorg", "metadataCleanup"):
        with pytest.raises(CatalogManagedOperationBlockedError, match="blocked by the catalog"):
            require_maintenance_permitted(snap, operation)
    grant_maintenance(root, "metadataCleanup")
    grant_maintenance(root, "vacuum")
    require_maintenance_permitted(snap, "vacuum")
    deleted = cleanup_expired_logs(snap, now_ms=later)
    assert any("_staged_commits" in p for p in deleted)  # staged files <= the cutoff checkpoint go too
    assert committed_versions(root)[0] == 10 and pydelta.load_snapshot(root).version == 11
    grant_maintenance(root, "vacuum", allowed=False)
    with pytest.raises(CatalogManagedOperationBlockedError):
        require_maintenance_permitted(snap, "vacuum")


def test_a_catalog_managed_table_never_leaves_its_catalog(catalog_table: str) -> None:
    snap = pydelta.load_snapshot(catalog_table)
    conf = {k: v for k, v in snap.metadata.configuration.items() if not k.startswith(CATALOG_KEY)}
    txn = OptimisticTransaction(catalog_table, snap)
    with pytest.raises((CommitOwnerMismatchError, CatalogManagedTableError)):
        txn.update_metadata(make_metadata(configuration=conf))
        txn.commit([], Operation("SET TBLPROPERTIES"))
    with pytest.raises(InvalidTableError, match="in-commit timestamps"):
        OptimisticTransaction(catalog_table, snap).update_metadata(
            make_metadata(configuration={**snap.metadata.configuration, "delta.enableInCommitTimestamps": "false"}))
    assert committed_versions(catalog_table) == [0]


@pytest.mark.parametrize("owner", OWNERS)
def test_a_managed_commit_table_migrates_to_catalog_managed(owner: str, tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration=owner_conf(owner, tmp_path))  # seed 001: managedCommit
    append(root, _row(1))
    version = migrate_to_catalog(root, owner, json.loads(owner_conf(owner, tmp_path, "catalogManaged")[
        "io.pydelta.catalog.conf"]))
    assert version == 3  # 2: back to the file system (the owner's last commit); 3: the upgrade
    snap = pydelta.load_snapshot(root)
    assert "catalogManaged" in snap.protocol.reader_features and "managedCommit" not in snap.protocol.writer_features
    assert append(root, _row(2)) == 4
    assert [p.name[:20] for p in (_log(root) / "_staged_commits").iterdir()] == [f"{4:020d}"]
    assert rows_of(root) == [(1, "a", "v1"), (2, "a", "v2")]


def test_tables_of_other_catalogs_are_refused_clearly(tmp_path: Path) -> None:
    """A catalogManaged table without pydelta's catalog property belongs to a catalog pydelta
    cannot ask (Unity Catalog...): PROTOCOL.md forbids reading it from the file system alone."""
    root = tmp_path / "t"
    log = root / "_delta_log"
    log.mkdir(parents=True)
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7,
                "readerFeatures": ["catalogManaged", "vacuumProtocolCheck"],
                "writerFeatures": ["catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck"]}
    md = make_metadata(configuration={"delta.enableInCommitTimestamps": "true"}).to_dict()
    info = {"commitInfo": {"inCommitTimestamp": int(time.time() * 1000), "operation": "CREATE TABLE"}}
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in (info, {"protocol": protocol},
                                                                          {"metaData": md})) + "\n")
    with pytest.raises(CatalogManagedTableError, match="catalog pydelta has no client for"):
        pydelta.load_snapshot(str(root))
    assert os.listdir(log) == [f"{0:020d}.json"]
