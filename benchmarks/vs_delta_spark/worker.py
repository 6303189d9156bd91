"""One engine's benchmark process: `python worker.py pydelta|delta-spark <scratch-dir> [jars-dir]`.

Runs in the venv of its engine (pydelta: a venv with the same pyspark as delta-spark's),
reads one JSON request per line on stdin ({"workload": name}) and answers one JSON line
({"seconds": s} or {"error": text}) on stdout. Spark's own output goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)

CONF = {  # the same for both engines
    "spark.driver.memory": os.environ.get("BENCH_DRIVER_MEMORY", "6g"),
    "spark.sql.shuffle.partitions": "8",
    "spark.ui.enabled": "false",
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
            seconds = getattr(work, request["workload"])()
            reply = {"seconds": seconds, "check": work.checksum()}
        except Exception as e:  # noqa: BLE001 - reported to the driver, which stops the run
            reply = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    spark.stop()


if __name__ == "__main__":
    main()
