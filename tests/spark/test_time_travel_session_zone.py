"""`timestampAsOf` without a zone is read in the Spark session's time zone, as delta-spark reads it
(and as SQL's TIMESTAMP AS OF already was), not in the Python process's."""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest

pytestmark = pytest.mark.spark

ZONE = "Pacific/Kiritimati"  # UTC+14: far from any zone a test process runs in


def _commit_ms(path, version: int) -> int:
    for line in (path / "_delta_log" / f"{version:020d}.json").read_text().splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            return int(action["commitInfo"]["timestamp"])
    raise AssertionError("no commitInfo")


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
