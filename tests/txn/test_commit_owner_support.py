"""Helpers for the managed-commit tests (no tests here): owner confs, tables, worker processes.

Run as ``python -m tests.txn.test_commit_owner_support <command> ...`` (cwd = project root)
for the multi-process and kill -9 tests. `append-stream` prints one JSON line per
acknowledged commit, flushed, so a parent that kills it knows what was acknowledged.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import pydelta
from pydelta.log.commit_owners.base import COMMIT_OWNER_CONF_KEY, COMMIT_OWNER_KEY
from pydelta.log.commit_owners.registry import CATALOG_CONF_KEY, CATALOG_KEY
from pydelta.txn.transaction import Operation, OptimisticTransaction

from .writers import write_data_file

ROOT = Path(__file__).resolve().parents[2]
# The server .ci/postgres.sh installs and prepares (CI sets PYDELTA_REQUIRE_POSTGRES=1: no skip there).
PG_DSN = os.environ.get("PYDELTA_POSTGRES_DSN", "host=127.0.0.1 port=5432 dbname=test user=postgres password=postgres")
OWNERS = ("sqlite", "postgres")
# The catalogs of catalog-managed tables: pydelta's two, and a real Unity Catalog server.
CATALOGS = (*OWNERS, "unity")
# Unity Catalog tables a worker process must resolve first ("<uri> <catalog.schema.table>" per line):
# a path alone does not say which catalog holds such a table.
UC_TABLES_ENV = "PYDELTA_TEST_UC_TABLES"


def postgres_unreachable_reason() -> str | None:
    """None when the test PostgreSQL answers, else a loud reason to skip."""
    try:
        import psycopg

        with psycopg.connect(PG_DSN, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as e:  # noqa: BLE001
        return f"!!! PostgreSQL at '{PG_DSN}' is UNREACHABLE - postgres commit-owner tests NOT RUN: {e}"
    return None


def owner_conf(owner: str, tmp_path: Path, kind: str = "managedCommit") -> dict[str, str]:
    """Table properties turning managed commits on with `owner` (sqlite: a db file in tmp_path);
    with kind "catalogManaged", making the table catalog-managed by that store instead
    ("catalogManaged-inline": one whose commits are inline commits)."""
    if owner == "postgres":
        reason = postgres_unreachable_reason()
        if reason:
            if os.environ.get("PYDELTA_REQUIRE_POSTGRES"):
                pytest.fail(reason + " (PYDELTA_REQUIRE_POSTGRES is set: run .ci/postgres.sh)")
            pytest.skip(reason)
        conf = {"dsn": PG_DSN}
    else:
        conf = {"path": str(tmp_path / "owner.sqlite3")}
    if kind == "catalogManaged-inline":  # commits go to the catalog itself (inline commits)
        conf["inlineCommitBytes"] = str(1 << 20)
    if kind.startswith("catalogManaged"):
        return {CATALOG_KEY: owner, CATALOG_CONF_KEY: json.dumps(conf, sort_keys=True)}
    return {COMMIT_OWNER_KEY: owner, COMMIT_OWNER_CONF_KEY: json.dumps(conf, sort_keys=True)}


def create_catalog_table(catalog: str, request: pytest.FixtureRequest, tmp_path: Path, kind: str = "catalogManaged",
                         monkeypatch: pytest.MonkeyPatch | None = None) -> str:
    """A new catalog-managed table of `catalog` (kind: catalogManaged or catalogManaged-inline);
    returns its root. A Unity Catalog table is created through the session's server, where the
    catalog puts it, and its name is handed to the worker processes the test may spawn."""
    from tests.txn.writers import create_table, make_metadata

    if catalog != "unity":
        root = str(tmp_path / "t")
        create_table(root, configuration=owner_conf(catalog, tmp_path, kind))
        return root
    from pydelta.txn.unity_catalog import UnityCatalog
    from tests.uc.server import CATALOG, SCHEMA

    server = request.getfixturevalue("uc_server")
    name = f"{CATALOG}.{SCHEMA}.t_{uuid.uuid4().hex[:12]}"
    table = UnityCatalog(server.uri).create_table(name, make_metadata())
    if monkeypatch is not None:
        monkeypatch.setenv(UC_TABLES_ENV, f"{server.uri} {name}")
    return table.location


def _bind_uc_tables() -> None:
    """In a worker process: resolve the Unity Catalog tables the parent named."""
    from pydelta.txn.unity_catalog import UnityCatalog

    for line in os.environ.get(UC_TABLES_ENV, "").splitlines():
        uri, name = line.split()
        UnityCatalog(uri).table(name)


def acks(text: str) -> list[dict]:
    """Acknowledged commits printed by a worker (a line cut by kill -9 is not an acknowledgement)."""
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def committed_versions(root: str) -> list[int]:
    log = Path(root) / "_delta_log"
    return sorted(int(p.name[:20]) for p in log.iterdir()
                  if p.name.endswith(".json") and p.name[:20].isdigit() and len(p.name) == 25)


def spawn(*args: str, **popen: Any):
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.txn.test_commit_owner_support", *args],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen,
    )


def cmd_append_stream(root: str, worker: int, count: int, ready_file: str | None = None) -> None:
    """`count` blind appends (2 rows each); prints {"version", "ids", "path"} after each acknowledged commit.

    `ready_file` is created once the worker is about to commit (imports and first load done),
    so a parent can kill it at a random point of the commit loop rather than during start-up.
    """
    snapshot = pydelta.load_snapshot(root)
    snapshot.files()  # replayed now (a snapshot from a checksum replays on first use), not after `ready`
    if ready_file:
        Path(ready_file).touch()
    for i in range(count):
        ids = [worker * 1_000_000 + i * 10 + k for k in range(2)]
        rows = [{"id": x, "part": f"w{worker % 2}", "value": f"w{worker}-{i}"} for x in ids]
        add = write_data_file(root, rows)
        txn = OptimisticTransaction(root, snapshot, engine_info=f"pydelta-test/worker-{worker}",
                                    post_commit_hooks=False)
        version = txn.commit([add], Operation.write("Append", []),
                             operation_metrics={"numFiles": 1, "numOutputRows": 2})
        print(json.dumps({"worker": worker, "version": version, "ids": ids, "path": add["add"]["path"]}), flush=True)
        snapshot = txn.post_commit_snapshot()


def cmd_die_before_publish(root: str) -> None:
    """One append whose process is killed (SIGKILL, by itself) right after the catalog ratified
    the commit and before anything is published; prints the ids it staged first."""
    import signal

    from pydelta.log.commit_owners.base import CommitOwnerClient

    def killed(*args: Any, **kwargs: Any) -> int:
        os.kill(os.getpid(), signal.SIGKILL)
        return -1

    CommitOwnerClient.backfill_to_version = killed  # type: ignore[method-assign]  # the kill point
    rows = [{"id": 424242, "part": "k", "value": "killed"}]
    print(json.dumps({"ids": [r["id"] for r in rows]}), flush=True)
    txn = OptimisticTransaction(root, pydelta.load_snapshot(root), post_commit_hooks=False)
    txn.commit([write_data_file(root, rows)], Operation.write("Append", []))


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    _bind_uc_tables()
    if command == "append-stream":
        cmd_append_stream(args[0], int(args[1]), int(args[2]), args[3] if len(args) > 3 else None)
    elif command == "die-before-publish":
        cmd_die_before_publish(args[0])
    else:
        raise SystemExit(f"unknown command {command}")
    return 0


def new_table_id() -> str:
    return str(uuid.uuid4())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
