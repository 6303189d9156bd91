"""Deletion vectors: DELETE of 0.1% of a 10M-row table with DVs vs copy-on-write, and
reading the table afterwards (DVs applied at read time) against two references: the same
files before the DELETE (same layout, no DVs) and the copy-on-write table after it (which
the DELETE rewrote into fewer, larger files).

Both tables get the same rows and the same DELETE; runs alternate (medians of --repeats)
after a warm-up on a small table.

Usage: python -m benchmarks.bench_dv [--rows 10000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

from benchmarks.common import report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from pyspark.sql import functions as F

    from pydelta import DeltaTable
    from pydelta.spark.session import local_session

    spark = local_session("pydelta-bench-dv", hive=False, **{"spark.driver.memory": "8g"})
    base = tempfile.mkdtemp(prefix="pydelta-bench-dv-")

    def table(rows: int, dvs: bool) -> str:
        path = os.path.join(base, f"{'dv' if dvs else 'cow'}-{time.time_ns()}")
        spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, x DOUBLE, k INT) USING delta "
                  f"TBLPROPERTIES ('delta.enableDeletionVectors' = '{str(dvs).lower()}')")
        (spark.range(0, rows, numPartitions=16).selectExpr("id", "rand(1) * 1000 AS x", "CAST(id % 97 AS INT) AS k")
         .write.format("delta").mode("append").save(path))
        return path

    def delete(path: str) -> float:
        t = time.perf_counter()
        DeltaTable.forPath(spark, path).delete("id % 1000 = 7")  # 0.1% of the rows, in every file
        return time.perf_counter() - t

    def read(path: str) -> float:
        t = time.perf_counter()
        spark.read.format("delta").load(path).agg(F.sum("x"), F.count(F.lit(1))).collect()
        return time.perf_counter() - t

    for dvs in (True, False):  # warm-up
        small = table(100_000, dvs)
        delete(small)
        read(small)
    times: dict[str, list[float]] = {"delete_dv": [], "delete_cow": [], "read_dv": [], "read_cow": [],
                                     "read_before": []}
    for _ in range(args.repeats):
        dv_path, cow_path = table(args.rows, True), table(args.rows, False)
        read(cow_path)
        times["read_before"].append(read(cow_path))
        times["delete_dv"].append(delete(dv_path))
        times["delete_cow"].append(delete(cow_path))
        times["read_dv"].append(read(dv_path))
        times["read_cow"].append(read(cow_path))
    med = {k: statistics.median(v) for k, v in times.items()}
    report("delete_0.1pct_of_10M_with_dvs", med["delete_dv"], med["delete_cow"], "copy_on_write", rows=args.rows,
           speedup=round(med["delete_cow"] / med["delete_dv"], 2))
    report("read_after_dv_delete", med["read_dv"], med["read_before"], "same_files_without_dvs", rows=args.rows)
    report("read_after_dv_delete_vs_rewritten", med["read_dv"], med["read_cow"], "rewritten_table", rows=args.rows)
    shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
