"""Shared helpers for the maintenance-command tests (no tests here).

`deltalake` (delta-rs) is the independent witness: it reads each resulting table in a
child process (its runtime may abort at interpreter exit, which must not take pytest down).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pydelta.log.snapshot import load_snapshot

_DELTALAKE_ROWS = r"""
import json, os, sys
out = {}
try:
    import deltalake
    from deltalake import QueryBuilder
    import pyarrow as pa
    dt = deltalake.DeltaTable(sys.argv[1])
    out["version"] = dt.version()
    cols = sys.argv[2].split(",")
    sql = "select " + ", ".join('"' + c + '"' for c in cols) + " from t"
    table = pa.table(QueryBuilder().register("t", dt).execute(sql).read_all())
    out["rows"] = [list(r.values()) for r in table.to_pylist()]
except Exception as e:
    out["error"] = f"{type(e).__name__}: {e}"
sys.stdout.write(json.dumps(out, default=str))
sys.stdout.flush()
os._exit(0)
"""


def deltalake_read(path: str | Path, columns: list[str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _DELTALAKE_ROWS, str(path), ",".join(columns)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def deltalake_rows(path: str | Path, columns: list[str]) -> list[tuple]:
    """The table's rows (only `columns`, in that order) as deltalake reads them, sorted."""
    out = deltalake_read(path, columns)
    assert "error" not in out, out["error"]
    return sorted(tuple(r) for r in out["rows"])


def spark_rows(df: Any, columns: list[str]) -> list[tuple]:
    return sorted(tuple(r) for r in df.select(*columns).collect())


def commit_infos(path: str | Path) -> dict[int, dict]:
    """version -> commitInfo, read straight from the JSON commits."""
    log = Path(path) / "_delta_log"
    out = {}
    for p in sorted(log.glob("*.json")):
        for line in p.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                out[int(p.name.split(".")[0])] = action["commitInfo"]
    return out


def commit_actions(path: str | Path, version: int) -> list[dict]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def latest_version(path: str | Path) -> int:
    return load_snapshot(str(path)).version


def live_paths(path: str | Path) -> set[str]:
    snap = load_snapshot(str(path))
    return {snap.absolute_path(p) for p in snap.files().column("path").to_pylist()}


def data_files_on_disk(path: str | Path) -> set[str]:
    root = Path(path)
    return {str(p) for p in root.rglob("*.parquet") if "_delta_log" not in p.parts and not p.name.startswith(".")}


def set_mtime(path: str | Path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def now_ms() -> int:
    return int(time.time() * 1000)


def delete_rows_with_dv(table_path: str | Path, rel_path: str, row_indexes: list[int]) -> int:
    """Mark rows of one data file deleted with a deletion vector file; returns the version."""
    from pydelta.log.deletion_vector_files import write_deletion_vector_file
    from pydelta.log.replay import canonical_path
    from pydelta.spark.write.data_files import remove_action
    from pydelta.txn.commit_info import Operation
    from pydelta.txn.transaction import OptimisticTransaction

    snap = load_snapshot(str(table_path))
    row = next(r for r in snap.files().to_pylist()
               if canonical_path(r["path"], snap.table_root) == canonical_path(rel_path, snap.table_root))
    dv = write_deletion_vector_file(snap.table_root, row_indexes)
    old = {
        "path": row["path"], "partitionValues": dict(row["partition_values"] or []), "size": row["size"],
        "modificationTime": row["modification_time"], "dataChange": True, "stats": row["stats"],
    }
    new = dict(old, deletionVector=dv.to_dict())
    txn = OptimisticTransaction(snap.table_root, snap)
    txn.read_files([row["path"]])
    return txn.commit(
        [{"remove": remove_action(old, data_change=True)}, {"add": new}],
        Operation.delete([f"manual DV on {row['path']}"]),
    )
