"""The commit-owner client API on its own: register_table, commit, get_commits, backfill_to_version, registry."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import CommitOwnerConflictError, CommitOwnerError
from pydelta.log.commit_owners import Commit, CommitOwnerClient, GetCommitsResponse, commit_owner, register_commit_owner
from pydelta.log.commit_owners.base import COMMIT_OWNER_CONF_KEY, COMMIT_OWNER_KEY, parse_unbackfilled_name
from pydelta.log.commit_owners.reader import owner_commits
from pydelta.log.storage import LocalStorage

from .test_commit_owner_support import OWNERS, committed_versions, new_table_id, owner_conf
from .writers import append, create_table, rows_of


@pytest.fixture(params=OWNERS)
def client(request: pytest.FixtureRequest, tmp_path: Path) -> CommitOwnerClient:
    props = owner_conf(request.param, tmp_path)
    return commit_owner(props[COMMIT_OWNER_KEY], json.loads(props[COMMIT_OWNER_CONF_KEY]))


def _payload(v: int) -> bytes:
    return (json.dumps({"commitInfo": {"inCommitTimestamp": 1000 + v, "operation": "WRITE"}}) + "\n").encode()


def test_ratification_is_compare_and_set_on_the_version(client: CommitOwnerClient, tmp_path: Path) -> None:
    storage, root, tid = LocalStorage(), str(tmp_path / "t"), new_table_id()
    with pytest.raises(CommitOwnerError, match="not registered"):
        client.commit(storage, root, tid, 1, _payload(1), 1001)
    client.register_table(tid, root, 0)
    c1 = client.commit(storage, root, tid, 1, _payload(1), 1001)
    assert parse_unbackfilled_name(c1.file_name) == 1
    with pytest.raises(CommitOwnerConflictError) as e:
        client.commit(storage, root, tid, 1, _payload(1), 1001)  # version 1 is taken
    assert e.value.latest_version == 1
    with pytest.raises(CommitOwnerConflictError):
        client.commit(storage, root, tid, 3, _payload(3), 1003)  # version 2 does not exist yet
    assert sorted(os.listdir(os.path.join(root, "_delta_log", "_commits"))) == [c1.file_name]  # losers cleaned
    client.commit(storage, root, tid, 2, _payload(2), 1002)
    client.commit(storage, root, tid, 3, _payload(3), 1003)
    response = client.get_commits(tid, 2)
    assert isinstance(response, GetCommitsResponse)
    assert [c.version for c in response.commits] == [2, 3] and response.latest_table_version == 3
    assert [c.version for c in client.get_commits(tid, 1, 2).commits] == [1, 2]
    assert client.get_commits(new_table_id(), 0) == GetCommitsResponse([], -1)


def test_backfill_is_sequential_idempotent_and_forgets_backfilled(client: CommitOwnerClient, tmp_path: Path) -> None:
    storage, root, tid = LocalStorage(), str(tmp_path / "t"), new_table_id()
    client.register_table(tid, root, 0)
    commits = [client.commit(storage, root, tid, v, _payload(v), 1000 + v) for v in (1, 2, 3)]
    assert client.backfill_to_version(storage, root, tid, 2) == 2
    assert committed_versions(root) == [1, 2]
    assert [c.version for c in client.get_commits(tid, 0).commits] == [3]
    assert client.backfill_to_version(storage, root, tid) == 3  # any client, any time
    assert client.backfill_to_version(storage, root, tid) == -1  # nothing left
    log = Path(root) / "_delta_log"
    for c in commits:
        assert (log / f"{c.version:020d}.json").read_bytes() == (log / "_commits" / c.file_name).read_bytes()
    assert client.get_commits(tid, 0) == GetCommitsResponse([], 3)
    assert [c.version for c in client.ratified_commits(tid)] == [1, 2, 3]


def test_registration_never_lowers_and_release_refuses_later_commits(client: CommitOwnerClient, tmp_path: Path) -> None:
    storage, root, tid = LocalStorage(), str(tmp_path / "t"), new_table_id()
    client.register_table(tid, root, 5)
    client.commit(storage, root, tid, 6, _payload(6), 1006)
    client.register_table(tid, root, 3)  # a stale proposal that lost its put-if-absent: ignored
    assert client.get_commits(tid, 0).latest_table_version == 6
    client.commit(storage, root, tid, 7, _payload(7), 1007, release=True)
    with pytest.raises(CommitOwnerConflictError, match="released"):
        client.commit(storage, root, tid, 8, _payload(8), 1008)
    client.register_table(tid, root, 9)  # converted back later (version 9 is a file-system commit)
    client.commit(storage, root, tid, 10, _payload(10), 1010)


def test_readers_relist_when_the_owner_stopped_tracking_a_version(tmp_path: Path) -> None:
    props = owner_conf("sqlite", tmp_path)
    root = str(tmp_path / "t")
    create_table(root, configuration=props)
    stale = pydelta.load_snapshot(root)  # listed at version 0
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    append(root, [{"id": 2, "part": "a", "value": "y"}])
    # the owner tracks nothing any more but says version 2 is ratified: the reader must relist
    found, _ = owner_commits(stale.storage, root, stale.metadata, stale.protocol, 0)
    assert [(v, os.path.basename(f.path)) for v, f in found] == [(1, f"{1:020d}.json"), (2, f"{2:020d}.json")]
    assert stale.update().version == 2


def test_filesystem_only_writers_refuse_managed_tables(tmp_path: Path) -> None:
    import deltalake
    import pyarrow as pa

    root = str(tmp_path / "t")
    create_table(root, partition_columns=(), configuration=owner_conf("sqlite", tmp_path))
    with pytest.raises(Exception, match=r"(?i)managedCommit|feature"):
        deltalake.write_deltalake(root, pa.table({"id": [1], "part": ["a"], "value": ["z"]}), mode="append")
    assert committed_versions(root) == [0]


class _MemoryOwner(CommitOwnerClient):
    """A toy in-process owner, to show what a new backend implements."""

    name = "memory"

    def __init__(self) -> None:
        self.latest: dict[str, int] = {}
        self.commits: dict[str, list[tuple[Commit, bool]]] = {}

    def _register(self, table_id: str, table_root: str, version: int) -> None:
        self.latest[table_id] = max(version, self.latest.get(table_id, -1))

    def _ratify(self, table_id: str, commit: Commit, release: bool) -> None:
        latest = self.latest.get(table_id)
        if latest is None:
            raise CommitOwnerError("not registered")
        if latest != commit.version - 1:
            raise CommitOwnerConflictError("taken", latest)
        self.latest[table_id] = commit.version
        self.commits.setdefault(table_id, []).append((commit, False))

    def _unbackfilled(self, table_id: str, start: int, end: int | None) -> GetCommitsResponse:
        cs = [c for c, done in self.commits.get(table_id, []) if not done and start <= c.version <= (end or 1 << 60)]
        return GetCommitsResponse(cs, self.latest.get(table_id, -1))

    def _mark_backfilled(self, table_id: str, first: int, last: int) -> None:
        self.commits[table_id] = [(c, done or first <= c.version <= last) for c, done in self.commits.get(table_id, [])]

    def ratified_commits(self, table_id: str) -> list[Commit]:
        return [c for c, _ in self.commits.get(table_id, [])]


def test_a_registered_custom_owner_serves_tables_by_name(tmp_path: Path) -> None:
    owner = _MemoryOwner()
    register_commit_owner("memory", lambda conf: owner)
    root = str(tmp_path / "t")
    create_table(root, configuration={COMMIT_OWNER_KEY: "memory"})
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    tid = pydelta.load_snapshot(root).metadata.id
    assert [c.version for c in owner.ratified_commits(tid)] == [1]
    assert rows_of(root) == [(1, "a", "x")]


def test_a_lost_ratification_answer_is_resolved_by_asking_again(
    client: CommitOwnerClient, tmp_path: Path, monkeypatch
) -> None:
    from pydelta.errors import CommitOwnerUnavailableError

    storage, root, tid = LocalStorage(), str(tmp_path / "t"), new_table_id()
    client.register_table(tid, root, 0)
    real = client._ratify

    def ratify_then_drop(*args, **kwargs):
        real(*args, **kwargs)
        raise CommitOwnerUnavailableError("connection lost after COMMIT")

    monkeypatch.setattr(client, "_ratify", ratify_then_drop)
    c1 = client.commit(storage, root, tid, 1, _payload(1), 1001)
    assert [c.file_name for c in client.get_commits(tid, 0).commits] == [c1.file_name]


def test_postgres_down_means_clear_errors_and_nothing_committed(tmp_path: Path, monkeypatch) -> None:
    from pydelta.errors import CommitOwnerUnavailableError
    from pydelta.log.commit_owners.postgres_owner import PostgresCommitOwner
    from pydelta.txn.transaction import Operation, OptimisticTransaction

    from .test_commit_owner_support import PG_DSN
    from .writers import write_data_file

    owner_conf("postgres", tmp_path)  # skips loudly if the server is unreachable
    monkeypatch.setenv("PYDELTA_POSTGRES_DSN", PG_DSN)  # the conf names no DSN: the environment does
    root = str(tmp_path / "t")
    create_table(root, configuration={COMMIT_OWNER_KEY: "postgres", COMMIT_OWNER_CONF_KEY: "{}"})
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    snap = pydelta.load_snapshot(root)
    monkeypatch.setenv("PYDELTA_POSTGRES_DSN", "host=127.0.0.1 port=1 dbname=test user=postgres")
    register_commit_owner("postgres", PostgresCommitOwner.from_conf)  # drop cached connections
    txn = OptimisticTransaction(root, snap)
    add = write_data_file(root, [{"id": 2, "part": "a", "value": "y"}])
    with pytest.raises(CommitOwnerUnavailableError, match="unreachable"):
        txn.commit([add], Operation.write("Append", []))
    with pytest.raises(CommitOwnerUnavailableError, match="unreachable"):
        pydelta.load_snapshot(root)
    assert committed_versions(root) == [0, 1]
    monkeypatch.setenv("PYDELTA_POSTGRES_DSN", PG_DSN)
    register_commit_owner("postgres", PostgresCommitOwner.from_conf)
    assert pydelta.load_snapshot(root).version == 1
    assert rows_of(root) == [(1, "a", "x")]
