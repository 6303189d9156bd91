"""The s3a workload: pydelta on Spark against s3a:// tables, as a user runs it, in its own process.

    python -m tests.s3a.workload <master-url | connect> <endpoint> <root s3a:// URI> <jar> [<jar>...]

The session has hadoop-aws and the store's endpoint and credentials in spark.hadoop.fs.s3a.*
only (no AWS_* variables: see _s3.script_env); with `connect` instead of a master URL, a Spark
Connect server has them and the workload runs on a pydelta client session to it. On tables under
<root>: SQL CREATE TABLE on delta.`s3a://...` with properties, DataFrame writes, a filtered read (the files it plans),
DELETE / UPDATE / MERGE copy-on-write (DeltaTable.forPath, SQL) and with deletion vectors
(SQL), OPTIMIZE, the change feed and time travel, VACUUM, and a Delta-to-Delta stream (s3a to
s3a, checkpoint in the bucket too) run twice, and DeltaTable.forPath with hadoopConf. Prints what it
saw as one JSON line; the tests (test_s3a_spark.py, test_s3a_cluster.py) check it against a model of
the operations (_model.py), the bucket's objects, the log, deltalake and delta-spark.
"""

from __future__ import annotations

import json
import sys
import time

from tests.s3a import _model as M


def _rows(df) -> list[list]:
    return sorted([list(r) for r in df.collect()])


class _Clock:
    """Seconds per step, reported with the results (where a slow run spends its time)."""

    def __init__(self) -> None:
        self.steps: dict[str, float] = {}
        self._last = time.time()

    def __call__(self, name: str) -> None:
        now = time.time()
        self.steps[name] = round(now - self._last, 1)
        self._last = now


def run(master: str, endpoint: str, root: str, jars: list[str]) -> dict:
    import pydelta
    from pydelta import DeltaTable
    from pydelta.log.storage import default_storage_options
    from tests.s3a._s3 import connect_session, spark_session

    started = time.time()
    clock = _Clock()
    server = None
    if master == "connect":
        server, spark = connect_session(endpoint, jars, "pydelta-s3a-workload")
    else:
        spark = spark_session(master, endpoint, jars, "pydelta-s3a-workload")
    clock("session")
    out: dict = {"steps": clock.steps}
    t, dv, events, copy, ckpt = (f"{root}/{n}" for n in ("t", "dv", "events", "copy", "checkpoint"))
    try:
        # What the log core derived from the session for this bucket (names only, not the secrets).
        out["derived_option_keys"] = sorted(default_storage_options(t) or {})

        # -- writes: SQL CREATE TABLE with properties, then a DataFrame append of three files
        spark.sql(f"CREATE TABLE delta.`{t}` (id BIGINT, p INT, s STRING) USING delta TBLPROPERTIES "
                  "('delta.enableChangeDataFeed' = 'true', 'delta.checkpointInterval' = '3')")
        spark.range(0, M.T_ROWS, numPartitions=3) \
            .selectExpr("id", "CAST(id % 3 AS INT) AS p", "CAST(id AS STRING) AS s") \
            .write.format("delta").mode("append").save(t)

        clock("writes")
        # -- a filtered read: the files Spark plans to open, and what the log's stats allow
        df = spark.read.format("delta").load(t)
        few = df.where(f"id < {M.SKIP_BELOW}")
        snapshot = pydelta.load_snapshot(t)
        stats = [json.loads(s) for s in snapshot.files().column("stats").to_pylist()]
        out["skipping"] = {"all": len(df.inputFiles()), "read": len(few.inputFiles()),
                           "by_stats": sum(1 for s in stats if s["minValues"]["id"] < M.SKIP_BELOW),
                           "rows": sorted(r.id for r in few.select("id").collect())}

        clock("skipping")
        # -- DML, copy-on-write: DeltaTable.forPath and SQL on delta.`s3a://...`
        table = DeltaTable.forPath(spark, t)
        table.delete(M.T_DELETE)
        spark.sql(f"UPDATE delta.`{t}` SET s = 'u' WHERE {M.T_UPDATE}")
        source = spark.range(*M.T_MERGE_IDS).selectExpr("id", "CAST(id % 3 AS INT) AS p", "'m' AS s")
        (table.alias("t").merge(source.alias("src"), "t.id = src.id")
         .whenMatchedUpdate(set={"s": "src.s"}).whenNotMatchedInsertAll().execute())
        clock("dml")
        files_before_optimize = pydelta.load_snapshot(t).num_files
        spark.sql(f"OPTIMIZE delta.`{t}`")
        out["optimize"] = {"before": files_before_optimize, "after": pydelta.load_snapshot(t).num_files}

        clock("optimize")
        # -- the change feed, and every version by time travel (before VACUUM removes old files)
        latest = pydelta.load_snapshot(t).version
        out["versions"] = {str(v): _rows(spark.read.format("delta").option("versionAsOf", v).load(t))
                           for v in range(1, latest + 1)}
        changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1).load(t)
        out["changes"] = _rows(changes.select("_commit_version", "_change_type", "id", "p", "s"))

        clock("change feed")
        # -- VACUUM: every file no version needs any more leaves the bucket
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        spark.sql(f"VACUUM delta.`{t}` RETAIN 0 HOURS")
        out["t"] = {"rows": _rows(spark.read.format("delta").load(t)),
                    "history": [r.operation for r in table.history().orderBy("version").collect()],
                    "files": sorted(pydelta.load_snapshot(t).files().column("path").to_pylist()),
                    "version": pydelta.load_snapshot(t).version}

        clock("vacuum")
        # -- DML with deletion vectors, in SQL
        spark.sql(f"CREATE TABLE delta.`{dv}` (id BIGINT, p INT, s STRING) USING delta "
                  "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
        spark.range(0, M.DV_ROWS, numPartitions=2) \
            .selectExpr("id", "CAST(id % 4 AS INT) AS p", "CAST(id AS STRING) AS s") \
            .write.format("delta").mode("append").save(dv)
        spark.sql(f"DELETE FROM delta.`{dv}` WHERE {M.DV_DELETE}")
        spark.sql(f"UPDATE delta.`{dv}` SET s = 'u' WHERE {M.DV_UPDATE}")
        spark.range(*M.DV_MERGE_IDS).selectExpr("id", "CAST(id % 4 AS INT) AS p", "'m' AS s") \
            .createOrReplaceTempView("src")
        spark.sql(f"MERGE INTO delta.`{dv}` AS t USING src ON t.id = src.id "
                  "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *")
        dv_snapshot = pydelta.load_snapshot(dv)
        out["dv"] = {"rows": _rows(spark.read.format("delta").load(dv)),
                     "with_dv": sum(1 for d in dv_snapshot.files().column("deletion_vector").to_pylist() if d),
                     "history": [r.operation
                                 for r in DeltaTable.forPath(spark, dv).history().orderBy("version").collect()]}

        clock("dml with dvs")
        # -- a stream from one s3a table to another (checkpoint in the bucket), run twice
        ids = iter(M.EVENT_BATCHES)
        for _ in range(2):
            spark.range(*next(ids)).selectExpr("id", "CONCAT('e', id) AS s") \
                .write.format("delta").mode("append").save(events)

        def stream() -> None:
            query = (spark.readStream.format("delta").load(events).writeStream.format("delta")
                     .option("checkpointLocation", ckpt).trigger(availableNow=True).start(copy))
            query.awaitTermination()

        stream()
        first = _rows(spark.read.format("delta").load(copy))
        spark.range(*next(ids)).selectExpr("id", "CONCAT('e', id) AS s") \
            .write.format("delta").mode("append").save(events)
        stream()
        out["stream"] = {"first": first, "events": _rows(spark.read.format("delta").load(events)),
                         "copy": _rows(spark.read.format("delta").load(copy)),
                         "copy_history": [r.operation for r in
                                          DeltaTable.forPath(spark, copy).history().orderBy("version").collect()]}
        clock("stream")
        # -- DeltaTable.forPath's hadoopConf: with the session's fs.s3a.endpoint pointing where the
        #    bucket does not exist, the table's own option leads its reads (log and files) there
        spark.conf.set("fs.s3a.endpoint", f"{endpoint}/elsewhere")
        try:
            by_options = DeltaTable.forPath(spark, t, hadoopConf={"fs.s3a.endpoint": endpoint})
            out["hadoop_conf"] = {"rows": _rows(by_options.toDF()),
                                  "history": [r.operation for r in by_options.history().orderBy("version").collect()]}
        finally:
            spark.conf.unset("fs.s3a.endpoint")
        out["hadoop_conf"]["session_endpoint_after"] = spark.conf.get("fs.s3a.endpoint", None)
        clock("hadoopConf")
        out["versions_latest"] = {n: pydelta.load_snapshot(f"{root}/{n}").version
                                  for n in ("t", "dv", "events", "copy")}
        if server is None:
            out["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
        out["seconds"] = round(time.time() - started, 1)
        return out
    finally:
        spark.stop()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])))
