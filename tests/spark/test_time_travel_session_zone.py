"""Time-travel timestamps without a zone are read in the Spark session's time zone, as delta-spark
reads them (`timestampAsOf`, `TIMESTAMP AS OF`, the change feed's and the streaming source's
`startingTimestamp`/`endingTimestamp`), not in the Python process's."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import pytest

pytestmark = pytest.mark.spark

ZONE = "Pacific/Kiritimati"  # UTC+14: far from any zone a test process runs in


@contextlib.contextmanager
def _wall_time_of(spark, path, version: int) -> Iterator[str]:
    """`version`'s timestamp (its log file's mtime, Delta's without in-commit timestamps) as a
    zone-less wall-clock time of ZONE, with ZONE the session's time zone for the block."""
    ms = (path / "_delta_log" / f"{version:020d}.json").stat().st_mtime_ns // 1_000_000
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", ZONE)
    try:
        yield dt.datetime.fromtimestamp(ms / 1000, ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M:%S.%f")
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


def test_zone_less_timestamp_as_of_is_in_the_session_zone(spark, tmp_path):
    path = tmp_path / "t"
    spark.range(0, 3).write.format("delta").save(str(path))                   # v0
    spark.range(3, 6).write.format("delta").mode("append").save(str(path))    # v1
    with _wall_time_of(spark, path, 0) as wall:
        df = spark.read.format("delta").option("timestampAsOf", wall).load(str(path))
        assert sorted(r.id for r in df.collect()) == [0, 1, 2]
        sql = spark.sql(f"SELECT id FROM delta.`{path}` TIMESTAMP AS OF '{wall}'")
        assert sorted(r.id for r in sql.collect()) == [0, 1, 2]


def test_zone_less_change_feed_timestamps_are_in_the_session_zone(spark, tmp_path):
    path = tmp_path / "cdf"
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1)")                                    # v1
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (2)")                                    # v2
    with _wall_time_of(spark, path, 1) as wall:
        changes = (spark.read.format("delta").option("readChangeFeed", "true")
                   .option("startingTimestamp", wall).option("endingTimestamp", wall).load(str(path)))
        assert [(r.id, r._commit_version) for r in changes.collect()] == [(1, 1)]


def test_zone_less_streaming_starting_timestamp_is_in_the_session_zone(spark, tmp_path):
    """The source resolves it in a Python process without a session: the driver passes the zone down."""
    path = tmp_path / "src"
    spark.range(0, 2).write.format("delta").save(str(path))                   # v0
    spark.range(2, 4).write.format("delta").mode("append").save(str(path))    # v1
    with _wall_time_of(spark, path, 1) as wall:
        stream = spark.readStream.format("delta").option("startingTimestamp", wall).load(str(path))
        query = (stream.writeStream.format("delta").option("checkpointLocation", str(tmp_path / "ck"))
                 .trigger(availableNow=True).start(str(tmp_path / "sink")))
        query.awaitTermination(120)
    rows = spark.read.format("delta").load(str(tmp_path / "sink")).collect()
    assert sorted(r.id for r in rows) == [2, 3]
