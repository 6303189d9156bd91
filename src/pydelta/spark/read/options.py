"""The delta-spark batch read options: versionAsOf, timestampAsOf, path, and the change
data feed (readChangeFeed with startingVersion/startingTimestamp/endingVersion/endingTimestamp).

Streaming-only options in a batch read are refused by name (`READ_UNSUPPORTED`), as are
unknown keys (delta-spark ignores them); spark.pydelta.options.ignoreUnknown=true restores
delta-spark's leniency.
"""

from __future__ import annotations

from typing import Any

from pydelta.errors import (
    DeltaAnalysisError,
    DeltaIllegalArgumentError,
    DeltaTableNotFoundError,
    DeltaUnsupportedOptionError,
)
from pydelta.log.snapshot import Snapshot
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.engine import table_snapshot
from pydelta.spark.base.option_keys import IGNORE_UNKNOWN_CONF, option_value, reject_unsupported_options
from pydelta.spark.base.spark_errors import no_table_to_read
from pydelta.spark.read.scan import read_snapshot
from pydelta.spark.read.time_travel import split_at_syntax, timestamp_ms

# The read options pydelta implements; keys are case-insensitive.
CDF_RANGE_OPTIONS = ("startingVersion", "startingTimestamp", "endingVersion", "endingTimestamp")
READ_SUPPORTED = ("versionAsOf", "timestampAsOf", "path", "readChangeFeed", "readChangeData", *CDF_RANGE_OPTIONS)

# Option -> the value meaning "pydelta's behaviour anyway" (accepted), None: always refused.
READ_UNSUPPORTED: dict[str, str | None] = {
    "maxFilesPerTrigger": None,
    "maxBytesPerTrigger": None,
    "ignoreFileDeletion": "false",
    "ignoreChanges": "false",
    "ignoreDeletes": "false",
    "skipChangeCommits": "false",
    "failOnDataLoss": "true",
    "excludeRegex": None,
    "schemaTrackingLocation": None,
    "schemaLocation": None,
    "streamingSourceTrackingId": None,
    "allowSourceColumnDrop": None,
    "allowSourceColumnRename": None,
    "allowSourceColumnTypeChange": None,
}


def _flag(opts: dict[str, Any], name: str) -> bool:
    value = option_value(opts, name)
    if value is None:
        return False
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise DeltaIllegalArgumentError(
            f"[DELTA_ILLEGAL_OPTION] Invalid value '{value}' for option '{name}', must be 'true' or 'false'")
    return text == "true"


def is_change_feed_read(opts: dict[str, Any]) -> bool:
    return _flag(opts, "readChangeFeed") or _flag(opts, "readChangeData")


def read_delta(spark: SparkSession, path: str, opts: dict[str, Any]) -> DataFrame:
    """The Delta table at `path` as a DataFrame, honouring the read options in `opts`."""
    ignore = str(spark.conf.get(IGNORE_UNKNOWN_CONF, "false")).lower() == "true"
    reject_unsupported_options(opts, READ_UNSUPPORTED, "read", READ_SUPPORTED, ignore)
    change_feed = is_change_feed_read(opts)
    if not change_feed and not ignore:
        for name in CDF_RANGE_OPTIONS:
            if option_value(opts, name) is not None:
                raise DeltaUnsupportedOptionError(
                    f"The read option {name!r} applies to change data feed reads (readChangeFeed=true) and "
                    "streaming reads; a plain batch read would ignore it.",
                    option=name,
                )
    version = option_value(opts, "versionAsOf")
    timestamp = option_value(opts, "timestampAsOf")
    path, at_version, at_timestamp = split_at_syntax(spark, path)
    if at_version is not None or at_timestamp is not None:
        if version is not None or timestamp is not None:
            raise DeltaAnalysisError("[DELTA_UNSUPPORTED_TIME_TRAVEL_MULTIPLE_FORMATS] "
                                     "Cannot specify time travel in multiple formats.")
        version, timestamp = at_version, at_timestamp
    if version is not None and timestamp is not None:
        raise DeltaIllegalArgumentError("cannot specify both versionAsOf and timestampAsOf")
    if version is not None:
        try:
            version = int(version)
        except (TypeError, ValueError):
            raise DeltaIllegalArgumentError(f"versionAsOf must be an integer, got {version!r}") from None
    from pydelta.spark.base.hadoop_storage import require_connector

    require_connector(spark, path)
    snapshot = load_for_read(spark, path, version=version,
                             timestamp=None if timestamp is None else timestamp_ms(spark, timestamp))
    if change_feed:
        from pydelta.spark.read.cdf import read_change_feed

        return read_change_feed(spark, snapshot, opts)
    return read_snapshot(spark, snapshot)


def load_for_read(spark: SparkSession, path: str, version: int | None = None, timestamp: Any = None) -> Snapshot:
    """The snapshot a read of `path` scans; delta-spark's read error when there is no table."""
    try:
        return table_snapshot(spark, path, version=version, timestamp=timestamp)
    except DeltaTableNotFoundError:
        raise no_table_to_read(path, spark) from None
