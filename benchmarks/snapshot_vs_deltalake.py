"""Snapshot load without Spark: pydelta's log core against deltalake (delta-rs), on the logs the
delta-spark comparison loads.

    python -m benchmarks.snapshot_vs_deltalake [--repeats 5] [--cli] [log ...]

The logs are `vs_delta_spark.workloads.SHARED`'s (300k and 1M files, JSON only or a
checkpoint at version 0, then 100 commits of 10 adds and a remove), generated once. Every run
is a fresh Python process, so neither library's caches help and its peak RSS is its own; the
engine that goes first alternates. A process loads the table twice, each time until the whole
file list is in Arrow: "cold" counts from before the library's import (what a CLI pays),
"warm" is the second load (what a long-lived driver pays: the earlier benchmarks' figure),
and the peak RSS growth (VmHWM) is measured over the process before the import, after the
first load. Medians; the goal is pydelta <= 0.5x deltalake.

`--cli` times whole commands instead (issue 46: a user's cold start): `pydelta describe ROOT
--json` against a Python process that has deltalake answer the same (version, schema, file,
byte and record totals), each from the process's start to its exit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from benchmarks.common import record
from benchmarks.vs_delta_spark.workloads import SHARED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGS = ["json-300000", "checkpoint-300000", "json-1000000", "checkpoint-1000000"]

# What each engine runs to have the table's active files (path, size, stats, ...) as Arrow.
LOAD = {
    "pydelta": "def load(root):\n"
               "    import pydelta\n"
               "    snap = pydelta.load_snapshot(root)\n"
               "    return snap.version, snap.files().num_rows\n",
    "deltalake": "def load(root):\n"
                 "    import deltalake\n"
                 "    table = deltalake.DeltaTable(root)\n"
                 "    return table.version(), table.get_add_actions(flatten=False).num_rows\n",
}

MEASURE = """
import json, sys, time

def peak_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024

before = peak_mb()
start = time.perf_counter()
version, files = load(sys.argv[1])
cold = time.perf_counter() - start
growth = peak_mb() - before
start = time.perf_counter()
assert load(sys.argv[1]) == (version, files)
warm = time.perf_counter() - start
print(json.dumps({"cold": cold, "warm": warm, "peak_growth_mb": growth, "version": version, "files": files}))
"""


def load_once(engine: str, root: str) -> dict:
    """One load of the table at `root` by `engine`, in a fresh process."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    out = subprocess.run([sys.executable, "-c", LOAD[engine] + MEASURE, root], check=True, capture_output=True,
                         text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


# What deltalake runs to answer `pydelta describe`'s questions: version, schema, files, bytes, records.
DESCRIBE_WITH_DELTALAKE = """
import json, sys
import deltalake, pyarrow as pa, pyarrow.compute as pc
table = deltalake.DeltaTable(sys.argv[1])
files = pa.table(table.get_add_actions(flatten=True))
print(json.dumps({"version": table.version(), "schema": table.schema().to_json(), "numFiles": files.num_rows,
                  "sizeInBytes": pc.sum(files.column("size_bytes")).as_py(),
                  "numRecords": pc.sum(files.column("num_records")).as_py()}))
"""

CLI = {
    "pydelta": [sys.executable, "-m", "pydelta.cli", "describe", "--json"],
    "deltalake": [sys.executable, "-c", DESCRIBE_WITH_DELTALAKE],
}


def describe_once(engine: str, root: str) -> dict:
    """One whole describe command by `engine` (a fresh process): its wall seconds and its answer."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    start = time.perf_counter()
    out = subprocess.run([*CLI[engine], root], check=True, capture_output=True, text=True, env=env).stdout
    seconds = time.perf_counter() - start
    answer = json.loads(out)
    return {"seconds": seconds, "version": answer["version"], "files": answer["numFiles"],
            "bytes": answer["sizeInBytes"]}


def alternating_runs(engines: list[str], repeats: int, once: Callable[[str], dict]) -> dict[str, list[dict]]:
    """Each engine's `repeats` results of `once(engine)`, after one warm-up run each (the page cache
    then holds the log for both); the engine that goes first alternates."""
    for engine in engines:
        once(engine)
    runs: dict[str, list[dict]] = {e: [] for e in engines}
    for i in range(repeats):
        for engine in (engines if i % 2 == 0 else engines[::-1]):
            runs[engine].append(once(engine))
    return runs


def compare_cli(name: str, root: str, repeats: int) -> dict:
    runs = alternating_runs(list(CLI), repeats, lambda engine: describe_once(engine, root))
    seen = {(r["version"], r["files"], r["bytes"]) for rs in runs.values() for r in rs}
    if len(seen) != 1:
        raise RuntimeError(f"{name}: the commands answered differently (version, files, bytes): {sorted(seen)}")
    version, files, _ = seen.pop()
    ours, theirs = (statistics.median(r["seconds"] for r in runs[e]) for e in ("pydelta", "deltalake"))
    return record({"benchmark": f"describe-cli-vs-deltalake/{name}", "pydelta_s": round(ours, 3),
                   "deltalake_s": round(theirs, 3), "ratio": round(ours / theirs, 2), "version": version,
                   "files": files, "runs": repeats, "when": time.strftime("%Y-%m-%d"),
                   "pydelta_runs": [round(r["seconds"], 3) for r in runs["pydelta"]],
                   "deltalake_runs": [round(r["seconds"], 3) for r in runs["deltalake"]]})


def compare(name: str, root: str, repeats: int) -> dict:
    runs = alternating_runs(list(LOAD), repeats, lambda engine: load_once(engine, root))
    seen = {(r["version"], r["files"]) for rs in runs.values() for r in rs}
    if len(seen) != 1:
        raise RuntimeError(f"{name}: the engines saw different snapshots (version, files): {sorted(seen)}")
    version, files = seen.pop()

    def median(engine: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[engine])

    ours, theirs = median("pydelta", "warm"), median("deltalake", "warm")
    ours_cold, theirs_cold = median("pydelta", "cold"), median("deltalake", "cold")
    return record({"benchmark": f"snapshot-vs-deltalake/{name}", "pydelta_s": round(ours, 3),
                   "deltalake_s": round(theirs, 3), "ratio": round(ours / theirs, 2),
                   "pydelta_cold_s": round(ours_cold, 3), "deltalake_cold_s": round(theirs_cold, 3),
                   "cold_ratio": round(ours_cold / theirs_cold, 2),
                   "pydelta_peak_growth_mb": round(median("pydelta", "peak_growth_mb")),
                   "deltalake_peak_growth_mb": round(median("deltalake", "peak_growth_mb")),
                   "version": version, "files": files, "runs": repeats, "when": time.strftime("%Y-%m-%d"),
                   "pydelta_runs": [round(r["warm"], 3) for r in runs["pydelta"]],
                   "deltalake_runs": [round(r["warm"], 3) for r in runs["deltalake"]]})


def main() -> None:
    import deltalake

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", default=None, help="where the logs are generated (default: a new temporary directory)")
    ap.add_argument("--cli", action="store_true", help="time whole describe commands (cold start) instead")
    ap.add_argument("logs", nargs="*", default=LOGS)
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="pydelta-snapshot-vs-deltalake-")
    print(f"deltalake {deltalake.__version__}, {args.repeats} runs each; logs in {base}", flush=True)
    for name in args.logs:
        root = os.path.join(base, name)
        if not os.path.isdir(os.path.join(root, "_delta_log")):
            SHARED[name](root)
        (compare_cli if args.cli else compare)(name, root, args.repeats)


if __name__ == "__main__":
    sys.exit(main())
