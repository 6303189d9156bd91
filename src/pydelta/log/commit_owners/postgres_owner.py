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
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydelta.errors import CommitOwnerError, CommitOwnerUnavailableError
from pydelta.extras import import_extra
from pydelta.log.commit_owners.sql_owner import SqlCommitOwner, schema

DSN_ENV = "PYDELTA_POSTGRES_DSN"
_DDL_LOCK = 0x7079_6465_6C74_61  # advisory lock id for the one-time DDL ("pydelta")

_SCHEMA = [
    *schema("pydelta_owned_tables", "pydelta_commits", "BIGINT", "BOOLEAN", "FALSE", "BYTEA"),
    "ALTER TABLE pydelta_commits ADD COLUMN IF NOT EXISTS content BYTEA",  # a database made before inline commits
]


def _redacted(dsn: str) -> str:
    return " ".join("password=***" if p.startswith("password=") else p for p in dsn.split())


class PostgresCommitOwner(SqlCommitOwner):
    """Ratifies commits with one PostgreSQL transaction each; one connection per process."""

    name = "postgres"
    owned_table, commits_table, placeholder = "pydelta_owned_tables", "pydelta_commits", "%s"

    def __init__(self, dsn: str, connect_timeout: int = 5) -> None:
        self.dsn = dsn
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._conn: Any = None

    @classmethod
    def from_conf(cls, conf: dict[str, str]) -> PostgresCommitOwner:
        dsn = conf.get("dsn") or os.environ.get(DSN_ENV)
        if not dsn:
            raise CommitOwnerError(
                f"the postgres commit owner needs a connection string: commitOwnerConf {{\"dsn\": ...}} "
                f"or the environment variable {DSN_ENV}"
            )
        return cls(dsn, int(conf.get("connect_timeout", "5")))

    def _connection(self) -> Any:
        psycopg = import_extra("psycopg", "postgres", "The postgres commit owner")

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
        psycopg = import_extra("psycopg", "postgres", "The postgres commit owner")

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

    @contextmanager
    def _read_txn(self) -> Iterator[Any]:
        with self._txn() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")  # one snapshot for both reads
            yield conn
