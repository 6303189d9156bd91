"""Offsets of the Delta streaming source, in delta-spark's DeltaSourceOffset JSON form.

An offset (reservoirVersion, index) says "every indexed file up to and including
`index` of commit `reservoirVersion` has been handed out". Index -1 (BASE_INDEX) is
"nothing of this version yet"; files of a version are indexed 0..n-1. After the last
file of a version the source moves to (version + 1, -1), so an offset never names a
version's end. `isStartingVersion` is true while the stream is still inside the initial
snapshot taken at query start (delta-spark's `isInitialSnapshot`, serialized under this
name). The JSON is delta-spark's (sourceVersion 1), so a checkpoint stays readable by
people who know that format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydelta.errors import DeltaIllegalArgumentError

BASE_INDEX = -1
SOURCE_VERSION = 1


@dataclass(frozen=True, order=False)
class SourceOffset:
    table_id: str
    version: int
    index: int
    initial_snapshot: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "sourceVersion": SOURCE_VERSION,
            "reservoirId": self.table_id,
            "reservoirVersion": self.version,
            "index": self.index,
            "isStartingVersion": self.initial_snapshot,
        }

    @property
    def key(self) -> tuple[int, int]:
        """Position for ordering: (version, index)."""
        return (self.version, self.index)


def parse_offset(raw: Any, table_id: str) -> SourceOffset:
    """An offset as Spark gives it back (a dict, or its JSON); checks it is this table's."""
    import json

    if isinstance(raw, str):
        raw = json.loads(raw)
    try:
        source_version = int(raw.get("sourceVersion", SOURCE_VERSION))
        offset = SourceOffset(
            str(raw["reservoirId"]), int(raw["reservoirVersion"]), int(raw["index"]),
            bool(raw["isStartingVersion"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        raise DeltaIllegalArgumentError(
            f"[DELTA_INVALID_SOURCE_OFFSET_FORMAT] The stored source offset format is invalid: {raw!r}"
        ) from None
    if source_version > 3:
        raise DeltaIllegalArgumentError(
            f"[DELTA_INVALID_FORMAT_FROM_SOURCE_VERSION] Unsupported format. Expected version should be smaller "
            f"than or equal to 3 but was {source_version}. Please upgrade to newer version of Delta."
        )
    if offset.index == -100:  # delta-spark's in-memory BASE_INDEX, should it ever be serialized
        offset = SourceOffset(offset.table_id, offset.version, BASE_INDEX, offset.initial_snapshot)
    if offset.table_id != table_id:
        raise DeltaIllegalArgumentError(
            f"[DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE] The streaming query was reading from an unexpected "
            f"Delta table (id = '{table_id}'). It used to read from another Delta table (id = '{offset.table_id}') "
            "according to checkpoint. This may happen when you changed the code to read from a new table or you "
            "deleted and re-created a table. Please revert your change or delete your streaming query checkpoint "
            "to restart from scratch."
        )
    return offset
