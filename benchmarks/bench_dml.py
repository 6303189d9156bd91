"""MERGE and UPDATE on a 10M-row table: pydelta vs the same operation by hand in PySpark
(read Parquet, join / rewrite, overwrite Parquet).

Usage: python -m benchmarks.bench_dml [--rows 10000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from benchmarks.common import report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    args = ap.parse_args()

    from pyspark.sql import functions as F

    from pydelta import DeltaTable
    from pydelta.spark.session import local_session

    spark = local_session("pydelta-bench-dml", **{"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "8"})
    base = tempfile.mkdtemp(prefix="pydelta-bench-dml-")
    data = spark.range(0, args.rows, numPartitions=16).selectExpr("id", "rand(1) * 1000 AS x", "CAST(id % 97 AS INT) AS k")
    source = spark.range(0, args.rows // 10).selectExpr("id * 10 + 5 AS id", "-1.0 AS x", "CAST(0 AS INT) AS k")  # half match

    def fresh(kind: str) -> str:
        path = os.path.join(base, f"{kind}-{time.time_ns()}")
        if kind == "delta":
            data.write.format("delta").save(path)
        else:
            data.write.parquet(path)
        return path

    # MERGE: upsert 1M source rows (about half match)
    delta_path = fresh("delta")
    t = time.perf_counter()
    (DeltaTable.forPath(spark, delta_path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    t_merge = time.perf_counter() - t
    parquet_path = fresh("parquet")
    t = time.perf_counter()
    target = spark.read.parquet(parquet_path)
    merged = target.join(source.select("id"), "id", "left_anti").unionByName(source)
    merged.write.mode("overwrite").parquet(parquet_path + "-out")
    t_merge_ref = time.perf_counter() - t
    report("merge_1M_into_10M", t_merge, t_merge_ref, "pyspark_by_hand", rows=args.rows)

    # UPDATE: 1% of rows
    delta_path = fresh("delta")
    t = time.perf_counter()
    DeltaTable.forPath(spark, delta_path).update("id % 100 = 0", {"x": "x + 1"})
    t_update = time.perf_counter() - t
    parquet_path = fresh("parquet")
    t = time.perf_counter()
    target = spark.read.parquet(parquet_path)
    target.withColumn("x", F.when(F.col("id") % 100 == 0, F.col("x") + 1).otherwise(F.col("x"))) \
        .write.mode("overwrite").parquet(parquet_path + "-out")
    t_update_ref = time.perf_counter() - t
    report("update_1pct_of_10M", t_update, t_update_ref, "pyspark_by_hand", rows=args.rows)
    shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
