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


def sql(spark, text: str, show: bool = True, truncate: int | bool = 70):
    """Run one SQL statement, printing it first: the demo shows exactly what runs."""
    step(text)
    result = spark.sql(text)
    if show and result.columns:
        result.show(truncate=truncate)
    return result


def delta_101(spark, base: str) -> None:
    """The Delta Lake 101 tutorial (seed 004), as SQL, with the log shown on disk."""
    from pydelta import DeltaTable

    banner("Delta Lake 101: the transaction log, step by step (SQL)")
    sql(spark, "CREATE DATABASE IF NOT EXISTS mydb")
    sql(spark, "CREATE TABLE mydb.employees (id INT, name STRING, birthdate DATE) USING DELTA")
    table = DeltaTable.forName(spark, "mydb.employees")
    path = table.path
    print("    location:", path)
    print("    _delta_log:", log_listing(path))
    sql(spark, "INSERT INTO mydb.employees VALUES (1, 'John Doe', '1980-01-01'), "
               "(2, 'Jane Smith', '1990-05-15'), (3, 'Bob Johnson', '1985-12-31')")
    sql(spark, "UPDATE mydb.employees SET id = 4 WHERE name = 'Jane Smith'")
    sql(spark, "DELETE FROM mydb.employees WHERE id < 3")
    sql(spark, "SELECT * FROM mydb.employees ORDER BY id")
    step("DESCRIBE HISTORY mydb.employees")
    spark.sql("DESCRIBE HISTORY mydb.employees").select(
        "version", "operation", "operationParameters", "operationMetrics").show(truncate=70)
    sql(spark, "SELECT * FROM mydb.employees VERSION AS OF 1 ORDER BY id")
    sql(spark, "RESTORE mydb.employees TO VERSION AS OF 1", truncate=False)
    sql(spark, "SELECT * FROM mydb.employees ORDER BY id")

    step("12 more small INSERTs: a checkpoint appears every 10 commits")
    for i in range(12):
        spark.sql(f"INSERT INTO mydb.employees VALUES ({100 + i}, 'Temp {i}', '2000-01-01')")
    print("    _delta_log:", [f for f in log_listing(path) if "checkpoint" in f or f == "_last_checkpoint"])
    print("    latest version:", table.snapshot().version, "rows:", table.toDF().count())

    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    before = data_files(path)
    sql(spark, "VACUUM mydb.employees RETAIN 0 HOURS  -- safety check disabled for the demo", show=False)
    after = data_files(path)
    print(f"    data files on disk: {before} -> {after} (the table itself has {len(table.snapshot().files())})")
    print(f"    VACUUM itself commits twice (VACUUM START, VACUUM END): latest version now {table.snapshot().version}")
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
        "id", "CAST(id % 16 AS INT) AS region", "rand(7) * 100 AS amount",
        "concat('user-', CAST(id % 50000 AS STRING)) AS user",
    )
    t = time.perf_counter()
    df.write.format("delta").partitionBy("region").save(path)
    print(f"    partitioned write: {time.perf_counter() - t:.1f}s, "
          f"{len(DeltaTable.forPath(spark, path).snapshot().files())} files")

    events = DeltaTable.forPath(spark, path)
    updates = spark.range(0, rows // 10).selectExpr("id * 7 AS id", "CAST((id * 7) % 16 AS INT) AS region",
                                                    "-1.0 AS amount", "'merged' AS user")
    t = time.perf_counter()
    result = (events.alias("t").merge(updates.alias("s"), "t.id = s.id")
              .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    print(f"    merge of {rows // 10:,} source rows: {time.perf_counter() - t:.1f}s")
    result.show()

    # Small appends leave small files behind (as a trickle of micro-batches would); OPTIMIZE
    # bin-packs each partition's small files into one.
    for i in range(5):
        df.limit(1000).selectExpr(f"id + {rows * (i + 1)} AS id", "region", "amount", "user") \
            .repartition(4).write.format("delta").mode("append").save(path)
    before = len(events.snapshot().files())
    t = time.perf_counter()
    metrics = events.optimize().executeCompaction().select("metrics.*").first()
    print(f"    optimize (compaction): {time.perf_counter() - t:.1f}s, {before} files -> "
          f"{len(events.snapshot().files())} ({metrics.numFilesRemoved} small files compacted into "
          f"{metrics.numFilesAdded})")

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

    spark = local_session("pydelta-demo", catalog_dir=os.path.join(args.dir, "catalog"))
    try:
        delta_101(spark, args.dir)
        workload(spark, args.dir, args.rows)
    finally:
        spark.stop()
    banner("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
