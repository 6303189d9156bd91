"""`df.writeStream.format("delta")`: the Structured Streaming sink, on real Spark and real files.

Sources are directories of JSON files read with `spark.readStream`; every query runs with
`trigger(availableNow=True)`, so a run processes what is there and stops. Tables are also
read by the independent `deltalake` package.
"""

from __future__ import annotations

import json
import os

import pytest

import pydelta
from pydelta import errors

pytestmark = pytest.mark.spark


def _key(row):
    return tuple((v is not None, v if v is not None else 0) for v in row)


def rows(spark, path, *cols):
    df = spark.read.format("delta").load(path)
    return sorted((tuple(r) for r in df.select(*(cols or df.columns)).collect()), key=_key)


def dl_rows(path, *cols):
    import deltalake

    t = deltalake.DeltaTable(path).to_pyarrow_table()
    cols = cols or tuple(t.column_names)
    return sorted(zip(*[t.column(c).to_pylist() for c in cols], strict=True), key=_key)


def commits(path):
    """{version: [actions]} of every JSON commit."""
    log = os.path.join(path, "_delta_log")
    out = {}
    for name in sorted(os.listdir(log)):
        if name.endswith(".json") and name[:20].isdigit():
            with open(os.path.join(log, name)) as f:
                out[int(name[:20])] = [json.loads(line) for line in f if line.strip()]
    return out


def commit_info(path, version):
    return next(a["commitInfo"] for a in commits(path)[version] if "commitInfo" in a)


class Source:
    """A directory of JSON files: each `add` is one new file, i.e. new input for the stream."""

    def __init__(self, root, schema):
        self.dir = str(root)
        self.schema = schema
        self.n = 0
        os.makedirs(self.dir, exist_ok=True)

    def add(self, *records):
        self.n += 1
        tmp = os.path.join(self.dir, f".part-{self.n:05d}.json.tmp")
        with open(tmp, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        os.rename(tmp, os.path.join(self.dir, f"part-{self.n:05d}.json"))

    def stream(self, spark):
        return spark.readStream.schema(self.schema).json(self.dir)


def run(writer, path=None, to_table=None):
    """Start the query, let it process everything available, return it (stopped)."""
    writer = writer.trigger(availableNow=True)
    q = writer.toTable(to_table) if to_table else writer.start(path)
    q.awaitTermination()
    return q


@pytest.fixture
def src(tmp_path):
    return Source(tmp_path / "src", "id LONG, name STRING, part STRING")


def test_append_and_restart_continue_without_duplicates(spark, tmp_path, src):
    path, ckpt = str(tmp_path / "t"), str(tmp_path / "ckpt")
    src.add({"id": 1, "name": "a", "part": "x"}, {"id": 2, "name": "b", "part": "y"})

    def writer():
        return src.stream(spark).writeStream.format("delta").option("checkpointLocation", ckpt)

    q1 = run(writer(), path)
    assert rows(spark, path, "id") == [(1,), (2,)]
    # A restart with nothing new commits nothing.
    q2 = run(writer(), path)
    assert sorted(commits(path)) == [0]
    src.add({"id": 3, "name": "c", "part": "x"})
    q3 = run(writer(), path)
    assert q1.id == q2.id == q3.id  # Spark keeps the query id in <checkpoint>/metadata
    assert q1.runId != q3.runId
    assert sorted(commits(path)) == [0, 1]
    expected = [(1, "a", "x"), (2, "b", "y"), (3, "c", "x")]
    assert rows(spark, path, "id", "name", "part") == expected
    assert dl_rows(path, "id", "name", "part") == expected
    assert pydelta.load_snapshot(path).transactions == {q1.id: 1}
    for version in (0, 1):
        txns = [a["txn"] for a in commits(path)[version] if "txn" in a]
        assert [(t["appId"], t["version"]) for t in txns] == [(q1.id, version)]


def test_history_records_streaming_update(spark, tmp_path, src):
    path = str(tmp_path / "t")
    src.add({"id": 1, "name": "a", "part": "x"}, {"id": 2, "name": "b", "part": "x"})
    q = run(src.stream(spark).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c"))
            .option("userMetadata", "from a stream"), path)
    info = commit_info(path, 0)
    assert info["operation"] == "STREAMING UPDATE"
    assert info["operationParameters"] == {"outputMode": "Append", "queryId": q.id, "epochId": "0"}
    assert info["userMetadata"] == "from a stream"
    assert info["isBlindAppend"] is True
    assert set(info["operationMetrics"]) == {"numAddedFiles", "numRemovedFiles", "numOutputRows", "numOutputBytes"}
    assert info["operationMetrics"]["numOutputRows"] == "2"
    h = pydelta.DeltaTable.forPath(spark, path).history().collect()
    assert [r.operation for r in h] == ["STREAMING UPDATE"]
    assert h[0].operationParameters == {"outputMode": "Append", "queryId": q.id, "epochId": "0"}


def test_complete_mode_overwrites_each_batch(spark, tmp_path, src):
    path, ckpt = str(tmp_path / "t"), str(tmp_path / "ckpt")

    def writer():
        counts = src.stream(spark).groupBy("part").count()
        return counts.writeStream.format("delta").outputMode("complete").option("checkpointLocation", ckpt)

    src.add({"id": 1, "name": "a", "part": "x"}, {"id": 2, "name": "b", "part": "y"})
    run(writer(), path)
    assert rows(spark, path, "part", "count") == [("x", 1), ("y", 1)]
    src.add({"id": 3, "name": "c", "part": "x"})
    q = run(writer(), path)
    assert rows(spark, path, "part", "count") == [("x", 2), ("y", 1)]
    assert dl_rows(path, "part", "count") == [("x", 2), ("y", 1)]
    info = commit_info(path, 1)
    assert info["operationParameters"] == {"outputMode": "Complete", "queryId": q.id, "epochId": "1"}
    assert int(info["operationMetrics"]["numRemovedFiles"]) >= 1
    assert info["isBlindAppend"] is False


def test_partition_by(spark, tmp_path, src):
    path = str(tmp_path / "t")
    src.add({"id": 1, "name": "a", "part": "x"}, {"id": 2, "name": "b", "part": "y"})
    run(src.stream(spark).writeStream.format("delta").partitionBy("part")
        .option("checkpointLocation", str(tmp_path / "c")), path)
    snap = pydelta.load_snapshot(path)
    assert list(snap.partition_columns) == ["part"]
    assert sorted(p.split("/")[0] for p in snap.files().column("path").to_pylist()) == ["part=x", "part=y"]
    assert dl_rows(path, "id", "part") == [(1, "x"), (2, "y")]
    # The same setting through start()'s keyword argument, appending to the table.
    src.add({"id": 3, "name": "c", "part": "y"})
    q = (src.stream(spark).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c2"))
         .trigger(availableNow=True).start(path, partitionBy="part"))
    q.awaitTermination()
    # A new checkpoint: the new query reads the whole source again.
    assert rows(spark, path, "id", "part") == [(1, "x"), (1, "x"), (2, "y"), (2, "y"), (3, "y")]
    # A different partitioning is refused before the query starts.
    with pytest.raises(errors.DeltaAnalysisError, match="Partition columns do not match"):
        src.stream(spark).writeStream.format("delta").partitionBy("name").option(
            "checkpointLocation", str(tmp_path / "c3")).start(path)


def test_merge_schema_adds_a_column(spark, tmp_path, src):
    path = str(tmp_path / "t")
    src.add({"id": 1, "name": "a", "part": "x"})
    run(src.stream(spark).select("id", "name").writeStream.format("delta")
        .option("checkpointLocation", str(tmp_path / "c1")), path)
    wider = src.stream(spark).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c2"))
    with pytest.raises(errors.SchemaMismatchError) as info:
        wider.start(path)
    from pyspark.errors import AnalysisException

    assert isinstance(info.value, AnalysisException)
    assert sorted(commits(path)) == [0]
    run(src.stream(spark).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c2"))
        .option("mergeSchema", "true"), path)
    assert pydelta.load_snapshot(path).schema.field_names == ["id", "name", "part"]
    assert rows(spark, path, "id", "name", "part") == [(1, "a", None), (1, "a", "x")]
    assert dl_rows(path, "id", "name", "part") == [(1, "a", None), (1, "a", "x")]


def test_failing_batch_stops_the_query_and_commits_nothing(spark, tmp_path, src):
    from pyspark.errors import StreamingQueryException

    path = str(tmp_path / "t")
    src.add({"id": 1, "name": "a", "part": "x"})
    run(src.stream(spark).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c")), path)
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (id > 0)")
    before = sorted(commits(path))
    src.add({"id": -5, "name": "bad", "part": "x"})
    q = (src.stream(spark).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c"))
         .trigger(availableNow=True).start(path))
    with pytest.raises(errors.InvariantViolationError) as info:
        q.awaitTermination()
    assert isinstance(info.value, StreamingQueryException)  # what delta-spark users catch
    assert "positive" in str(info.value)
    assert not q.isActive
    assert sorted(commits(path)) == before
    assert rows(spark, path, "id") == [(1,)]


def test_update_mode_and_missing_settings_refused(spark, tmp_path, src):
    from pyspark.errors import AnalysisException, IllegalArgumentException

    path = str(tmp_path / "t")
    stream = src.stream(spark)
    with pytest.raises(errors.DeltaAnalysisError,
                       match="Data source delta does not support Update output mode") as info:
        stream.writeStream.format("delta").outputMode("update") \
            .option("checkpointLocation", str(tmp_path / "c")).start(path)
    assert isinstance(info.value, AnalysisException)
    assert info.value.getCondition() == "DELTA_UNSUPPORTED_OUTPUT_MODE"
    with pytest.raises(errors.DeltaAnalysisError, match="checkpointLocation must be specified"):
        stream.writeStream.format("delta").start(path)
    with pytest.raises(IllegalArgumentException, match="'path' is not specified"):
        stream.writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c")).start()
    with pytest.raises(errors.DeltaUnsupportedOptionError, match="txnAppId"):
        (stream.writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c"))
         .option("txnAppId", "x").option("txnVersion", 1).start(path))
    with pytest.raises(errors.DeltaUnsupportedOptionError, match="mergeSchemaa"):
        (stream.writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c"))
         .option("mergeSchemaa", "true").start(path))
    assert not os.path.exists(path)
    assert not spark.streams.active


def test_session_checkpoint_conf_and_option_path(spark, tmp_path, src):
    path = str(tmp_path / "t")
    src.add({"id": 1, "name": "a", "part": "x"})
    spark.conf.set("spark.sql.streaming.checkpointLocation", str(tmp_path / "ckpts"))
    try:
        for _ in range(2):  # the named query's checkpoint is <conf>/<queryName>: the rerun is a no-op
            q = (src.stream(spark).writeStream.format("delta").queryName("sink_conf_test").option("path", path)
                 .trigger(availableNow=True).start())
            q.awaitTermination()
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointLocation")
    assert os.path.exists(os.path.join(str(tmp_path / "ckpts"), "sink_conf_test", "metadata"))
    assert sorted(commits(path)) == [0]
    assert rows(spark, path, "id") == [(1,)]


def test_to_table_creates_and_appends(spark, tmp_path, src):
    name = "stream_sink_tbl"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    try:
        src.add({"id": 1, "name": "a", "part": "x"})
        ckpt = str(tmp_path / "c")
        with pytest.raises(errors.DeltaAnalysisError, match="Update output mode"):
            src.stream(spark).writeStream.outputMode("update").option("checkpointLocation", ckpt) \
                .toTable(name, format="delta")
        assert not spark.catalog.tableExists(name)  # a refused query registers nothing
        run(src.stream(spark).writeStream.format("delta").option("checkpointLocation", ckpt), to_table=name)
        src.add({"id": 2, "name": "b", "part": "y"})
        run(src.stream(spark).writeStream.format("delta").option("checkpointLocation", ckpt), to_table=name)
        assert sorted(tuple(r) for r in spark.table(name).select("id").collect()) == [(1,), (2,)]
        location = pydelta.DeltaTable.forName(spark, name).detail().collect()[0].location
        assert dl_rows(location.removeprefix("file:"), "id") == [(1,), (2,)]
        history = pydelta.DeltaTable.forName(spark, name).history().collect()
        assert [r.operation for r in history] == ["STREAMING UPDATE"] * 2
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_foreach_batch_with_txn_options_skips_a_repeated_batch(spark, tmp_path, src):
    """delta-spark's documented idempotent foreachBatch pattern: txnAppId + txnVersion = batch id."""
    path = str(tmp_path / "t")
    calls = []

    def write(batch_df, batch_id):
        calls.append(batch_id)
        for _ in range(2):  # the second write of the same batch is what a replay looks like: skipped
            (batch_df.write.format("delta").mode("append").option("txnAppId", "my-app")
             .option("txnVersion", batch_id).save(path))

    src.add({"id": 1, "name": "a", "part": "x"})
    # format("delta") then foreachBatch: the user's function is the sink, as in Spark.
    run(src.stream(spark).writeStream.format("delta").foreachBatch(write)
        .option("checkpointLocation", str(tmp_path / "c")))
    src.add({"id": 2, "name": "b", "part": "y"})
    run(src.stream(spark).writeStream.foreachBatch(write).option("checkpointLocation", str(tmp_path / "c")))
    assert calls == [0, 1]
    assert sorted(commits(path)) == [0, 1]
    assert pydelta.load_snapshot(path).transactions == {"my-app": 1}
    assert dl_rows(path, "id") == [(1,), (2,)]
    assert [commit_info(path, v)["operation"] for v in (0, 1)] == ["WRITE", "WRITE"]


def test_other_formats_untouched(spark, tmp_path, src):
    src.add({"id": 1, "name": "a", "part": "x"})
    out = str(tmp_path / "pq")
    run(src.stream(spark).writeStream.format("parquet").partitionBy("part")
        .option("checkpointLocation", str(tmp_path / "c")), out)
    assert os.path.isdir(os.path.join(out, "part=x"))
    assert [tuple(r) for r in spark.read.parquet(out).select("id", "part").collect()] == [(1, "x")]
    q = src.stream(spark).writeStream.format("memory").queryName("sink_memory_test").trigger(availableNow=True).start()
    q.awaitTermination()
    assert [r.id for r in spark.table("sink_memory_test").collect()] == [1]
