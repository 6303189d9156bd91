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
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from pydelta.errors import CommitOwnerUnavailableError
from pydelta.log.commit_owners.sql_owner import SqlCommitOwner, schema

PATH_ENV = "PYDELTA_SQLITE_COMMIT_OWNER"
DEFAULT_PATH = os.path.join("~", ".pydelta", "commit-owner.sqlite3")

_SCHEMA = ";\n".join(schema("owned_tables", "commits", "INTEGER", "INTEGER", "0", "BLOB")) + ";"


class SqliteCommitOwner(SqlCommitOwner):
    """Ratifies commits with a compare-and-set on `owned_tables.latest_version` in SQLite."""

    name = "sqlite"
    owned_table, commits_table, placeholder = "owned_tables", "commits", "?"

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(os.path.expanduser(path))
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    @classmethod
    def from_conf(cls, conf: dict[str, str]) -> SqliteCommitOwner:
        return cls(conf.get("path") or os.environ.get(PATH_ENV) or DEFAULT_PATH)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.executescript(_SCHEMA)
                _add_content_column(conn)
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

    def _read_txn(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._txn(immediate=False)  # a deferred transaction reads one WAL snapshot


def _add_content_column(conn: sqlite3.Connection) -> None:
    """Give a file made before inline commits its `commits.content` column (two processes may race)."""
    if "content" in {row[1] for row in conn.execute("PRAGMA table_info(commits)")}:
        return
    try:
        conn.execute("ALTER TABLE commits ADD COLUMN content BLOB")
    except sqlite3.OperationalError as e:
        if "duplicate column" not in str(e):
            raise
