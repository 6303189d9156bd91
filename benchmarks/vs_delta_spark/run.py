"""pydelta / delta-spark on the same Spark version, same machine, same generated data.

    python -m benchmarks.vs_delta_spark.run [--repeats 5] [--rows 10000000] [workload ...]

Two long-lived worker processes, one per engine, each in its own venv with the same pyspark:
pydelta in ~/.cache/pydelta/pyspark-<v> (tests/pyspark_versions.sh makes it) with this
checkout on its path; delta-spark in the test witness's venv with its Maven jars
(tests/witness/setup.sh). Runs are interleaved (the engine that goes first alternates) after
one warm-up run each; the table gives medians and the ratio pydelta / delta-spark. Inputs too
slow to build per engine (1M-file logs, a 1000-commit table: `workloads.SHARED`) are written
once here, before the workers start, and each run copies them.
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

from benchmarks.common import record
from benchmarks.vs_delta_spark.workloads import NAMES, SHARED, SHARED_FOR

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(ROOT, "benchmarks", "vs_delta_spark", "worker.py")


class Engine:
    def __init__(self, name: str, python: str, scratch: str, jars: str | None, rows: int) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "VIRTUAL_ENV")}
        env.update(PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python, PYTHONUNBUFFERED="1",
                   BENCH_ROWS=str(rows), PYTHONPATH=os.path.join(ROOT, "src") if name == "pydelta" else ROOT)
        self.name = name
        self.log = open(os.path.join(scratch, f"{name}.log"), "w")  # noqa: SIM115 - the worker's stderr while it runs
        args = [python, WORKER, name, os.path.join(scratch, name)] + ([jars] if jars else [])
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=env, bufsize=1, cwd=ROOT)
        hello = json.loads(self._readline())
        self.pyspark = hello["pyspark"]

    def _readline(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} worker exited; see {self.log.name}")
        return line

    def run(self, workload: str) -> tuple[float, list[int] | None]:
        self.proc.stdin.write(json.dumps({"workload": workload}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self._readline())
        if "error" in reply:
            raise RuntimeError(f"{self.name} {workload}: {reply['error']}\n{reply.get('traceback', '')}")
        return float(reply["seconds"]), reply.get("check")

    def memory(self) -> dict[str, float]:
        """Peak RSS so far (MB) of the worker's Python process and of its driver JVM."""
        self.proc.stdin.write(json.dumps({"memory": True}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self._readline())

    def stop(self) -> None:
        try:
            self.proc.stdin.write(json.dumps({"stop": True}) + "\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=120)
        except Exception:  # noqa: BLE001
            self.proc.kill()


def _witness() -> tuple[str, str]:
    out = subprocess.run(["bash", os.path.join(ROOT, "tests", "witness", "setup.sh")], check=True,
                         capture_output=True, text=True).stdout
    values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return values["jars"], values["python"]


def _generate_logs(shared: str, names: list[str]) -> None:
    """The inputs the workloads copy (generated logs, the 1000-commit table), written once here
    for both engines."""
    for name in dict.fromkeys(names):
        SHARED[name](os.path.join(shared, name))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--pydelta-python", default=os.path.expanduser("~/.cache/pydelta/pyspark-4.2/bin/python"))
    ap.add_argument("workloads", nargs="*", default=NAMES)
    args = ap.parse_args()
    if not os.path.exists(args.pydelta_python):
        sys.exit(f"{args.pydelta_python} is missing: `make test-versions PYSPARK_VERSIONS=4.2` makes that venv")
    jars, witness_python = _witness()
    scratch = tempfile.mkdtemp(prefix="pydelta-vs-delta-spark-")
    _generate_logs(os.path.join(scratch, "shared"), [SHARED_FOR[w] for w in args.workloads if w in SHARED_FOR])
    os.environ["BENCH_SHARED"] = os.path.join(scratch, "shared")
    engines = [Engine("pydelta", args.pydelta_python, scratch, None, args.rows),
               Engine("delta-spark", witness_python, scratch, jars, args.rows)]
    assert engines[0].pyspark == engines[1].pyspark, "both engines must run the same Spark"
    print(f"pyspark {engines[0].pyspark}, {args.rows} rows, {args.repeats} runs each; logs in {scratch}", flush=True)
    try:
        for workload in args.workloads:
            for engine in engines:
                engine.run(workload)  # warm-up (and builds the tables the workload copies)
            times: dict[str, list[float]] = {e.name: [] for e in engines}
            checks: set[str] = set()
            for i in range(args.repeats):
                for engine in (engines if i % 2 == 0 else engines[::-1]):
                    seconds, check = engine.run(workload)
                    times[engine.name].append(seconds)
                    checks.add(json.dumps(check))
            if len(checks) != 1:  # the engines (or two runs) ended with different tables
                raise RuntimeError(f"{workload}: the written tables differ (rows, value hash): {sorted(checks)}")
            ours, theirs = statistics.median(times["pydelta"]), statistics.median(times["delta-spark"])
            record({"benchmark": f"vs-delta-spark/{workload}", "pydelta_s": round(ours, 3),
                    "delta-spark_s": round(theirs, 3), "ratio": round(ours / theirs, 2), "rows": args.rows,
                    "pyspark": engines[0].pyspark, "runs": args.repeats, "same_table": json.loads(checks.pop()),
                    "when": time.strftime("%Y-%m-%d"),
                    "pydelta_runs": [round(t, 3) for t in times["pydelta"]],
                    "delta-spark_runs": [round(t, 3) for t in times["delta-spark"]]})
    finally:
        for engine in engines:
            engine.stop()


if __name__ == "__main__":
    sys.exit(main())
