"""Commit latency and commits/s through each commit owner vs the plain file-system commit.

One writer makes `--commits` small append commits (one add action each, post-commit hooks
off) on a fresh table per mode; then `--procs` processes commit concurrently for the
throughput column. PostgreSQL uses PYDELTA_POSTGRES_DSN or the local test server; it is
skipped (and said so) when unreachable.

Usage: python -m benchmarks.bench_commit_owners [--commits 200] [--procs 4] [--per-proc 50]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import tempfile
import time
import uuid

PG_DSN = os.environ.get("PYDELTA_POSTGRES_DSN", "host=127.0.0.1 port=5432 dbname=test user=postgres password=postgres")
SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})


def _conf(mode: str, workdir: str) -> dict[str, str]:
    if mode == "fs":
        return {}
    owner_conf = {"path": os.path.join(workdir, "owner.sqlite3")} if mode == "sqlite" else {"dsn": PG_DSN}
    return {"delta.managedCommit.commitOwner": mode, "delta.managedCommit.commitOwnerConf": json.dumps(owner_conf)}


def _create(root: str, conf: dict[str, str]) -> None:
    from pydelta.protocol.actions import Metadata
    from pydelta.txn.commit_info import Operation
    from pydelta.txn.transaction import OptimisticTransaction

    txn = OptimisticTransaction(root, None)
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=(), configuration=conf))
    txn.commit([], Operation("CREATE TABLE"))


def _add(i: int) -> dict:
    return {"add": {"path": f"part-{uuid.uuid4()}.parquet", "partitionValues": {}, "size": 100 + i,
                    "modificationTime": int(time.time() * 1000), "dataChange": True}}


def _commit_loop(root: str, n: int) -> list[float]:
    import pydelta
    from pydelta.txn.commit_info import Operation
    from pydelta.txn.transaction import OptimisticTransaction

    snapshot = pydelta.load_snapshot(root)
    latencies = []
    for i in range(n):
        t = time.perf_counter()
        txn = OptimisticTransaction(root, snapshot, post_commit_hooks=False)
        txn.commit([_add(i)], Operation.write("Append", []))
        snapshot = txn.post_commit_snapshot()
        latencies.append(time.perf_counter() - t)
    return latencies


def _worker(args: tuple[str, int]) -> int:
    _commit_loop(*args)
    return args[1]


def _postgres_ok() -> str | None:
    try:
        import psycopg

        with psycopg.connect(PG_DSN, connect_timeout=3) as c:
            c.execute("SELECT 1")
    except Exception as e:  # noqa: BLE001
        return str(e).strip()
    return None


def run(mode: str, commits: int, procs: int, per_proc: int) -> dict:
    workdir = tempfile.mkdtemp(prefix=f"pydelta-bench-owner-{mode}-")
    root = os.path.join(workdir, "single")
    _create(root, _conf(mode, workdir))
    _commit_loop(root, 5)  # warm-up: imports, connections, schema
    lat = _commit_loop(root, commits)
    root_c = os.path.join(workdir, "concurrent")
    _create(root_c, _conf(mode, workdir))
    t = time.perf_counter()
    with mp.get_context("spawn").Pool(procs) as pool:
        done = sum(pool.map(_worker, [(root_c, per_proc)] * procs))
    concurrent_s = time.perf_counter() - t
    lat_ms = sorted(x * 1000 for x in lat)
    return {
        "benchmark": f"commit_owner_{mode}",
        "median_ms": round(statistics.median(lat_ms), 2),
        "p95_ms": round(lat_ms[int(len(lat_ms) * 0.95) - 1], 2),
        "commits_per_s": round(len(lat) / sum(lat), 1),
        "concurrent_commits_per_s": round(done / concurrent_s, 1),
        "procs": procs,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--per-proc", type=int, default=50)
    args = ap.parse_args()
    modes = ["fs", "sqlite", "postgres"]
    reason = _postgres_ok()
    if reason:
        print(f"!!! PostgreSQL at '{PG_DSN}' unreachable, postgres row skipped: {reason}")
        modes.remove("postgres")
    rows = [run(m, args.commits, args.procs, args.per_proc) for m in modes]
    base = rows[0]
    for r in rows:
        r["latency_ratio_vs_fs"] = round(r["median_ms"] / base["median_ms"], 2)
        r["throughput_ratio_vs_fs"] = round(r["commits_per_s"] / base["commits_per_s"], 2)
    print(f"{'mode':<10}{'median ms':>10}{'p95 ms':>9}{'commits/s':>11}{f'{args.procs}-proc c/s':>13}"
          f"{'latency x':>11}{'c/s x':>8}")
    for r in rows:
        print(f"{r['benchmark'][13:]:<10}{r['median_ms']:>10}{r['p95_ms']:>9}{r['commits_per_s']:>11}"
              f"{r['concurrent_commits_per_s']:>13}{r['latency_ratio_vs_fs']:>11}{r['throughput_ratio_vs_fs']:>8}")
    from benchmarks.common import record

    for r in rows:
        record(r)


if __name__ == "__main__":
    main()
