"""The ratification store of a commit owner kept in a SQL database, for any DB-API driver.

Two tables: one row per owned table with its latest ratified version (the
compare-and-set target), and one row per ratified commit. Each backend supplies a
transaction context (`_txn`), its parameter placeholder and its table names; the
statements are the same for SQLite and PostgreSQL.
"""

from __future__ import annotations

from abc import abstractmethod
from contextlib import AbstractContextManager
from typing import Any

from pydelta.errors import CommitOwnerConflictError, CommitOwnerError
from pydelta.log.commit_owners.base import Commit, CommitOwnerClient, GetCommitsResponse

_NO_END = 2**62
_COMMIT_COLUMNS = "version, file_name, size, modification_time, commit_timestamp, content"


def schema(owned: str, commits: str, integer: str, boolean: str, false: str, blob: str) -> list[str]:
    """CREATE TABLE statements of the three tables, in the dialect's type names: owned tables,
    ratified commits (`content`: an inline commit's bytes, else NULL), and the maintenance
    operations granted on catalog-managed tables."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {owned} (
            table_id TEXT PRIMARY KEY,
            table_path TEXT NOT NULL,
            latest_version {integer} NOT NULL,
            released {boolean} NOT NULL DEFAULT {false}
        )""",
        f"""CREATE TABLE IF NOT EXISTS {commits} (
            table_id TEXT NOT NULL,
            version {integer} NOT NULL,
            file_name TEXT NOT NULL,
            size {integer} NOT NULL,
            modification_time {integer} NOT NULL,
            commit_timestamp {integer} NOT NULL,
            backfilled {boolean} NOT NULL DEFAULT {false},
            content {blob},
            PRIMARY KEY (table_id, version)
        )""",
        f"""CREATE TABLE IF NOT EXISTS {grants_table(owned)} (
            table_id TEXT NOT NULL,
            operation TEXT NOT NULL,
            PRIMARY KEY (table_id, operation)
        )""",
    ]


def grants_table(owned: str) -> str:
    """The maintenance-grants table that goes with an owned-tables table."""
    return owned.replace("owned_tables", "maintenance_grants")


class SqlCommitOwner(CommitOwnerClient):
    """Ratifies with one database transaction: a conditional UPDATE of the version + the commit row."""

    owned_table: str
    commits_table: str
    placeholder: str  # "?" (sqlite3) or "%s" (psycopg)
    stores_inline_commits = True

    @abstractmethod
    def _txn(self) -> AbstractContextManager[Any]:
        """A write transaction on the connection (serialized against other writers)."""

    def _read_txn(self) -> AbstractContextManager[Any]:
        """A transaction whose reads see one consistent state (default: a write transaction)."""
        return self._txn()

    def _sql(self, statement: str) -> str:
        return statement.format(owned=self.owned_table, commits=self.commits_table,
                                grants=grants_table(self.owned_table)).replace("?", self.placeholder)

    def permits(self, table_id: str, operation: str) -> bool:
        with self._read_txn() as conn:
            row = conn.execute(self._sql("SELECT 1 FROM {grants} WHERE table_id = ? AND operation = ?"),
                               (table_id, operation)).fetchone()
        return row is not None

    def grant(self, table_id: str, operation: str, allowed: bool = True) -> None:
        """Permit (or, with allowed=False, forbid again) a maintenance operation on a catalog-managed table."""
        with self._txn() as conn:
            conn.execute(self._sql("DELETE FROM {grants} WHERE table_id = ? AND operation = ?"), (table_id, operation))
            if allowed:
                conn.execute(self._sql("INSERT INTO {grants} (table_id, operation) VALUES (?, ?)"),
                             (table_id, operation))

    def _register(self, table_id: str, table_root: str, version: int) -> None:
        with self._txn() as conn:
            conn.execute(self._sql(
                "INSERT INTO {owned} (table_id, table_path, latest_version, released) VALUES (?, ?, ?, FALSE) "
                "ON CONFLICT (table_id) DO UPDATE SET latest_version = excluded.latest_version, released = FALSE, "
                "table_path = excluded.table_path WHERE excluded.latest_version > {owned}.latest_version"),
                (table_id, table_root, version),
            )

    def _ratify(self, table_id: str, commit: Commit, release: bool) -> None:
        with self._txn() as conn:
            cur = conn.execute(self._sql(
                "UPDATE {owned} SET latest_version = ?, released = ? "
                "WHERE table_id = ? AND latest_version = ? AND NOT released"),
                (commit.version, release, table_id, commit.version - 1),
            )
            if cur.rowcount != 1:
                row = conn.execute(self._sql("SELECT latest_version, released FROM {owned} WHERE table_id = ?"),
                                   (table_id,)).fetchone()
                if row is None:
                    raise CommitOwnerError(f"table {table_id} is not registered with the {self.name} commit owner")
                raise CommitOwnerConflictError(
                    f"version {commit.version} of table {table_id} was not ratified: the owner's latest version "
                    f"is {row[0]}{' and it released the table' if row[1] else ''}",
                    int(row[0]),
                )
            conn.execute(self._sql(f"INSERT INTO {{commits}} (table_id, {_COMMIT_COLUMNS}) "
                                   "VALUES (?, ?, ?, ?, ?, ?, ?)"),
                         (table_id, commit.version, commit.file_name, commit.size, commit.modification_time,
                          commit.commit_timestamp, commit.content))

    def _unbackfilled(self, table_id: str, start: int, end: int | None) -> GetCommitsResponse:
        with self._read_txn() as conn:
            row = conn.execute(self._sql("SELECT latest_version FROM {owned} WHERE table_id = ?"),
                               (table_id,)).fetchone()
            if row is None:
                return GetCommitsResponse([], -1)
            rows = conn.execute(self._sql(
                f"SELECT {_COMMIT_COLUMNS} FROM {{commits}} "
                "WHERE table_id = ? AND NOT backfilled AND version >= ? AND version <= ? ORDER BY version"),
                (table_id, start, end if end is not None else _NO_END),
            ).fetchall()
        return GetCommitsResponse([_commit(r) for r in rows], int(row[0]))

    def _mark_backfilled(self, table_id: str, first: int, last: int) -> None:
        with self._txn() as conn:
            conn.execute(self._sql(
                "UPDATE {commits} SET backfilled = TRUE, content = NULL "  # published: the file holds it now
                "WHERE table_id = ? AND version >= ? AND version <= ? AND NOT backfilled"),
                (table_id, first, last),
            )

    def ratified_commits(self, table_id: str) -> list[Commit]:
        with self._read_txn() as conn:
            rows = conn.execute(
                self._sql(f"SELECT {_COMMIT_COLUMNS} FROM {{commits}} WHERE table_id = ? ORDER BY version"),
                (table_id,)).fetchall()
        return [_commit(r) for r in rows]


def _commit(row: Any) -> Commit:
    version, file_name, size, modification_time, commit_timestamp, content = row
    return Commit(version, file_name, size, modification_time, commit_timestamp,
                  None if content is None else bytes(content))  # psycopg gives a memoryview
