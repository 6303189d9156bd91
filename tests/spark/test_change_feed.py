"""Batch change data feed reads (readChangeFeed), checked against deltalake's load_cdf.

deltalake (delta-rs) is the independent witness: the rows, change types and versions it
reads from the same table must equal ours. Its `_commit_timestamp` is the commitInfo
timestamp while delta-spark (and pydelta) use the commit file's time (or the in-commit
timestamp where enabled), so timestamps are checked separately.
"""

from __future__ import annotations

import os
import shutil
import time
from datetime import UTC, datetime

import deltalake
import pytest

from pydelta import DeltaTable, errors, load_snapshot
from tests.golden_paths import DELTA_RS

pytestmark = pytest.mark.spark

CDF = {"delta.enableChangeDataFeed": "true"}


def changes(spark, path, **opts):
    reader = spark.read.format("delta").option("readChangeFeed", "true")
    for key, value in opts.items():
        reader = reader.option(key, value)
    return reader.load(path)


def rows_of(df, columns=None) -> list[tuple]:
    columns = columns or [c for c in df.columns if c != "_commit_timestamp"]
    return sorted(tuple(r[c] for c in columns) for r in df.select(*columns).collect())


def witness(path, columns, starting_version=0, ending_version=None) -> list[tuple]:
    table = deltalake.DeltaTable(path).load_cdf(starting_version=starting_version, ending_version=ending_version)
    data = table.read_all()
    return sorted(zip(*[data.column(c).to_pylist() for c in columns], strict=True))


def cdf_table(spark, path, partitioned=False):
    df = spark.createDataFrame([(i, f"n{i}", i % 2) for i in range(6)], "id long, name string, part int")
    writer = df.write.format("delta").option("delta.enableChangeDataFeed", "true")
    if partitioned:
        writer = writer.partitionBy("part")
    writer.save(path)
    return path


@pytest.mark.parametrize("name", ["cdf-table", "cdf-table-non-partitioned", "cdf-table-with-cdc-and-dvs",
                                  "cdc_ict_table", "simple_table_with_cdc"])
def test_golden_change_feeds_match_deltalake(spark, name):
    path = str(DELTA_RS / name)
    df = changes(spark, path, startingVersion=0)
    columns = [c for c in df.columns if c != "_commit_timestamp"]
    ours = rows_of(df, columns)
    assert ours, "a change feed with rows"
    assert ours == witness(path, columns)
    assert df.columns[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]


def test_deletion_vector_changes_are_row_level(spark):
    # delta-spark wrote DELETEs with deletion vectors (no cdc files for some commits):
    # the rows newly masked must appear as deletes, not the whole file.
    path = str(DELTA_RS / "cdf-table-with-cdc-and-dvs")
    df = changes(spark, path, startingVersion=0)
    deletes = df.filter("_change_type = 'delete'").count()
    log = load_snapshot(path)
    assert deletes > 0
    assert rows_of(df.filter("_change_type = 'delete'")) == witness_rows_of_type(path, df, "delete")
    assert log.version >= max(r._commit_version for r in df.select("_commit_version").collect())


def witness_rows_of_type(path, df, change_type):
    columns = [c for c in df.columns if c != "_commit_timestamp"]
    return [r for r in witness(path, columns) if r[columns.index("_change_type")] == change_type]


def test_in_commit_timestamps_are_the_commit_timestamps(spark):
    path = str(DELTA_RS / "cdc_ict_table")
    df = changes(spark, path, startingVersion=0)
    infos = {h["version"]: h["inCommitTimestamp"] for h in deltalake.DeltaTable(path).history()
             if h.get("inCommitTimestamp")}
    got = {r._commit_version: r._commit_timestamp for r in df.collect()}
    assert got and infos
    for version, ts in got.items():
        assert int(ts.timestamp() * 1000) == infos[version]


@pytest.mark.parametrize("partitioned", [False, True])
def test_pydelta_dml_change_feed_matches_deltalake(spark, tmp_path, partitioned):
    path = cdf_table(spark, str(tmp_path / "t"), partitioned)
    spark.createDataFrame([(10, "n10", 0)], "id long, name string, part int").write.format("delta").mode(
        "append").save(path)                                                   # v1 insert
    t = DeltaTable.forPath(spark, path)
    t.update("id = 1", {"name": "'one'"})                                      # v2 update
    t.delete("id = 2")                                                         # v3 delete
    source = spark.createDataFrame([(3, "three", 1), (20, "n20", 0)], "id long, name string, part int")
    (t.alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())              # v4 merge
    df = changes(spark, path, startingVersion=0)
    columns = ["id", "name", "part", "_change_type", "_commit_version"]
    ours = rows_of(df, columns)
    assert ours == witness(path, columns)
    assert (1, "n1", 1, "update_preimage", 2) in ours and (1, "one", 1, "update_postimage", 2) in ours
    assert (2, "n2", 0, "delete", 3) in ours
    assert (20, "n20", 0, "insert", 4) in ours and (3, "three", 1, "update_postimage", 4) in ours
    # a version range, and the same answer through a catalog name
    assert rows_of(changes(spark, path, startingVersion=2, endingVersion=3), columns) == witness(
        path, columns, 2, 3)


def test_tables_written_by_deltalake(spark, tmp_path):
    import pyarrow as pa

    path = str(tmp_path / "rs")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array(["a", "b", "c"])})
    deltalake.write_deltalake(path, data, configuration=CDF)
    rs = deltalake.DeltaTable(path)
    rs.update(predicate="id = 2", updates={"v": "'B'"})
    deltalake.DeltaTable(path).delete("id = 3")
    deltalake.write_deltalake(path, pa.table({"id": pa.array([4], pa.int64()), "v": pa.array(["d"])}), mode="append")
    columns = ["id", "v", "_change_type", "_commit_version"]
    ours = rows_of(changes(spark, path, startingVersion=0), columns)
    assert ours == witness(path, columns)
    assert (2, "B", "update_postimage", 1) in ours and (3, "c", "delete", 2) in ours and (4, "d", "insert", 3) in ours


def test_commit_timestamps_and_timestamp_options(spark, tmp_path):
    path = cdf_table(spark, str(tmp_path / "t"))
    time.sleep(0.05)
    spark.range(100, 102).selectExpr("id", "'x' as name", "0 as part").write.format("delta").mode("append").save(path)
    snap = load_snapshot(path)
    mtimes = [os.path.getmtime(os.path.join(path, "_delta_log", f"{v:020d}.json")) for v in (0, 1)]
    df = changes(spark, path, startingVersion=0)
    got = {r._commit_version: r._commit_timestamp.timestamp() for r in df.collect()}
    assert got[0] == pytest.approx(mtimes[0], abs=0.002) and got[1] == pytest.approx(mtimes[1], abs=0.002)
    # startingTimestamp: the first version at or after it; endingTimestamp: the last at or before it
    v1_time = datetime.fromtimestamp(got[1], UTC)
    assert {r._commit_version for r in changes(spark, path, startingTimestamp=v1_time.isoformat()).collect()} == {1}
    v0_time = datetime.fromtimestamp(got[0], UTC)
    only_v0 = changes(spark, path, startingVersion=0, endingTimestamp=v0_time.isoformat())
    assert {r._commit_version for r in only_v0.collect()} == {0}
    assert snap.version == 1


def test_range_errors(spark, tmp_path):
    path = cdf_table(spark, str(tmp_path / "t"))
    spark.range(1).selectExpr("id", "'x' as name", "0 as part").write.format("delta").mode("append").save(path)
    with pytest.raises(errors.DeltaIllegalArgumentError, match="DELTA_CDC_START_VERSION_AFTER_LATEST") as e:
        changes(spark, path, startingVersion=5)
    assert e.value.getCondition() == "DELTA_CDC_START_VERSION_AFTER_LATEST"
    with pytest.raises(errors.DeltaIllegalArgumentError, match="DELTA_INVALID_CDC_RANGE"):
        changes(spark, path, startingVersion=1, endingVersion=0)
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_NO_START_FOR_CDC_READ"):
        changes(spark, path)
    with pytest.raises(errors.DeltaIllegalArgumentError, match="DELTA_INVALID_SOURCE_VERSION"):
        changes(spark, path, startingVersion="abc")
    # an ending version past the latest means the latest
    assert {r._commit_version for r in changes(spark, path, startingVersion=1, endingVersion=9).collect()} == {1}
    spark.conf.set("spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled", "true")
    try:
        assert changes(spark, path, startingVersion=5).count() == 0
    finally:
        spark.conf.unset("spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled")


def test_change_data_not_recorded(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)                                      # v0: no CDF
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")  # v1
    spark.range(3, 5).write.format("delta").mode("append").save(path)                    # v2
    with pytest.raises(errors.DeltaAnalysisError, match=r"DELTA_MISSING_CHANGE_DATA.*\[0 , 2\].*\[0\]"):
        changes(spark, path, startingVersion=0)
    assert rows_of(changes(spark, path, startingVersion=1), ["id", "_change_type", "_commit_version"]) == [
        (3, "insert", 2), (4, "insert", 2)]
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES (delta.enableChangeDataFeed = false)")  # v3
    with pytest.raises(errors.DeltaAnalysisError, match=r"DELTA_MISSING_CHANGE_DATA.*\[3\]"):
        changes(spark, path, startingVersion=1)


def test_versions_removed_by_log_cleanup_or_vacuum(spark, tmp_path):
    path = cdf_table(spark, str(tmp_path / "t"))
    spark.range(1).selectExpr("id", "'x' as name", "0 as part").write.format("delta").mode("append").save(path)
    DeltaTable.forPath(spark, path).delete("id = 0")                         # v2 (a rewrite: remove + add)
    # vacuum of the removed file: the v0 insert can no longer be read
    removed = [f for f in os.listdir(path) if f.endswith(".parquet")]
    live = {os.path.basename(p) for p in load_snapshot(path).files().column("path").to_pylist()}
    for f in removed:
        if f not in live:
            os.remove(os.path.join(path, f))
    with pytest.raises(errors.MissingDataFileError):
        changes(spark, path, startingVersion=0).collect()
    # log cleanup: commit 0 gone behind a checkpoint
    load_snapshot(path)
    from pydelta.log.checkpoint_writer import write_checkpoint

    write_checkpoint(load_snapshot(path))
    os.remove(os.path.join(path, "_delta_log", f"{0:020d}.json"))
    with pytest.raises(errors.VersionNotFoundError):
        changes(spark, path, startingVersion=0)
    assert {r._commit_version for r in changes(spark, path, startingVersion=2).collect()} == {2}


def test_by_name_and_time_travel(spark, tmp_path):
    path = cdf_table(spark, str(tmp_path / "t"))
    spark.sql(f"CREATE TABLE cdf_by_name USING delta LOCATION '{path}'")
    try:
        df = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).table(
            "cdf_by_name")
        assert df.count() == 6
    finally:
        spark.sql("DROP TABLE cdf_by_name")
    shutil.rmtree(path)


def test_table_changes_in_sql(spark, tmp_path):
    spark.sql("CREATE TABLE cdf_sql (id INT, v STRING) USING delta TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    try:
        spark.sql("INSERT INTO cdf_sql VALUES (1, 'a'), (2, 'b')")               # v1
        spark.sql("UPDATE cdf_sql SET v = 'B' WHERE id = 2")                     # v2
        spark.sql("DELETE FROM cdf_sql WHERE id = 1")                            # v3
        got = spark.sql("SELECT id, v, _change_type, _commit_version FROM table_changes('cdf_sql', 2) "
                        "ORDER BY _commit_version, _change_type").collect()
        assert [tuple(r) for r in got] == [(2, "B", "update_postimage", 2), (2, "b", "update_preimage", 2),
                                           (1, "a", "delete", 3)]
        window = spark.sql("SELECT count(*) FROM table_changes('default.cdf_sql', 1, 1) c WHERE c.id > 0")
        assert window.first()[0] == 2
        location = DeltaTable.forName(spark, "cdf_sql").detail().first().location
        by_path = spark.sql(f"SELECT _change_type FROM table_changes_by_path('{location}', 3)").collect()
        assert [r[0] for r in by_path] == ["delete"]
        # a zone-less string is read in the session time zone (as delta-spark does): let Spark format it there
        ts = spark.sql("SELECT CAST(max(_commit_timestamp) AS STRING) FROM table_changes('cdf_sql', 3)").first()[0]
        since = spark.sql(f"SELECT DISTINCT _commit_version FROM table_changes('cdf_sql', '{ts}')").collect()
        assert [r[0] for r in since] == [3]
        with pytest.raises(errors.DeltaIllegalArgumentError, match="DELTA_INVALID_CDC_RANGE"):
            spark.sql("SELECT * FROM table_changes('cdf_sql', 3, 2)")
        with pytest.raises(errors.DeltaTableNotFoundError):
            spark.sql("SELECT * FROM table_changes('no_such_cdf_table', 0)")
    finally:
        spark.sql("DROP TABLE IF EXISTS cdf_sql")


def test_change_feed_across_drop_and_rename_on_column_mapped_tables(spark, tmp_path):
    """delta-spark's rules: the end version's schema; a rename or drop inside the range is refused."""
    path = str(tmp_path / "cm")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, a STRING, b INT) USING delta TBLPROPERTIES "
              "('delta.columnMapping.mode' = 'name', 'delta.enableChangeDataFeed' = 'true')")  # v0
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x', 10)")  # v1
    spark.sql(f"ALTER TABLE {t} DROP COLUMN a")  # v2
    spark.sql(f"INSERT INTO {t} VALUES (2, 20)")  # v3
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN b TO c")  # v4
    spark.sql(f"UPDATE {t} SET c = 11 WHERE id = 1")  # v5

    def changes(start, end=None):
        reader = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", start)
        if end is not None:
            reader = reader.option("endingVersion", end)
        df = reader.load(path)
        return df.columns, sorted(tuple(r)[:-1] for r in df.collect())

    # Before the drop: the schema of version 1 (with `a`).
    assert changes(0, 1) == (["id", "a", "b", "_change_type", "_commit_version", "_commit_timestamp"],
                             [(1, "x", 10, "insert", 1)])
    assert changes(2, 3) == (["id", "b", "_change_type", "_commit_version", "_commit_timestamp"],
                             [(2, 20, "insert", 3)])
    assert changes(4) == (["id", "c", "_change_type", "_commit_version", "_commit_timestamp"],
                          [(1, 10, "update_preimage", 5), (1, 11, "update_postimage", 5)])
    with pytest.raises(errors.DeltaAnalysisError, match=r"INCOMPATIBLE_SCHEMA_CHANGE.*change at version 2\b"):
        changes(0)
    with pytest.raises(errors.DeltaAnalysisError, match=r"INCOMPATIBLE_SCHEMA_CHANGE.*change at version 4\b"):
        changes(3)
    with pytest.raises(errors.DeltaAnalysisError, match="INCOMPATIBLE_SCHEMA_CHANGE"):
        spark.sql(f"SELECT * FROM table_changes('{t}', 1, 3)").collect()
    key = "spark.databricks.delta.changeDataFeed.unsafeBatchReadOnIncompatibleSchemaChanges.enabled"
    spark.conf.set(key, "true")
    try:
        columns, rows = changes(0)  # delta-spark's escape hatch: everything under the end schema
    finally:
        spark.conf.unset(key)
    assert columns[:2] == ["id", "c"] and (2, 20, "insert", 3) in rows and len(rows) == 4
