"""Driver peak memory of a snapshot load: pydelta against delta-spark.

    python -m benchmarks.vs_delta_spark.memory [--repeats 3] [workload ...]

Peak RSS is a whole-process figure, so every measurement uses fresh worker processes (the
same workers as `run.py`, same pyspark, same settings): one that only started its Spark
session (the baseline) and one that also ran the workload once. Reported per engine: the
growth of the Python driver's and of the driver JVM's peak RSS over the baseline, medians.
pydelta replays the log in the Python process; delta-spark in the JVM.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from benchmarks.common import record
from benchmarks.vs_delta_spark.run import Engine, _generate_logs, _witness
from benchmarks.vs_delta_spark.workloads import SHARED_FOR


def _peaks(name: str, python: str, scratch: str, jars: str | None, workload: str | None) -> dict[str, float]:
    engine = Engine(name, python, scratch, jars, 0)
    try:
        if workload is not None:
            engine.run(workload)
        return engine.memory()
    finally:
        engine.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pydelta-python", default=os.path.expanduser("~/.cache/pydelta/pyspark-4.2/bin/python"))
    ap.add_argument("workloads", nargs="*", default=["snapshot_300k_json", "snapshot_1m_checkpoint"])
    args = ap.parse_args()
    jars, witness_python = _witness()
    scratch = tempfile.mkdtemp(prefix="pydelta-vs-delta-spark-memory-")
    _generate_logs(os.path.join(scratch, "shared"), [SHARED_FOR[w] for w in args.workloads])
    os.environ["BENCH_SHARED"] = os.path.join(scratch, "shared")
    engines = {"pydelta": (args.pydelta_python, None), "delta-spark": (witness_python, jars)}
    for workload in args.workloads:
        growth: dict[str, dict[str, list[float]]] = {e: {"python_mb": [], "jvm_mb": []} for e in engines}
        for _ in range(args.repeats):
            for name, (python, engine_jars) in engines.items():
                base = _peaks(name, python, scratch, engine_jars, None)
                loaded = _peaks(name, python, scratch, engine_jars, workload)
                for key in ("python_mb", "jvm_mb"):
                    growth[name][key].append(loaded[key] - base[key])
        row = {"benchmark": f"vs-delta-spark-memory/{workload}", "runs": args.repeats,
               "when": time.strftime("%Y-%m-%d")}
        for name in engines:
            for key in ("python_mb", "jvm_mb"):
                row[f"{name}_{key}"] = round(statistics.median(growth[name][key]), 1)
        record(row)


if __name__ == "__main__":
    sys.exit(main())
