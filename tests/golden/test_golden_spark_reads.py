"""Every delta-spark golden table with an `expected/` folder reads equal to it,
and the negative tables fail with the documented pydelta errors."""

from __future__ import annotations

from collections import Counter

import pytest

import pydelta
from pydelta import errors
from tests.golden_paths import DELTA_SPARK as GOLDEN_ROOT
from tests.helpers import canonical_rows

WITH_EXPECTED = (sorted(p.name for p in GOLDEN_ROOT.iterdir() if (p / "expected").is_dir())
                 if GOLDEN_ROOT.is_dir() else [])

pytestmark = pytest.mark.spark


def _assert_same_rows(actual, expected) -> None:
    assert sorted(actual.columns) == sorted(expected.columns)
    actual = actual.select(*expected.columns)
    assert actual.count() == expected.count()
    try:
        assert actual.exceptAll(expected).limit(5).collect() == []
        assert expected.exceptAll(actual).limit(5).collect() == []
    except Exception as e:  # maps are not comparable in set operations: compare in Python
        if "MAP" not in str(e).upper():
            raise
        assert Counter(canonical_rows(actual.collect())) == Counter(canonical_rows(expected.collect()))


@pytest.mark.parametrize("name", WITH_EXPECTED)
def test_reads_equal_expected(spark, golden, name):
    table = golden / "delta-spark" / name / "delta"
    # The kernel-timestamp-* tables were written (and their expected answers made) by a
    # session in UTC; delta-spark reads zone-less partition timestamps in the session zone.
    zone = "UTC" if name.startswith("kernel-timestamp") else "America/Los_Angeles"
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        expected = spark.read.parquet(str(golden / "delta-spark" / name / "expected"))
        actual = spark.read.format("delta").load(str(table))
        _assert_same_rows(actual, expected)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")


NEGATIVE = {
    "deltalog-invalid-protocol-version": errors.UnsupportedProtocolError,
    "deltalog-state-reconstruction-without-metadata": errors.MissingMetadataError,
    "deltalog-state-reconstruction-without-protocol": errors.MissingProtocolError,
    "deltalog-state-reconstruction-from-checkpoint-missing-metadata": errors.MissingMetadataError,
    "deltalog-state-reconstruction-from-checkpoint-missing-protocol": errors.MissingProtocolError,
    "versions-not-contiguous": errors.LogNotContiguousError,
    "no-delta-log-folder": errors.DeltaTableNotFoundError,
}


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_negative_tables_fail_clearly(spark, golden, name):
    table = str(golden / "delta-spark" / name / "delta")
    with pytest.raises(NEGATIVE[name]):
        pydelta.load_snapshot(table)
    with pytest.raises(NEGATIVE[name]):
        spark.read.format("delta").load(table)


def test_versions_not_contiguous_names_the_gap(golden):
    with pytest.raises(errors.LogNotContiguousError, match="version 1"):
        pydelta.load_snapshot(str(golden / "delta-spark" / "versions-not-contiguous" / "delta"))


def test_invalid_protocol_names_version(golden):
    with pytest.raises(errors.UnsupportedProtocolError, match="99"):
        pydelta.load_snapshot(str(golden / "delta-spark" / "deltalog-invalid-protocol-version" / "delta"))
