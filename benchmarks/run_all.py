"""Run every benchmark (not part of the test suite): `make bench`."""

from __future__ import annotations

import subprocess
import sys

BENCHMARKS = ["benchmarks.bench_commit", "benchmarks.bench_snapshot", "benchmarks.bench_json_commits",
              "benchmarks.bench_spark_io", "benchmarks.bench_dml",
              "benchmarks.bench_sql", "benchmarks.bench_commit_owners", "benchmarks.bench_streaming"]

if __name__ == "__main__":
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        subprocess.run([sys.executable, "-m", name, *sys.argv[1:]], check=False)
