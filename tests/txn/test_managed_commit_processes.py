"""Managed commits (seed 001) and catalog-managed tables (PROTOCOL.md, pydelta's stores as the catalog)
under real concurrency: 8 processes x 25 commits per owner, and kill -9 at random points.

deltalake checks the managed-commit tables; it refuses catalog-managed ones without a catalog
("Max catalog version is required"), so those are checked by pydelta's reader and the catalog's record."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

import pydelta
from pydelta.log.commit_owners import owner_of
from pydelta.log.commit_owners.base import Commit

from .test_commit_owner_support import OWNERS, acks, committed_versions, owner_conf, spawn
from .writers import create_table, deltalake_rows, rows_of, wait_for

pytestmark = pytest.mark.slow

WORKERS = 8
COMMITS = 25
TRIALS = 30


def _check_owner_record_matches_log(root: str) -> list[int]:
    snap = pydelta.load_snapshot(root)
    owner = owner_of(snap.metadata, snap.protocol)
    ratified = owner.ratified_commits(snap.metadata.id)
    log = Path(root) / "_delta_log"
    staged = log / owner.commits_dir

    def ratified_bytes(c: Commit) -> bytes:  # an unpublished inline commit's are the catalog's
        return c.content if c.content is not None else (staged / c.file_name).read_bytes()

    for c in ratified:
        if c.content is None and not (staged / c.file_name).exists():
            continue  # a published inline commit: the catalog kept no copy, the published file is the only one
        assert (log / f"{c.version:020d}.json").read_bytes() == ratified_bytes(c)
    # A writer killed between its backfill copy and its report to the owner leaves the owner
    # tracking a commit that is already backfilled: legal (the owner must track commits *until*
    # they are backfilled), as long as the backfilled file holds the ratified bytes ...
    for c in owner.get_commits(snap.metadata.id, 0).commits:
        assert c.version <= snap.version
        assert (log / f"{c.version:020d}.json").read_bytes() == ratified_bytes(c)
    # ... and the next backfill call lets the owner forget it.
    owner.backfill_to_version(snap.storage, snap.table_root, snap.metadata.id, snap.version)
    assert owner.get_commits(snap.metadata.id, 0).commits == []
    return [c.version for c in ratified]


def _deltalake_files(root: str) -> set[str]:
    import deltalake

    return {os.path.basename(u) for u in deltalake.DeltaTable(root).file_uris()}


def _pydelta_files(root: str) -> set[str]:
    return {os.path.basename(p) for p in pydelta.load_snapshot(root).files().column("path").to_pylist()}


KINDS = ("managedCommit", "catalogManaged", "catalogManaged-inline")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("owner", OWNERS)
def test_eight_processes_commit_through_the_owner_exactly_once(owner: str, kind: str, tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration=owner_conf(owner, tmp_path, kind))
    procs = [spawn("append-stream", root, str(w), str(COMMITS)) for w in range(WORKERS)]
    acknowledged: list[dict] = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        acknowledged += acks(out)
    total = WORKERS * COMMITS
    assert sorted(a["version"] for a in acknowledged) == list(range(1, total + 1)), "every version exactly once"
    assert committed_versions(root) == list(range(total + 1))
    assert _check_owner_record_matches_log(root) == list(range(1, total + 1))
    expected_ids = sorted(i for a in acknowledged for i in a["ids"])
    assert sorted(r[0] for r in rows_of(root)) == expected_ids, "no commit lost"
    assert _pydelta_files(root) == {os.path.basename(a["path"]) for a in acknowledged}
    if kind == "managedCommit":
        version, rows = deltalake_rows(root)
        assert version == total
        assert sorted(r[0] for r in rows) == expected_ids
        assert _deltalake_files(root) == _pydelta_files(root)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("owner", OWNERS)
def test_kill_9_at_random_points_never_loses_an_acknowledged_commit(owner: str, kind: str, tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration=owner_conf(owner, tmp_path, kind))
    rng = random.Random(1234 + len(owner))
    acked: list[dict] = []
    repaired = 0  # trials where a reader found ratified commits nobody had backfilled
    # The catalog-managed route is the managed one with another staging directory: fewer trials (CI time).
    trials = TRIALS if kind == "managedCommit" else TRIALS // 3 if kind == "catalogManaged" else TRIALS // 6
    for trial in range(trials):
        ready = [str(tmp_path / f"ready-{trial}-{w}") for w in range(2)]
        procs = [spawn("append-stream", root, str(trial * 10 + w), "1000", ready[w]) for w in range(2)]
        for r in ready:
            assert wait_for(r, 120), f"trial {trial}: a worker did not start"
        time.sleep(rng.uniform(0.0, 0.4))  # a random point of the commit loop
        victims = procs if rng.random() < 0.5 else [rng.choice(procs)]
        for p in victims:
            p.send_signal(signal.SIGKILL)
        for p in procs:
            if p not in victims:
                time.sleep(rng.uniform(0.0, 0.2))
                p.send_signal(signal.SIGKILL)
        for p in procs:
            out, _ = p.communicate(timeout=60)
            acked += acks(out)
        snap = pydelta.load_snapshot(root)  # always readable (and the reader backfills)
        repaired += bool(snap.unbackfilled_commits)
        present = {r[0] for r in rows_of(root)}
        missing = [a for a in acked if not set(a["ids"]) <= present]
        assert not missing, f"trial {trial}: acknowledged commits lost: {missing[:3]}"
        assert committed_versions(root) == list(range(snap.version + 1)), f"trial {trial}: log not contiguous"
    assert acked, "the workers never got to commit"
    print(f"{owner}/{kind}: {len(acked)} acknowledged commits, {repaired}/{trials} trials left un-backfilled commits")
    versions = sorted(a["version"] for a in acked)
    assert len(versions) == len(set(versions))
    final = pydelta.load_snapshot(root)
    _check_owner_record_matches_log(root)
    if kind == "managedCommit":
        version, rows = deltalake_rows(root)
        assert version == final.version
        assert sorted(r[0] for r in rows) == sorted(r[0] for r in rows_of(root))
        assert _deltalake_files(root) == _pydelta_files(root)
