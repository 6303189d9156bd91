"""A Delta table at a URI only Hadoop can open: the whole Spark path without the driver's disk.

`viewfs://` is Hadoop's mount-table file system: here it mounts a temporary local directory,
so the driver cannot open `viewfs://...` paths itself (pyarrow, os) and every log and data
operation must go through the session's Hadoop FileSystem, as on HDFS. The local directory
underneath is then checked as a plain Delta table by deltalake.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from urllib.parse import unquote

import deltalake
import pyarrow as pa
import pytest

import pydelta
from pydelta import DeltaTable

pytestmark = pytest.mark.spark

_mounts = itertools.count()


@pytest.fixture
def mounted(spark, tmp_path):
    """(viewfs table URI, the local directory behind it)."""
    name = f"pdtest{next(_mounts)}{os.getpid()}"
    base = tmp_path / "disk"
    base.mkdir()
    spark.sparkContext._jsc.hadoopConfiguration().set(f"fs.viewfs.mounttable.{name}.link./data", f"file://{base}")
    return f"viewfs://{name}/data/t", str(base / "t")


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


def test_write_read_dml_optimize_vacuum(spark, mounted):
    uri, local = mounted
    data = spark.range(0, 100, numPartitions=4).selectExpr("id", "CAST(id % 3 AS INT) AS p", "id * 2 AS v")
    data.write.format("delta").partitionBy("p").save(uri)
    assert spark.read.format("delta").load(uri).count() == 100
    spark.range(100, 110).selectExpr("id", "CAST(id % 3 AS INT) AS p", "id * 2 AS v") \
        .write.format("delta").mode("append").save(uri)
    table = DeltaTable.forPath(spark, uri)
    table.delete("id < 10")
    table.update("id = 50", {"v": "-1"})
    source = spark.createDataFrame([(50, 2, 500), (200, 2, 400)], "id BIGINT, p INT, v BIGINT")
    (table.alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    expected = sorted([(i, i % 3, i * 2) for i in range(10, 110) if i != 50] + [(50, 2, 500), (200, 2, 400)])
    assert _rows(spark.read.format("delta").load(uri).select("id", "p", "v")) == expected
    assert _rows(spark.read.format("delta").load(uri).where("p = 2 AND id > 100").select("id")) == [
        (i,) for i in range(101, 110) if i % 3 == 2] + [(200,)]
    table.optimize().executeCompaction()
    assert _rows(spark.read.format("delta").option("versionAsOf", 0).load(uri).select("id")) == [
        (i,) for i in range(100)]
    history = [r.operation for r in table.history().orderBy("version").collect()]
    assert history == ["WRITE", "WRITE", "DELETE", "UPDATE", "MERGE", "OPTIMIZE"]
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        table.vacuum(0)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    # The directory behind the mount is a plain Delta table: deltalake and pydelta's log core agree.
    witness = pa.table(deltalake.DeltaTable(local).to_pyarrow_table()).select(["id", "p", "v"])
    assert sorted(tuple(r.values()) for r in witness.to_pylist()) == expected
    snap = pydelta.load_snapshot(local)
    on_disk = {os.path.relpath(os.path.join(d, f), local) for d, _, fs in os.walk(local) for f in fs
               if f.endswith(".parquet") and "_delta_log" not in d}
    assert on_disk == set(snap.files().column("path").to_pylist())  # vacuumed, no staging left
    assert not os.path.exists(os.path.join(local, "_pydelta_staging"))


def test_deletion_vectors_through_the_hadoop_file_system(spark, mounted):
    uri, local = mounted
    spark.range(0, 50, numPartitions=2).write.format("delta").option("delta.enableDeletionVectors", "true").save(uri)
    table = DeltaTable.forPath(spark, uri)
    table.delete("id % 5 = 0")
    table.update("id = 1", {"id": "-1"})
    snap = pydelta.load_snapshot(local)
    assert snap.files().column("deletion_vector").null_count < snap.num_files  # DVs written, files kept
    assert any(name.startswith("deletion_vector_") for name in os.listdir(local))
    expected = sorted([(-1,)] + [(i,) for i in range(2, 50) if i % 5])
    assert _rows(spark.read.format("delta").load(uri)) == expected
    count = pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(local)).execute(
        "SELECT count(*) AS n, min(id) AS low FROM t").read_all())
    assert count.column("n")[0].as_py() == len(expected) and count.column("low")[0].as_py() == -1
    table.optimize().executePurge()  # REORG ... APPLY (PURGE): rewrites the files with DVs
    assert pydelta.load_snapshot(local).files().column("deletion_vector").null_count == \
        pydelta.load_snapshot(local).num_files
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        table.vacuum(0)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert not any(name.startswith("deletion_vector_") for name in os.listdir(local))  # vacuumed
    assert _rows(spark.read.format("delta").load(uri)) == expected


def test_stream_into_a_table_at_a_hadoop_uri(spark, mounted, tmp_path):
    uri, local = mounted
    source = str(tmp_path / "source")
    spark.range(0, 30, numPartitions=3).write.format("delta").save(source)
    spark.range(30, 40).write.format("delta").mode("append").save(source)
    query = (spark.readStream.format("delta").option("maxFilesPerTrigger", 2).load(source)
             .writeStream.format("delta").option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start(uri))
    query.awaitTermination(120)
    assert _rows(spark.read.format("delta").load(uri)) == [(i,) for i in range(40)]
    assert deltalake.DeltaTable(local).to_pyarrow_table().num_rows == 40
    # Streaming *from* such a table runs pydelta in Python data source workers, which have no
    # Hadoop FileSystem: refused with a clear message.
    with pytest.raises(Exception, match="Hadoop FileSystem"):
        spark.readStream.format("delta").load(uri).writeStream.format("console").start().stop()


def test_a_table_at_an_odd_path_under_a_hadoop_uri(spark, mounted):
    """The table's directory has every character URIs escape: the driver hands Hadoop names, once."""
    from tests.spark.test_odd_paths import ALL, _deltalake_rows

    uri, local = mounted
    uri, local = f"{uri}/{ALL}/t", os.path.join(local, ALL, "t")
    data = spark.range(0, 40, numPartitions=2).selectExpr("id", "CAST(id % 3 AS STRING) AS part")
    data.write.format("delta").partitionBy("part").option("delta.enableDeletionVectors", "true").save(uri)
    table = DeltaTable.forPath(spark, uri)
    table.delete("id = 3")
    table.update("id = 4", {"part": "'u'"})
    expected = sorted([(i, str(i % 3)) for i in range(40) if i not in (3, 4)] + [(4, "u")])
    assert _rows(spark.read.format("delta").load(uri)) == expected
    assert _rows(spark.read.format("delta").load(uri).where("part = 'u'")) == [(4, "u")]
    table.optimize().executeCompaction()
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        table.vacuum(0)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert _rows(spark.read.format("delta").load(uri)) == expected
    assert _deltalake_rows(Path(local), "id", "part") == expected
    on_disk = {os.path.relpath(os.path.join(d, f), local) for d, _, fs in os.walk(local) for f in fs
               if f.endswith(".parquet") and "_delta_log" not in d}
    live = {unquote(p) for p in pydelta.load_snapshot(local).files().column("path").to_pylist()}
    assert on_disk == live
