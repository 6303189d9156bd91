"""pydelta over Spark Connect against the same work on a classic session (issue 27).

    python -m benchmarks.connect_overhead [--repeats 3] [--rows 2000000]

Two worker processes run the same workloads, one with a classic local[2] session and one as
a Connect client of a local[2] Connect server started from pip's pyspark (same Spark, same
settings). Runs alternate between the two; each worker runs the workloads once untimed (the
shared server is warm after the first run, a classic worker's JVM would not be), then times
them in-process (JVM and server start-up are not counted); both check their answers against
each other. Prints medians and the ratio Connect / classic.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"spark.sql.shuffle.partitions": "4", "spark.sql.session.timeZone": "UTC"}


def _workloads(spark, work: Path, rows: int) -> dict[str, tuple[float, object]]:
    from pyspark.sql import functions as F

    from pydelta import DeltaTable

    out: dict[str, tuple[float, object]] = {}
    path = str(work / "t")

    def timed(name, fn):
        start = time.perf_counter()
        answer = fn()
        out[name] = (time.perf_counter() - start, answer)

    data = spark.range(0, rows, 1, 40).selectExpr("id", "id % 100 AS k", "CAST(rand(7) * 1000 AS INT) AS v")
    timed("write", lambda: data.write.format("delta").save(path))
    # The read is timed with its query: a classic session lists the files when the read is made,
    # a Connect server when the query runs.
    timed("full scan", lambda: spark.read.format("delta").load(path).agg(F.count("*"), F.sum("v")).collect()[0][0])
    timed("selective scan", lambda: spark.read.format("delta").load(path).filter(F.col("id") < rows // 100).count())
    dt = DeltaTable.forPath(spark, path)
    timed("delete 1%", lambda: (dt.delete(F.col("id") % 100 == 7), dt.toDF().count())[1])
    timed("update 1%", lambda: (dt.update(F.col("id") % 100 == 8, {"v": F.lit(-1)}),
                                dt.toDF().filter("v = -1").count())[1])
    source = spark.range(rows - 10_000, rows + 10_000).selectExpr("id", "id % 100 AS k", "1 AS v")
    timed("merge 20k upsert", lambda: (dt.alias("t").merge(source.alias("s"), "t.id = s.id")
                                       .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(),
                                       dt.toDF().count())[1])
    timed("history", lambda: len(dt.history().collect()))
    return out


def worker(kind: str, url: str | None, rows: int) -> None:
    if kind == "classic":
        from pydelta.spark.session import local_session

        spark = local_session("bench-classic", hive=False, **SETTINGS)
    else:
        import pydelta

        spark = pydelta.remote_session(url)
        for key, value in SETTINGS.items():
            spark.conf.set(key, value)
    work = Path(tempfile.mkdtemp(prefix=f"bench-{kind}-"))
    try:
        (work / "warm-up").mkdir()
        _workloads(spark, work / "warm-up", rows)
        (work / "timed").mkdir()
        results = _workloads(spark, work / "timed", rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({name: [secs, answer] for name, (secs, answer) in results.items()}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--worker", choices=["classic", "connect"])
    parser.add_argument("--url")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.url, args.rows)
        return
    from pydelta.spark.connect.server import LocalConnectServer

    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    times: dict[str, dict[str, list[float]]] = {"classic": {}, "connect": {}}
    with LocalConnectServer.start(conf=SETTINGS) as server:
        for run in range(args.repeats):
            order = ["classic", "connect"] if run % 2 == 0 else ["connect", "classic"]
            answers = {}
            for kind in order:
                cmd = [sys.executable, "-m", "benchmarks.connect_overhead", "--worker", kind, "--rows",
                       str(args.rows), "--url", server.url]
                out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
                result = json.loads(out.stdout.strip().splitlines()[-1])
                answers[kind] = {name: answer for name, (_, answer) in result.items()}
                for name, (secs, _) in result.items():
                    times[kind].setdefault(name, []).append(secs)
            if answers["classic"] != answers["connect"]:
                raise SystemExit(f"the two sessions disagree: {answers}")
    print(f"| workload ({args.rows:,} rows) | classic | Connect | Connect / classic |")
    print("|---|---|---|---|")
    for name, secs in times["classic"].items():
        c, r = statistics.median(secs), statistics.median(times["connect"][name])
        print(f"| {name} | {c:.3f} s | {r:.3f} s | {r / c:.2f} |")


if __name__ == "__main__":
    main()
