"""Partition values and literals that statements could trip on (issue 44): quotes, backticks,
dots, spaces, `=`, `/`, `%`, `#`, a newline, non-ASCII, an empty string, null and a long value.

A table partitioned by such values goes through every statement pydelta builds text or
predicates for itself: SQL INSERT, filtered reads (partition pruning), DELETE, UPDATE and
MERGE in SQL and through the API, OPTIMIZE (one predicate per partition) and auto compaction.
Every value round-trips, every statement touches exactly the rows it names, and deltalake
(delta-rs) reads the same table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pydelta import DeltaTable
from pydelta.errors import StorageAccessError
from tests.spark.test_maintenance_support import deltalake_rows

pytestmark = pytest.mark.spark

VALUES = ["it's", 'say "hi"', "back`tick", "a.b", "two words", "k=v", "a/b", "100%", "50%25", "#tag",
          "line\nbreak", "日本語 ü", "", None, "x" * 200, "' OR '1'='1", "`; DROP TABLE t; --"]


def sql_string(value: str) -> str:
    """A SQL string literal of `value` (Spark's escapes: backslash and quote)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _rows(spark, path: str) -> list[tuple]:
    return sorted((r.id, r.p, r.v) for r in spark.read.format("delta").load(path).collect())


def test_every_statement_round_trips_hostile_partition_values(spark, tmp_path: Path) -> None:
    round_trip_hostile_partition_values(spark, str(tmp_path / "t"))


def round_trip_hostile_partition_values(spark, path: str) -> None:
    """The whole round trip on a table at `path`, with `spark` (classic or Connect: tests/connect
    runs it over Spark Connect)."""
    rows = [(i, v, f"v{i}") for i, v in enumerate(VALUES)]
    spark.createDataFrame(rows, "id long, p string, v string").write.format("delta") \
        .partitionBy("p").option("delta.autoOptimize.autoCompact", "true").save(path)
    # An empty partition value is null, as Spark and delta-spark write it (Hive's default partition).
    expected = {i: (i, None if v == "" else v, w) for i, v, w in rows}
    assert _rows(spark, path) == sorted(expected.values(), key=lambda r: r[0])
    assert spark.read.format("delta").load(path).where("p IS NULL").count() == 2

    for i, value in enumerate(VALUES):  # a SQL INSERT and a pruned read of each value
        if not value:
            continue
        spark.sql(f"INSERT INTO delta.`{path}` VALUES ({100 + i}, {sql_string(value)}, 'ins')")
        expected[100 + i] = (100 + i, value, "ins")
        df = spark.read.format("delta").load(path).where(f"p = {sql_string(value)}")
        assert sorted(r.id for r in df.collect()) == [i, 100 + i], repr(value)
        assert len(df.inputFiles()) >= 1 and all(f for f in df.inputFiles())

    table = DeltaTable.forPath(spark, path)
    for i, value in enumerate(VALUES[:8]):  # DELETE in SQL, UPDATE through the API
        spark.sql(f"DELETE FROM delta.`{path}` WHERE p = {sql_string(value)} AND v = 'ins'")
        del expected[100 + i]
    for i, value in enumerate(VALUES[8:16], start=8):
        if not value:
            continue
        table.update(f"p = {sql_string(value)} AND id < 100", {"v": "'upd'"})
        expected[i] = (i, value, "upd")
    source_rows = [(i, v or None, "merged") for i, v in enumerate(VALUES)] + [(999, "new'\nvalue", "m")]
    source = spark.createDataFrame(source_rows, "id long, p string, v string")
    (table.alias("t").merge(source.alias("s"), "t.id = s.id AND t.p <=> s.p")
     .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll().execute())
    for i, value in enumerate(VALUES):
        expected[i] = (i, value or None, "merged")
    expected[999] = (999, "new'\nvalue", "m")
    assert _rows(spark, path) == sorted(expected.values(), key=lambda r: (r[0], r[1] or "", r[2]))

    spark.sql(f"OPTIMIZE delta.`{path}`")
    assert _rows(spark, path) == sorted(expected.values(), key=lambda r: (r[0], r[1] or "", r[2]))
    history = [r.operation for r in table.history().collect()]
    assert "OPTIMIZE" in history
    assert deltalake_rows(path, ["id", "p", "v"]) == sorted(expected.values(), key=lambda r: (r[0], r[1] or "", r[2]))


def test_a_partition_value_too_long_for_a_directory_name_fails_by_name(spark, tmp_path: Path) -> None:
    """Hive-style directories (as delta-spark writes them) cannot hold a 300-byte value on a file
    system whose names stop at 255 bytes: a named error, and nothing committed."""
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, "short")], "id long, p string").write.format("delta").partitionBy("p").save(path)
    with pytest.raises(StorageAccessError, match="TASK_WRITE_FAILED"):
        spark.createDataFrame([(2, "y" * 300)], "id long, p string").write.format("delta").mode("append").save(path)
    assert DeltaTable.forPath(spark, path).history().count() == 1
    assert [tuple(r) for r in spark.read.format("delta").load(path).collect()] == [(1, "short")]
