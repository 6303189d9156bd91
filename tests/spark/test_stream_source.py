"""Structured Streaming reads of Delta tables: `spark.readStream.format("delta")`.

Real Spark queries (foreachBatch collecting rows, Trigger.AvailableNow for determinism)
over tables written by pydelta and by deltalake, checked against delta-spark's
DeltaSource behaviour: initial snapshot then new commits exactly once, checkpoint
restarts, starting versions/timestamps, rate limits, the errors on deletes, updates and
schema changes, and the change feed. Offset planning is also driven directly (no Spark
query) where that is the clearest check.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from pydelta.errors import DeltaNotImplementedError
from pydelta.spark import datasource
from pydelta.spark.streaming.source import HAS_ADMISSION_CONTROL


def _stream(spark, path: str, checkpoint: str, options: dict[str, str] | None = None, *,
            trigger: dict[str, Any] | None = None, paced_until: int | None = None, seen: list = ()):
    """Run a query to completion (AvailableNow by default): ([(batch id, sorted rows)], query).

    `paced_until`: the query's rate limit must shape its batches. PySpark 4.2+ honours it under
    AvailableNow; before 4.2 Spark runs AvailableNow in one batch for Python sources, so there
    the query runs on a processing-time trigger until that many distinct rows arrived, counting
    the rows of `seen` (batches of an earlier run of the query: a restart may replay its last batch).
    """
    batches: list[tuple[int, list[tuple]]] = []
    if paced_until is not None and not HAS_ADMISSION_CONTROL:
        trigger = {"processingTime": "0 seconds"}

    def collect(df, batch_id):
        batches.append((batch_id, sorted(tuple(r) for r in df.collect())))

    reader = spark.readStream.format("delta")
    for k, v in (options or {}).items():
        reader = reader.option(k, v)
    query = (reader.load(path).writeStream.foreachBatch(collect)
             .option("checkpointLocation", checkpoint).trigger(**(trigger or {"availableNow": True})).start())
    try:
        if paced_until is not None and not HAS_ADMISSION_CONTROL:
            deadline = time.monotonic() + 300
            while (len({r for _, rows in [*seen, *batches] for r in rows}) < paced_until and time.monotonic() < deadline
                   and query.exception() is None):
                time.sleep(0.1)
            time.sleep(1)  # no further batch may follow
        elif trigger and "processingTime" in trigger:  # stop after the first batch: a checkpoint mid-stream
            deadline = time.monotonic() + 120
            while not batches and time.monotonic() < deadline and query.exception() is None:
                time.sleep(0.1)
        else:
            query.awaitTermination(300)
    finally:
        query.stop()
    return batches, query


def _rows(batches) -> list[tuple]:
    return sorted(r for _, rows in batches for r in rows)


def _append(spark, path: str, start: int, end: int, files: int = 1, mode: str = "append", **opts: str) -> None:
    df = spark.range(start, end, 1, files).selectExpr("id", "cast(id % 3 as int) as p", "concat('v', id) as s")
    writer = df.write.format("delta").mode(mode)
    for k, v in opts.items():
        writer = writer.option(k, v)
    writer.save(path)


def _failure(spark, path: str, checkpoint: str, options: dict[str, str] | None = None) -> str:
    with pytest.raises(Exception) as info:
        _, query = _stream(spark, path, checkpoint, options)
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
    return str(info.value)


def test_snapshot_then_new_commits_exactly_once(spark, tmp_path):
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    _append(spark, path, 0, 10, files=2, mode="overwrite")
    _append(spark, path, 10, 15)
    first, _ = _stream(spark, path, ck)
    assert _rows(first) == [(i, i % 3, f"v{i}") for i in range(15)]
    _append(spark, path, 15, 20)
    _append(spark, path, 20, 22)
    second, _ = _stream(spark, path, ck)  # restart from the checkpoint
    assert _rows(second) == [(i, i % 3, f"v{i}") for i in range(15, 22)]
    assert second[0][0] == first[-1][0] + 1
    third, _ = _stream(spark, path, ck)
    assert _rows(third) == []


def test_max_files_per_trigger_batches_and_restart_mid_stream(spark, tmp_path):
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    _append(spark, path, 0, 50, files=5, mode="overwrite")  # 5 files in the snapshot
    # Stop right after the first batch of a processing-time query: the checkpoint is mid-snapshot
    # (and, when stopped before Spark committed it, batch 0 is replayed on restart).
    early, _ = _stream(spark, path, ck, {"maxFilesPerTrigger": "2"}, trigger={"processingTime": "1 hour"})
    assert [len(rows) for _, rows in early] == [20]
    _append(spark, path, 50, 60, files=2)
    rest, query = _stream(spark, path, ck, {"maxFilesPerTrigger": "2"}, paced_until=60, seen=early)
    by_id: dict[int, list[tuple]] = {}
    for batch_id, rows in early + rest:
        assert by_id.setdefault(batch_id, rows) == rows  # a replayed batch has exactly the same rows
    assert sorted(r for rows in by_id.values() for r in rows) == [(i, i % 3, f"v{i}") for i in range(60)]
    # 5 snapshot files of 10 rows, then 2 files of 5 rows; 2 files per batch, a commit may share a batch.
    assert [len(by_id[i]) for i in sorted(by_id)] == [20, 20, 15, 5]
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [
        len(rows) for _, rows in rest if rows]


def test_max_files_counts_batches(spark, tmp_path):
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    _append(spark, path, 0, 60, files=6, mode="overwrite")
    batches, query = _stream(spark, path, ck, {"maxFilesPerTrigger": "4"}, paced_until=60)
    assert [len(rows) for _, rows in batches] == [40, 20]
    assert [p["batchId"] for p in query.recentProgress if p["numInputRows"]] == [0, 1]


def test_max_bytes_per_trigger(spark, tmp_path):
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    _append(spark, path, 0, 30, files=3, mode="overwrite")
    batches, _ = _stream(spark, path, ck, {"maxBytesPerTrigger": "1b"}, paced_until=30)  # one file a batch
    assert [len(rows) for _, rows in batches] == [10, 10, 10]
    ck2 = str(tmp_path / "ck2")
    batches, _ = _stream(spark, path, ck2, {"maxBytesPerTrigger": "1g"}, paced_until=30)
    assert [len(rows) for _, rows in batches] == [30]


def test_trigger_once_reads_everything_in_one_batch(spark, tmp_path):
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    _append(spark, path, 0, 30, files=3, mode="overwrite")
    batches, _ = _stream(spark, path, ck, {"maxFilesPerTrigger": "1"}, trigger={"once": True})
    # As in delta-spark, Once ignores the rate limit (before PySpark 4.2 the driver tells the
    # source its trigger: trigger_marks.py).
    assert [len(rows) for _, rows in batches] == [30]


def test_available_now_with_a_rate_limit_drains_everything_in_one_run(spark, tmp_path):
    """AvailableNow reads all there is even with maxFilesPerTrigger (delta-spark: in paced batches;
    before PySpark 4.2, in one batch), and the same stream started on another trigger is paced."""
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    _append(spark, path, 0, 30, files=3, mode="overwrite")
    batches: list[tuple[int, list[tuple]]] = []

    def collect(df, batch_id):
        batches.append((batch_id, sorted(tuple(r) for r in df.collect())))

    stream = spark.readStream.format("delta").option("maxFilesPerTrigger", "1").load(path)
    query = (stream.writeStream.foreachBatch(collect).option("checkpointLocation", ck)
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert [r[0] for r in _rows(batches)] == list(range(30))
    assert [len(rows) for _, rows in batches] == ([10, 10, 10] if HAS_ADMISSION_CONTROL else [30])
    # The same DataFrame on a processing-time trigger: the rate limit shapes its batches again.
    _append(spark, path, 30, 50, files=2)
    batches.clear()
    query = (stream.writeStream.foreachBatch(collect).option("checkpointLocation", ck)
             .trigger(processingTime="0 seconds").start())
    try:
        deadline = time.monotonic() + 300
        while len(_rows(batches)) < 20 and time.monotonic() < deadline and query.exception() is None:
            time.sleep(0.1)
    finally:
        query.stop()
    assert [r[0] for r in _rows(batches)] == list(range(30, 50))
    assert max(len(rows) for _, rows in batches) == 10


def test_starting_version_number_and_latest(spark, tmp_path):
    path = str(tmp_path / "t")
    _append(spark, path, 0, 5, mode="overwrite")  # v0
    _append(spark, path, 5, 8)  # v1
    _append(spark, path, 8, 10)  # v2
    from_v1, _ = _stream(spark, path, str(tmp_path / "ck1"), {"startingVersion": "1"})
    assert [r[0] for r in _rows(from_v1)] == list(range(5, 10))
    latest_ck = str(tmp_path / "ck2")
    nothing, _ = _stream(spark, path, latest_ck, {"startingVersion": "latest"})
    assert _rows(nothing) == []
    _append(spark, path, 10, 12)  # v3
    later, _ = _stream(spark, path, latest_ck, {"startingVersion": "latest"})
    assert [r[0] for r in _rows(later)] == [10, 11]
    message = _failure(spark, path, str(tmp_path / "ck3"), {"startingVersion": "9"})
    assert "DELTA_VERSION_NOT_FOUND" in message


def test_starting_timestamp(spark, tmp_path):
    path = str(tmp_path / "t")
    for v, (a, b) in enumerate([(0, 3), (3, 6), (6, 9)]):
        _append(spark, path, a, b, mode="overwrite" if v == 0 else "append")
    log = os.path.join(path, "_delta_log")
    for v, day in enumerate((1, 2, 3)):
        stamp = datetime(2024, 1, day, tzinfo=UTC).timestamp()
        os.utime(os.path.join(log, f"{v:020d}.json"), (stamp, stamp))
    rows, _ = _stream(spark, path, str(tmp_path / "ck"), {"startingTimestamp": "2024-01-01T12:00:00+00:00"})
    assert [r[0] for r in _rows(rows)] == list(range(3, 9))
    message = _failure(spark, path, str(tmp_path / "ck2"), {"startingTimestamp": "2030-01-01T00:00:00+00:00"})
    assert "DELTA_TIMESTAMP_GREATER_THAN_COMMIT" in message


def test_delete_update_fail_the_stream_unless_told(spark, tmp_path):
    from pydelta.tables import DeltaTable

    path = str(tmp_path / "t")
    spark.range(0, 30).selectExpr("id", "cast(id % 3 as int) as p").write.format("delta").partitionBy("p").save(path)
    base, _ = _stream(spark, path, str(tmp_path / "ck"))
    assert len(_rows(base)) == 30
    table = DeltaTable.forPath(spark, path)
    table.delete("p = 0")  # v1: whole files removed, nothing added
    message = _failure(spark, path, str(tmp_path / "ck"))
    assert "DELTA_SOURCE_IGNORE_DELETE" in message and "at version 1" in message
    deleted_ok, _ = _stream(spark, path, str(tmp_path / "ck"), {"ignoreDeletes": "true"})
    assert _rows(deleted_ok) == []
    table.update("id = 1", {"id": "100"})  # v2: a file rewritten
    spark.range(200, 203).selectExpr("id", "cast(2 as int) as p").write.format("delta").mode("append").save(path)
    message = _failure(spark, path, str(tmp_path / "ck"), {"ignoreDeletes": "true"})
    assert "DELTA_SOURCE_TABLE_IGNORE_CHANGES" in message and "at version 2" in message and "UPDATE" in message
    # as delta-spark words it: each parameter as the JSON text of its logged value, a Hadoop path
    assert 'for example UPDATE (Map(predicate -> "[\\"(id = cast(1 as bigint))\\"]"))' in message, message
    assert f"can be found at path file:{path}." in message
    skipped, _ = _stream(spark, path, str(tmp_path / "ck"), {"skipChangeCommits": "true"})
    assert [r[0] for r in _rows(skipped)] == [200, 201, 202]
    # ignoreChanges re-emits the rewritten file's rows (all of them, as delta-spark does).
    changes, _ = _stream(spark, path, str(tmp_path / "ck_changes"), {"startingVersion": "2", "ignoreChanges": "true"})
    ids = [r[0] for r in _rows(changes)]
    assert 100 in ids and 1 not in ids and {200, 201, 202} <= set(ids)


def test_optimize_commits_are_skipped(spark, tmp_path):
    from pydelta.tables import DeltaTable

    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    _append(spark, path, 0, 20, files=4, mode="overwrite")
    _stream(spark, path, ck)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    _append(spark, path, 20, 22)
    after, _ = _stream(spark, path, ck)
    assert [r[0] for r in _rows(after)] == [20, 21]


def test_property_change_passes_and_exclude_regex_filters(spark, tmp_path):
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    _append(spark, path, 0, 4, mode="overwrite")
    _stream(spark, path, ck)
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.appendOnly' = 'false')")  # metadata only
    _append(spark, path, 4, 6)
    rows, _ = _stream(spark, path, ck)
    assert [r[0] for r in _rows(rows)] == [4, 5]
    # excludeRegex drops files whose (relative) path matches; they still advance the offsets.
    none, _ = _stream(spark, path, str(tmp_path / "ck2"), {"excludeRegex": r"part-.*\.parquet"})
    assert _rows(none) == []


def test_schema_change_fails_with_version(spark, tmp_path):
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    _append(spark, path, 0, 5, mode="overwrite")
    seen: list[int] = []
    query = (spark.readStream.format("delta").load(path).writeStream
             .foreachBatch(lambda df, i: seen.append(df.count()))
             .option("checkpointLocation", ck).trigger(processingTime="200 milliseconds").start())
    try:
        query.processAllAvailable()
        assert sum(seen) == 5
        (spark.range(5, 7).selectExpr("id", "cast(1 as int) as p", "'x' as s", "1.5 as extra")
         .write.format("delta").mode("append").option("mergeSchema", "true").save(path))  # v1
        with pytest.raises(Exception) as info:
            query.processAllAvailable()
    finally:
        query.stop()
    message = str(info.value)
    assert "[DELTA_SCHEMA_CHANGED_WITH_VERSION] Detected schema change in version 1" in message
    assert "extra" in message
    # As delta-spark says: restarting picks up the new schema and continues where it stopped.
    rows, _ = _stream(spark, path, ck)
    assert _rows(rows) == [(5, 1, "x", 1.5), (6, 1, "x", 1.5)]


def test_unknown_options_are_refused(spark, tmp_path):
    path = str(tmp_path / "t")
    _append(spark, path, 0, 3, mode="overwrite")
    message = _failure(spark, path, str(tmp_path / "ck1"), {"endingVersion": "3"})
    assert "endingVersion" in message
    message = _failure(spark, path, str(tmp_path / "ck2"), {"maxFilesPerTriger": "3"})
    assert "maxfilespertriger" in message.lower()
    message = _failure(spark, path, str(tmp_path / "ck3"), {"maxFilesPerTrigger": "0"})
    assert "DELTA_ILLEGAL_OPTION" in message


def test_partitioned_column_mapping_table(spark, tmp_path):
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    df = spark.range(0, 12).selectExpr("id", "cast(id % 2 as int) as `part col`", "named_struct('a', id, 'b', "
                                       "concat('b', id)) as st", "array(id, id + 1) as arr", "map('k', id) as m")
    (df.write.format("delta").partitionBy("part col").option("delta.columnMapping.mode", "name").save(path))
    meta = spark.read.format("delta").load(path)
    assert meta.count() == 12
    rows, _ = _stream(spark, path, ck)
    got = _rows(rows)
    assert len(got) == 12
    by_id = {r[0]: r for r in got}
    assert by_id[3][1] == 1 and tuple(by_id[3][2]) == (3, "b3") and list(by_id[3][3]) == [3, 4]
    assert by_id[3][4] == {"k": 3}
    df.where("id < 2").selectExpr("id + 100 as id", "`part col`", "st", "arr", "m").write.format("delta").mode(
        "append").save(path)
    more, _ = _stream(spark, path, ck)
    assert sorted(r[0] for r in _rows(more)) == [100, 101]


def test_deltalake_written_table(spark, tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    write_deltalake(path, pa.table({"id": pa.array([1, 2, 3], pa.int64()), "part": ["a", "b", "a"],
                                    "ts": pa.array([0, 1_000_000, None], pa.timestamp("us", tz="UTC"))}),
                    partition_by=["part"])
    first, _ = _stream(spark, path, ck)
    assert [(r[0], r[1]) for r in _rows(first)] == [(1, "a"), (2, "b"), (3, "a")]
    write_deltalake(path, pa.table({"id": pa.array([4], pa.int64()), "part": ["c"],
                                    "ts": pa.array([5], pa.timestamp("us", tz="UTC"))}), mode="append")
    second, _ = _stream(spark, path, ck)
    assert [(r[0], r[1]) for r in _rows(second)] == [(4, "c")]


def _cdf_table(spark, path: str) -> None:
    (spark.range(0, 6).selectExpr("id", "concat('v', id) as s").write.format("delta")
     .option("delta.enableChangeDataFeed", "true").save(path))


def test_change_feed_stream_under_update_delete_merge(spark, tmp_path):
    from pydelta.tables import DeltaTable

    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    _cdf_table(spark, path)
    opts = {"readChangeFeed": "true"}
    first, _ = _stream(spark, path, ck, opts)
    assert [(r[0], r[2], r[3]) for r in _rows(first)] == [(i, "insert", 0) for i in range(6)]
    table = DeltaTable.forPath(spark, path)
    table.update("id = 1", {"s": "'one'"})  # v1
    table.delete("id = 2")  # v2
    source = spark.createDataFrame([(3, "three"), (10, "ten")], "id long, s string")
    (table.alias("t").merge(source.alias("u"), "t.id = u.id")
     .whenMatchedUpdate(set={"s": "u.s"}).whenNotMatchedInsertAll().execute())  # v3
    changes, _ = _stream(spark, path, ck, opts)
    got = sorted((r[3], r[2], r[0], r[1]) for r in _rows(changes))
    assert got == [
        (1, "update_postimage", 1, "one"), (1, "update_preimage", 1, "v1"),
        (2, "delete", 2, "v2"),
        (3, "insert", 10, "ten"), (3, "update_postimage", 3, "three"), (3, "update_preimage", 3, "v3"),
    ]
    batch = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", "1")
             .load(path).collect())
    assert sorted((r["_commit_version"], r["_change_type"], r["id"], r["s"]) for r in batch) == got
    # Same commit timestamps as the batch change feed, too.
    assert sorted((r[3], r[2], r[0], r[4]) for r in _rows(changes)) == sorted(
        (r["_commit_version"], r["_change_type"], r["id"], r["_commit_timestamp"]) for r in batch)


def test_change_feed_needs_cdf_enabled(spark, tmp_path):
    path = str(tmp_path / "t")
    _append(spark, path, 0, 3, mode="overwrite")
    message = _failure(spark, path, str(tmp_path / "ck"), {"readChangeFeed": "true"})
    assert "DELTA_MISSING_CHANGE_DATA" in message


def test_stream_from_a_catalog_table_by_name(spark, tmp_path):
    """readStream.table(name) resolves a Delta table's location (Spark passes Python sources none)."""
    spark.range(0, 4).write.format("delta").saveAsTable("stream_src_tbl")
    try:
        batches: list[tuple] = []
        trigger = {"availableNow": True} if HAS_ADMISSION_CONTROL else {"processingTime": "0 seconds"}
        query = (spark.readStream.option("maxFilesPerTrigger", "1").table("stream_src_tbl").writeStream
                 .foreachBatch(lambda df, _: batches.extend(tuple(r) for r in df.collect()))
                 .option("checkpointLocation", str(tmp_path / "ck")).trigger(**trigger).start())
        if HAS_ADMISSION_CONTROL:
            query.awaitTermination(300)
        else:
            deadline = time.monotonic() + 300
            while ((len(batches) < 4 or len(query.recentProgress) < 2) and time.monotonic() < deadline
                   and query.exception() is None):  # rows arrive before their batch's progress
                time.sleep(0.1)
            query.stop()
        assert sorted(r[0] for r in batches) == [0, 1, 2, 3]
        assert len(query.recentProgress) >= 2  # maxFilesPerTrigger reached the source
        spark.range(0, 2).write.format("parquet").saveAsTable("stream_src_parquet")  # not Delta: Spark's own path
        df = spark.readStream.table("stream_src_parquet")
        assert df.isStreaming
    finally:
        spark.sql("DROP TABLE IF EXISTS stream_src_tbl")
        spark.sql("DROP TABLE IF EXISTS stream_src_parquet")


# ---- offset planning driven directly (the driver-side methods, no query) -------------------


def _reader(spark, path: str, **options: str):
    source = datasource.DeltaCatalogSource({"path": path, **options})
    return source.streamReader(source.schema())


@pytest.mark.skipif(not HAS_ADMISSION_CONTROL, reason="read limits reach Python sources from PySpark 4.2")
def test_offsets_are_delta_spark_shaped_and_partitions_deterministic(spark, tmp_path):
    from pyspark.sql.streaming.datasource import ReadMaxFiles

    path = str(tmp_path / "t")
    _append(spark, path, 0, 30, files=3, mode="overwrite")  # v0: 3 files
    _append(spark, path, 30, 40)  # v1
    reader = _reader(spark, path)
    start = reader.initialOffset()
    table_id = start["reservoirId"]
    assert start == {"sourceVersion": 1, "reservoirId": table_id, "reservoirVersion": 1, "index": -1,
                     "isStartingVersion": True}
    mid = reader.latestOffset(start, ReadMaxFiles(2))
    assert (mid["reservoirVersion"], mid["index"], mid["isStartingVersion"]) == (1, 1, True)
    end = reader.latestOffset(mid, reader.getDefaultReadLimit())
    assert (end["reservoirVersion"], end["index"], end["isStartingVersion"]) == (2, -1, False)
    assert reader.latestOffset(end, reader.getDefaultReadLimit()) == end
    json.dumps(end)  # offsets are plain JSON
    # A fresh process (a restart) plans the same files for the same offsets.
    again = _reader(spark, path)
    for a, b in ((start, mid), (mid, end)):
        first = [f.path for p in reader.partitions(a, b) for f in p.files]
        second = [f.path for p in again.partitions(a, b) for f in p.files]
        assert first == second and first
    rows = [batch.num_rows for p in again.partitions(mid, end) for batch in again.read(p)]
    assert sum(rows) == 20  # the snapshot (at v1) has 4 files; the first 2 went before `mid`


def test_paced_reader_for_pyspark_before_4_2_paces_itself(spark, tmp_path):
    """PySpark 4.0/4.1 ask `latestOffset()` with no start and no limit: the reader paces from the
    start it has seen (the initial offset, each planned batch's end, Spark's replayed latest offset)."""
    from pydelta.spark.streaming.source_paced import PacedStreamReader

    path = str(tmp_path / "t")
    _append(spark, path, 0, 30, files=3, mode="overwrite")  # v0: 3 files
    _append(spark, path, 30, 40)  # v1
    schema = datasource.DeltaCatalogSource({"path": path}).schema()
    reader = PacedStreamReader({"path": path, "maxFilesPerTrigger": "2"}, schema)
    first = reader.latestOffset()  # a fresh query asks for the first end before its start
    start = reader.initialOffset()
    assert (start["reservoirVersion"], start["index"], start["isStartingVersion"]) == (1, -1, True)
    assert (first["reservoirVersion"], first["index"], first["isStartingVersion"]) == (1, 1, True)
    assert sum(len(p.files) for p in reader.partitions(start, first)) == 2
    end = reader.latestOffset()
    assert (end["reservoirVersion"], end["index"], end["isStartingVersion"]) == (2, -1, False)
    reader.partitions(first, end)
    assert reader.latestOffset() == end  # nothing new
    # A restarted query: Spark replays the latest offset as an empty range before asking.
    again = PacedStreamReader({"path": path, "maxFilesPerTrigger": "2"}, schema)
    assert again.partitions(first, first) == []
    assert again.latestOffset() == end
    # Without a rate limit of its own, the first batch takes everything (AvailableNow's one batch).
    unpaced = PacedStreamReader({"path": path}, schema)
    assert unpaced.latestOffset() == end
    refused = PacedStreamReader({"path": path, "schemaTrackingLocation": str(tmp_path / "s")}, schema)
    with pytest.raises(DeltaNotImplementedError, match=r"schemaTrackingLocation needs PySpark 4\.2"):
        refused.initialOffset()


# ---- tables written by delta-spark and delta-rs (deletion vectors, column mapping, cdc) -----


def _sortable(rows) -> list[str]:
    return sorted(repr(tuple(r)) for r in rows)


@pytest.mark.parametrize("table", ["delta-spark/dv-with-columnmapping/delta",
                                   "delta-spark/dv-partitioned-with-checkpoint/delta",
                                   "delta-rs/table-with-dv-small"])
def test_golden_tables_stream_like_a_batch_read(spark, golden, tmp_path, table):
    path = str(golden / table)
    rows, _ = _stream(spark, path, str(tmp_path / "ck"))
    expected = spark.read.format("delta").load(path).collect()
    assert expected
    assert sorted(repr(r) for _, batch in rows for r in batch) == _sortable(expected)


def test_golden_change_feed_stream_matches_deltalake(spark, golden, tmp_path):
    import deltalake

    path = str(golden / "delta-rs" / "cdf-table-with-cdc-and-dvs")
    df = spark.readStream.format("delta").option("readChangeFeed", "true").option("startingVersion", "0").load(path)
    columns = [c for c in df.columns if c != "_commit_timestamp"]
    rows, _ = _stream(spark, path, str(tmp_path / "ck"), {"readChangeFeed": "true", "startingVersion": "0"})
    names = [f.name for f in df.schema.fields]
    ours = sorted(tuple(r[names.index(c)] for c in columns) for _, batch in rows for r in batch)
    data = deltalake.DeltaTable(path).load_cdf(starting_version=0).read_all()
    witness = sorted(zip(*[data.column(c).to_pylist() for c in columns], strict=True))
    assert ours and ours == witness


def _stream_failing(spark, path: str, checkpoint: str, options: dict[str, str]) -> tuple[list, str]:
    """Run a query that must fail: (the batches it completed, its error message)."""
    batches: list[tuple[int, list[tuple]]] = []

    def collect(df, batch_id):
        batches.append((batch_id, sorted(tuple(r) for r in df.collect())))

    reader = spark.readStream.format("delta")
    for k, v in options.items():
        reader = reader.option(k, v)
    with pytest.raises(Exception) as info:
        query = (reader.load(path).writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(300)
        finally:
            query.stop()
    return batches, str(info.value)


def test_schema_tracking_streams_across_rename_and_drop(spark, tmp_path):
    """schemaTrackingLocation: a rename stops the stream once (DELTA_STREAMING_METADATA_EVOLUTION),
    the restart needs consent (allowSourceColumnRename), then reads on with the new names; rows
    before and after the change each arrive once."""
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    tracking = {"schemaTrackingLocation": str(tmp_path / "ck" / "_schema")}
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b')")
    if not HAS_ADMISSION_CONTROL:  # the refusal before PySpark 4.2, through a real query
        assert "schemaTrackingLocation needs PySpark 4.2" in _failure(spark, path, ck, tracking)
        return
    first, _ = _stream(spark, path, ck, tracking)
    assert _rows(first) == [(1, "a"), (2, "b")]
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 'c')")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN v TO label")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (4, 'd')")
    batches, message = _stream_failing(spark, path, ck, tracking)
    assert _rows(batches) == [(3, "c")]  # the batch ends before the rename
    assert "DELTA_STREAMING_METADATA_EVOLUTION" in message
    _, message = _stream_failing(spark, path, ck, tracking)
    assert "DELTA_STREAMING_CANNOT_CONTINUE_PROCESSING_POST_SCHEMA_EVOLUTION" in message
    assert "allowSourceColumnRename" in message
    batches, query = _stream(spark, path, ck, {**tracking, "allowSourceColumnRename": "always"})
    assert query.exception() is None
    assert _rows(batches) == [(4, "d")]
    reader = spark.readStream.format("delta").option("schemaTrackingLocation", tracking["schemaTrackingLocation"])
    assert reader.load(path).columns == ["id", "label"]
