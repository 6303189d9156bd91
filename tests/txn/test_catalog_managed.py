"""Catalog-managed tables (PROTOCOL.md) with pydelta's own SQLite and PostgreSQL stores as the catalog.

Writers stage each commit in `_delta_log/_staged_commits/<v>.<uuid>.json` and the catalog
ratifies it; ratified commits are published to `<v>.json` in order. Readers take the
catalog's latest ratified version as the table's: unratified staged files and published files
past it are not part of the table; ratified commits are, published or not.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import (
    CatalogManagedOperationBlockedError,
    CatalogManagedTableError,
    CommitOwnerError,
    CommitOwnerMismatchError,
    CommitOwnerUnavailableError,
    InvalidTableError,
    VersionNotFoundError,
)
from pydelta.log.catalog_maintenance import grant_maintenance
from pydelta.log.cleanup import cleanup_expired_logs
from pydelta.log.commit_owners import CommitOwnerClient, owner_of, register_commit_owner
from pydelta.log.commit_owners.registry import CATALOG_KEY
from pydelta.log.commit_owners.sqlite_owner import SqliteCommitOwner
from pydelta.log.history import history
from pydelta.txn.catalog_migration import migrate_to_catalog
from pydelta.txn.commit_checks import require_maintenance_permitted
from pydelta.txn.transaction import Operation, OptimisticTransaction
from tests.txn.test_commit_owner_support import (
    CATALOGS,
    OWNERS,
    committed_versions,
    create_catalog_table,
    owner_conf,
    spawn,
)
from tests.txn.writers import append, create_table, make_metadata, rows_of, write_data_file

_YEAR_MS = 365 * 86_400_000


def _row(i: int) -> list[dict]:
    return [{"id": i, "part": "a", "value": f"v{i}"}]


def _log(root: str) -> Path:
    return Path(root) / "_delta_log"


def _actions(root: str, version: int) -> list[dict]:
    return [json.loads(line) for line in (_log(root) / f"{version:020d}.json").read_text().splitlines()]


@pytest.fixture(params=CATALOGS)
def catalog_table(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return create_catalog_table(request.param, request, tmp_path, monkeypatch=monkeypatch)


def _is_unity(root: str) -> bool:
    return "io.unitycatalog.tableId" in pydelta.load_snapshot(root).configuration


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
    if not _is_unity(root):  # Unity Catalog keeps no record of commits once they are published
        assert [c.file_name for c in ratified] == [p.name for p in staged]  # the catalog ratified exactly these
    previous = 0
    for version, path in ((1, staged[0]), (2, staged[1])):
        assert (_log(root) / f"{version:020d}.json").read_bytes() == path.read_bytes()  # published as ratified
        info = _actions(root, version)[0]["commitInfo"]  # commitInfo first, with ICT and txnId
        assert next(iter(info)) == "inCommitTimestamp" and info["inCommitTimestamp"] > previous
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
    with pytest.raises(VersionNotFoundError, match="not ratified by its catalog"):
        pydelta.load_snapshot(root, version=2)  # time travel does not reach it either
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


@pytest.fixture(params=[*((o, k) for o in OWNERS for k in ("catalogManaged", "catalogManaged-inline")),
                        ("unity", "catalogManaged")],  # Unity Catalog stores no commit content
                ids=lambda p: f"{p[0]}-{'inline' if p[1].endswith('inline') else 'staged'}")
def staged_or_inline_table(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    owner, kind = request.param
    return create_catalog_table(owner, request, tmp_path, kind, monkeypatch)


def test_kill_9_between_ratification_and_publish(staged_or_inline_table: str) -> None:
    root = staged_or_inline_table
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


def test_inline_commits_live_in_the_catalog_until_published(staged_or_inline_table: str, monkeypatch) -> None:
    root = staged_or_inline_table
    inline = "inlineCommitBytes" in pydelta.load_snapshot(root).configuration.get("io.pydelta.catalog.conf", "")
    with monkeypatch.context() as m:
        m.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)  # nobody publishes
        assert append(root, _row(1)) == 1
        snap = pydelta.load_snapshot(root)
        assert snap.version == 1 and rows_of(root) == [(1, "a", "v1")]  # read from the catalog's answer
    owner = owner_of(snap.metadata, snap.protocol)
    (held,) = owner.get_commits(snap.metadata.id, 0).commits
    staged = _log(root) / "_staged_commits" / held.file_name
    assert staged.exists() != inline and (held.content is not None) == inline  # one place or the other
    body = held.content if inline else staged.read_bytes()
    assert json.loads(body.splitlines()[0])["commitInfo"]["txnId"]
    assert committed_versions(root) == [0]
    assert pydelta.load_snapshot(root).version == 1  # this reader publishes ...
    assert (_log(root) / f"{1:020d}.json").read_bytes() == body  # ... exactly the ratified bytes
    assert owner.get_commits(snap.metadata.id, 0).commits == []  # and the catalog forgets it
    if not _is_unity(root):  # (Unity Catalog keeps nothing of a published commit)
        assert [c.content for c in owner.ratified_commits(snap.metadata.id)] == [None]  # published: no copy kept
    assert staged.exists() != inline
    assert append(root, _row(2)) == 2 and rows_of(root) == [(1, "a", "v1"), (2, "a", "v2")]


def test_the_catalogs_commit_wins_over_a_published_file(staged_or_inline_table: str, monkeypatch) -> None:
    """PROTOCOL.md: for a version the catalog returns, readers use the catalog's commit and
    ignore a published `<v>.json`; one written past the catalog is never taken as published."""
    root = staged_or_inline_table
    append(root, _row(1))
    with monkeypatch.context() as m:
        m.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)
        assert append(root, _row(2)) == 2
    rogue = write_data_file(root, _row(99))  # a writer that bypasses the catalog takes <2>.json
    info = {"commitInfo": {"inCommitTimestamp": int(time.time() * 1000) + 10, "operation": "WRITE"}}
    (_log(root) / f"{2:020d}.json").write_text("\n".join(json.dumps(a) for a in (info, rogue)) + "\n")
    snap = pydelta.load_snapshot(root)
    assert snap.version == 2 and rows_of(root) == [(1, "a", "v1"), (2, "a", "v2")]
    assert next(e for e in history(snap) if e.version == 2).commit_info.get("txnId")  # ours, not the rogue's
    as_of_2 = pydelta.load_snapshot(root, version=2).files().column("path").to_pylist()
    assert len(as_of_2) == 2 and rogue["add"]["path"] not in as_of_2  # time travel too
    owner = owner_of(snap.metadata, snap.protocol)
    with pytest.raises(CommitOwnerError, match="differs from the ratified commit of version 2"):
        owner.backfill_to_version(snap.storage, root, snap.metadata.id)
    assert [c.version for c in owner.get_commits(snap.metadata.id, 0).commits] == [2]  # still held
    assert append(root, _row(3)) == 3 and rows_of(root)[-1] == (3, "a", "v3")
    assert 99 not in {r[0] for r in rows_of(root)}


def test_a_published_commit_the_catalog_still_holds_is_let_go(staged_or_inline_table: str, monkeypatch) -> None:
    """A publisher that died after copying the commit, before telling the catalog: the published
    file holds the ratified bytes, readers take it as it is and let the catalog forget it."""
    root = staged_or_inline_table
    append(root, _row(1))
    with monkeypatch.context() as m:
        m.setattr(CommitOwnerClient, "_mark_backfilled", lambda self, *a, **k: None)
        assert append(root, _row(2)) == 2
    assert committed_versions(root) == [0, 1, 2]
    snap = pydelta.load_snapshot(root)
    owner = owner_of(snap.metadata, snap.protocol)
    assert owner.get_commits(snap.metadata.id, 0).commits == []  # the reader above let versions 1 and 2 go
    assert rows_of(root) == [(1, "a", "v1"), (2, "a", "v2")]


def test_inline_commit_bytes_is_checked(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    conf = {CATALOG_KEY: "sqlite", "io.pydelta.catalog.conf": json.dumps(
        {"path": str(tmp_path / "c.sqlite3"), "inlineCommitBytes": "lots"})}
    with pytest.raises(CommitOwnerError, match="inlineCommitBytes must be a byte count"):
        create_table(root, configuration=conf)
    assert not (Path(root) / "_delta_log").exists() or committed_versions(root) == []


def test_a_catalog_database_made_before_inline_commits_gains_its_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:  # the commits table as pydelta made it before inline commits
        conn.execute("CREATE TABLE commits (table_id TEXT NOT NULL, version INTEGER NOT NULL, file_name TEXT NOT NULL, "
                     "size INTEGER NOT NULL, modification_time INTEGER NOT NULL, commit_timestamp INTEGER NOT NULL, "
                     "backfilled INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (table_id, version))")
        conn.execute("INSERT INTO commits VALUES ('t0', 1, 'f.json', 10, 1, 1, 0)")
    owner = SqliteCommitOwner(str(path))
    try:
        assert [(c.version, c.content) for c in owner.ratified_commits("t0")] == [(1, None)]
    finally:
        owner.close()
    root = str(tmp_path / "t")
    create_table(root, configuration={CATALOG_KEY: "sqlite", "io.pydelta.catalog.conf": json.dumps(
        {"path": str(path), "inlineCommitBytes": "100000"})})
    assert append(root, _row(1)) == 1 and rows_of(root) == [(1, "a", "v1")]
    assert not (_log(root) / "_staged_commits").exists() or not any((_log(root) / "_staged_commits").iterdir())


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
    assert list(_log(root).glob(f"{10:020d}.checkpoint*.parquet"))  # (v2 in Unity Catalog, as it requires)
    snap = pydelta.load_snapshot(root)
    later = int(time.time() * 1000) + _YEAR_MS
    assert cleanup_expired_logs(snap, now_ms=later) == []  # no metadata cleanup by default
    for operation in ("vacuum", "optimize", "reorg", "metadataCleanup"):
        with pytest.raises(CatalogManagedOperationBlockedError, match="blocked by the catalog"):
            require_maintenance_permitted(snap, operation)
    if _is_unity(root):
        return  # granting maintenance is pydelta's catalogs' own API
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
    conf = {k: v for k, v in snap.metadata.configuration.items()
            if not k.startswith((CATALOG_KEY, "io.unitycatalog."))}
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
