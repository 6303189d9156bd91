"""Change data feed and Structured Streaming against delta-spark (the witness process).

- The same DML statements, run by pydelta on one table and by delta-spark on another, give
  the same change feed (every row with its _change_type and _commit_version).
- delta-spark's streaming source over a pydelta-written table delivers the rows pydelta's
  own streaming source delivers, and the reverse (pydelta's readStream over delta-spark's
  tables, with deletion vectors, and the change feed as a stream).
"""

from __future__ import annotations

import json
import re

import pytest

from tests.witness._compare import both, commits, read, same_at_every_version, version
from tests.witness.delta_spark import WitnessError, canon

pytestmark = [pytest.mark.spark, pytest.mark.witness]


def _cdf(spark, path: str, start: int = 0, end: int | None = None) -> dict:
    r = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", start)
    if end is not None:
        r = r.option("endingVersion", end)
    return canon(r.load(path).drop("_commit_timestamp"))


def _stream(spark, path: str, checkpoint: str, **options: str) -> list[dict]:
    """pydelta's streaming source over the table, AvailableNow, in the witness's form:
    [{"batch": id, "schema": ..., "rows": ...}] (as DeltaSparkWitness.stream gives)."""
    from tests.witness import _canon

    batches: list[dict] = []

    def collect(df, batch_id):
        df = df.drop("_commit_timestamp")
        batches.append({"batch": batch_id, "schema": _canon.schema(df.schema), "rows": _canon.rows(df.collect())})

    reader = spark.readStream.format("delta")
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (reader.load(path).writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    return batches


def _streams(spark, ds, path: str, tmp_path, name: str, **options: str) -> tuple[list[dict], list[dict]]:
    """delta-spark's and pydelta's streams of the table, run at the same time, each with its
    own checkpoint (`ds-<name>`, `py-<name>` under tmp_path): (theirs, ours)."""
    return both(lambda: ds.stream(path, tmp_path / f"ds-{name}", **options),
                lambda: _stream(spark, path, str(tmp_path / f"py-{name}"), **options))


def _source_error(text: str) -> tuple[str, str]:
    """(error class, message up to the table path) of a Delta streaming source's refusal."""
    found = re.search(r"\[(DELTA_SOURCE_\w+)\] (.*?can be found at path \S+)", text, re.S)
    assert found, text[:3000]
    return found.group(1), found.group(2)


def _all_rows(batches: list[dict]) -> list:
    return sorted((r for b in batches for r in b["rows"]), key=lambda x: json.dumps(x, sort_keys=True))


def _schemas(batches: list[dict]) -> list:
    return [b["schema"] for b in batches if b["rows"]]


DML = (
    "INSERT INTO {t} SELECT id, CAST(id AS STRING), CAST(id % 3 AS INT) FROM range(0, 12, 1, 2)",  # v1
    "UPDATE {t} SET v = concat(v, '!') WHERE id % 4 = 1",                                         # v2
    "DELETE FROM {t} WHERE id IN (2, 3)",                                                         # v3
    "MERGE INTO {t} t USING (SELECT id, 'm' AS v, CAST(id % 3 AS INT) AS p FROM range(8, 15)) s ON t.id = s.id "
    "WHEN MATCHED AND t.id = 9 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",  # v4
    "DELETE FROM {t} WHERE p = 2",                                                                 # v5
    "UPDATE {t} SET p = 2 WHERE id = 0",                                                           # v6: moves partition
    "INSERT OVERWRITE {t} SELECT id, v, p FROM {t} WHERE id > 10",                                 # v7
    "INSERT INTO {t} VALUES (100, 'z', 1)",                                                        # v8
)


@pytest.mark.parametrize("dvs", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_same_dml_same_change_feed(spark, delta_spark, tmp_path, dvs):
    ours, theirs = str(tmp_path / "pydelta"), str(tmp_path / "delta-spark")
    create = ("CREATE TABLE {t} (id BIGINT, v STRING, p INT) USING delta PARTITIONED BY (p) TBLPROPERTIES ("
              f"'delta.enableChangeDataFeed' = 'true', 'delta.enableDeletionVectors' = '{str(dvs).lower()}')")
    for statement in (create, *DML):
        spark.sql(statement.format(t=f"delta.`{ours}`"))
        delta_spark.sql(statement.format(t=f"delta.`{theirs}`"), collect=False)
    assert version(ours) == version(theirs) == len(DML)
    if dvs:  # both engines took the deletion-vector path
        for path in (ours, theirs):
            assert any(a["add"].get("deletionVector") for a in commits(path)[3] if "add" in a), path
    versions = range(len(DML) + 1)
    tables, ours_tables = both(lambda: delta_spark.rows_many(theirs, versions),
                               lambda: [read(spark, ours, v) for v in versions])
    for v in versions:
        assert ours_tables[v] == tables[v], f"table at version {v}"
    windows = ((0, None), (2, 4), (5, 5), (7, 8))
    (expected, *their_windows, their_read_of_ours), (ours_feed, *our_windows, our_read_of_theirs) = both(
        lambda: [delta_spark.changes(theirs, start=a, end=b) for a, b in windows] + [delta_spark.changes(ours)],
        lambda: [_cdf(spark, ours, a, b) for a, b in windows] + [_cdf(spark, theirs)])
    assert ours_feed == expected               # pydelta's feed of its DML = delta-spark's of its own
    assert their_read_of_ours == expected      # and each reads the other's feed the same
    assert our_read_of_theirs == expected
    assert our_windows == their_windows        # from/to a version
    kinds = {r[-2] for r in expected["rows"]}
    assert kinds == {"insert", "delete", "update_preimage", "update_postimage"}


def test_delta_spark_streams_a_pydelta_table(spark, delta_spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, p INT) USING delta PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")                       # v0
    spark.sql(f"INSERT INTO {t} SELECT id, 'a', CAST(id % 2 AS INT) FROM range(0, 6, 1, 2)")  # v1
    spark.sql(f"INSERT INTO {t} VALUES (6, 'b', 0)")                                          # v2
    theirs, ours = _streams(spark, delta_spark, path, tmp_path, "ck")
    assert _all_rows(ours) == _all_rows(theirs) == [[i, "a", i % 2] for i in range(6)] + [[6, "b", 0]]
    assert _schemas(ours)[:1] == _schemas(theirs)[:1]
    spark.sql(f"INSERT INTO {t} VALUES (7, 'c', 1), (8, 'c', 0)")                             # v3
    spark.sql(f"OPTIMIZE {t}")                                                                # v4: no new data
    spark.sql(f"INSERT INTO {t} VALUES (9, 'd', 1)")                                          # v5
    theirs, ours = _streams(spark, delta_spark, path, tmp_path, "ck")
    assert _all_rows(ours) == _all_rows(theirs) == [[7, "c", 1], [8, "c", 0], [9, "d", 1]]
    # starting from a version, and with the change feed: updates and deletes too
    spark.sql(f"UPDATE {t} SET v = 'u' WHERE id = 1")                                         # v6
    spark.sql(f"DELETE FROM {t} WHERE id = 2")                                                # v7
    theirs, ours = _streams(spark, delta_spark, path, tmp_path, "cdf", readChangeFeed="true", startingVersion="2")
    assert _all_rows(ours) == _all_rows(theirs)
    assert {r[3] for r in _all_rows(theirs)} == {"insert", "update_preimage", "update_postimage", "delete"}
    assert _schemas(ours)[:1] == _schemas(theirs)[:1]
    theirs, ours = _streams(spark, delta_spark, path, tmp_path, "skip", skipChangeCommits="true", startingVersion="5")
    assert _all_rows(ours) == _all_rows(theirs) == [[9, "d", 1]]


def test_pydelta_streams_delta_spark_tables(spark, delta_spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    for s in (f"CREATE TABLE {t} (id BIGINT, v STRING) USING delta TBLPROPERTIES ("
              "'delta.enableDeletionVectors' = 'true', 'delta.enableChangeDataFeed' = 'true')",   # v0
              f"INSERT INTO {t} SELECT id, 'a' FROM range(0, 10, 1, 1)",                           # v1
              f"DELETE FROM {t} WHERE id % 3 = 0",                                                 # v2: a DV
              f"UPDATE {t} SET v = 'u' WHERE id = 4"):                                             # v3: a DV + new file
        delta_spark.sql(s, collect=False)
    assert any(a["add"].get("deletionVector") for a in commits(path)[2] if "add" in a)
    # The stream's first batch is the snapshot at the latest version, deletion vectors applied.
    theirs, ours = _streams(spark, delta_spark, path, tmp_path, "ck")
    assert _all_rows(ours) == _all_rows(theirs) == read(spark, path)["rows"]
    assert [r[0] for r in _all_rows(ours)] == [1, 2, 4, 5, 7, 8]
    delta_spark.sql(f"INSERT INTO {t} VALUES (20, 'n')", collect=False)                              # v4
    theirs, ours = _streams(spark, delta_spark, path, tmp_path, "ck")
    assert _all_rows(ours) == _all_rows(theirs) == [[20, "n"]]
    # The change feed as a stream, over delta-spark's DV commits, from the start.
    delta_spark.sql(f"MERGE INTO {t} t USING (SELECT id FROM range(7, 22)) s ON t.id = s.id "
                    "WHEN MATCHED AND t.id = 8 THEN DELETE WHEN MATCHED THEN UPDATE SET v = 'm' "
                    "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 'i')", collect=False)               # v5
    theirs, ours = _streams(spark, delta_spark, path, tmp_path, "cdf", readChangeFeed="true", startingVersion="0")
    assert _all_rows(ours) == _all_rows(theirs) == _cdf(spark, path)["rows"]
    assert _schemas(ours)[:1] == _schemas(theirs)[:1]
    # the MERGE (a change commit) fails both plain streams with the same error, unless told to skip it
    with pytest.raises(Exception) as ours_error:
        _stream(spark, path, str(tmp_path / "py-ck"))
    with pytest.raises(WitnessError) as theirs_error:
        delta_spark.stream(path, tmp_path / "ds-ck")
    assert _source_error(str(ours_error.value)) == _source_error(str(theirs_error.value))
    assert _source_error(str(theirs_error.value))[0] == "DELTA_SOURCE_TABLE_IGNORE_CHANGES"
    assert "at version 5" in _source_error(str(theirs_error.value))[1]
    theirs, ours = _streams(spark, delta_spark, path, tmp_path, "skip", skipChangeCommits="true")
    assert _all_rows(ours) == _all_rows(theirs) == read(spark, path)["rows"]
    same_at_every_version(spark, delta_spark, path)


DS_STREAM_TO_SINK = """
q = (spark.readStream.format("delta").load(req['source']).writeStream.format("delta")
     .option("checkpointLocation", req['checkpoint']).trigger(availableNow=True).start(req['sink']))
q.awaitTermination(300)
if q.exception() is not None:
    raise RuntimeError(str(q.exception()))
q.stop()
"""


def _stream_to_sink(spark, source: str, sink: str, checkpoint: str) -> None:
    query = (spark.readStream.format("delta").load(source).writeStream.format("delta")
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start(sink))
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        query.stop()


def _sink_commits(path: str) -> list[dict]:
    """Each streaming commit of a Delta sink: its operation, parameters and txn action."""
    out = []
    for _, actions in sorted(commits(path).items()):
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        txns = [a["txn"] for a in actions if "txn" in a]
        params = dict(info.get("operationParameters") or {})
        out.append({"operation": info["operation"], "parameters": sorted(params),
                    "outputMode": params.get("outputMode"), "epochId": params.get("epochId"),
                    "txn": [(t["version"], t["appId"] == params.get("queryId")) for t in txns]})
    return out


def test_stream_into_delta_sinks_both_engines(spark, delta_spark, tmp_path):
    """Each engine streams the other's table into a Delta sink (AvailableNow, then again after
    new commits): the sinks hold the same rows, once each, with the same kind of commits, and
    each engine reads the other's sink at every version."""
    ours_src, theirs_src = str(tmp_path / "py-src"), str(tmp_path / "ds-src")
    ours_sink, theirs_sink = str(tmp_path / "py-sink"), str(tmp_path / "ds-sink")
    create = "CREATE TABLE delta.`{p}` (id BIGINT, v STRING) USING delta"
    spark.sql(create.format(p=ours_src))
    delta_spark.sql(create.format(p=theirs_src), collect=False)
    for i in range(2):
        spark.sql(f"INSERT INTO delta.`{ours_src}` VALUES ({i}, 'py')")
        delta_spark.sql(f"INSERT INTO delta.`{theirs_src}` VALUES ({i}, 'ds')", collect=False)
    # delta-spark streams pydelta's table, pydelta streams delta-spark's
    both(lambda: delta_spark.exec(DS_STREAM_TO_SINK, source=ours_src, sink=theirs_sink,
                                  checkpoint=str(tmp_path / "ds-ck")),
         lambda: _stream_to_sink(spark, theirs_src, ours_sink, str(tmp_path / "py-ck")))
    spark.sql(f"INSERT INTO delta.`{ours_src}` VALUES (2, 'py'), (3, 'py')")
    delta_spark.sql(f"INSERT INTO delta.`{theirs_src}` VALUES (2, 'ds'), (3, 'ds')", collect=False)
    both(lambda: delta_spark.exec(DS_STREAM_TO_SINK, source=ours_src, sink=theirs_sink,
                                  checkpoint=str(tmp_path / "ds-ck")),
         lambda: _stream_to_sink(spark, theirs_src, ours_sink, str(tmp_path / "py-ck")))

    assert sorted(read(spark, theirs_sink)["rows"]) == [[i, "py"] for i in range(4)]
    assert sorted(delta_spark.rows(ours_sink)["rows"]) == [[i, "ds"] for i in range(4)]
    same_at_every_version(spark, delta_spark, theirs_sink)
    same_at_every_version(spark, delta_spark, ours_sink)
    # pydelta's sink commits as delta-spark's do: STREAMING UPDATE, Append, epoch = txn version
    ours, theirs = _sink_commits(ours_sink), _sink_commits(theirs_sink)
    assert [c["operation"] for c in ours] == [c["operation"] for c in theirs] == ["STREAMING UPDATE"] * len(theirs)
    assert [c["parameters"] for c in ours] == [c["parameters"] for c in theirs]
    assert [c["outputMode"] for c in ours] == [c["outputMode"] for c in theirs]
    assert [c["epochId"] for c in ours] == [c["epochId"] for c in theirs]
    assert [c["txn"] for c in ours] == [c["txn"] for c in theirs]
