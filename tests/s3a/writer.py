"""One of several concurrent writers of one s3a:// table, each a pydelta Spark process of its own.

    python -m tests.s3a.writer <endpoint> <table> <index> <writers> <appends> <sync-dir> <jar>...

All writers wait for each other (files in <sync-dir>), then each blind-appends <appends> times
(its rows: writer = <index>, each commit tagged userMetadata "w<index>-<k>"). Then writers 0
and 1 each plan a DELETE of writer 2's rows on the same snapshot, wait for each other, and
commit: one must win and the other fail with a concurrent-modification error. Prints
{"index", "tags", "dml": {"version"} or {"error", "message"}} as one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROWS_PER_APPEND = 5


def barrier(sync: Path, name: str, index: int, parties: int, timeout: float = 600) -> None:
    """Return once `parties` writers have reached `name`."""
    (sync / f"{name}-{index}").touch()
    deadline = time.time() + timeout
    while len(list(sync.glob(f"{name}-*"))) < parties:
        if time.time() > deadline:
            raise TimeoutError(f"barrier {name}: {len(list(sync.glob(f'{name}-*')))} of {parties} writers")
        time.sleep(0.1)


def run(endpoint: str, table: str, index: int, writers: int, appends: int, sync: Path, jars: list[str]) -> dict:
    import pydelta
    from pydelta.errors import DeltaConcurrentModificationException
    from pydelta.spark.dml.delete import prepare_delete
    from tests.s3a._s3 import spark_session

    spark = spark_session("local[1]", endpoint, jars, f"pydelta-s3a-writer-{index}")
    out: dict = {"index": index, "tags": []}
    try:
        spark.range(1).collect()  # warm: the first job's start-up is not part of the race
        barrier(sync, "ready", index, writers)
        for k in range(appends):
            start = (index * appends + k) * ROWS_PER_APPEND
            tag = f"w{index}-{k}"
            spark.range(start, start + ROWS_PER_APPEND, numPartitions=1).selectExpr("id", f"{index} AS writer") \
                .write.format("delta").mode("append").option("userMetadata", tag).save(table)
            out["tags"].append(tag)
        barrier(sync, "appended", index, writers)
        if index < 2:
            prepared = prepare_delete(spark, pydelta.load_snapshot(table), "writer = 2")
            barrier(sync, "prepared", index, 2)
            try:
                out["dml"] = {"version": prepared.commit()}
            except DeltaConcurrentModificationException as e:
                out["dml"] = {"error": type(e).__name__, "message": str(e)[:500]}
        return out
    finally:
        spark.stop()


if __name__ == "__main__":
    endpoint, table, index, writers, appends, sync, *jars = sys.argv[1:]
    print(json.dumps(run(endpoint, table, int(index), int(writers), int(appends), Path(sync), jars)))
