"""MERGE and UPDATE on a 10M-row table: pydelta vs the same operation by hand in PySpark
(read Parquet, join / rewrite, overwrite Parquet).

Usage: python -m benchmarks.bench_dml [--rows 10000000] [--repeats 3]
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

    spark = local_session("pydelta-bench-dml", **{"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "8"})
    base = tempfile.mkdtemp(prefix="pydelta-bench-dml-")

    def tables(rows: int):
        data = spark.range(0, rows, numPartitions=16).selectExpr(
            "id", "rand(1) * 1000 AS x", "CAST(id % 97 AS INT) AS k")
        # half match
        source = spark.range(0, rows // 10).selectExpr("id * 20 + 5 AS id", "-1.0 AS x", "CAST(0 AS INT) AS k")
        return data, source

    def fresh(data, kind: str) -> str:
        path = os.path.join(base, f"{kind}-{time.time_ns()}")
        (data.write.format("delta") if kind == "delta" else data.write.format("parquet")).save(path)
        return path

    def timed_run(fn) -> float:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    def merge_delta(data, source) -> float:
        path = fresh(data, "delta")
        return timed_run(lambda: DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
                         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

    def merge_by_hand(data, source) -> float:
        path = fresh(data, "parquet")

        def run() -> None:
            target = spark.read.parquet(path)
            merged = target.join(source.select("id"), "id", "left_anti").unionByName(source)
            merged.write.mode("overwrite").parquet(path + "-out")
        return timed_run(run)

    def update_delta(data, source) -> float:
        path = fresh(data, "delta")
        return timed_run(lambda: DeltaTable.forPath(spark, path).update("id % 100 = 0", {"x": "x + 1"}))

    def update_by_hand(data, source) -> float:
        path = fresh(data, "parquet")

        def run() -> None:
            target = spark.read.parquet(path)
            target.withColumn("x", F.when(F.col("id") % 100 == 0, F.col("x") + 1).otherwise(F.col("x"))) \
                .write.mode("overwrite").parquet(path + "-out")
        return timed_run(run)

    # Warm the JVM on a small table first, then alternate pydelta and the hand-written job
    # (medians of --repeats), so neither side pays the JIT warm-up or profits from the order.
    small = tables(100_000)
    for fn in (merge_delta, merge_by_hand, update_delta, update_by_hand):
        fn(*small)
    full = tables(args.rows)
    times: dict[str, list[float]] = {f.__name__: [] for f in (merge_delta, merge_by_hand, update_delta, update_by_hand)}
    for _ in range(args.repeats):
        for fn in (merge_delta, merge_by_hand, update_delta, update_by_hand):
            times[fn.__name__].append(fn(*full))
    med = {k: statistics.median(v) for k, v in times.items()}
    report("merge_1M_into_10M", med["merge_delta"], med["merge_by_hand"], "pyspark_by_hand", rows=args.rows,
           repeats=args.repeats)
    report("update_1pct_of_10M", med["update_delta"], med["update_by_hand"], "pyspark_by_hand", rows=args.rows,
           repeats=args.repeats)
    shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
