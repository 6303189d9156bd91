"""UPDATE with deletion vectors: old row versions marked in DVs, only updated rows written."""

from __future__ import annotations

import json

import pytest

import pydelta
from pydelta import DeltaTable
from tests.spark.test_dml_delete import assert_rows
from tests.spark.test_dml_delete_dv import _dv_files, _dv_table, _last_commit, _parquet_files

pytestmark = pytest.mark.spark


def _rows(ids_changed: set[int]) -> list[dict]:
    return [{"id": i, "v": "changed" if i in ids_changed else str(i), "p": i % 2} for i in range(400)]


def test_update_writes_only_the_updated_rows(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    before = _parquet_files(path)
    files_before = pydelta.load_snapshot(path).num_files
    DeltaTable.forPath(spark, path).update("id % 50 = 1", {"v": "'changed'"})
    changed = {i for i in range(400) if i % 50 == 1}
    assert_rows(spark, path, _rows(changed))
    new_files = _parquet_files(path) - before
    assert before <= _parquet_files(path) and new_files  # old files kept, updated rows in new files
    actions = _last_commit(path)
    dv_adds = [a["add"] for a in actions if "add" in a and a["add"].get("deletionVector")]
    plain_adds = [a["add"] for a in actions if "add" in a and not a["add"].get("deletionVector")]
    assert len(dv_adds) == files_before and len(_dv_files(path)) == 1
    assert sum(int(json.loads(a["stats"])["numRecords"]) for a in plain_adds) == len(changed)
    metrics = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert metrics["numUpdatedRows"] == str(len(changed)) and metrics["numCopiedRows"] == "0"
    assert metrics["numDeletionVectorsAdded"] == str(files_before) and metrics["numRemovedFiles"] == "0"


def test_update_change_feed_and_a_second_update(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path, cdf=True)
    table = DeltaTable.forPath(spark, path)
    table.update("id < 3", {"v": "'changed'"})
    table.update("id = 1 OR id = 399", {"v": "'changed'"})  # row 1 now lives in a file written by the first update
    assert_rows(spark, path, _rows({0, 1, 2, 399}))
    changes = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2).load(path)
               .select("id", "v", "_change_type", "_commit_version").collect())
    got = sorted((r._commit_version, r.id, r._change_type, r.v) for r in changes)
    assert got == sorted(
        [(2, i, "update_preimage", str(i)) for i in range(3)]
        + [(2, i, "update_postimage", "changed") for i in range(3)]
        + [(3, 1, "update_preimage", "changed"), (3, 1, "update_postimage", "changed"),
           (3, 399, "update_preimage", "399"), (3, 399, "update_postimage", "changed")])


def test_sql_update_and_the_copy_on_write_switch(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    assert spark.sql(f"UPDATE delta.`{path}` SET v = 'changed' WHERE id = 7").collect()[0][0] == 1
    assert len(_dv_files(path)) == 1
    spark.conf.set("spark.databricks.delta.update.deletionVectors.persistent", "false")
    try:
        spark.sql(f"UPDATE delta.`{path}` SET v = 'changed' WHERE id = 8")
        assert len(_dv_files(path)) == 1  # copy-on-write: no new DV file
    finally:
        spark.conf.unset("spark.databricks.delta.update.deletionVectors.persistent")
    assert_rows(spark, path, _rows({7, 8}))
