"""pydelta over Spark Connect on a table partitioned by values statements could trip on (issue 44):
the client builds the same statement texts and predicates as a classic session, so the round
trip of tests/spark/test_hostile_values.py (INSERT, pruned reads, DELETE, UPDATE and MERGE
through SQL and the API, OPTIMIZE, auto compaction, deltalake reading the result) runs here
whole, on a Connect session."""

from __future__ import annotations

import pytest

from tests.spark.test_hostile_values import round_trip_hostile_partition_values

pytestmark = pytest.mark.spark


def test_hostile_partition_values_round_trip_over_connect(spark, tmp_path):
    round_trip_hostile_partition_values(spark, str(tmp_path / "t"))
