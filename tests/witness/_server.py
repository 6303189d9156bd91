"""The delta-spark witness server: runs in the witness venv (pyspark 4.2 + delta-spark
jars), never in pydelta's. Protocol: one JSON request per line on stdin, one JSON reply
per line on the original stdout; everything else (Spark's logs, prints) goes to stderr.

    python _server.py <jars-dir>                 # serve requests
    python _server.py <jars-dir> --script F ...  # run F once with `spark` and `args`,
                                                 # print json.dumps(result) last

Requests: {"op": ..., ...}; replies: {"ok": true, ...} or {"ok": false, "error": ...,
"error_class": ...}. Ops: ping, rows, rows_many, schema, history, detail, sql, changes, stream, exec.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _canon  # noqa: E402


def delta_spark_jars(jars_dir: str) -> list[str]:
    """The cached jars, less those Spark already ships (same artifact, e.g. hadoop,
    jackson, parquet, scala-library): Spark's own copies win, as with --packages."""
    import pyspark

    spark_jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    shipped = {_artifact(n) for n in os.listdir(spark_jars)}
    return sorted(
        os.path.join(jars_dir, n)
        for n in os.listdir(jars_dir)
        if n.endswith(".jar") and _artifact(n) not in shipped
    )


def _artifact(name: str) -> str:
    m = re.match(r"^(.*?)-\d[^-]*.*\.jar$", name)
    return m.group(1) if m else name


def session(jars_dir: str):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    # Jars beyond delta-spark's on the driver's class path (os.pathsep-separated), e.g. hadoop-aws
    # and its AWS SDK bundle for the s3a tests (tests/s3a); local mode has no other JVM.
    extra = os.environ.get("PYDELTA_WITNESS_EXTRA_CLASSPATH")
    if extra:
        builder = builder.config("spark.driver.extraClassPath", extra)
    return (
        builder.master("local[2]")
        .appName("delta-spark-witness")
        .config("spark.jars", ",".join(delta_spark_jars(jars_dir)))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.driver.memory", os.environ.get("PYDELTA_WITNESS_MEMORY", "768m"))
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir",
                os.environ.get("PYDELTA_WITNESS_WAREHOUSE", "/tmp/delta-spark-witness-warehouse"))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .getOrCreate()
    )


def _table(req) -> str:
    return f"delta.`{req['path']}`" if "path" in req else req["table"]


def _df(spark, req):
    r = spark.read.format("delta")
    if req.get("version") is not None:
        r = r.option("versionAsOf", int(req["version"]))
    if req.get("timestamp") is not None:
        r = r.option("timestampAsOf", req["timestamp"])
    return r.load(req["path"]) if "path" in req else r.table(req["table"])


def _collect(df):
    return {"schema": _canon.schema(df.schema), "rows": _canon.rows(df.collect())}


def _plain(v):
    return json.loads(json.dumps(_canon.value(v)))


# What exec'd code keeps between requests (e.g. threads it started and joins later).
STATE: dict = {}


def handle(spark, req):
    op = req["op"]
    if op == "ping":
        import pyspark

        return {"pyspark": pyspark.__version__, "spark": spark.version,
                "jars": [os.path.basename(j) for j in spark.conf.get("spark.jars").split(",")]}
    if op == "rows":
        return _collect(_df(spark, req))
    if op == "rows_many":  # rows at each of req["versions"], in one round trip
        return {"versions": [_collect(_df(spark, {"path": req["path"], "version": v})) for v in req["versions"]]}
    if op == "schema":
        df = _df(spark, req)
        return {"schema": _canon.schema(df.schema), "json": json.loads(df.schema.json())}
    if op == "history":
        df = spark.sql(f"DESCRIBE HISTORY {_table(req)}")
        rows = [{k: _plain(v) for k, v in r.asDict().items()} for r in df.collect()]
        return {"history": sorted(rows, key=lambda r: r["version"])}
    if op == "detail":
        r = spark.sql(f"DESCRIBE DETAIL {_table(req)}").collect()[0]
        return {"detail": {k: _plain(v) for k, v in r.asDict().items()}}
    if op == "changes":
        r = spark.read.format("delta").option("readChangeFeed", "true")
        r = r.option("startingVersion", int(req.get("start", 0)))
        if req.get("end") is not None:
            r = r.option("endingVersion", int(req["end"]))
        df = r.load(req["path"]).drop("_commit_timestamp")
        return _collect(df)
    if op == "sql":
        df = spark.sql(req["sql"])
        return _collect(df) if req.get("collect", True) else {}
    if op == "stream":  # a readStream of the table to completion (AvailableNow), batch by batch
        return _stream(spark, req)
    if op == "exec":  # run Python with `spark`, `req`, `state`; the code sets `result`
        env = {"spark": spark, "req": req, "canon": _canon, "state": STATE, "result": None}
        exec(req["code"], env)
        return {"result": json.loads(json.dumps(env["result"], default=str))}
    raise ValueError(f"unknown op {op!r}")


def _stream(spark, req):
    """Run `spark.readStream.format("delta")` with req's options over req's path into a
    foreachBatch sink, Trigger.AvailableNow, checkpoint at req's checkpoint; return every
    batch's rows (without _commit_timestamp) in order."""
    batches = []

    def collect(df, batch_id):
        df = df.drop("_commit_timestamp")
        batches.append({"batch": batch_id, "schema": _canon.schema(df.schema), "rows": _canon.rows(df.collect())})

    reader = spark.readStream.format("delta")
    for k, v in (req.get("options") or {}).items():
        reader = reader.option(k, str(v))
    query = (reader.load(req["path"]).writeStream.foreachBatch(collect)
             .option("checkpointLocation", req["checkpoint"]).trigger(availableNow=True).start())
    try:
        query.awaitTermination(float(req.get("timeout", 300)))
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
    finally:
        query.stop()
    return {"batches": batches}


def _error(e):
    cls = None
    with contextlib.suppress(Exception):
        cls = e.getCondition()  # pyspark 4: PySparkException / CapturedException
    return {"ok": False, "error": f"{type(e).__name__}: {e}"[:4000], "error_class": cls,
            "traceback": traceback.format_exc()[-4000:]}


def main(argv):
    out = os.fdopen(os.dup(1), "w", buffering=1)  # replies only
    os.dup2(2, 1)  # anything else that writes to stdout lands on stderr
    sys.stdout = sys.stderr
    jars_dir = argv[1]
    t0 = time.time()
    spark = session(jars_dir)
    spark.range(1).collect()  # warm up: the JVM, the classloader, the extension
    if len(argv) > 2 and argv[2] == "--script":
        env = {"spark": spark, "args": argv[4:], "canon": _canon, "result": None}
        with open(argv[3]) as f:
            exec(compile(f.read(), argv[3], "exec"), env)
        out.write(json.dumps(env["result"], default=str) + "\n")
        spark.stop()
        return 0
    out.write(json.dumps({"ok": True, "ready": True, "start_seconds": round(time.time() - t0, 2)}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req.get("op") == "stop":
                out.write(json.dumps({"ok": True}) + "\n")
                break
            reply = {"ok": True, **handle(spark, req)}
        except Exception as e:  # reported to the client, the server carries on
            reply = _error(e)
        out.write(json.dumps(reply) + "\n")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
