"""MERGE with deletion vectors: changed target rows marked in DVs, only new rows written (no copies)."""

from __future__ import annotations

import json

import pytest

import pydelta
from pydelta import DeltaTable
from tests.spark.test_dml_delete import assert_rows
from tests.spark.test_dml_delete_dv import _dv_files, _dv_table, _last_commit, _parquet_files

pytestmark = pytest.mark.spark


def _source(spark, rows):
    return spark.createDataFrame(rows, "id long, v string, p int")


def test_upsert_marks_matched_rows_and_writes_only_new_ones(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    before = _parquet_files(path)
    source = _source(spark, [(5, "five", 1), (250, "x", 0), (1000, "new", 0)])
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    want = [{"id": i, "v": str(i), "p": i % 2} for i in range(400) if i not in (5, 250)]
    want += [{"id": 5, "v": "five", "p": 1}, {"id": 250, "v": "x", "p": 0}, {"id": 1000, "v": "new", "p": 0}]
    assert_rows(spark, path, want)
    assert before <= _parquet_files(path)  # no file rewritten
    actions = _last_commit(path)
    dv_adds = [a["add"] for a in actions if "add" in a and a["add"].get("deletionVector")]
    new_adds = [a["add"] for a in actions if "add" in a and not a["add"].get("deletionVector")]
    assert len(dv_adds) == 2 and len(_dv_files(path)) == 1
    assert sum(json.loads(a["stats"])["numRecords"] for a in new_adds) == 3  # 2 updated + 1 inserted, no copies
    m = DeltaTable.forPath(spark, path).history(1).collect()[0].operationMetrics
    assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"], m["numTargetRowsCopied"]) == ("2", "1", "0")
    assert m["numTargetDeletionVectorsAdded"] == "2" and m["numTargetFilesRemoved"] == "0"


def test_delete_and_by_source_clauses_with_the_change_feed(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path, cdf=True)
    source = _source(spark, [(i, "s", i % 2) for i in range(0, 100)])
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedDelete("t.id < 10").whenMatchedUpdate(set={"v": "'m'"})
     .whenNotMatchedBySourceUpdate("t.id >= 390", set={"v": "'gone'"}).execute())
    want = ([{"id": i, "v": "m", "p": i % 2} for i in range(10, 100)]
            + [{"id": i, "v": str(i), "p": i % 2} for i in range(100, 390)]
            + [{"id": i, "v": "gone", "p": i % 2} for i in range(390, 400)])
    assert_rows(spark, path, want)
    changes = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2).load(path)
               .groupBy("_change_type").count().collect())
    assert dict((r[0], r[1]) for r in changes) == {"delete": 10, "update_preimage": 100, "update_postimage": 100}
    assert pydelta.load_snapshot(path).num_files >= 4


def test_sql_merge_and_the_copy_on_write_switch(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    _source(spark, [(3, "three", 1)]).createOrReplaceTempView("merge_dv_src")
    try:
        spark.sql(f"MERGE INTO delta.`{path}` t USING merge_dv_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
        assert len(_dv_files(path)) == 1
        spark.conf.set("spark.databricks.delta.merge.deletionVectors.persistent", "false")
        try:
            spark.sql(f"MERGE INTO delta.`{path}` t USING merge_dv_src s ON t.id = s.id WHEN MATCHED THEN DELETE")
        finally:
            spark.conf.unset("spark.databricks.delta.merge.deletionVectors.persistent")
        assert len(_dv_files(path)) == 1
    finally:
        spark.catalog.dropTempView("merge_dv_src")
    assert_rows(spark, path, [{"id": i, "v": str(i), "p": i % 2} for i in range(400) if i != 3])
