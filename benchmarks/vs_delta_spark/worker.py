"""One engine's benchmark process: `python worker.py pydelta|delta-spark <scratch-dir> [jars-dir]`.

Runs in the venv of its engine (pydelta: a venv with the same pyspark as delta-spark's),
reads one JSON request per line on stdin ({"workload": name}) and answers one JSON line
({"seconds": s} or {"error": text}) on stdout. Spark's own output goes to stderr.
With BENCH_UI=1 (plans.py) the Spark UI is on and {"plans": name} also returns the SQL
executions the workload's timed part ran, with their physical plans, from the UI's REST API.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import urllib.request
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)

UI = os.environ.get("BENCH_UI") == "1"  # plans.py only; the timing runs keep the UI off
CONF = {  # the same for both engines
    "spark.driver.memory": os.environ.get("BENCH_DRIVER_MEMORY", "6g"),
    "spark.sql.shuffle.partitions": "8",
    "spark.ui.enabled": "true" if UI else "false",
    **({"spark.ui.port": "0"} if UI else {}),  # any free port
    "spark.sql.session.timeZone": "UTC",
}


def session(engine: str, jars_dir: str | None):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName(f"bench-{engine}")
    for key, value in CONF.items():
        builder = builder.config(key, value)
    if engine == "delta-spark":
        sys.path.insert(0, os.path.join(ROOT, "tests", "witness"))
        from _server import delta_spark_jars

        assert jars_dir, "delta-spark needs its jars directory"
        builder = (builder.config("spark.jars", ",".join(delta_spark_jars(jars_dir)))
                   .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                   .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
        spark = builder.getOrCreate()
    else:
        import pydelta

        spark = pydelta.enable(pydelta.configure_spark(builder).getOrCreate())  # as the README says
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _peak_mb(pid: int) -> float:
    """A process's peak resident set (VmHWM), in MB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def _rest(spark: Any, route: str) -> Any:
    sc = spark.sparkContext
    if sc.uiWebUrl is None:
        raise RuntimeError("the Spark UI is off: plans need the worker started with BENCH_UI=1")
    with urllib.request.urlopen(f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/{route}", timeout=120) as r:
        return json.load(r)


def _executions(spark: Any, details: bool) -> list[dict[str, Any]]:
    """Every SQL execution the UI retains, oldest first, with its plan text if `details`."""
    flags = "details=true&planDescription=true" if details else "details=false&planDescription=false"
    found: list[dict[str, Any]] = []
    while page := _rest(spark, f"sql?{flags}&offset={len(found)}&length=1000"):
        found += page
    return found


def _marks(spark: Any) -> tuple[int, int]:
    """The highest SQL execution id and job id so far, once the UI has seen every event."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    jobs = _rest(spark, "jobs")
    return max((e["id"] for e in _executions(spark, False)), default=-1), max((j["jobId"] for j in jobs), default=-1)


def _plans(spark: Any, work: Any, workload: str) -> dict[str, Any]:
    """Run `workload` and list the SQL executions and jobs of its timed part (the first `_timed`)."""
    marks: list[tuple[int, int]] = []
    timed = work._timed

    def mark_then_time(fn: Any) -> float:
        if not marks:
            marks.append(_marks(spark))
        return timed(fn)

    work._timed = mark_then_time
    try:
        seconds = getattr(work, workload)()
    finally:
        del work._timed  # the class's method again
    if not marks:
        raise RuntimeError(f"{workload} has no timed part (Workloads._timed) to capture")
    last_execution, last_job = marks[0]
    for _ in range(60):  # end events may trail the listener bus by a moment
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
        new = [e for e in _executions(spark, True) if e["id"] > last_execution]
        if all(e["status"] != "RUNNING" for e in new):
            break
        time.sleep(0.5)
    read = ("number of files read", "size of files read", "number of output rows")  # a scan's metrics
    executions = [{"id": e["id"], "root": e.get("rootExecutionId", e["id"]), "description": e["description"],
                   "status": e["status"], "duration_ms": e["duration"],
                   "jobs": sorted(e["successJobIds"] + e["failedJobIds"] + e["runningJobIds"]),
                   "scans": [{"node": n["nodeName"],
                              **{m["name"]: m["value"] for m in n["metrics"] if m["name"] in read}}
                             for n in e["nodes"] if n["nodeName"].startswith("Scan ")],
                   "plan": e["planDescription"]} for e in new]
    jobs = sorted(j["jobId"] for j in _rest(spark, "jobs") if j["jobId"] > last_job)
    return {"seconds": seconds, "executions": executions, "jobs": jobs, "check": work.checksum()}


def main() -> None:
    engine, base = sys.argv[1], sys.argv[2]
    jars_dir = sys.argv[3] if len(sys.argv) > 3 else None
    out = sys.stdout
    sys.stdout = sys.stderr  # only replies on the real stdout
    from benchmarks.vs_delta_spark.workloads import Workloads

    spark = session(engine, jars_dir)
    work = Workloads(spark, base)
    import pyspark

    out.write(json.dumps({"ready": True, "pyspark": pyspark.__version__}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("stop"):
            break
        if request.get("memory"):  # peak RSS so far of this process and of its Spark driver JVM
            jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
            out.write(json.dumps({"python_mb": _peak_mb(os.getpid()), "jvm_mb": _peak_mb(jvm_pid)}) + "\n")
            out.flush()
            continue
        try:
            if "plans" in request:
                reply = _plans(spark, work, request["plans"])
            else:
                seconds = getattr(work, request["workload"])()
                reply = {"seconds": seconds, "check": work.checksum()}
        except Exception as e:  # noqa: BLE001 - reported to the driver, which stops the run
            reply = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    spark.stop()


if __name__ == "__main__":
    main()
