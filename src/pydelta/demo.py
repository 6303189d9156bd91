"""End-to-end demo on local Spark: the "Delta Lake 101" story, then a real workload.

Run with `make demo` (or `python -m pydelta.demo [--rows N] [--dir PATH]`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time


def banner(text: str) -> None:
    print(f"\n=== {text} " + "=" * max(0, 70 - len(text)), flush=True)


def step(text: str) -> None:
    print(f"--> {text}", flush=True)


def log_listing(path: str) -> list[str]:
    return sorted(f for f in os.listdir(os.path.join(path, "_delta_log")) if not f.startswith("."))


def data_files(path: str) -> int:
    return sum(1 for d, _, files in os.walk(path) if "_delta_log" not in d for f in files if f.endswith(".parquet"))


def delta_101(spark, base: str) -> None:
    from pyspark.sql import functions as F

    from pydelta import DeltaTable

    path = os.path.join(base, "employees")
    banner("Delta Lake 101: the transaction log, step by step")
    step("CREATE TABLE employees (id INT, name STRING, dept STRING, salary DOUBLE)")
    table = (
        DeltaTable.create(spark).tableName("employees").location(path)
        .addColumn("id", "INT").addColumn("name", "STRING").addColumn("dept", "STRING").addColumn("salary", "DOUBLE")
        .execute()
    )
    print("    _delta_log:", log_listing(path))

    step("INSERT 4 employees")
    spark.createDataFrame(
        [(1, "Ann", "eng", 100.0), (2, "Bob", "eng", 90.0), (3, "Cid", "ops", 70.0), (4, "Dee", "ops", 75.0)],
        "id INT, name STRING, dept STRING, salary DOUBLE",
    ).write.format("delta").mode("append").save(path)
    table.toDF().orderBy("id").show()

    step("UPDATE employees SET salary = salary * 1.1 WHERE dept = 'ops'")
    table.update("dept = 'ops'", {"salary": "salary * 1.1"})
    step("DELETE FROM employees WHERE id = 2")
    table.delete(F.col("id") == 2)
    table.toDF().orderBy("id").show()

    step("DESCRIBE HISTORY employees")
    table.history().select("version", "operation", "operationParameters", "operationMetrics").show(truncate=70)

    step("SELECT * FROM employees VERSION AS OF 1")
    spark.read.format("delta").option("versionAsOf", 1).load(path).orderBy("id").show()

    step("RESTORE employees TO VERSION AS OF 1")
    table.restoreToVersion(1).show(truncate=False)
    table.toDF().orderBy("id").show()

    step("12 more small commits: a checkpoint appears every 10 commits")
    for i in range(12):
        spark.createDataFrame([(100 + i, f"temp{i}", "tmp", 1.0)], "id INT, name STRING, dept STRING, salary DOUBLE") \
            .write.format("delta").mode("append").save(path)
    print("    _delta_log:", [f for f in log_listing(path) if "checkpoint" in f or f == "_last_checkpoint"])
    print("    latest version:", table.snapshot().version, "rows:", table.toDF().count())

    step("VACUUM (retention 0 hours, with the safety check disabled for the demo)")
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    before = data_files(path)
    table.vacuum(0)
    after = data_files(path)
    print(f"    data files on disk: {before} -> {after} (the table itself has {len(table.snapshot().files())})")
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "true")

    step("the independent delta-rs client reads the same table")
    try:
        import deltalake

        dt = deltalake.DeltaTable(path)
        print(f"    deltalake: version {dt.version()}, {dt.to_pyarrow_table().num_rows} rows")
    except ImportError:
        print("    (deltalake not installed; `pip install deltalake` to cross-check)")


def workload(spark, base: str, rows: int) -> None:
    from pyspark.sql import functions as F

    from pydelta import DeltaTable

    banner(f"A real workload: {rows:,} generated rows")
    path = os.path.join(base, "events")
    df = spark.range(0, rows, numPartitions=8).selectExpr(
        "id", "CAST(id % 16 AS INT) AS region", "rand(7) * 100 AS amount", "concat('user-', CAST(id % 50000 AS STRING)) AS user",
    )
    t = time.perf_counter()
    df.write.format("delta").partitionBy("region").save(path)
    print(f"    partitioned write: {time.perf_counter() - t:.1f}s, {len(DeltaTable.forPath(spark, path).snapshot().files())} files")

    events = DeltaTable.forPath(spark, path)
    updates = spark.range(0, rows // 10).selectExpr("id * 7 AS id", "CAST((id * 7) % 16 AS INT) AS region",
                                                    "-1.0 AS amount", "'merged' AS user")
    t = time.perf_counter()
    result = (events.alias("t").merge(updates.alias("s"), "t.id = s.id")
              .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    print(f"    merge of {rows // 10:,} source rows: {time.perf_counter() - t:.1f}s")
    result.show()

    t = time.perf_counter()
    events.optimize().executeCompaction()
    print(f"    optimize (compaction): {time.perf_counter() - t:.1f}s, now {len(events.snapshot().files())} files")

    t = time.perf_counter()
    filtered = spark.read.format("delta").load(path).where((F.col("region") == 3) & (F.col("id") < rows // 100))
    n = filtered.count()
    print(f"    filtered read: {n:,} rows from {len(filtered.inputFiles())} of "
          f"{len(events.snapshot().files())} files in {time.perf_counter() - t:.1f}s")
    events.history().select("version", "operation", "operationMetrics").show(truncate=80)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--dir", default=os.path.abspath("demo-output"))
    args = ap.parse_args(argv)
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)

    from pydelta.spark.session import local_session

    spark = local_session("pydelta-demo", **{"spark.sql.warehouse.dir": os.path.join(args.dir, "warehouse")})
    try:
        delta_101(spark, args.dir)
        workload(spark, args.dir, args.rows)
    finally:
        spark.stop()
    banner("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
