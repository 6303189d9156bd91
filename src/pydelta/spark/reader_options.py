"""The delta-spark read options pydelta implements: versionAsOf, timestampAsOf, path.

delta-spark read options pydelta does not implement (change data feed, streaming) are
refused by name (`READ_UNSUPPORTED`): ignoring `readChangeFeed=true` would return the
plain snapshot, a wrong answer. Unknown keys are refused too (delta-spark ignores them);
spark.pydelta.options.ignoreUnknown=true restores delta-spark's leniency.
"""

from __future__ import annotations

from typing import Any

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.log.snapshot import load_snapshot
from pydelta.spark.read import read_snapshot
from pydelta.spark.write_options import IGNORE_UNKNOWN_CONF, reject_unsupported_options

# The read options pydelta implements; keys are case-insensitive.
READ_SUPPORTED = ("versionAsOf", "timestampAsOf", "path")

# Option -> the value meaning "pydelta's behaviour anyway" (accepted), None: always refused.
READ_UNSUPPORTED: dict[str, str | None] = {
    "readChangeFeed": "false",
    "readChangeData": "false",
    "startingVersion": None,
    "startingTimestamp": None,
    "endingVersion": None,
    "endingTimestamp": None,
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


def _option(opts: dict[str, Any], name: str) -> Any:
    for key, value in opts.items():
        if key.lower() == name.lower():
            return value
    return None


def read_delta(spark: Any, path: str, opts: dict[str, Any]) -> Any:
    """The Delta table at `path` as a DataFrame, honouring the read options in `opts`."""
    ignore = str(spark.conf.get(IGNORE_UNKNOWN_CONF, "false")).lower() == "true"
    reject_unsupported_options(opts, READ_UNSUPPORTED, "read", READ_SUPPORTED, ignore)
    version = _option(opts, "versionAsOf")
    timestamp = _option(opts, "timestampAsOf")
    if version is not None and timestamp is not None:
        raise DeltaIllegalArgumentError("cannot specify both versionAsOf and timestampAsOf")
    if version is not None:
        try:
            version = int(version)
        except (TypeError, ValueError):
            raise DeltaIllegalArgumentError(f"versionAsOf must be an integer, got {version!r}") from None
    snapshot = load_snapshot(path, version=version, timestamp=timestamp)
    return read_snapshot(spark, snapshot)
