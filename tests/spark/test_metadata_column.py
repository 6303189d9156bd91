"""The `_metadata` hidden column on Delta reads, as Spark's file sources have it.

Paths reported must be the table's real data files (checked against the log), row
indexes the physical positions in those files (so rows hidden by deletion vectors leave
gaps), and `_metadata` must not show up in `select("*")`.
"""

from __future__ import annotations

import os

import pytest
from pyspark.sql import functions as F

from pydelta import load_snapshot
from pydelta.spark.read.scan import spark_file_uri
from tests.golden_paths import DELTA_SPARK

pytestmark = pytest.mark.spark

FIELDS = ["file_path", "file_name", "file_size", "file_block_start", "file_block_length",
          "file_modification_time", "row_index"]


def live_uris(path: str) -> dict[str, int]:
    snap = load_snapshot(path)
    files = snap.files()
    return {spark_file_uri(snap.absolute_path(p)): size
            for p, size in zip(files.column("path").to_pylist(), files.column("size").to_pylist(), strict=True)}


def check(spark, path: str) -> list:
    df = spark.read.format("delta").load(path)
    assert "_metadata" not in df.columns and "_metadata" not in df.select("*").columns
    rows = df.select(*[F.col(f"_metadata.{f}").alias(f) for f in FIELDS], F.input_file_name().alias("ifn")).collect()
    files = live_uris(path)
    assert rows and {r.file_path for r in rows} == set(files)
    for r in rows:
        assert r.file_name == os.path.basename(r.file_path.split(":", 1)[1])
        assert r.file_size == files[r.file_path]
        assert r.ifn.replace("file:///", "file:/") == r.file_path  # Spark's own two spellings of a URI
    return rows


def test_partitioned_table(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(20).selectExpr("id", "id % 3 AS p").write.format("delta").partitionBy("p").save(path)
    rows = check(spark, path)
    assert len(rows) == 20
    with_values = spark.read.format("delta").load(path).select("id", "p", "_metadata.file_path").collect()
    assert all(f"/p={r.p}/" in r.file_path for r in with_values)


def test_deletion_vectors_keep_physical_row_indexes(spark):
    path = str(DELTA_SPARK / "dv-partitioned-with-checkpoint" / "delta")
    rows = check(spark, path)
    total = spark.read.format("delta").load(path).count()
    assert len(rows) == total
    # some rows were deleted through DVs: the surviving row indexes are not all dense 0..n-1
    by_file: dict[str, list[int]] = {}
    for r in rows:
        by_file.setdefault(r.file_path, []).append(r.row_index)
    assert any(sorted(ix) != list(range(len(ix))) for ix in by_file.values())


def test_column_mapping_and_after_filters(spark):
    path = str(DELTA_SPARK / "table-with-columnmapping-mode-name" / "delta")
    check(spark, path)
    df = spark.read.format("delta").load(path)
    first = df.columns[0]
    filtered = df.filter(F.col(first).isNotNull()).select("_metadata.file_path")
    assert {r[0] for r in filtered.collect()} <= set(live_uris(path))


def test_zorder_on_a_partitioned_table_then_metadata(spark, tmp_path):
    from pydelta import DeltaTable

    path = str(tmp_path / "z")
    spark.range(40).selectExpr("id", "id % 2 AS p", "id * 7 % 13 AS v").repartition(4).write.format(
        "delta").partitionBy("p").save(path)
    DeltaTable.forPath(spark, path).optimize().executeZOrderBy("v")
    check(spark, path)


def test_metadata_in_sql_queries(spark, tmp_path):
    """SQL queries over Delta tables keep `_metadata` (and row tracking's row_id) selectable,
    also with an alias, a join, time travel, CTEs and a catalog name; `*` never shows it."""
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, p INT) USING delta PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true')")
    spark.range(30, numPartitions=2).selectExpr("id", "CAST(id % 3 AS INT) AS p").write.format("delta") \
        .mode("append").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 4")
    files = live_uris(path)
    rows = spark.sql(f"SELECT id, p, _metadata.file_path, _metadata.file_size, _metadata.row_index, "
                     f"_metadata.row_id FROM delta.`{path}` WHERE id > 2").collect()
    assert sorted(r.id for r in rows) == [i for i in range(3, 30) if i != 4]
    assert {r.file_path for r in rows} <= set(files) and all(r.file_size == files[r.file_path] for r in rows)
    assert all(f"/p={r.p}/" in r.file_path for r in rows)
    assert len({r.row_id for r in rows}) == len(rows)  # stable row IDs, unique
    df = spark.read.format("delta").load(path)
    expected = {r.id: r.row_id for r in df.select("id", "_metadata.row_id").collect()}
    assert all(expected[r.id] == r.row_id for r in rows)  # the same values as DataFrame reads
    assert "_metadata" not in spark.sql(f"SELECT * FROM delta.`{path}`").columns
    joined = spark.sql(f"SELECT a.id, a._metadata.row_index AS ai, b._metadata.file_name AS bn "
                       f"FROM delta.`{path}` a JOIN delta.`{path}` VERSION AS OF 1 b ON a.id = b.id "
                       "WHERE a.id = 7").collect()
    assert len(joined) == 1 and joined[0].bn in {os.path.basename(u) for u in files}
    in_cte = spark.sql(f"WITH c AS (SELECT id, _metadata.row_id AS rid FROM delta.`{path}` x WHERE id > 2), "
                       "d AS (SELECT * FROM c WHERE id < 10) SELECT id, rid FROM d").collect()
    assert {r.id: r.rid for r in in_cte} == {i: expected[i] for i in range(3, 10) if i != 4}
    # Subquery expressions (IN, EXISTS, scalar) over Delta tables see `_metadata` too.
    first_file = os.path.basename(sorted(files)[0])
    in_file = {r.id for r in df.where(F.col("_metadata.file_name") == first_file).select("id").collect()}
    in_subquery = spark.sql(f"SELECT id FROM range(40) WHERE id IN (SELECT id FROM delta.`{path}` "
                            f"WHERE _metadata.file_name = '{first_file}')").collect()
    assert {r.id for r in in_subquery} == in_file and in_file
    exists = spark.sql(f"SELECT id FROM range(40) o WHERE EXISTS (SELECT 1 FROM delta.`{path}` t "
                       "WHERE t.id = o.id AND t._metadata.row_id = o.id)").collect()
    assert {r.id for r in exists} == {i for i, rid in expected.items() if rid == i}
    scalar = spark.sql(f"SELECT (SELECT max(_metadata.row_id) FROM delta.`{path}`) AS m").first().m
    assert scalar == max(expected.values())
    spark.sql(f"CREATE TABLE meta_sql_t USING delta LOCATION '{path}'")
    try:
        named = spark.sql("SELECT count(DISTINCT _metadata.file_path) AS n FROM meta_sql_t").first().n
        assert named == len(files)
    finally:
        spark.sql("DROP TABLE meta_sql_t")


@pytest.mark.parametrize("row_tracking", [False, True], ids=["plain", "row_tracking"])
def test_metadata_of_a_version_without_files(spark, tmp_path, row_tracking):
    """A table just created, and one whose rows were all deleted: `_metadata.*` resolves to no rows,
    as on delta-spark, through the reader, SQL and time travel."""
    path = str(tmp_path / "empty")
    props = "TBLPROPERTIES ('delta.enableRowTracking' = 'true')" if row_tracking else ""
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta {props}")
    fields = ["_metadata.file_path", "_metadata.file_name", "_metadata.row_index"]
    if row_tracking:
        fields += ["_metadata.row_id", "_metadata.row_commit_version"]
    df = spark.read.format("delta").load(path).select("id", *fields)
    assert df.collect() == [] and df.columns == ["id"] + [f.split(".")[1] for f in fields]
    assert spark.read.format("delta").load(path).columns == ["id", "v"]  # still hidden from *
    assert spark.sql(f"SELECT {', '.join(fields)} FROM delta.`{path}`").collect() == []
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a')")
    spark.sql(f"DELETE FROM delta.`{path}`")
    assert spark.sql(f"SELECT id, {', '.join(fields)} FROM delta.`{path}`").collect() == []
    assert spark.sql(f"SELECT {fields[0]} FROM delta.`{path}` VERSION AS OF 0").collect() == []
    assert len(spark.sql(f"SELECT {fields[0]} FROM delta.`{path}` VERSION AS OF 1").collect()) == 1
