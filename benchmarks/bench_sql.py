"""The SQL path: routing overhead per statement, and a filtered SELECT by table name
against the same read through `spark.read.format("delta")`.

Usage: python -m benchmarks.bench_sql [--rows 5000000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time

from benchmarks.common import report


def _median_ms(fn, n: int) -> float:
    fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def _interleaved(a, b, repeats: int) -> tuple[float, float]:
    """Median seconds of `a` and `b`, run alternately so JIT warm-up and drift hit both alike."""
    a(), b()
    ta, tb = [], []
    for _ in range(repeats):
        for fn, out in ((a, ta), (b, tb)):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    return statistics.median(ta), statistics.median(tb)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()

    from pydelta.spark.base.raw import raw_sql
    from pydelta.spark.session import local_session

    base = tempfile.mkdtemp(prefix="pydelta-bench-sql-")
    spark = local_session("pydelta-bench-sql", catalog_dir=base, **{"spark.driver.memory": "6g"})
    spark.range(0, args.rows, numPartitions=8).selectExpr(
        "id", "CAST(id % 16 AS INT) AS part", "rand(7) AS x", "concat('u', CAST(id % 1000 AS STRING)) AS s",
    ).write.format("delta").partitionBy("part").saveAsTable("bench_events")
    path = spark.sql("DESCRIBE DETAIL bench_events").first().location.removeprefix("file:")

    # 1. Routing overhead: statements that touch no Delta table, through the hook vs Spark's own sql().
    for text in ("SELECT 1 AS one", "SELECT id FROM range(10) WHERE id > 3"):
        hooked = _median_ms(lambda text=text: spark.sql(text), 200)
        plain = _median_ms(lambda text=text: raw_sql(spark, text), 200)
        report("sql_route_non_delta_ms", hooked / 1000, plain / 1000, "spark_sql", statement=text,
               overhead_ms=round(hooked - plain, 3))

    # 2. Planning a Delta query by name vs building the same DataFrame through the reader API.
    query = "SELECT part, count(*) AS n, sum(x) AS sx FROM bench_events WHERE part = 3 AND id > 1000 GROUP BY part"

    def reader_df():
        from pyspark.sql import functions as F

        df = spark.read.format("delta").load(path)
        return df.where((F.col("part") == 3) & (F.col("id") > 1000)).groupBy("part").agg(
            F.count("*").alias("n"), F.sum("x").alias("sx"))

    plan_sql = _median_ms(lambda: spark.sql(query), 30)
    plan_reader = _median_ms(reader_df, 30)
    report("sql_plan_delta_query_ms", plan_sql / 1000, plan_reader / 1000, "reader_api",
           overhead_ms=round(plan_sql - plan_reader, 3))

    # 3. Running it.
    t_sql, t_reader = _interleaved(lambda: spark.sql(query).collect(), lambda: reader_df().collect(), args.repeats)
    report("sql_select_filter_by_name", t_sql, t_reader, "reader_api", rows=args.rows)
    t_sql_full, t_reader_full = _interleaved(
        lambda: spark.sql("SELECT count(*), sum(x) FROM bench_events").collect(),
        lambda: spark.read.format("delta").load(path).selectExpr("count(*)", "sum(x)").collect(), args.repeats)
    report("sql_select_full_by_name", t_sql_full, t_reader_full, "reader_api", rows=args.rows)
    spark.stop()
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
