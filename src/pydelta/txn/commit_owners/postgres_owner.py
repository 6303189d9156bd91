"""`postgres`: a commit owner backed by a PostgreSQL server (psycopg 3).

Connection: `commitOwnerConf` {"dsn": "host=... dbname=... user=..."}, else the
environment variable PYDELTA_POSTGRES_DSN. Put no password in the conf (every reader of
the table sees it): use ~/.pgpass, PGPASSWORD or a trust/peer rule instead.

Tables (created on first use, under an advisory lock): `pydelta_owned_tables`, one row
per table with its latest ratified version, and `pydelta_commits`, one row per ratified
commit. A commit is one database transaction: compare-and-set of the version
(`UPDATE ... WHERE latest_version = v-1`, which row-locks and re-checks under
concurrency) plus the insert of the commit row.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from pydelta.errors import CommitOwnerConflictError, CommitOwnerError, CommitOwnerUnavailableError
from pydelta.txn.commit_owners.base import Commit, CommitOwnerClient, GetCommitsResponse

DSN_ENV = "PYDELTA_POSTGRES_DSN"
_DDL_LOCK = 0x7079_6465_6C74_61  # advisory lock id for the one-time DDL ("pydelta")

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS pydelta_owned_tables (
        table_id TEXT PRIMARY KEY,
        table_path TEXT NOT NULL,
        latest_version BIGINT NOT NULL,
        released BOOLEAN NOT NULL DEFAULT FALSE
    )""",
    """CREATE TABLE IF NOT EXISTS pydelta_commits (
        table_id TEXT NOT NULL,
        version BIGINT NOT NULL,
        file_name TEXT NOT NULL,
        size BIGINT NOT NULL,
        modification_time BIGINT NOT NULL,
        commit_timestamp BIGINT NOT NULL,
        backfilled BOOLEAN NOT NULL DEFAULT FALSE,
        PRIMARY KEY (table_id, version)
    )""",
]


def _redacted(dsn: str) -> str:
    return " ".join("password=***" if p.startswith("password=") else p for p in dsn.split())


class PostgresCommitOwner(CommitOwnerClient):
    """Ratifies commits with one PostgreSQL transaction each; one connection per process."""

    name = "postgres"

    def __init__(self, dsn: str, connect_timeout: int = 5) -> None:
        self.dsn = dsn
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._conn: Any = None

    @classmethod
    def from_conf(cls, conf: dict[str, str]) -> "PostgresCommitOwner":
        dsn = conf.get("dsn") or os.environ.get(DSN_ENV)
        if not dsn:
            raise CommitOwnerError(
                f"the postgres commit owner needs a connection string: commitOwnerConf {{\"dsn\": ...}} "
                f"or the environment variable {DSN_ENV}"
            )
        return cls(dsn, int(conf.get("connect_timeout", "5")))

    def _connection(self) -> Any:
        import psycopg

        if self._conn is not None and not self._conn.closed:
            return self._conn
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=self.connect_timeout)
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
                for ddl in _SCHEMA:
                    conn.execute(ddl)
        except psycopg.Error as e:
            raise CommitOwnerUnavailableError(
                f"postgres commit owner ({_redacted(self.dsn)}) is unreachable: {e}".strip()
            ) from e
        self._conn = conn
        return conn

    @contextmanager
    def _txn(self) -> Iterator[Any]:
        import psycopg

        with self._lock:
            conn = self._connection()
            try:
                with conn.transaction():
                    yield conn
            except psycopg.OperationalError as e:
                conn.close()
                self._conn = None
                raise CommitOwnerUnavailableError(
                    f"postgres commit owner ({_redacted(self.dsn)}) failed; the operation's outcome is "
                    f"unknown only if it was a commit (readers will see it if it was ratified): {e}"
                ) from e

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ---- backend ----------------------------------------------------------------------
    def _register(self, table_id: str, table_root: str, version: int) -> None:
        with self._txn() as conn:
            conn.execute(
                "INSERT INTO pydelta_owned_tables (table_id, table_path, latest_version, released) "
                "VALUES (%s, %s, %s, FALSE) ON CONFLICT (table_id) DO UPDATE SET "
                "latest_version = EXCLUDED.latest_version, released = FALSE, table_path = EXCLUDED.table_path "
                "WHERE EXCLUDED.latest_version > pydelta_owned_tables.latest_version",
                (table_id, table_root, version),
            )

    def _ratify(self, table_id: str, commit: Commit, release: bool) -> None:
        with self._txn() as conn:
            cur = conn.execute(
                "UPDATE pydelta_owned_tables SET latest_version = %s, released = %s "
                "WHERE table_id = %s AND latest_version = %s AND NOT released",
                (commit.version, release, table_id, commit.version - 1),
            )
            if cur.rowcount != 1:
                row = conn.execute(
                    "SELECT latest_version, released FROM pydelta_owned_tables WHERE table_id = %s", (table_id,)
                ).fetchone()
                if row is None:
                    raise CommitOwnerError(f"table {table_id} is not registered with the postgres commit owner")
                raise CommitOwnerConflictError(
                    f"version {commit.version} of table {table_id} was not ratified: the owner's latest version "
                    f"is {row[0]}{' and it released the table' if row[1] else ''}",
                    int(row[0]),
                )
            conn.execute(
                "INSERT INTO pydelta_commits (table_id, version, file_name, size, modification_time, "
                "commit_timestamp) VALUES (%s, %s, %s, %s, %s, %s)",
                (table_id, commit.version, commit.file_name, commit.size, commit.modification_time,
                 commit.commit_timestamp),
            )

    def _unbackfilled(self, table_id: str, start: int, end: int | None) -> GetCommitsResponse:
        with self._txn() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            row = conn.execute(
                "SELECT latest_version FROM pydelta_owned_tables WHERE table_id = %s", (table_id,)
            ).fetchone()
            if row is None:
                return GetCommitsResponse([], -1)
            rows = conn.execute(
                "SELECT version, file_name, size, modification_time, commit_timestamp FROM pydelta_commits "
                "WHERE table_id = %s AND NOT backfilled AND version >= %s AND version <= %s ORDER BY version",
                (table_id, start, end if end is not None else 2**62),
            ).fetchall()
        return GetCommitsResponse([Commit(*r) for r in rows], int(row[0]))

    def _mark_backfilled(self, table_id: str, version: int) -> None:
        with self._txn() as conn:
            conn.execute(
                "UPDATE pydelta_commits SET backfilled = TRUE WHERE table_id = %s AND version <= %s AND NOT backfilled",
                (table_id, version),
            )

    def ratified_commits(self, table_id: str) -> list[Commit]:
        with self._txn() as conn:
            rows = conn.execute(
                "SELECT version, file_name, size, modification_time, commit_timestamp FROM pydelta_commits "
                "WHERE table_id = %s ORDER BY version",
                (table_id,),
            ).fetchall()
        return [Commit(*r) for r in rows]
