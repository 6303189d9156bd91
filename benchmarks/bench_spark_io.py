"""Spark I/O: writing and full-scanning 10M rows, pydelta vs plain Parquet on the same machine.

Usage: python -m benchmarks.bench_spark_io [--rows 10000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

from benchmarks.common import report, timed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from pydelta.spark.session import local_session

    spark = local_session("pydelta-bench", **{"spark.driver.memory": "6g"})
    base = tempfile.mkdtemp(prefix="pydelta-bench-io-")
    df = spark.range(0, args.rows, numPartitions=8).selectExpr(
        "id", "id % 1000 AS k", "rand(42) AS x", "concat('name-', cast(id % 100000 AS string)) AS s",
        "timestamp_micros(1700000000000000 + id) AS ts",
    )
    n = [0]

    def write_delta():
        n[0] += 1
        df.write.format("delta").save(os.path.join(base, f"delta{n[0]}"))

    def write_parquet():
        n[0] += 1
        df.write.parquet(os.path.join(base, f"parquet{n[0]}"))

    t_delta = timed(write_delta, repeats=args.repeats)
    t_parquet = timed(write_parquet, repeats=args.repeats)
    report("write_10M_rows", t_delta, t_parquet, "spark_parquet", rows=args.rows)

    delta_path = os.path.join(base, "delta1")
    import pydelta

    files = [pydelta.load_snapshot(delta_path).absolute_path(p)
             for p in pydelta.load_snapshot(delta_path).files().column("path").to_pylist()]

    def scan_delta():
        spark.read.format("delta").load(delta_path).write.format("noop").mode("overwrite").save()

    def scan_parquet():
        spark.read.parquet(*files).write.format("noop").mode("overwrite").save()

    t_scan = timed(scan_delta, repeats=args.repeats)
    t_scan_ref = timed(scan_parquet, repeats=args.repeats)
    report("full_scan_10M_rows", t_scan, t_scan_ref, "spark_parquet_same_files", rows=args.rows)
    shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
