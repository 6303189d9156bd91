"""A pydelta writer process for test_mixed_writers.py: blind appends through pydelta's own
transaction (no Spark), racing delta-spark's writers on one table.

    python -m tests.witness._pydelta_appender <table> <worker> <count> <go-file>

Waits for <go-file>, then commits <count> appends of 3 rows each (ids worker * 1000 +
i * 10 + k, part "py", value "py<worker>-<i>"), each its own commit with engineInfo
"pydelta/<version> appender-<worker>". Prints {"worker": ..., "versions": [...]} last.
"""

from __future__ import annotations

import json
import sys

import pydelta
from pydelta.txn.commit_info import default_engine_info
from pydelta.txn.transaction import Operation, OptimisticTransaction
from tests.txn.writers import wait_for, write_data_file


def engine_info(worker: int) -> str:
    return f"{default_engine_info()} appender-{worker}"


def main(root: str, worker: int, count: int, go: str) -> dict:
    if not wait_for(go, 300):
        raise SystemExit(f"no {go} within 300 s")
    versions = []
    for i in range(count):
        snapshot = pydelta.load_snapshot(root)  # a fresh read each time, as a new job would
        rows = [{"id": worker * 1000 + i * 10 + k, "part": "py", "value": f"py{worker}-{i}"} for k in range(3)]
        add = write_data_file(root, rows)
        txn = OptimisticTransaction(root, snapshot, engine_info=engine_info(worker))
        versions.append(txn.commit([add], Operation.write("Append", []),
                                   operation_metrics={"numFiles": 1, "numOutputRows": len(rows)}))
    return {"worker": worker, "versions": versions}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])))
