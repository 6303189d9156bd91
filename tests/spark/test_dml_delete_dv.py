"""DELETE with deletion vectors (delta.enableDeletionVectors): rows are marked, no file is rewritten.

Witnesses: pydelta's reader, `deltalake` (its SQL engine applies DVs), the log on disk
(remove + add of the same path with a DV, one DV file per command) and the change feed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pydelta
from pydelta import DeltaTable
from pydelta.errors import DeltaConcurrentModificationException
from tests.spark.test_dml_delete import assert_rows

pytestmark = pytest.mark.spark


def _dv_table(spark, path: str, *, partitioned: bool = False, cdf: bool = False) -> None:
    part = "PARTITIONED BY (p)" if partitioned else ""
    props = "'delta.enableDeletionVectors' = 'true'" + (", 'delta.enableChangeDataFeed' = 'true'" if cdf else "")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING, p INT) USING delta {part} TBLPROPERTIES ({props})")
    (spark.range(0, 400, numPartitions=4).selectExpr("id", "CAST(id AS STRING) AS v", "CAST(id % 2 AS INT) AS p")
     .write.format("delta").mode("append").save(path))


def _expected(ids) -> list[dict]:
    return [{"id": i, "v": str(i), "p": i % 2} for i in ids]


def _last_commit(path: str) -> list[dict]:
    log = sorted(Path(path, "_delta_log").glob("*.json"))[-1]
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _parquet_files(path: str) -> set[str]:
    return {str(p.relative_to(path)) for p in Path(path).rglob("*.parquet") if "_delta_log" not in p.parts}


def _dv_files(path: str) -> list[Path]:
    return sorted(Path(path).glob("deletion_vector_*.bin"))


def test_delete_marks_rows_in_deletion_vectors(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    before = _parquet_files(path)
    files_before = pydelta.load_snapshot(path).num_files
    DeltaTable.forPath(spark, path).delete("id % 10 = 3")
    assert _parquet_files(path) == before  # nothing rewritten
    assert len(_dv_files(path)) == 1  # every file's DV in one DV file
    actions = _last_commit(path)
    removes = {a["remove"]["path"] for a in actions if "remove" in a}
    adds = [a["add"] for a in actions if "add" in a]
    assert removes == {a["path"] for a in adds} and len(adds) == files_before
    offsets = sorted(a["deletionVector"]["offset"] for a in adds)
    assert len(set(offsets)) == len(offsets) and offsets[0] == 1
    assert all(a["deletionVector"]["storageType"] == "u" and a["deletionVector"]["cardinality"] == 10 for a in adds)
    assert all(json.loads(a["stats"])["tightBounds"] is False for a in adds)
    assert_rows(spark, path, _expected(i for i in range(400) if i % 10 != 3))
    metrics = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert metrics["numDeletionVectorsAdded"] == str(files_before) and metrics["numDeletedRows"] == "40"
    assert metrics["numAddedFiles"] == "0" and metrics["numRemovedFiles"] == "0"
    # time travel still sees the rows
    assert spark.read.format("delta").option("versionAsOf", 1).load(path).count() == 400


def test_a_second_delete_grows_the_vectors_and_empty_files_go(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    table = DeltaTable.forPath(spark, path)
    table.delete("id % 10 = 3")
    table.delete("id < 100 OR id = 205")  # first file (0-99) fully deleted; 205 lands in an existing DV
    metrics = table.history(1).collect()[0].operationMetrics
    assert metrics["numRemovedFiles"] == "1" and metrics["numDeletionVectorsRemoved"] == "1"
    assert metrics["numDeletionVectorsUpdated"] == "1" and metrics["numDeletedRows"] == str(90 + 1)
    assert pydelta.load_snapshot(path).num_files == 3
    assert_rows(spark, path, _expected(i for i in range(100, 400) if i % 10 != 3 and i != 205))


def test_partitioned_tables_and_the_change_feed(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path, partitioned=True, cdf=True)
    DeltaTable.forPath(spark, path).delete("p = 1 AND id > 300")
    assert not any(a.get("cdc") for a in _last_commit(path))  # change rows come from the DV diff
    assert_rows(spark, path, _expected(i for i in range(400) if not (i % 2 == 1 and i > 300)))
    changes = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2).load(path)
               .select("id", "_change_type").collect())
    assert sorted((r.id, r._change_type) for r in changes) == [(i, "delete") for i in range(301, 400, 2)]


def test_sql_delete_and_the_copy_on_write_switch(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    assert spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 7").collect()[0][0] == 1
    assert len(_dv_files(path)) == 1
    spark.conf.set("spark.databricks.delta.delete.deletionVectors.persistent", "false")
    try:
        before = _parquet_files(path)
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 8")
        assert _parquet_files(path) != before  # rewritten: copy-on-write
        assert len(_dv_files(path)) == 1
    finally:
        spark.conf.unset("spark.databricks.delta.delete.deletionVectors.persistent")
    assert_rows(spark, path, _expected(i for i in range(400) if i not in (7, 8)))


def test_concurrent_deletes_of_the_same_file_conflict(spark, tmp_path):
    from pydelta.spark.dml.delete import prepare_delete

    path = str(tmp_path / "t")
    _dv_table(spark, path)
    snapshot = pydelta.load_snapshot(path)
    first = prepare_delete(spark, snapshot, "id = 1")
    second = prepare_delete(spark, snapshot, "id = 2")
    first.commit()
    with pytest.raises(DeltaConcurrentModificationException):
        second.commit()
    assert_rows(spark, path, _expected(i for i in range(400) if i != 1))


def test_copy_on_write_is_kept_without_the_property(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(0, 100, numPartitions=2).selectExpr("id").write.format("delta").save(path)
    DeltaTable.forPath(spark, path).delete("id = 3")
    assert _dv_files(path) == []
    assert not any(a.get("add", {}).get("deletionVector") for a in _last_commit(path))


def test_the_loser_of_a_conflict_keeps_the_data_files_and_drops_only_its_dv_file(spark, tmp_path):
    from pydelta.spark.dml.delete import prepare_delete

    path = str(tmp_path / "t")
    _dv_table(spark, path)
    data_files = _parquet_files(path)
    snapshot = pydelta.load_snapshot(path)
    first = prepare_delete(spark, snapshot, "id = 1")
    second = prepare_delete(spark, snapshot, "id = 2")
    assert len(_dv_files(path)) == 2
    first.commit()
    with pytest.raises(DeltaConcurrentModificationException):
        second.commit()
    assert _parquet_files(path) == data_files
    live = {a["add"]["deletionVector"]["pathOrInlineDv"] for a in _last_commit(path) if "add" in a}
    assert len(_dv_files(path)) == 1 and len(live) == 1


def test_reads_apply_dvs_when_files_share_a_size(spark, tmp_path):
    """Deleted rows are keyed by file size + row index; files of equal size are told apart by
    modification time, and when those are equal too, by file path. Byte-identical twins force it."""
    import os
    import shutil

    from pydelta.log.file_actions import add_action_from_file_row
    from pydelta.spark.read.scan import row_key_shift
    from pydelta.txn.transaction import Operation, OptimisticTransaction

    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.range(0, 50, numPartitions=1).selectExpr("id", "CAST(id AS STRING) AS v").write.format("delta") \
        .mode("append").save(path)
    snap = pydelta.load_snapshot(path)
    (row,) = snap.files().to_pylist()
    original, twin = Path(path, row["path"]), Path(path, "twin-" + row["path"])
    shutil.copy(original, twin)
    os.utime(twin, ns=(original.stat().st_mtime_ns + 5 * 10**9,) * 2)
    txn = OptimisticTransaction(path, snap)
    txn.commit([{"add": {**add_action_from_file_row(row), "path": twin.name}}], Operation("WRITE", {"mode": "Append"}))
    spark.range(100, 130, numPartitions=1).selectExpr("id", "CAST(id AS STRING) AS v").write.format("delta") \
        .mode("append").save(path)
    DeltaTable.forPath(spark, path).delete("id % 10 = 3")  # DVs on all three files
    files = pydelta.load_snapshot(path).files()
    assert files.column("deletion_vector").null_count == 0 and len(set(files.column("size").to_pylist())) == 2
    shift = row_key_shift(files)
    assert shift is not None and (1 << shift) > max(files.column("size").to_pylist())
    expected = sorted([i for i in range(50) if i % 10 != 3] * 2 + [i for i in range(100, 130) if i % 10 != 3])

    def read_ids(plan_mark: str) -> list[int]:
        df = spark.read.format("delta").load(path)
        assert plan_mark in df._jdf.queryExecution().optimizedPlan().toString()
        return sorted(r.id for r in df.collect())

    assert read_ids("__pydelta_deleted_row_mtime") == expected  # size + row index, mtime for the twins
    DeltaTable.forPath(spark, path).delete("id = 0")
    DeltaTable.forPath(spark, path).delete("id >= 100 AND id < 110")
    expected = [i for i in expected if i != 0 and not 100 <= i < 110]
    assert read_ids("__pydelta_deleted_row_mtime") == expected
    os.utime(twin, ns=(original.stat().st_mtime_ns,) * 2)  # indistinguishable but by path
    assert read_ids("__r__pydelta_file_path") == expected
