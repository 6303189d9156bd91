"""The delta-spark read options: versionAsOf, timestampAsOf."""

from __future__ import annotations

from typing import Any

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.log.snapshot import load_snapshot
from pydelta.spark.read import read_snapshot


def _option(opts: dict[str, Any], name: str) -> Any:
    for key, value in opts.items():
        if key.lower() == name.lower():
            return value
    return None


def read_delta(spark: Any, path: str, opts: dict[str, Any]) -> Any:
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
