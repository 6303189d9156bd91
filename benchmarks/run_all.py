"""Run every benchmark (not part of the test suite), then print all results in one table: `make bench`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from benchmarks.common import RESULTS, print_table

BENCHMARKS = ["benchmarks.bench_commit", "benchmarks.bench_snapshot", "benchmarks.bench_json_commits",
              "benchmarks.bench_big_snapshot", "benchmarks.bench_spark_io", "benchmarks.bench_dml",
              "benchmarks.bench_dv", "benchmarks.bench_sql", "benchmarks.bench_commit_owners",
              "benchmarks.bench_streaming", "benchmarks.bench_spark_replay"]

if __name__ == "__main__":
    start = os.path.getsize(RESULTS) if os.path.exists(RESULTS) else 0
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        subprocess.run([sys.executable, "-m", name, *sys.argv[1:]], check=False)
    with open(RESULTS) as f:
        f.seek(start)
        rows = [json.loads(line) for line in f if line.strip()]
    print(f"\n== all results of this run ({RESULTS})")
    print_table(rows)
