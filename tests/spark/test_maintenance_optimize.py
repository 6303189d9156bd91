"""DeltaTable.optimize(): compaction, Z-order, deletion vectors, conflicts with concurrent deletes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pydelta.errors import (
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    DeltaAnalysisError,
)
from pydelta.log.snapshot import load_snapshot
from pydelta.spark.maintenance.optimize import optimize, plan_bins
from pydelta.spark.write.data_files import remove_action
from pydelta.tables import DeltaTable
from pydelta.txn.commit_info import Operation
from pydelta.txn.transaction import OptimisticTransaction
from tests.spark.test_maintenance_support import (
    commit_actions,
    commit_infos,
    delete_rows_with_dv,
    deltalake_rows,
    latest_version,
    spark_rows,
)

pytestmark = pytest.mark.spark

COLS = ["id", "part", "s"]


def _expected(ids) -> list[tuple]:
    return sorted((i, i % 3, f"s{i}") for i in ids)


@pytest.fixture
def many_files(spark, tmp_path: Path):
    """Partitioned by `part` (0, 1, 2); two writes of several small files each."""
    path = str(tmp_path / "t")
    df = spark.range(0, 60).selectExpr("id", "cast(id % 3 as int) as part", "concat('s', id) as s")
    df.repartition(3).write.format("delta").partitionBy("part").save(path)
    spark.range(60, 90).selectExpr("id", "cast(id % 3 as int) as part", "concat('s', id) as s") \
        .repartition(2).write.format("delta").mode("append").partitionBy("part").save(path)
    return path


def _files_per_partition(path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for pv in load_snapshot(path).files().column("partition_values").to_pylist():
        key = dict(pv)["part"]
        out[key] = out.get(key, 0) + 1
    return out


def test_compaction_of_one_partition(spark, many_files):
    table = DeltaTable.forPath(spark, many_files)
    before = _files_per_partition(many_files)
    assert before == {"0": 5, "1": 5, "2": 5}
    version = latest_version(many_files)
    result = table.optimize().where("part = 1").executeCompaction()
    assert result.columns == ["path", "metrics"]
    row = result.collect()[0]
    assert row.path == f"file:{load_snapshot(many_files).table_root}"
    assert row.metrics.numFilesAdded == 1 and row.metrics.numFilesRemoved == 5
    assert row.metrics.filesRemoved.totalFiles == 5 and row.metrics.filesAdded.totalFiles == 1
    assert row.metrics.partitionsOptimized == 1 and row.metrics.totalConsideredFiles == 5
    assert _files_per_partition(many_files) == {"0": 5, "1": 1, "2": 5}

    # the commit: OPTIMIZE with delta-spark's parameters and metrics; dataChange=false everywhere
    assert latest_version(many_files) == version + 1
    info = commit_infos(many_files)[version + 1]
    assert info["operation"] == "OPTIMIZE"
    params = info["operationParameters"]
    assert json.loads(params["zOrderBy"]) == [] and json.loads(params["clusterBy"]) == [] and params["auto"] is False
    assert len(json.loads(params["predicate"])) == 1 and "part" in json.loads(params["predicate"])[0]
    metrics = info["operationMetrics"]
    assert metrics["numAddedFiles"] == "1" and metrics["numRemovedFiles"] == "5"
    assert set(metrics) == {"numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes", "minFileSize",
                            "p25FileSize", "p50FileSize", "p75FileSize", "maxFileSize", "numDeletionVectorsRemoved"}
    assert info["isolationLevel"] == "SnapshotIsolation" and info["isBlindAppend"] is False
    actions = commit_actions(many_files, version + 1)
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    assert len(adds) == 1 and len(removes) == 5
    assert all(a["dataChange"] is False for a in adds + removes)
    assert adds[0]["partitionValues"] == {"part": "1"} and json.loads(adds[0]["stats"])["numRecords"] == 30
    assert metrics["numAddedBytes"] == str(adds[0]["size"])

    expected = _expected(range(90))
    assert spark_rows(spark.read.format("delta").load(many_files), COLS) == expected
    assert deltalake_rows(many_files, COLS) == expected
    # the old version is still readable (files were only tombstoned)
    assert spark.read.format("delta").option("versionAsOf", version).load(many_files).count() == 90


def test_compaction_of_whole_table_then_nothing_left_to_do(spark, many_files):
    table = DeltaTable.forPath(spark, many_files)
    m = table.optimize().executeCompaction().collect()[0].metrics
    assert (m.numFilesAdded, m.numFilesRemoved, m.partitionsOptimized, m.numBatches) == (3, 15, 3, 3)
    assert _files_per_partition(many_files) == {"0": 1, "1": 1, "2": 1}
    version = latest_version(many_files)
    # a partition with a single file is never rewritten: nothing to commit
    m = table.optimize().executeCompaction().collect()[0].metrics
    assert (m.numFilesAdded, m.numFilesRemoved, m.totalConsideredFiles, m.totalFilesSkipped) == (0, 0, 3, 3)
    assert latest_version(many_files) == version
    expected = _expected(range(90))
    assert spark_rows(table.toDF(), COLS) == expected
    assert deltalake_rows(many_files, COLS) == expected


def test_max_file_size_splits_bins(spark, tmp_path: Path):
    path = str(tmp_path / "t")
    spark.range(0, 200).selectExpr("id", "concat('s', id) as s").repartition(8) \
        .write.format("delta").save(path)
    snap = load_snapshot(path)
    sizes = sorted(snap.files().column("size").to_pylist())
    limit = sizes[0] + sizes[1] + sizes[2]  # at most three files per bin
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(limit))
    try:
        bins = plan_bins(snap.files(), zorder=False, min_file_size=1 << 30, max_file_size=limit,
                         max_deleted_rows_ratio=0.05)
        assert all(b.size <= limit for b in bins) and len(bins) >= 2
        m = DeltaTable.forPath(spark, path).optimize().executeCompaction().collect()[0].metrics
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
    assert m.numFilesAdded == len(bins) and m.numFilesRemoved == sum(b.files.num_rows for b in bins)
    assert spark_rows(spark.read.format("delta").load(path), ["id", "s"]) == sorted((i, f"s{i}") for i in range(200))


def test_min_file_size_leaves_big_files_alone(spark, many_files):
    spark.conf.set("spark.databricks.delta.optimize.minFileSize", "1")
    try:
        m = DeltaTable.forPath(spark, many_files).optimize().executeCompaction().collect()[0].metrics
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.minFileSize")
    assert (m.numFilesAdded, m.numFilesRemoved) == (0, 0)


def test_where_must_use_partition_columns(spark, many_files):
    table = DeltaTable.forPath(spark, many_files)
    with pytest.raises(DeltaAnalysisError, match="non-partition column 'id'"):
        table.optimize().where("id > 3").executeCompaction()
    with pytest.raises(DeltaAnalysisError, match="non-partition column"):
        table.optimize().where("part = 1").where("s = 'x'").executeZOrderBy("id")
    # several where() calls are ANDed
    m = table.optimize().where("part >= 1").where("part < 2").executeCompaction().collect()[0].metrics
    assert (m.numFilesRemoved, m.partitionsOptimized) == (5, 1)


def test_zorder(spark, tmp_path: Path):
    path = str(tmp_path / "t")
    n = 32
    # a shuffled n x n grid of points, in 8 files
    spark.range(0, n * n).selectExpr("id", "cast(id % 32 as int) as x", "cast(id div 32 as int) as y") \
        .orderBy("id").repartition(8).write.format("delta").save(path)
    snap = load_snapshot(path)
    total = sum(snap.files().column("size").to_pylist())
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(total // 4))
    try:
        result = DeltaTable.forPath(spark, path).optimize().executeZOrderBy("x", "y")
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
    m = result.collect()[0].metrics
    assert m.numFilesRemoved == 8 and m.numFilesAdded >= 2
    assert m.zOrderStats.strategyName == "all" and m.zOrderStats.numOutputCubes == 1
    info = commit_infos(path)[latest_version(path)]
    assert info["operation"] == "OPTIMIZE" and json.loads(info["operationParameters"]["zOrderBy"]) == ["x", "y"]
    assert json.loads(info["operationParameters"]["predicate"]) == []
    expected = sorted((i, i % 32, i // 32) for i in range(n * n))
    assert spark_rows(spark.read.format("delta").load(path), ["id", "x", "y"]) == expected
    assert deltalake_rows(path, ["id", "x", "y"]) == expected
    # clustered: every output file covers a small box of the grid, not the whole x or y range
    stats = [json.loads(s) for s in load_snapshot(path).files().column("stats").to_pylist()]
    areas = [(s["maxValues"]["x"] - s["minValues"]["x"] + 1) * (s["maxValues"]["y"] - s["minValues"]["y"] + 1)
             for s in stats]
    assert len(stats) == m.numFilesAdded
    # unclustered files would each cover ~ the whole n*n grid; 4 z-order files are its quadrants
    assert sum(areas) < 1.5 * n * n


def test_zorder_on_strings_dates_timestamps_and_nulls(spark, tmp_path: Path):
    path = str(tmp_path / "t")
    spark.range(0, 200).selectExpr(
        "id",
        "if(id % 7 = 0, null, concat('key-', lpad(cast(id * 37 % 200 as string), 3, '0'))) as s",
        "date_add(date'2020-01-01', cast(id * 13 % 200 as int)) as d",
        "timestamp_micros(1600000000000000 + id * 999) as ts",
        "if(id % 5 = 0, double('NaN'), cast(id as double) / 3) as x",
        "named_struct('inner', cast(id % 11 as int)) as st",
    ).repartition(4).write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)
    before = sorted(map(repr, table.toDF().collect()))
    m = table.optimize().executeZOrderBy("s", "d", "ts", "x", "st.inner").collect()[0].metrics
    assert (m.numFilesAdded, m.numFilesRemoved) == (1, 4)
    assert sorted(map(repr, table.toDF().collect())) == before
    assert deltalake_rows(path, ["id"]) == [(i,) for i in range(200)]
    info = commit_infos(path)[latest_version(path)]
    assert json.loads(info["operationParameters"]["zOrderBy"]) == ["s", "d", "ts", "x", "st.inner"]


def test_zorder_refuses_bad_columns(spark, many_files):
    table = DeltaTable.forPath(spark, many_files)
    with pytest.raises(DeltaAnalysisError, match="part is a partition column"):
        table.optimize().executeZOrderBy("part")
    with pytest.raises(DeltaAnalysisError, match="Z-Ordering column nope does not exist"):
        table.optimize().executeZOrderBy("nope")


def test_zorder_needs_stats(spark, tmp_path: Path):
    path = str(tmp_path / "t")
    spark.range(0, 10).selectExpr("id", "id * 2 as b").write.format("delta") \
        .option("delta.dataSkippingNumIndexedCols", "1").save(path)
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(DeltaAnalysisError, match=r"Z-Ordering on \[b\] will be ineffective"):
        table.optimize().executeZOrderBy("b")
    spark.conf.set("spark.databricks.delta.optimize.zorder.checkStatsCollection.enabled", "false")
    try:
        m = table.optimize().executeZOrderBy("b").collect()[0].metrics
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.zorder.checkStatsCollection.enabled")
    assert m.numFilesAdded == 1
    assert spark_rows(table.toDF(), ["id", "b"]) == [(i, 2 * i) for i in range(10)]


def test_single_file_with_deletion_vector_is_rewritten(spark, tmp_path: Path):
    path = str(tmp_path / "t")
    spark.range(0, 40).repartition(1).write.format("delta") \
        .option("delta.enableDeletionVectors", "true").save(path)
    rel = load_snapshot(path).files().column("path").to_pylist()[0]
    delete_rows_with_dv(path, rel, list(range(0, 40, 4)))  # 25% deleted
    table = DeltaTable.forPath(spark, path)
    m = table.optimize().executeCompaction().collect()[0].metrics
    assert (m.numFilesAdded, m.numFilesRemoved) == (1, 1)
    assert m.deletionVectorStats.numDeletionVectorsRemoved == 1
    assert m.deletionVectorStats.numDeletionVectorRowsRemoved == 10
    info = commit_infos(path)[latest_version(path)]
    assert info["operationMetrics"]["numDeletionVectorsRemoved"] == "1"
    files = load_snapshot(path).files()
    assert files.column("deletion_vector").null_count == 1 and files.column("num_records").to_pylist() == [30]
    expected = [(i,) for i in range(40) if i % 4]
    assert spark_rows(table.toDF(), ["id"]) == expected
    assert deltalake_rows(path, ["id"]) == expected


# ---- concurrency -------------------------------------------------------------------------------------


def _delete_file_txn(path: str, rel: str) -> OptimisticTransaction:
    """A DELETE of one whole file, prepared against the current version (not committed)."""
    snap = load_snapshot(path)
    row = next(r for r in snap.files().to_pylist() if r["path"] == rel)
    txn = OptimisticTransaction(snap.table_root, snap)
    txn.read_files([rel])
    txn._pending = [{"remove": remove_action(  # type: ignore[attr-defined]
        {"path": rel, "partitionValues": dict(row["partition_values"]), "size": row["size"]}, data_change=True)}]
    return txn


def _commit_delete(txn: OptimisticTransaction) -> int:
    return txn.commit(txn._pending, Operation.delete(["part = 1"]))  # type: ignore[attr-defined]


def _a_file_of_partition(path: str, part: str) -> str:
    snap = load_snapshot(path)
    return next(r["path"] for r in snap.files().to_pylist() if dict(r["partition_values"])["part"] == part)


def test_optimize_loses_to_a_concurrent_delete_of_a_compacted_file(spark, many_files):
    table = DeltaTable.forPath(spark, many_files)
    victim = _a_file_of_partition(many_files, "1")
    version = latest_version(many_files)

    def delete_first() -> None:  # runs after OPTIMIZE read the table and wrote its files
        _commit_delete(_delete_file_txn(many_files, victim))

    with pytest.raises(ConcurrentDeleteReadException, match="deleted data"):
        optimize(table, ["part = 1"], (), before_commit=delete_first)
    assert latest_version(many_files) == version + 1
    assert commit_infos(many_files)[version + 1]["operation"] == "DELETE"
    expected = [r for r in _expected(range(90))]
    assert len(spark_rows(spark.read.format("delta").load(many_files), COLS)) < len(expected)


def test_delete_loses_to_a_committed_optimize(spark, many_files):
    table = DeltaTable.forPath(spark, many_files)
    victim = _a_file_of_partition(many_files, "1")
    pending: list[OptimisticTransaction] = []
    optimize(table, ["part = 1"], (), before_commit=lambda: pending.append(_delete_file_txn(many_files, victim)))
    # the delete read the same version as OPTIMIZE; OPTIMIZE removed the file first
    with pytest.raises((ConcurrentDeleteReadException, ConcurrentDeleteDeleteException)):
        _commit_delete(pending[0])
    assert spark_rows(table.toDF(), COLS) == _expected(range(90))


def test_concurrent_append_does_not_conflict_with_optimize(spark, many_files):
    table = DeltaTable.forPath(spark, many_files)

    def append() -> None:
        spark.range(1000, 1003).selectExpr("id", "cast(id % 3 as int) as part", "concat('s', id) as s") \
            .write.format("delta").mode("append").save(many_files)

    version = latest_version(many_files)
    optimize(table, ["part = 1"], (), before_commit=append)
    infos = commit_infos(many_files)
    assert infos[version + 1]["operation"] == "WRITE" and infos[version + 2]["operation"] == "OPTIMIZE"
    assert spark_rows(table.toDF(), COLS) == _expected([*range(90), 1000, 1001, 1002])


def test_optimize_retries_after_a_concurrent_metadata_change(spark, many_files):
    from dataclasses import replace

    table = DeltaTable.forPath(spark, many_files)

    def set_property() -> None:
        snap = load_snapshot(many_files)
        txn = OptimisticTransaction(snap.table_root, snap)
        md = snap.metadata
        txn.update_metadata(replace(md, configuration={**md.configuration, "custom.key": "v"}))
        txn.commit([], Operation.set_table_properties({"custom.key": "v"}))

    version = latest_version(many_files)
    m = optimize(table, ["part = 2"], (), before_commit=set_property).collect()[0].metrics
    assert m.numFilesRemoved == 5
    infos = commit_infos(many_files)
    assert infos[version + 1]["operation"] == "SET TBLPROPERTIES" and infos[version + 2]["operation"] == "OPTIMIZE"
    assert _files_per_partition(many_files) == {"0": 5, "1": 5, "2": 1}
    assert spark_rows(table.toDF(), COLS) == _expected(range(90))
