"""Log replay on the driver vs as a Spark job (spark/base/log_replay.py), on both sides of the size switch.

The table: bench_snapshot's generator (one commit adding `--files` files with stats, a
classic checkpoint of it, 10 small commits after it). For each size, the driver's
vectorized replay (`load_snapshot`) and the Spark job (`replay_segment_on_spark` on the
session's executors) replay the same segment; the ratio is Spark's time over the
driver's. Where it drops below 1 the switch pays off; `spark.pydelta.logReplay.sparkMinBytes`
should sit there for the cluster at hand.

Usage: python -m benchmarks.bench_spark_replay [--files 100000,1000000] [--master local[2]]
"""

from __future__ import annotations

import argparse
import os
import shutil
import time

from benchmarks.bench_snapshot import generate
from benchmarks.common import report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", default="100000,1000000")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--dir", default="/tmp/pydelta-bench-spark-replay")
    parser.add_argument("--driver-memory", default="12g")  # local mode: the executors share it
    args = parser.parse_args()
    import pydelta
    from pydelta.log.segment import build_segment
    from pydelta.log.storage import LocalStorage
    from pydelta.spark.base.log_replay import replay_segment_on_spark
    from pydelta.spark.session import local_session

    spark = local_session("bench-spark-replay", hive=False,
                          **{"spark.master": args.master, "spark.driver.memory": args.driver_memory,
                             "spark.driver.maxResultSize": "0"})  # the whole state comes back
    for n in [int(x) for x in args.files.split(",")]:
        root = os.path.join(args.dir, f"t{n}")
        generate(root, n, n_commits=10)
        storage = LocalStorage()
        segment = build_segment(storage, root)
        log_bytes = sum(f.size for f in segment.checkpoint.files) + sum(i.size for _, i in segment.commits)
        t = time.perf_counter()
        driver = pydelta.load_snapshot(root)
        driver_s = time.perf_counter() - t
        replay_segment_on_spark(spark, storage, root, segment)  # warm-up (JIT, Spark's first job)
        t = time.perf_counter()
        state = replay_segment_on_spark(spark, storage, root, segment)
        spark_s = time.perf_counter() - t
        assert len(state.adds) == driver.num_files, (len(state.adds), driver.num_files)
        report(f"log replay {n} files on Spark ({args.master}) vs driver", spark_s, driver_s, "driver",
               log_mb=round(log_bytes / 2**20, 1), files=driver.num_files)
        shutil.rmtree(root, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
