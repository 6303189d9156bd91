"""`timestampAsOf` without a zone is read in the Spark session's time zone, as delta-spark reads it
(and as SQL's TIMESTAMP AS OF already was), not in the Python process's."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

pytestmark = pytest.mark.spark

ZONE = "Pacific/Kiritimati"  # UTC+14: far from any zone a test process runs in


def _commit_ms(path, version: int) -> int:
    """The version's timestamp as Delta defines it without in-commit timestamps: its log file's mtime."""
    return (path / "_delta_log" / f"{version:020d}.json").stat().st_mtime_ns // 1_000_000


def test_zone_less_timestamp_as_of_is_in_the_session_zone(spark, tmp_path):
    path = tmp_path / "t"
    spark.range(0, 3).write.format("delta").save(str(path))                   # v0
    spark.range(3, 6).write.format("delta").mode("append").save(str(path))    # v1
    v0 = _commit_ms(path, 0)
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", ZONE)
    try:
        # v0's commit time, written as a wall-clock time of the session zone, without the zone
        wall = dt.datetime.fromtimestamp(v0 / 1000, ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M:%S.%f")
        df = spark.read.format("delta").option("timestampAsOf", wall).load(str(path))
        assert sorted(r.id for r in df.collect()) == [0, 1, 2]
        sql = spark.sql(f"SELECT id FROM delta.`{path}` TIMESTAMP AS OF '{wall}'")
        assert sorted(r.id for r in sql.collect()) == [0, 1, 2]
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


def test_zone_less_change_feed_timestamps_are_in_the_session_zone(spark, tmp_path):
    path = tmp_path / "cdf"
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1)")                                    # v1
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (2)")                                    # v2
    v1 = _commit_ms(path, 1)
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", ZONE)
    try:
        wall = dt.datetime.fromtimestamp(v1 / 1000, ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M:%S.%f")
        changes = (spark.read.format("delta").option("readChangeFeed", "true")
                   .option("startingTimestamp", wall).option("endingTimestamp", wall).load(str(path)))
        assert [(r.id, r._commit_version) for r in changes.collect()] == [(1, 1)]
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


def test_zone_less_streaming_starting_timestamp_is_in_the_session_zone(spark, tmp_path):
    """The source resolves it in a Python process without a session: the driver passes the zone down."""
    path = tmp_path / "src"
    spark.range(0, 2).write.format("delta").save(str(path))                   # v0
    spark.range(2, 4).write.format("delta").mode("append").save(str(path))    # v1
    v1 = _commit_ms(path, 1)
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", ZONE)
    try:
        wall = dt.datetime.fromtimestamp(v1 / 1000, ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M:%S.%f")
        stream = spark.readStream.format("delta").option("startingTimestamp", wall).load(str(path))
        query = (stream.writeStream.format("delta").option("checkpointLocation", str(tmp_path / "ck"))
                 .trigger(availableNow=True).start(str(tmp_path / "sink")))
        query.awaitTermination(120)
        rows = spark.read.format("delta").load(str(tmp_path / "sink")).collect()
        assert sorted(r.id for r in rows) == [2, 3]
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
