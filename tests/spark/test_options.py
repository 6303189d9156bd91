"""Reader/writer options: implemented ones work, delta-spark ones pydelta lacks are refused by name.

Silently ignoring e.g. a streaming option in a batch read would be a wrong answer, so such
options raise DeltaUnsupportedOptionError (a DeltaNotImplementedError).
A refused write commits nothing. Unknown keys that are not Delta's pass, as in Spark.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest

import pydelta
from pydelta import DeltaTable, errors, load_snapshot

pytestmark = pytest.mark.spark


def log_files(path: str) -> list[str]:
    return sorted(os.listdir(os.path.join(path, "_delta_log")))


def ids(df) -> list[int]:
    return sorted(r[0] for r in df.select("id").collect())


@pytest.fixture
def table(spark, tmp_path) -> str:
    """A table with two versions: 0 holds ids 0..2, 1 appends 10..11."""
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    spark.range(10, 12).write.format("delta").mode("append").save(path)
    return path


def read(spark, path, **opts):
    reader = spark.read.format("delta")
    for key, value in opts.items():
        reader = reader.option(key, value)
    return reader.load(path)


# ---- reads -------------------------------------------------------------------------------


def test_read_change_feed_on_a_table_without_it_is_refused(spark, table):
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_MISSING_CHANGE_DATA") as info:
        read(spark, table, readChangeFeed="true", startingVersion="0")
    assert info.value.getCondition() == "DELTA_MISSING_CHANGE_DATA"


def test_read_options_match_case_insensitively(spark, table):
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_NO_START_FOR_CDC_READ"):
        read(spark, table, readchangefeed="TRUE")
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_NO_START_FOR_CDC_READ"):
        spark.read.format("delta").options(readChangeData=True).load(table)
    with pytest.raises(errors.DeltaIllegalArgumentError, match="DELTA_ILLEGAL_OPTION"):
        read(spark, table, readChangeFeed="yes", startingVersion=0)


def test_read_change_feed_false_is_the_plain_read(spark, table):
    assert ids(read(spark, table, readChangeFeed="false")) == [0, 1, 2, 10, 11]
    assert ids(read(spark, table, readChangeFeed=False, failOnDataLoss="true", ignoreDeletes="false")) == [
        0, 1, 2, 10, 11]


@pytest.mark.parametrize("option,value", [
    ("startingVersion", "0"),
    ("endingVersion", "1"),
    ("startingTimestamp", "2024-01-01"),
    ("endingTimestamp", "2024-01-01"),
    ("maxFilesPerTrigger", "1"),
    ("maxBytesPerTrigger", "1g"),
    ("ignoreDeletes", "true"),
    ("ignoreChanges", "true"),
    ("skipChangeCommits", "true"),
    ("ignoreFileDeletion", "true"),
    ("failOnDataLoss", "false"),
    ("excludeRegex", "part-.*"),
    ("schemaTrackingLocation", "/tmp/x"),
])
def test_unimplemented_read_options_raise(spark, table, option, value):
    with pytest.raises(errors.DeltaUnsupportedOptionError, match=option):
        read(spark, table, **{option: value})


def test_read_table_by_name_checks_options_too(spark):
    spark.range(3).write.format("delta").saveAsTable("options_by_name")
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_MISSING_CHANGE_DATA"):
        spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).table(
            "options_by_name")
    assert ids(spark.read.format("delta").option("versionAsOf", 0).table("options_by_name")) == [0, 1, 2]


def test_supported_read_options_still_work(spark, table):
    assert ids(read(spark, table, versionAsOf=0)) == [0, 1, 2]
    assert ids(read(spark, table, versionAsOf="1")) == [0, 1, 2, 10, 11]
    ts = datetime.fromtimestamp(load_snapshot(table, version=0).timestamp / 1000, UTC)
    assert ids(read(spark, table, timestampAsOf=ts.isoformat())) == [0, 1, 2]
    assert ids(spark.read.format("delta").option("path", table).load()) == [0, 1, 2, 10, 11]


def test_unknown_options_are_refused_unless_asked_to_ignore(spark, table):
    with pytest.raises(errors.DeltaUnsupportedOptionError, match="someUnrelatedKey") as info:
        read(spark, table, someUnrelatedKey="x")
    assert info.value.option == "someUnrelatedKey"
    before = log_files(table)
    with pytest.raises(errors.DeltaUnsupportedOptionError, match="mergeSchma"):  # a typo is not dropped silently
        spark.range(100, 101).write.format("delta").mode("append").option("mergeSchma", "true").save(table)
    assert log_files(table) == before
    spark.conf.set("spark.pydelta.options.ignoreUnknown", "true")
    try:
        assert ids(read(spark, table, someUnrelatedKey="x")) == [0, 1, 2, 10, 11]
        spark.range(100, 101).write.format("delta").mode("append").option("mergeSchma", "true").save(table)
    finally:
        spark.conf.unset("spark.pydelta.options.ignoreUnknown")
    assert 100 in ids(read(spark, table))


# ---- writes ------------------------------------------------------------------------------


def test_refused_write_option_commits_nothing(spark, table):
    before = log_files(table)
    data = os.listdir(table)
    with pytest.raises(errors.DeltaUnsupportedOptionError, match="writePartitionColumns") as info:
        spark.range(100, 103).write.format("delta").mode("append").option("writePartitionColumns", "true").save(table)
    assert info.value.option == "writePartitionColumns"
    assert log_files(table) == before
    assert os.listdir(table) == data
    assert ids(read(spark, table)) == [0, 1, 2, 10, 11]


def test_refused_write_does_not_create_a_table(spark, tmp_path):
    path = str(tmp_path / "new")
    with pytest.raises(errors.DeltaUnsupportedOptionError, match="replaceUsing"):
        spark.range(3).write.format("delta").option("replaceUsing", "id").save(path)
    assert not os.path.exists(os.path.join(path, "_delta_log"))
    assert not DeltaTable.isDeltaTable(spark, path)


@pytest.mark.parametrize("option,value", [
    ("replaceOn", "t.id = s.id"),
    ("replaceUsing", "id"),
    ("targetAlias", "t"),
    ("writePartitionColumns", "true"),
    ("useNullIntolerantEqualityWithDPO", "true"),
])
def test_unimplemented_write_options_raise(spark, table, option, value):
    before = log_files(table)
    with pytest.raises(errors.DeltaUnsupportedOptionError, match=option):
        spark.range(3).write.format("delta").mode("overwrite").option(option, value).save(table)
    assert log_files(table) == before


def test_every_write_entry_point_checks_options(spark, table):
    before = log_files(table)
    with pytest.raises(errors.DeltaUnsupportedOptionError, match="writePartitionColumns"):
        pydelta.write(spark.range(3), table, "append", writePartitionColumns="true")
    with pytest.raises(errors.DeltaUnsupportedOptionError, match="writePartitionColumns"):
        spark.range(3).write.format("delta").save(table, mode="append", writePartitionColumns="true")
    assert log_files(table) == before
    with pytest.raises(errors.DeltaUnsupportedOptionError, match="writePartitionColumns"):
        spark.range(3).write.format("delta").option("writePartitionColumns", "true").saveAsTable("options_refused")
    from pydelta.spark.base.catalog import table_location

    assert not os.path.exists(table_location(spark, "options_refused"))


def test_default_valued_write_options_are_accepted(spark, table):
    (spark.range(20, 22).write.format("delta").mode("append")
     .option("optimizeWrite", "false").option("writePartitionColumns", "false").save(table))
    assert ids(read(spark, table)) == [0, 1, 2, 10, 11, 20, 21]


def test_supported_write_options_still_work(spark, table):
    (spark.range(20, 26).repartition(1).write.format("delta").mode("append")
     .option("userMetadata", "from-test").option("maxRecordsPerFile", 2).option("compression", "gzip")
     .save(table))
    with open(os.path.join(table, "_delta_log", f"{2:020d}.json")) as f:
        actions = [json.loads(line) for line in f]
    adds = [a["add"] for a in actions if "add" in a]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["userMetadata"] == "from-test"
    assert len(adds) == 3 and all(".gz.parquet" in a["path"] for a in adds)
    assert ids(read(spark, table)) == [0, 1, 2, 10, 11, 20, 21, 22, 23, 24, 25]


def test_option_lists_are_consistent():
    from pydelta.spark.read.options import READ_SUPPORTED, READ_UNSUPPORTED
    from pydelta.spark.write.options import WRITE_SUPPORTED, WRITE_UNSUPPORTED

    assert not {k.lower() for k in READ_SUPPORTED} & {k.lower() for k in READ_UNSUPPORTED}
    assert not {k.lower() for k in WRITE_SUPPORTED} & {k.lower() for k in WRITE_UNSUPPORTED}
