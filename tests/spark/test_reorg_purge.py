"""REORG TABLE ... APPLY (PURGE) and DeltaOptimizeBuilder.executePurge(): files with deletion
vectors rewritten without their deleted rows; nothing else touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pydelta
from pydelta import DeltaTable
from tests.spark.test_dml_delete import assert_rows
from tests.spark.test_dml_delete_dv import _dv_table

pytestmark = pytest.mark.spark


def test_reorg_purge_rewrites_only_files_with_deletion_vectors(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path, partitioned=True)
    DeltaTable.forPath(spark, path).delete("id = 3 OR id = 4")  # DVs in a file of each partition
    before = {r["path"]: r for r in pydelta.load_snapshot(path).files().to_pylist()}
    with_dv = {p for p, r in before.items() if r["deletion_vector"]}
    assert with_dv and len(with_dv) < len(before)
    result = spark.sql(f"REORG TABLE delta.`{path}` APPLY (PURGE)").collect()[0]
    assert result.metrics.numFilesRemoved == len(with_dv)
    after = pydelta.load_snapshot(path).files().to_pylist()
    assert not any(r["deletion_vector"] for r in after)
    assert {p for p in before if p not in with_dv} <= {r["path"] for r in after}  # untouched files kept
    info = json.loads(sorted(Path(path, "_delta_log").glob("*.json"))[-1].read_text().splitlines()[0])["commitInfo"]
    assert info["operation"] == "REORG" and info["operationParameters"]["applyPurge"] in (True, "true")
    assert_rows(spark, path, [{"id": i, "v": str(i), "p": i % 2} for i in range(400) if i not in (3, 4)])


def test_execute_purge_with_a_partition_filter(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path, partitioned=True)
    DeltaTable.forPath(spark, path).delete("id = 3 OR id = 4")
    DeltaTable.forPath(spark, path).optimize().where("p = 1").executePurge()
    after = pydelta.load_snapshot(path).files().to_pylist()
    dv_parts = {dict(r["partition_values"])["p"] for r in after if r["deletion_vector"]}
    assert dv_parts == {"0"}  # only the p = 1 partition was purged
    spark.sql(f"REORG TABLE delta.`{path}` WHERE p = 0 APPLY (PURGE)")
    assert not any(r["deletion_vector"] for r in pydelta.load_snapshot(path).files().to_pylist())
    assert_rows(spark, path, [{"id": i, "v": str(i), "p": i % 2} for i in range(400) if i not in (3, 4)])
