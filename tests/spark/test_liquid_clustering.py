"""Liquid clustering: CLUSTER BY in DDL and the builder, ALTER TABLE ... CLUSTER BY, OPTIMIZE
(incremental and FULL) clustering files, and the data skipping that buys (files read counted)."""

from __future__ import annotations

import json

import pytest

import pydelta
from pydelta import DeltaTable, errors

pytestmark = pytest.mark.spark

MAX_FILE = "spark.databricks.delta.optimize.maxFileSize"
MIN_CUBE = "spark.databricks.delta.optimize.clustering.mergeStrategy.minCubeSize.threshold"


def _domain(path: str) -> dict:
    return json.loads(pydelta.load_snapshot(path).domain_metadata["delta.clustering"])


def _last(spark, path: str):
    return DeltaTable.forPath(spark, path).history(1).first()


def _append_scattered(spark, path: str, start: int, commits: int = 6) -> None:
    """Each commit one file holding every k: before clustering, any k is in every file."""
    for c in range(commits):
        lo = start + c * 1000
        (spark.range(lo, lo + 1000, numPartitions=1).selectExpr("id", "CAST(id % 100 AS INT) AS k",
                                                                 "CAST(id AS STRING) AS v")
         .write.format("delta").mode("append").save(path))


def _paths(path: str) -> set[str]:
    return set(pydelta.load_snapshot(path).files().column("path").to_pylist())


def _cubes(path: str) -> dict[str, tuple[list[str], int]]:
    """ZCube ID -> (clustering columns, number of files), from the live files' tags."""
    out: dict[str, tuple[list[str], int]] = {}
    for tags in pydelta.load_snapshot(path).files().column("tags").to_pylist():
        tags = dict(tags or [])
        if "ZCUBE_ID" in tags:
            columns, n = out.get(tags["ZCUBE_ID"], (json.loads(tags["ZCUBE_ZORDER_BY"]), 0))
            out[tags["ZCUBE_ID"]] = (columns, n + 1)
    return out


def _files_read(spark, path: str, where: str) -> int:
    return len(spark.read.format("delta").load(path).where(where).inputFiles())


def test_cluster_by_optimize_and_skipping(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, k INT, v STRING) USING delta CLUSTER BY (k)")
    snap = pydelta.load_snapshot(path)
    assert {"clustering", "domainMetadata"} <= set(snap.protocol.writer_features or ())
    assert _domain(path)["clusteringColumns"] == [["k"]]
    assert _last(spark, path).operationParameters["clusterBy"] == '["k"]'
    assert spark.sql(f"DESCRIBE DETAIL {t}").first().clusteringColumns == ["k"]
    _append_scattered(spark, path, 0)
    assert _files_read(spark, path, "k = 7") == 6
    spark.conf.set(MAX_FILE, str(24 * 1024))
    try:
        spark.sql(f"OPTIMIZE {t}")
    finally:
        spark.conf.unset(MAX_FILE)
    last = _last(spark, path)
    assert last.operation == "OPTIMIZE"
    assert last.operationParameters["clusterBy"] == '["k"]' and last.operationParameters["isFull"] == "false"
    files = pydelta.load_snapshot(path).files()
    assert set(files.column("clustering_provider").to_pylist()) == {"liquid"} and files.num_rows > 1
    assert _files_read(spark, path, "k = 7") < files.num_rows  # clustered: k = 7 no longer in every file
    assert spark.read.format("delta").load(path).where("k = 7").count() == 60
    cubes = _cubes(path)
    assert len(cubes) == 1 and next(iter(cubes.values()))[0] == ["k"]  # one job, one ZCube
    version = pydelta.load_snapshot(path).version
    spark.sql(f"OPTIMIZE {t}")  # a lone ZCube with nothing new beside it stays as it is
    assert pydelta.load_snapshot(path).version == version
    # Incremental: new files are clustered together with ZCubes still below the minimum cube size ...
    clustered = set(files.column("path").to_pylist())
    _append_scattered(spark, path, 6000, commits=2)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert int(_last(spark, path).operationMetrics["numRemovedFiles"]) == len(clustered) + 2
    assert len(_cubes(path)) == 1 and not clustered & _paths(path)
    # ... while ZCubes at or above it are left alone: only the new files make a new ZCube.
    clustered, (old_cube,) = _paths(path), _cubes(path)
    spark.conf.set(MIN_CUBE, "1k")
    try:
        _append_scattered(spark, path, 8000, commits=2)
        spark.sql(f"OPTIMIZE {t}")
        assert int(_last(spark, path).operationMetrics["numRemovedFiles"]) == 2
        assert clustered <= _paths(path) and old_cube in _cubes(path) and len(_cubes(path)) == 2
    finally:
        spark.conf.unset(MIN_CUBE)
    spark.sql(f"OPTIMIZE {t} FULL")
    assert _last(spark, path).operationParameters["isFull"] == "true"
    assert not clustered & _paths(path) and len(_cubes(path)) == 1
    assert spark.read.format("delta").load(path).count() == 10000
    # New clustering columns: files clustered on k are skipped until OPTIMIZE FULL reclusters them on id.
    spark.sql(f"ALTER TABLE {t} CLUSTER BY (id)")
    version = pydelta.load_snapshot(path).version
    spark.sql(f"OPTIMIZE {t}")
    assert pydelta.load_snapshot(path).version == version
    spark.sql(f"OPTIMIZE {t} FULL")
    assert [c[0] for c in _cubes(path).values()] == [["id"]]
    import deltalake

    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 10000


def test_alter_cluster_by_and_builder(spark, tmp_path):
    path = str(tmp_path / "t")
    DeltaTable.create(spark).location(path).addColumn("id", "BIGINT").addColumn("k", "INT") \
        .addColumn("s", "STRUCT<a: INT>").clusterBy("k").execute()
    assert _domain(path)["clusteringColumns"] == [["k"]]
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY (id, s.a)")
    assert _domain(path)["clusteringColumns"] == [["id"], ["s", "a"]]
    last = _last(spark, path)
    assert last.operation == "CLUSTER BY"
    assert last.operationParameters == {"oldClusteringColumns": "k", "newClusteringColumns": "id,s.a"}
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY NONE")
    assert _domain(path)["clusteringColumns"] == []
    # An unpartitioned table can become clustered.
    plain = str(tmp_path / "plain")
    spark.range(10).write.format("delta").save(plain)
    spark.sql(f"ALTER TABLE delta.`{plain}` CLUSTER BY (id)")
    assert pydelta.load_snapshot(plain).protocol.has_feature("clustering") and _domain(plain)["clusteringColumns"] == [
        ["id"]]


def test_clustering_refusals(spark, tmp_path):
    path = str(tmp_path / "t")
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_CLUSTER_BY_WITH_PARTITIONED_BY"):
        DeltaTable.create(spark).location(path).addColumn("id", "BIGINT").addColumn("p", "INT") \
            .partitionedBy("p").clusterBy("id").execute()
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS"):
        spark.sql(f"CREATE TABLE delta.`{path}` (a INT, b INT, c INT, d INT, e INT) USING delta "
                  "CLUSTER BY (a, b, c, d, e)")
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_COLUMN_NOT_FOUND_IN_SCHEMA"):
        spark.sql(f"CREATE TABLE delta.`{path}` (a INT) USING delta CLUSTER BY (nope)")
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_CLUSTERING_COLUMN_MISSING_STATS"):
        spark.sql(f"CREATE TABLE delta.`{path}` (a INT, b INT) USING delta CLUSTER BY (b) "
                  "TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '1')")
    spark.sql(f"CREATE TABLE delta.`{path}` (a INT, b INT) USING delta CLUSTER BY (a)")
    with pytest.raises(Exception, match="DELTA_CLUSTERING_WITH_ZORDER_BY"):
        spark.sql(f"OPTIMIZE delta.`{path}` ZORDER BY (b)")
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_CLUSTERING_WITH_PARTITION_PREDICATE"):
        spark.sql(f"OPTIMIZE delta.`{path}` WHERE a = 1")
    partitioned = str(tmp_path / "p")
    spark.range(4).selectExpr("id", "id % 2 AS p").write.format("delta").partitionBy("p").save(partitioned)
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_CLUSTER_BY_WITH_PARTITIONED_BY"):
        spark.sql(f"ALTER TABLE delta.`{partitioned}` CLUSTER BY (id)")


def test_create_table_as_select_cluster_by(spark, tmp_path):
    from deltalake import DeltaTable as RsTable

    path = str(tmp_path / "ctas")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} USING delta CLUSTER BY (k) AS "
              "SELECT id, CAST(id % 10 AS INT) AS k FROM range(100)")
    snap = pydelta.load_snapshot(path)
    assert {"clustering", "domainMetadata"} <= set(snap.protocol.writer_features or ())
    assert _domain(path)["clusteringColumns"] == [["k"]]
    last = _last(spark, path)
    assert last.operation == "CREATE TABLE AS SELECT" and last.operationParameters["clusterBy"] == '["k"]'
    assert spark.sql(f"DESCRIBE DETAIL {t}").first().clusteringColumns == ["k"]
    assert RsTable(path).to_pyarrow_table().num_rows == 100  # delta-rs reads it
    spark.sql(f"OPTIMIZE {t}")
    assert set(pydelta.load_snapshot(path).files().column("clustering_provider").to_pylist()) == {"liquid"}
    # Replacing the table without CLUSTER BY drops the clustering domain; with it, sets the new columns.
    spark.sql(f"CREATE OR REPLACE TABLE {t} USING delta CLUSTER BY (id) AS SELECT id, 1 AS k FROM range(5)")
    assert _domain(path)["clusteringColumns"] == [["id"]]
    spark.sql(f"REPLACE TABLE {t} USING delta AS SELECT id FROM range(3)")
    assert "delta.clustering" not in pydelta.load_snapshot(path).domain_metadata
    assert spark.read.format("delta").load(path).count() == 3


def test_cluster_by_as_select_refusals_leave_nothing(spark, tmp_path):
    path = str(tmp_path / "bad")
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_COLUMN_NOT_FOUND_IN_SCHEMA"):
        spark.sql(f"CREATE TABLE delta.`{path}` USING delta CLUSTER BY (nope) AS SELECT id FROM range(3)")
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED"):
        spark.sql(f"CREATE TABLE delta.`{path}` USING delta CLUSTER BY (b) AS SELECT id, true AS b FROM range(3)")
    import os

    assert not os.path.exists(os.path.join(path, "_delta_log")) or not os.listdir(os.path.join(path, "_delta_log"))
    assert not [f for f in (os.listdir(path) if os.path.exists(path) else []) if f.endswith(".parquet")]


def test_writer_v2_cluster_by(spark, tmp_path):
    name = "clustered_by_writer_v2"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    try:
        spark.range(20).selectExpr("id", "CAST(id % 4 AS INT) AS k").writeTo(name).using("delta") \
            .clusterBy("k").create()
        detail = spark.sql(f"DESCRIBE DETAIL {name}").first()
        assert detail.clusteringColumns == ["k"]
        assert json.loads(pydelta.load_snapshot(detail.location).domain_metadata["delta.clustering"]) == \
            {"clusteringColumns": [["k"]]}
        assert spark.table(name).count() == 20
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_dataframe_writer_cluster_by(spark, tmp_path):
    path = str(tmp_path / "v1")
    df = spark.range(30).selectExpr("id", "CAST(id % 3 AS INT) AS k")
    df.write.format("delta").clusterBy("k").save(path)
    assert _domain(path)["clusteringColumns"] == [["k"]]
    assert "clustering" in set(pydelta.load_snapshot(path).protocol.writer_features or ())
    df.write.format("delta").mode("append").clusterBy("k").save(path)  # the same clustering: fine
    version = pydelta.load_snapshot(path).version
    with pytest.raises(errors.DeltaAnalysisError, match="CLUSTERING_COLUMNS_MISMATCH"):
        df.write.format("delta").mode("append").clusterBy("id").save(path)
    assert pydelta.load_snapshot(path).version == version  # nothing committed
    assert spark.read.format("delta").load(path).count() == 60
    name = "clustered_by_writer_v1"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    try:
        df.write.format("delta").clusterBy("id", "k").saveAsTable(name)
        assert spark.sql(f"DESCRIBE DETAIL {name}").first().clusteringColumns == ["id", "k"]
        with pytest.raises(errors.DeltaAnalysisError, match="CLUSTERING_COLUMNS_MISMATCH"):
            df.write.format("delta").mode("append").clusterBy("k").saveAsTable(name)
        df.write.format("delta").mode("append").saveAsTable(name)  # no clusterBy: the table's stays
        assert spark.table(name).count() == 60
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
