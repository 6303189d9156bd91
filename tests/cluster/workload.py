"""One pydelta workload, run as a script against a given Spark master (a standalone cluster or
local[2]); prints its results as one JSON line so the test can compare the two runs.

Usage: python -m tests.cluster.workload <master-url> <work-dir>
"""

from __future__ import annotations

import json
import os
import shutil
import sys


def run(master: str, work: str) -> dict:
    from pyspark.sql import SparkSession

    import pydelta
    from pydelta import DeltaTable

    builder = (SparkSession.builder.master(master).appName("pydelta-cluster-workload")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.executor.memory", "768m").config("spark.sql.shuffle.partitions", "4"))
    spark = pydelta.enable(pydelta.configure_spark(builder).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        shutil.rmtree(work, ignore_errors=True)
        path, copy, ckpt = (os.path.join(work, n) for n in ("t", "copy", "ckpt"))
        spark.range(0, 2000, numPartitions=4).selectExpr("id", "CAST(id % 5 AS INT) AS p", "id * 2 AS v") \
            .write.format("delta").partitionBy("p").save(path)
        table = DeltaTable.forPath(spark, path)
        source = spark.range(1500, 2500, numPartitions=3).selectExpr("id", "CAST(id % 5 AS INT) AS p", "-id AS v")
        (table.alias("t").merge(source.alias("s"), "t.id = s.id")
         .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll().execute())
        table.delete("id % 7 = 0")
        table.update("p = 1", {"v": "v + 1"})
        table.optimize().executeCompaction()
        query = (spark.readStream.format("delta").load(path).writeStream.format("delta")
                 .option("checkpointLocation", ckpt).trigger(availableNow=True).start(copy))
        query.awaitTermination()
        rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).select("id", "p", "v").collect())
        copied = sorted(tuple(r) for r in spark.read.format("delta").load(copy).select("id", "p", "v").collect())
        history = [r.operation for r in table.history().orderBy("version").collect()]
        executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
        return {"rows": rows, "copied_equal": copied == rows, "history": history, "executors": executors,
                "files": pydelta.load_snapshot(path).num_files}
    finally:
        spark.stop()


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], sys.argv[2])))
