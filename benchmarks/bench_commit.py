"""Commit latency of a metadata-only commit (a SET TBLPROPERTIES-like metadata change).

Usage: python -m benchmarks.bench_commit [--commits 50]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=50)
    args = ap.parse_args()
    import pydelta
    from pydelta.protocol.actions import Metadata
    from pydelta.txn.commit_info import Operation
    from pydelta.txn.transaction import OptimisticTransaction

    root = tempfile.mkdtemp(prefix="pydelta-bench-commit-")
    schema = json.dumps({"type": "struct",
                         "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
    txn = OptimisticTransaction(root, None)
    txn.update_metadata(Metadata(id="bench", schema_string=schema, partition_columns=(), configuration={}))
    txn.commit([], Operation("CREATE TABLE"))
    snapshot = pydelta.load_snapshot(root)
    latencies = []
    for i in range(args.commits):
        t = time.perf_counter()
        txn = OptimisticTransaction(root, snapshot, post_commit_hooks=False)
        md = snapshot.metadata
        txn.update_metadata(Metadata(id=md.id, schema_string=md.schema_string, partition_columns=md.partition_columns,
                                     configuration={**md.configuration, "bench.counter": str(i)}))
        txn.commit([], Operation("SET TBLPROPERTIES", {"properties": json.dumps({"bench.counter": str(i)})}),
                   data_change=False)
        snapshot = txn.post_commit_snapshot()
        latencies.append(time.perf_counter() - t)
    med = statistics.median(latencies) * 1000
    p95 = sorted(latencies)[int(len(latencies) * 0.95) - 1] * 1000
    row = {"benchmark": "metadata_only_commit", "median_ms": round(med, 2), "p95_ms": round(p95, 2), "goal_ms": 20}
    from benchmarks.common import record

    record(row)


if __name__ == "__main__":
    main()
