"""`sqlite`: an embedded commit owner in one SQLite database file, shared by processes on one machine.

Where the file is: `commitOwnerConf` {"path": "/abs/file.sqlite3"}, else the environment
variable PYDELTA_SQLITE_COMMIT_OWNER, else ~/.pydelta/commit-owner.sqlite3. One file can
own many tables (rows keyed by the table's metadata id). Every write is a
`BEGIN IMMEDIATE` transaction, so the check of the latest version and the insert of the
commit row are one atomic step for all processes; WAL mode lets readers go on meanwhile.
Needs a local file system (SQLite locking is unreliable over NFS).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from typing import Iterator

from pydelta.errors import CommitOwnerConflictError, CommitOwnerError, CommitOwnerUnavailableError
from pydelta.txn.commit_owners.base import Commit, CommitOwnerClient, GetCommitsResponse

PATH_ENV = "PYDELTA_SQLITE_COMMIT_OWNER"
DEFAULT_PATH = os.path.join("~", ".pydelta", "commit-owner.sqlite3")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS owned_tables (
    table_id TEXT PRIMARY KEY,
    table_path TEXT NOT NULL,
    latest_version INTEGER NOT NULL,
    released INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS commits (
    table_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    file_name TEXT NOT NULL,
    size INTEGER NOT NULL,
    modification_time INTEGER NOT NULL,
    commit_timestamp INTEGER NOT NULL,
    backfilled INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (table_id, version)
);
"""


class SqliteCommitOwner(CommitOwnerClient):
    """Ratifies commits with a compare-and-set on `owned_tables.latest_version` in SQLite."""

    name = "sqlite"

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(os.path.expanduser(path))
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    @classmethod
    def from_conf(cls, conf: dict[str, str]) -> "SqliteCommitOwner":
        return cls(conf.get("path") or os.environ.get(PATH_ENV) or DEFAULT_PATH)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.executescript(_SCHEMA)
            except (sqlite3.Error, OSError) as e:
                raise CommitOwnerUnavailableError(f"sqlite commit owner at {self.path} is unavailable: {e}") from e
            self._conn = conn
        return self._conn

    @contextmanager
    def _txn(self, immediate: bool = True) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                conn = self._connection()
                conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            except sqlite3.Error as e:
                raise CommitOwnerUnavailableError(f"sqlite commit owner at {self.path} is unavailable: {e}") from e
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as e:
                conn.execute("ROLLBACK")
                raise CommitOwnerUnavailableError(f"sqlite commit owner at {self.path} failed to commit: {e}") from e

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ---- backend ----------------------------------------------------------------------
    def _register(self, table_id: str, table_root: str, version: int) -> None:
        with self._txn() as conn:
            conn.execute(
                "INSERT INTO owned_tables (table_id, table_path, latest_version, released) VALUES (?, ?, ?, 0) "
                "ON CONFLICT(table_id) DO UPDATE SET latest_version = excluded.latest_version, released = 0, "
                "table_path = excluded.table_path WHERE excluded.latest_version > owned_tables.latest_version",
                (table_id, table_root, version),
            )

    def _ratify(self, table_id: str, commit: Commit, release: bool) -> None:
        with self._txn() as conn:
            row = conn.execute(
                "SELECT latest_version, released FROM owned_tables WHERE table_id = ?", (table_id,)
            ).fetchone()
            if row is None:
                raise CommitOwnerError(f"table {table_id} is not registered with the sqlite commit owner {self.path}")
            latest, released = int(row[0]), bool(row[1])
            if released or latest != commit.version - 1:
                raise CommitOwnerConflictError(
                    f"version {commit.version} of table {table_id} was not ratified: the owner's latest version "
                    f"is {latest}{' and it released the table' if released else ''}",
                    latest,
                )
            conn.execute(
                "UPDATE owned_tables SET latest_version = ?, released = ? WHERE table_id = ?",
                (commit.version, int(release), table_id),
            )
            conn.execute(
                "INSERT INTO commits (table_id, version, file_name, size, modification_time, commit_timestamp) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (table_id, commit.version, commit.file_name, commit.size, commit.modification_time,
                 commit.commit_timestamp),
            )

    def _unbackfilled(self, table_id: str, start: int, end: int | None) -> GetCommitsResponse:
        with self._txn(immediate=False) as conn:
            row = conn.execute("SELECT latest_version FROM owned_tables WHERE table_id = ?", (table_id,)).fetchone()
            if row is None:
                return GetCommitsResponse([], -1)
            rows = conn.execute(
                "SELECT version, file_name, size, modification_time, commit_timestamp FROM commits "
                "WHERE table_id = ? AND backfilled = 0 AND version >= ? AND version <= ? ORDER BY version",
                (table_id, start, end if end is not None else 2**62),
            ).fetchall()
        return GetCommitsResponse([Commit(*r) for r in rows], int(row[0]))

    def _mark_backfilled(self, table_id: str, version: int) -> None:
        with self._txn() as conn:
            conn.execute(
                "UPDATE commits SET backfilled = 1 WHERE table_id = ? AND version <= ? AND backfilled = 0",
                (table_id, version),
            )

    def ratified_commits(self, table_id: str) -> list[Commit]:
        with self._txn(immediate=False) as conn:
            rows = conn.execute(
                "SELECT version, file_name, size, modification_time, commit_timestamp FROM commits "
                "WHERE table_id = ? ORDER BY version",
                (table_id,),
            ).fetchall()
        return [Commit(*r) for r in rows]
