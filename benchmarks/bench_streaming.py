"""Streaming: Delta table A -> Delta table B vs Spark's Parquet file-source stream -> Parquet.

Two figures, each against the same work done with plain Parquet directories:
- latency of one small micro-batch: append one row to the source, then run the query
  (AvailableNow, restarted from its checkpoint) until the row is in the sink;
- throughput of a backlog: 1000 commits (one small file each) drained with AvailableNow.

Usage: python -m benchmarks.bench_streaming [--commits 1000]
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
    ap.add_argument("--commits", type=int, default=1000)
    args = ap.parse_args()

    from pydelta.spark.session import local_session

    spark = local_session("pydelta-bench-streaming", **{"spark.sql.shuffle.partitions": "2"})
    base = tempfile.mkdtemp(prefix="pydelta-bench-streaming-")
    schema = "id long, v string"

    def run(fmt: str, src: str, dst: str, ckpt: str) -> None:
        if fmt == "delta":
            stream = spark.readStream.format("delta").load(src)
            q = (stream.writeStream.format("delta").option("checkpointLocation", ckpt)
                 .trigger(availableNow=True).start(dst))
        else:
            stream = spark.readStream.schema(schema).parquet(src)
            q = stream.writeStream.format("parquet").option("checkpointLocation", ckpt).trigger(
                availableNow=True).start(dst)
        q.awaitTermination()

    def append(fmt: str, src: str, i: int) -> None:
        df = spark.createDataFrame([(i, f"r{i}")], schema).coalesce(1)
        if fmt == "delta":
            df.write.format("delta").mode("append").save(src)
        else:
            df.write.mode("append").parquet(src)

    results = {}
    for fmt in ("delta", "parquet"):
        src, dst, ckpt = (os.path.join(base, f"{fmt}-{n}") for n in ("src", "dst", "ckpt"))
        append(fmt, src, 0)
        run(fmt, src, dst, ckpt)  # warm: the first batch and the query's checkpoint exist
        latencies = []
        for i in range(1, 6):
            append(fmt, src, i)
            t = time.perf_counter()
            run(fmt, src, dst, ckpt)
            latencies.append(time.perf_counter() - t)
        # backlog of many small commits, drained by one AvailableNow run
        for i in range(args.commits):
            append(fmt, src, 100 + i)
        t = time.perf_counter()
        run(fmt, src, dst, ckpt)
        drain = time.perf_counter() - t
        reader = spark.read.format("delta").load(dst) if fmt == "delta" else spark.read.parquet(dst)
        assert reader.count() == 6 + args.commits, f"{fmt}: rows lost or duplicated"
        results[fmt] = (statistics.median(latencies), drain)
    report("stream_one_row_latency", results["delta"][0], results["parquet"][0], "parquet_file_stream")
    report(f"stream_drain_{args.commits}_commits", results["delta"][1], results["parquet"][1], "parquet_file_stream",
           commits=args.commits)
    shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
