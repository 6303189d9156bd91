"""`DeltaTable.forPath(spark, path, hadoopConf={...})`: the table's own Hadoop options are used.

The observable setting is a Hadoop mount table (`fs.viewfs.mounttable.<name>.link./...`)
given only in `hadoopConf`: the session's Hadoop configuration does not have it, so
`viewfs://<name>/...` cannot be opened at all unless the options reach every place the table
is accessed (its log through the Hadoop FileSystem, Spark's scans and writes of its data
files). Each test mounts under a new name, and the options also turn off Hadoop's cache of
viewfs FileSystem instances: otherwise an instance made with the options would serve later
calls made without them, and a path that ignored them would go unnoticed.
"""

from __future__ import annotations

import itertools
import os

import pytest

import pydelta
from pydelta.errors import DeltaNotImplementedError
from pydelta.tables import DeltaTable

pytestmark = pytest.mark.spark

_mounts = itertools.count()


@pytest.fixture
def mount(spark, tmp_path):
    """(viewfs table URI, hadoopConf mounting it, the local table directory behind it, mount key)."""
    name = f"pdconf{next(_mounts)}x{os.getpid()}"
    base = tmp_path / "disk"
    base.mkdir()
    key = f"fs.viewfs.mounttable.{name}.link./{name}"  # mounted at /<name>: no such local directory
    local = str(base / "t")
    spark.range(0, 10, numPartitions=2).selectExpr("id", "CAST(id % 2 AS INT) AS p").write.format("delta") \
        .partitionBy("p").save(local)
    conf = {key: f"file://{base}", "fs.viewfs.impl.disable.cache": "true"}
    return f"viewfs://{name}/{name}/t", conf, local, key


def _ids(df):
    return sorted(r.id for r in df.select("id").collect())


def _scan_options(df) -> list[dict[str, str]]:
    """The options of each file scan in the DataFrame's analyzed plan."""
    from pydelta.spark.base import jplan

    out = []
    for leaf in jplan.seq(df._jdf.queryExecution().analyzed().collectLeaves()):
        if jplan.kind(leaf) == "LogicalRelation" and leaf.relation().getClass().getSimpleName() == "HadoopFsRelation":
            out.append(jplan.scala_map(leaf.relation().options()))
    return out


def test_without_the_options_the_mounted_table_cannot_be_opened(spark, mount):
    uri, _, _, _ = mount
    with pytest.raises(Exception, match="Mount table"):
        DeltaTable.forPath(spark, uri)


def test_the_options_serve_the_log_the_reads_and_every_operation(spark, mount):
    uri, conf, local, key = mount
    table = DeltaTable.forPath(spark, uri, hadoopConf=conf)
    assert spark.conf.get(key, None) is None  # never in the session: the table carries them
    df = table.toDF()
    assert _ids(df) == list(range(10))
    assert _ids(df.where("id > 6")) == [7, 8, 9]
    scans = _scan_options(df)
    assert scans and all(opts.get(key) == conf[key] for opts in scans)  # the scans carry the options

    table.delete("id = 1")
    table.update("id = 2", {"id": "200"})
    source = spark.createDataFrame([(3, 1), (99, 1)], "id BIGINT, p INT")
    (table.alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedDelete().whenNotMatchedInsertAll().execute())
    table.optimize().executeCompaction()
    expected = [0, 4, 5, 6, 7, 8, 9, 99, 200]
    assert _ids(table.toDF()) == expected
    assert [r.operation for r in table.history().orderBy("version").collect()] == [
        "WRITE", "DELETE", "UPDATE", "MERGE", "OPTIMIZE"]
    assert table.detail().first().numFiles == 2
    assert spark.conf.get(key, None) is None

    # The directory behind the mount holds those commits: pydelta's log core reads it directly.
    snapshot = pydelta.load_snapshot(local)
    assert snapshot.version == 4
    assert _ids(spark.read.format("delta").load(local)) == expected


def test_no_operation_puts_the_options_in_the_session(spark, mount):
    """The options travel with the table, never through the session's conf: a post-commit hook,
    which runs inside each operation after its commit, sees the session without them."""
    from pydelta.spark.base import transactions

    uri, conf, _, key = mount
    seen: list[tuple[str, str | None]] = []

    def observe(session, txn, version, actions):
        seen.append((txn.committed_commit_info["operation"], session.conf.get(key, None)))

    hooks = list(transactions._HOOKS)
    transactions.install_post_commit_hooks([*hooks, transactions.PostCommitHook("OBSERVER", observe)])
    try:
        table = DeltaTable.forPath(spark, uri, hadoopConf=conf)
        table.delete("id = 1")
        table.update("id = 2", {"id": "200"})
        source = spark.createDataFrame([(3, 1)], "id BIGINT, p INT")
        table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedDelete().execute()
        table.optimize().executeCompaction()
        table.restoreToVersion(1)
    finally:
        transactions.install_post_commit_hooks(hooks)
    assert seen == [(op, None) for op in ("DELETE", "UPDATE", "MERGE", "OPTIMIZE", "RESTORE")]
    assert _ids(table.toDF()) == [0, 2, 3, 4, 5, 6, 7, 8, 9]


def test_filters_skip_files_and_the_pruned_scans_keep_the_options(spark, mount):
    uri, conf, _, key = mount
    df = DeltaTable.forPath(spark, uri, hadoopConf=conf).toDF()
    everything = df.inputFiles()
    selective = df.where("id > 6")
    assert _ids(selective) == [7, 8, 9]
    assert 0 < len(selective.inputFiles()) < len(everything)  # the log's statistics skipped files
    scans = _scan_options(selective)
    assert scans and all(opts.get(key) == conf[key] for opts in scans)


def test_the_options_reach_vacuum_and_the_alias(spark, mount):
    uri, conf, local, _ = mount
    table = DeltaTable.forPath(spark, uri, hadoopConf=conf)
    table.delete("p = 0")
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        table.vacuum(0)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert _ids(table.alias("t").toDF()) == [1, 3, 5, 7, 9]
    on_disk = {os.path.relpath(os.path.join(d, f), local) for d, _, fs in os.walk(local) for f in fs
               if f.endswith(".parquet") and "_delta_log" not in d}
    assert on_disk == set(pydelta.load_snapshot(local).files().column("path").to_pylist())


def test_default_fs_among_the_options_resolves_a_path_without_scheme(spark, mount):
    uri, conf, _, _ = mount
    name = uri.split("/")[2]
    with pytest.raises(Exception, match="not a Delta table"):
        DeltaTable.forPath(spark, f"/{name}/t")  # a local path without the options
    table = DeltaTable.forPath(spark, f"/{name}/t", hadoopConf={"fs.defaultFS": f"viewfs://{name}/", **conf})
    assert table.path == uri
    assert table.toDF().count() == 10


def test_a_session_value_of_the_same_key_comes_back(spark, mount):
    uri, conf, _, key = mount
    spark.conf.set(key, "file:///nowhere")
    try:
        table = DeltaTable.forPath(spark, uri, hadoopConf=conf)
        assert table.toDF().count() == 10
        assert spark.conf.get(key) == "file:///nowhere"
    finally:
        spark.conf.unset(key)


def test_options_of_other_file_systems_leave_a_local_table_alone(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path, {"fs.s3a.connection.maximum": "7", "dfs.replication": "1"})
    table.delete("id = 0")
    assert _ids(table.toDF()) == [1, 2]
    assert spark.conf.get("fs.s3a.connection.maximum", None) is None


@pytest.mark.parametrize("key", ["fs.file.impl", "fs.AbstractFileSystem.file.impl"])
def test_local_file_system_options_are_refused(spark, tmp_path, key):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    with pytest.raises(DeltaNotImplementedError, match=f"local file system \\({key}\\)"):
        DeltaTable.forPath(spark, path, {key: "org.apache.hadoop.fs.RawLocalFileSystem"})


@pytest.mark.parametrize(("uri", "key"), [
    ("gs://bucket/t", "fs.gs.project.id"),
    ("abfss://c@account.dfs.core.windows.net/t", "fs.azure.account.key.account.dfs.core.windows.net"),
])
def test_object_store_options_are_refused_before_any_request(spark, uri, key):
    # GCS and Azure settings would reach Spark's data path only: pydelta's log client takes its own.
    with pytest.raises(DeltaNotImplementedError, match=key.replace(".", "\\.")) as info:
        DeltaTable.forPath(spark, uri, {key: "secret-value"})
    assert "secret-value" not in str(info.value)


@pytest.mark.parametrize(("uri", "key"), [
    ("s3a://bucket/t", "fs.s3a.access.key"),
    ("s3://bucket/t", "fs.s3a.bucket.bucket.endpoint"),
])
def test_s3a_options_are_taken_for_the_log_as_well(uri, key):
    # S3A settings are translated for the log client (tests/s3a/test_session_settings.py reaches a
    # bucket with them): nothing to refuse.
    from pydelta.spark.base.hadoop_storage import check_table_options

    check_table_options(uri, {key: "secret-value"})
