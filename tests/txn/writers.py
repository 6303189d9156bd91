"""Test helpers: real Parquet data files, small tables, and writer processes.

Run as ``python -m tests.txn.writers <command> ...`` (cwd = project root) for the
multi-process and crash tests. Commands print one JSON line with their result.

Crash hook: when PYDELTA_TEST_BLOCK_BEFORE_COMMIT names a file, the `append`
command writes its data file, creates ``<that file>.ready`` and then waits for
the named file to appear before committing; the parent kills it meanwhile.
The hook lives here, in test code, not in the library.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import pydelta
from pydelta.errors import DeltaConcurrentModificationException
from pydelta.protocol.actions import Metadata
from pydelta.protocol.predicates import Cmp, Col, Lit
from pydelta.txn.transaction import Operation, OptimisticTransaction

BLOCK_ENV = "PYDELTA_TEST_BLOCK_BEFORE_COMMIT"
FIELDS: tuple[tuple[str, str], ...] = (("id", "long"), ("part", "string"), ("value", "string"))
_ARROW = {"long": pa.int64(), "integer": pa.int32(), "string": pa.string(), "double": pa.float64()}


def schema_json(fields: Iterable[tuple[str, str]] = FIELDS, field_metadata: Mapping[str, dict] | None = None) -> str:
    md = field_metadata or {}
    return json.dumps(
        {
            "type": "struct",
            "fields": [{"name": n, "type": t, "nullable": True, "metadata": md.get(n, {})} for n, t in fields],
        },
        separators=(",", ":"),
    )


def make_metadata(
    partition_columns: Iterable[str] = ("part",),
    configuration: Mapping[str, str] | None = None,
    fields: Iterable[tuple[str, str]] = FIELDS,
    field_metadata: Mapping[str, dict] | None = None,
) -> Metadata:
    return Metadata(
        id=str(uuid.uuid4()),
        schema_string=schema_json(fields, field_metadata),
        partition_columns=tuple(partition_columns),
        configuration=dict(configuration or {}),
        created_time=int(time.time() * 1000),
    )


def _stats(table: pa.Table) -> str:
    """numRecords/minValues/maxValues/nullCount as delta writes them, for simple columns."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name in table.column_names:
        col = table.column(name)
        nulls[name] = col.null_count
        valid = [v for v in col.to_pylist() if v is not None]
        if valid:
            mins[name], maxs[name] = min(valid), max(valid)
    return json.dumps(
        {"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls},
        separators=(",", ":"),
    )


def write_data_file(
    root: str,
    rows: list[dict[str, Any]],
    partition_columns: Iterable[str] = ("part",),
    fields: Iterable[tuple[str, str]] = FIELDS,
    data_change: bool = True,
) -> dict[str, Any]:
    """Write one Parquet file for rows that share partition values; return its add action."""
    partition_columns = list(partition_columns)
    fields = list(fields)
    values = {c: (None if rows[0].get(c) is None else str(rows[0][c])) for c in partition_columns}
    data_fields = [(n, t) for n, t in fields if n not in partition_columns]
    table = pa.table({n: pa.array([r.get(n) for r in rows], _ARROW[t]) for n, t in data_fields})
    directory = "/".join(f"{c}={'__HIVE_DEFAULT_PARTITION__' if v is None else v}" for c, v in values.items())
    rel = (directory + "/" if directory else "") + f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    full = os.path.join(root, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    pq.write_table(table, full)
    st = os.stat(full)
    return {
        "add": {
            "path": rel,
            "partitionValues": values,
            "size": st.st_size,
            "modificationTime": int(st.st_mtime * 1000),
            "dataChange": data_change,
            "stats": _stats(table),
        }
    }


def remove_action(add: Mapping[str, Any], data_change: bool = True) -> dict[str, Any]:
    body = next(iter(add.values())) if len(add) == 1 and ("add" in add or "remove" in add) else add
    return {
        "remove": {
            "path": body["path"],
            "deletionTimestamp": int(time.time() * 1000),
            "dataChange": data_change,
            "extendedFileMetadata": True,
            "partitionValues": dict(body.get("partitionValues") or {}),
            "size": body.get("size"),
        }
    }


def create_table(
    root: str,
    partition_columns: Iterable[str] = ("part",),
    configuration: Mapping[str, str] | None = None,
    **txn_kwargs: Any,
) -> int:
    md = make_metadata(partition_columns, configuration)
    txn = OptimisticTransaction(root, None, **txn_kwargs)
    txn.update_metadata(md)
    return txn.commit([], Operation.create_table(md))


def append(
    root: str, rows: list[dict[str, Any]], partition_columns: Iterable[str] = ("part",), **txn_kwargs: Any
) -> int:
    snapshot = pydelta.load_snapshot(root)
    txn = OptimisticTransaction(root, snapshot, **txn_kwargs)
    add = write_data_file(root, rows, partition_columns)
    return txn.commit([add], Operation.write("Append", []),
                      operation_metrics={"numFiles": 1, "numOutputRows": len(rows)})


def rows_of(root: str, version: int | None = None) -> list[tuple]:
    """Sorted (id, part, value) rows of the table, read through pydelta's file list."""
    snapshot = pydelta.load_snapshot(root, version=version)
    files = snapshot.files().to_pylist()
    out: list[tuple] = []
    for f in files:
        data = pq.read_table(snapshot.absolute_path(f["path"])).to_pylist()
        pv = dict(f["partition_values"] or {})
        for r in data:
            merged = {**{k: v for k, v in pv.items()}, **r}
            out.append((merged.get("id"), merged.get("part"), merged.get("value")))
    return sorted(out, key=repr)


def deltalake_rows(root: str) -> tuple[int, list[tuple]]:
    """(version, sorted rows) as the deltalake (delta-rs) package reads the table."""
    import deltalake

    dt = deltalake.DeltaTable(root)
    table = dt.to_pyarrow_table()
    cols = {n: table.column(n).to_pylist() for n in table.column_names}
    n = table.num_rows
    rows = [tuple(cols.get(c, [None] * n)[i] for c in ("id", "part", "value")) for i in range(n)]
    return dt.version(), sorted(rows, key=repr)


def wait_for(path: str, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.01)
    return False


def touch(path: str) -> None:
    with open(path, "w") as f:
        f.write(str(os.getpid()))


# ---- commands for child processes --------------------------------------------------------


def cmd_append_loop(root: str, worker: int, count: int) -> dict[str, Any]:
    """`count` blind appends of 3 rows each; every one is a separate commit."""
    snapshot = pydelta.load_snapshot(root)
    versions = []
    for i in range(count):
        rows = [{"id": worker * 100_000 + i * 10 + k, "part": f"w{worker % 2}", "value": f"w{worker}-{i}"}
                for k in range(3)]
        add = write_data_file(root, rows)
        txn = OptimisticTransaction(root, snapshot, engine_info=f"pydelta-test/worker-{worker}")
        versions.append(txn.commit([add], Operation.write("Append", []),
                                   operation_metrics={"numFiles": 1, "numOutputRows": 3}))
        snapshot = txn.post_commit_snapshot()
    return {"worker": worker, "versions": versions}


def cmd_overwrite_partition(root: str, part: str, sync_dir: str, worker: int) -> dict[str, Any]:
    """Replace partition `part` (read it, remove its files, add one new file), in lock-step with a peer."""
    snapshot = pydelta.load_snapshot(root)
    txn = OptimisticTransaction(root, snapshot)
    predicate = Cmp("=", Col(("part",)), Lit(part))
    txn.read_predicate(predicate)
    files = [f for f in snapshot.files().to_pylist() if dict(f["partition_values"] or []).get("part") == part]
    txn.read_files(f["path"] for f in files)
    rows = [{"id": 9_000_000 + worker * 10 + k, "part": part, "value": f"overwrite-by-{worker}"} for k in range(2)]
    add = write_data_file(root, rows)
    removes = [remove_action({"add": {"path": f["path"], "partitionValues": dict(f["partition_values"] or {}),
                                      "size": f["size"]}})
               for f in files]
    touch(os.path.join(sync_dir, f"ready-{worker}"))
    if not wait_for(os.path.join(sync_dir, "go"), 60):
        return {"worker": worker, "status": "timeout"}
    try:
        version = txn.commit(
            [*removes, add],
            Operation.write("Overwrite", [], predicate=f"(part = '{part}')"),
            operation_metrics={"numFiles": 1, "numOutputRows": 2, "numRemovedFiles": len(removes)},
        )
    except DeltaConcurrentModificationException as e:
        return {
            "worker": worker,
            "status": "conflict",
            "error": type(e).__name__,
            "message": str(e),
            "read_version": snapshot.version,
            "data_file": add["add"]["path"],
        }
    return {"worker": worker, "status": "ok", "version": version, "read_version": snapshot.version,
            "data_file": add["add"]["path"]}


def cmd_append(root: str, ident: int) -> dict[str, Any]:
    """One append; with the crash hook it blocks between writing its data file and committing."""
    snapshot = pydelta.load_snapshot(root)
    txn = OptimisticTransaction(root, snapshot)
    rows = [{"id": 5_000_000 + ident, "part": "crash", "value": "should-not-appear"}]
    add = write_data_file(root, rows)
    block = os.environ.get(BLOCK_ENV)
    if block:
        with open(block + ".ready", "w") as f:
            f.write(add["add"]["path"])
        wait_for(block, 3600)  # the parent kills us long before
    version = txn.commit([add], Operation.write("Append", []))
    return {"status": "ok", "version": version}


def cmd_checkpoint_crash(root: str, signal_file: str, freeze_at: int) -> dict[str, Any]:
    """Commit a version that triggers a checkpoint, and freeze in the middle of writing it.

    Storage creates files as a temp file plus an atomic link/rename, so the moments a
    kill can hit are "before the n-th checkpoint file (or `_last_checkpoint`) becomes
    visible". The `freeze_at`-th such publication blocks (its temp file fully written)
    until the parent kills us. If it never happens the commit simply completes.
    """
    real_link, real_replace = os.link, os.replace
    seen = [0]

    def gate(dst: Any) -> None:
        base = os.path.basename(os.fspath(dst))
        if ".checkpoint." in base or base == "_last_checkpoint" or "_sidecars" in os.fspath(dst):
            seen[0] += 1
            if seen[0] == freeze_at:
                with open(signal_file, "w") as f:
                    f.write(os.fspath(dst))
                time.sleep(3600)

    def link(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        gate(dst)
        real_link(src, dst, *args, **kwargs)

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        gate(dst)
        real_replace(src, dst, *args, **kwargs)

    os.link = link  # type: ignore[assignment]
    os.replace = replace  # type: ignore[assignment]
    version = append(root, [{"id": 7_000_000, "part": "cp", "value": "checkpointed"}])
    return {"status": "ok", "version": version, "published": seen[0]}


def _freeze(signal_file: str, what: str) -> None:
    """Say where we are (the parent waits for `signal_file`), then wait to be killed or interrupted."""
    with open(signal_file, "w") as f:
        f.write(what)
    time.sleep(3600)


def cmd_vacuum_crash(root: str, signal_file: str, freeze_after: int) -> dict[str, Any]:
    """VACUUM (retention passed) that freezes after deleting `freeze_after` files."""
    from pydelta.log.vacuum_plan import execute_plan, plan_vacuum

    plan = plan_vacuum(pydelta.load_snapshot(root), now_ms=int(time.time() * 1000) + 30 * 86_400_000)
    real_unlink, deleted = os.unlink, [0]

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        if deleted[0] == freeze_after:
            _freeze(signal_file, os.fspath(path))
        real_unlink(path, *args, **kwargs)
        deleted[0] += 1

    os.unlink = unlink  # type: ignore[assignment]
    return {"status": "ok", "deleted": execute_plan(plan)}


def _append_frozen_at_link(root: str, signal_file: str, frozen: Callable[[str], bool],
                           row: dict[str, Any]) -> dict[str, Any]:
    """An append that freezes when it is about to put a file `frozen` picks in place (os.link)."""
    real_link = os.link

    def link(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if frozen(os.fspath(dst)):
            _freeze(signal_file, os.fspath(dst))
        real_link(src, dst, *args, **kwargs)

    os.link = link  # type: ignore[assignment]
    return {"status": "ok", "version": append(root, [row])}


def cmd_commit_interrupt(root: str, signal_file: str) -> dict[str, Any]:
    """An append that freezes with its commit file written but not yet linked into place."""
    return _append_frozen_at_link(root, signal_file, lambda dst: dst.endswith(".json") and "_delta_log" in dst,
                                  {"id": 8_000_000, "part": "int", "value": "interrupted"})


def cmd_checksum_crash(root: str, signal_file: str) -> dict[str, Any]:
    """An append that freezes in its post-commit hooks, while putting the version's checksum in place."""
    return _append_frozen_at_link(root, signal_file, lambda dst: dst.endswith(".crc"),
                                  {"id": 9_000_000, "part": "crc", "value": "committed"})


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "append-loop":
        result = cmd_append_loop(args[0], int(args[1]), int(args[2]))
    elif command == "overwrite-partition":
        result = cmd_overwrite_partition(args[0], args[1], args[2], int(args[3]))
    elif command == "append":
        result = cmd_append(args[0], int(args[1]))
    elif command == "checkpoint-crash":
        result = cmd_checkpoint_crash(args[0], args[1], int(args[2]))
    elif command == "vacuum-crash":
        result = cmd_vacuum_crash(args[0], args[1], int(args[2]))
    elif command == "commit-interrupt":
        result = cmd_commit_interrupt(args[0], args[1])
    elif command == "checksum-crash":
        result = cmd_checksum_crash(args[0], args[1])
    else:
        raise SystemExit(f"unknown command {command}")
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
