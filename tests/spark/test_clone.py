"""DeltaTable.clone / cloneAtVersion / cloneAtTimestamp: shallow and deep clones.

deltalake (delta-rs) reads every clone as the independent witness: a shallow clone's log
points at the source's files by absolute URI, a deep clone holds copies.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import deltalake
import pyarrow as pa
import pytest

from pydelta import DeltaTable, errors, load_snapshot

pytestmark = pytest.mark.spark


def ids_of(spark, path) -> list[int]:
    return sorted(r.id for r in spark.read.format("delta").load(path).select("id").collect())


def witness_ids(path) -> list[int]:
    # delta-rs's DataFusion scan (its pyarrow dataset path mishandles absolute file URIs in `add`)
    result = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path)).execute("SELECT id FROM t").read_all()
    return sorted(pa.table(result).column("id").to_pylist())


@pytest.fixture
def source(spark, tmp_path):
    path = str(tmp_path / "src")
    spark.range(5).selectExpr("id", "id % 2 AS p").write.format("delta").partitionBy("p").option(
        "delta.appendOnly", "false").save(path)                                    # v0: 0..4
    spark.range(5, 8).selectExpr("id", "id % 2 AS p").write.format("delta").mode("append").save(path)  # v1
    return path


def test_shallow_clone_references_source_files(spark, source, tmp_path):
    target = str(tmp_path / "shallow")
    clone = DeltaTable.forPath(spark, source).clone(
        target, isShallow=True, properties={"delta.logRetentionDuration": "interval 7 days"})
    assert isinstance(clone, DeltaTable)
    assert ids_of(spark, target) == list(range(8)) == witness_ids(target)
    snap = load_snapshot(target)
    assert all(p.startswith("file:") for p in snap.files().column("path").to_pylist())
    assert not [f for f in os.listdir(target) if f != "_delta_log"]  # no data copied
    assert snap.metadata.id != load_snapshot(source).metadata.id
    assert snap.configuration["delta.logRetentionDuration"] == "interval 7 days"
    assert snap.partition_columns == ["p"]
    info = clone.history(1).first()
    assert info.operation == "CLONE"
    assert info.operationParameters["sourceVersion"] == "1"
    assert info.operationMetrics["sourceNumOfFiles"] == str(load_snapshot(source).num_files)
    assert info.operationMetrics["numCopiedFiles"] == "0"
    # the clone is a table of its own: writes to it leave the source alone
    spark.range(100, 101).selectExpr("id", "0 AS p").write.format("delta").mode("append").save(target)
    assert ids_of(spark, source) == list(range(8))


def test_deep_clone_at_version_copies_data(spark, source, tmp_path):
    target = str(tmp_path / "deep")
    DeltaTable.forPath(spark, source).cloneAtVersion(0, target)
    assert ids_of(spark, target) == list(range(5)) == witness_ids(target)
    snap = load_snapshot(target)
    paths = snap.files().column("path").to_pylist()
    assert all(not p.startswith("file:") and os.path.exists(os.path.join(target, p)) for p in paths)
    info = DeltaTable.forPath(spark, target).history(1).first()
    assert info.operationMetrics["numCopiedFiles"] == str(len(paths))
    # the source can be vacuumed away: the deep clone does not need it
    for root, _, files in os.walk(source):
        for f in files:
            if f.endswith(".parquet"):
                os.remove(os.path.join(root, f))
    assert ids_of(spark, target) == list(range(5))


def test_clone_at_timestamp(spark, source, tmp_path):
    ts = load_snapshot(source, version=0).timestamp
    text = datetime.fromtimestamp(ts / 1000, UTC).isoformat()
    target = str(tmp_path / "ts")
    DeltaTable.forPath(spark, source).cloneAtTimestamp(text, target, True)
    assert ids_of(spark, target) == list(range(5))


def test_replace_and_existing_target(spark, source, tmp_path):
    target = str(tmp_path / "t")
    spark.range(50, 53).selectExpr("id", "0 AS p").write.format("delta").save(target)
    before = load_snapshot(target)
    table = DeltaTable.forPath(spark, source)
    with pytest.raises(errors.TableAlreadyExistsError):
        table.clone(target, True)
    assert load_snapshot(target).version == before.version
    table.clone(target, True, True)
    after = load_snapshot(target)
    assert ids_of(spark, target) == list(range(8)) == witness_ids(target)
    assert after.metadata.id == before.metadata.id and after.version == before.version + 1
    log = os.path.join(target, "_delta_log", f"{after.version:020d}.json")
    with open(log) as f:
        actions = [json.loads(line) for line in f]
    assert sum(1 for a in actions if "remove" in a) == before.num_files


def test_clone_to_a_catalog_name(spark, source):
    try:
        DeltaTable.forPath(spark, source).clone("cloned_by_name", True)
        assert spark.table("cloned_by_name").count() == 8
        assert DeltaTable.forName(spark, "cloned_by_name").history(1).first().operation == "CLONE"
        location = DeltaTable.forName(spark, "cloned_by_name").detail().first().location
        assert spark.catalog.getTable("cloned_by_name").tableType == "MANAGED"  # as delta-spark's clone makes it
    finally:
        spark.sql("DROP TABLE IF EXISTS cloned_by_name")
    assert not os.path.exists(location.removeprefix("file:"))  # a managed table's data goes with it
    DeltaTable.forPath(spark, source).clone("cloned_by_name", True)  # so the name can be cloned to again
    spark.sql("DROP TABLE cloned_by_name")


def test_argument_checks(spark, source, tmp_path):
    table = DeltaTable.forPath(spark, source)
    with pytest.raises(ValueError, match="target needs to be a string"):
        table.clone(5)
    with pytest.raises(ValueError, match="isShallow needs to be a boolean"):
        table.clone(str(tmp_path / "x"), "yes")
    with pytest.raises(ValueError, match="properties needs to be a dict"):
        table.clone(str(tmp_path / "x"), True, False, [1])
    with pytest.raises(ValueError, match="version needs to be an int"):
        table.cloneAtVersion("1", str(tmp_path / "x"))
    with pytest.raises(ValueError, match="timestamp needs to be a string"):
        table.cloneAtTimestamp(5, str(tmp_path / "x"))
    with pytest.raises(errors.DeltaIllegalArgumentError):
        table.clone(source, True, True)
    assert not os.path.exists(tmp_path / "x")


@pytest.mark.parametrize("shallow", [True, False])
def test_clone_keeps_deletion_vectors(spark, tmp_path, shallow):
    from tests.golden_paths import DELTA_SPARK

    src = str(DELTA_SPARK / "dv-partitioned-with-checkpoint" / "delta")
    target = str(tmp_path / "dv")
    DeltaTable.forPath(spark, src).clone(target, shallow)
    expected = sorted(map(tuple, spark.read.format("delta").load(src).collect()))
    assert sorted(map(tuple, spark.read.format("delta").load(target).collect())) == expected
    dvs = [d for d in load_snapshot(target).files().column("deletion_vector").to_pylist() if d]
    assert dvs and all(d["storageType"] == ("p" if shallow else "u") or d["storageType"] == "i" for d in dvs)
