"""Memory and time at 1M files: snapshot load (checkpoint + commits) and checkpoint writing.

The table: bench_snapshot's (one commit adding `--files` files with stats, a classic
checkpoint of it), with 10 small commits after the checkpoint. Each measurement runs in a fresh process so
its peak RSS (VmHWM) is its own; the baseline RSS of a process that only imported
the libraries is subtracted. Reported:

- load: pydelta `load_snapshot` vs `deltalake.DeltaTable` (time and peak RSS), and the
  size of the Arrow action table pydelta's snapshot holds (the goal: peak RSS at most
  2x that table);
- checkpoint write of the 1M-file state: time and peak RSS (the RSS of loading the
  snapshot first is reported apart, so the writer's own cost shows).

Usage: python -m benchmarks.bench_big_snapshot [--files 1000000] [--dir /tmp/pydelta-bench-big]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

from benchmarks.bench_snapshot import generate
from benchmarks.common import record, report

# Each snippet runs in its own process and prints one JSON object.
_PRELUDE = """
import json, sys, time
import pyarrow, pydelta, deltalake
from pydelta.log.checkpoint_writer import write_checkpoint
root = sys.argv[1]
def rss_mb():  # this process's peak RSS (VmHWM: ru_maxrss would carry the parent's peak over fork+exec)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
"""
_SNIPPETS = {
    "baseline": "print(json.dumps({'rss_mb': rss_mb()}))",
    "pydelta_load": """
t = time.perf_counter(); s = pydelta.load_snapshot(root); elapsed = time.perf_counter() - t
state = s.state
nbytes = state.adds.nbytes + state.removes.nbytes
print(json.dumps({'s': elapsed, 'rss_mb': rss_mb(), 'arrow_mb': nbytes / 2**20, 'files': s.num_files}))
""",
    "deltalake_load": """
t = time.perf_counter(); d = deltalake.DeltaTable(root); n = len(d.file_uris()); elapsed = time.perf_counter() - t
print(json.dumps({'s': elapsed, 'rss_mb': rss_mb(), 'files': n}))
""",
    "checkpoint_write": """
s = pydelta.load_snapshot(root); before = rss_mb()
t = time.perf_counter(); write_checkpoint(s); elapsed = time.perf_counter() - t
print(json.dumps({'s': elapsed, 'rss_mb': rss_mb(), 'rss_before_mb': before}))
""",
}


def measure(kind: str, root: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _PRELUDE + _SNIPPETS[kind], root],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--dir", default="/tmp/pydelta-bench-big")
    args = parser.parse_args()
    root = os.path.join(args.dir, "table")
    generate(root, args.files, n_commits=10)
    base = measure("baseline", root)["rss_mb"]
    ours = measure("pydelta_load", root)
    theirs = measure("deltalake_load", root)
    assert ours["files"] == theirs["files"] == args.files + 10 * 9, (ours, theirs)  # 10 adds, 1 remove each
    ours_rss, theirs_rss = ours["rss_mb"] - base, theirs["rss_mb"] - base
    report(f"snapshot load {args.files} files (checkpoint + 10 commits)", ours["s"], theirs["s"], "deltalake",
           pydelta_peak_rss_mb=round(ours_rss), deltalake_peak_rss_mb=round(theirs_rss),
           arrow_action_table_mb=round(ours["arrow_mb"]), rss_over_arrow=round(ours_rss / ours["arrow_mb"], 2))
    # checkpoint writing: a checkpoint of the latest version (the table has one of version 0 only)
    cp = measure("checkpoint_write", root)
    record({"benchmark": f"checkpoint write {args.files} files", "pydelta_s": round(cp["s"], 3),
            "peak_rss_mb": round(cp["rss_mb"] - base), "rss_after_load_mb": round(cp["rss_before_mb"] - base),
            "writer_extra_mb": round(cp["rss_mb"] - cp["rss_before_mb"])})
    shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
