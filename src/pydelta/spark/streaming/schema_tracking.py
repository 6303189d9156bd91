"""Schema tracking for the Delta streaming source (`schemaTrackingLocation`), after delta-spark's
DeltaSourceMetadataTrackingLog.

A stream over a column-mapped table can survive non-additive schema changes (RENAME/DROP
COLUMN, type widening) only if it knows which schema each stretch of the table was read with.
The log (`<location>/_schema_log_<tableId>[_<trackingId>]/0, 1, ...`, one JSON entry per
file after a "v1" line) holds the schema the stream reads with, from a table version on. When
the source reaches a commit whose metadata changes the schema it:

1. ends the batch before that commit, then
2. records the new schema in the log (at that version) and fails with
   DELTA_STREAMING_METADATA_EVOLUTION: the restarted query plans with the logged schema.

Renames, drops and type changes additionally need the user's consent through the reader
options allowSourceColumnRename / allowSourceColumnDrop / allowSourceColumnTypeChange
("always", or the version of the change), else DELTA_STREAMING_CANNOT_CONTINUE_PROCESSING_POST_SCHEMA_EVOLUTION.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydelta.errors import DeltaAnalysisError
from pydelta.protocol.actions import Metadata
from pydelta.protocol.schema import StructType, parse_schema, physical_name

_HEADER = "v1"


@dataclass(frozen=True)
class TrackedSchema:
    """One log entry: the schema (and partitioning) the stream reads with from `version` on."""

    schema: StructType
    partition_columns: tuple[str, ...]
    version: int
    configuration: dict[str, str]

    def to_json(self) -> str:
        return json.dumps({
            "tableSchema": self.schema.to_json(),
            "partitionSchema": json.dumps(list(self.partition_columns)),
            "deltaCommitVersion": self.version,
            "tableConfigurations": self.configuration,
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> TrackedSchema:
        d = json.loads(text)
        return cls(parse_schema(d["tableSchema"]), tuple(json.loads(d.get("partitionSchema") or "[]")),
                   int(d["deltaCommitVersion"]), dict(d.get("tableConfigurations") or {}))

    @classmethod
    def of(cls, metadata: Metadata, version: int) -> TrackedSchema:
        return cls(metadata.schema, tuple(metadata.partition_columns), version, dict(metadata.configuration))


class SchemaTrackingLog:
    """The tracking log directory of one (table, stream)."""

    def __init__(self, location: str, table_id: str, tracking_id: str | None = None) -> None:
        name = f"_schema_log_{table_id}" + (f"_{tracking_id}" if tracking_id else "")
        self.directory = os.path.join(location, name)

    def _entries(self) -> list[int]:
        try:
            return sorted(int(n) for n in os.listdir(self.directory) if n.isdigit())
        except FileNotFoundError:
            return []

    def entries(self) -> list[TrackedSchema]:
        """Every entry, oldest first."""
        out = []
        for index in self._entries():
            with open(os.path.join(self.directory, str(index)), encoding="utf-8") as f:
                lines = f.read().splitlines()
            out.append(TrackedSchema.from_json(lines[1]))
        return out

    def latest(self) -> TrackedSchema | None:
        entries = self.entries()
        return entries[-1] if entries else None

    def add(self, entry: TrackedSchema) -> None:
        """Append an entry (atomically: a temp file linked into place, so two writers cannot both win)."""
        os.makedirs(self.directory, exist_ok=True)
        entries = self._entries()
        index = entries[-1] + 1 if entries else 0
        tmp = os.path.join(self.directory, f".{index}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{_HEADER}\n{entry.to_json()}")
        try:
            os.link(tmp, os.path.join(self.directory, str(index)))
        except FileExistsError:
            pass  # a concurrent run recorded it first
        finally:
            os.unlink(tmp)


def non_additive_changes(old: StructType, new: StructType) -> dict[str, list[str]]:
    """Top-level renames, drops and type changes from `old` to `new`, matched by physical name."""
    old_by = {physical_name(f): f for f in old.fields}
    new_by = {physical_name(f): f for f in new.fields}
    out: dict[str, list[str]] = {"rename": [], "drop": [], "type": []}
    for key, f in old_by.items():
        g = new_by.get(key)
        if g is None:
            out["drop"].append(f.name)
        else:
            if g.name != f.name:
                out["rename"].append(f"{f.name} -> {g.name}")
            if g.type != f.type:
                out["type"].append(f"{g.name}: {getattr(f.type, 'name', f.type)} -> {getattr(g.type, 'name', g.type)}")
    return out


_OPTIONS = {"rename": "allowSourceColumnRename", "drop": "allowSourceColumnDrop", "type": "allowSourceColumnTypeChange"}


def check_consent(options: Mapping[str, Any], changes: dict[str, list[str]], version: int) -> None:
    """Non-additive changes need the user's consent per kind ("always" or this change's version)."""
    opts = {str(k).lower(): str(v).strip().lower() for k, v in options.items()}
    missing = []
    for kind, items in changes.items():
        if not items:
            continue
        given = opts.get(_OPTIONS[kind].lower())
        if given not in ("always", str(version)):
            missing.append((kind, items))
    if missing:
        what = "; ".join(f"{kind}: {', '.join(items)}" for kind, items in missing)
        keys = ", ".join(f"'{_OPTIONS[kind]}' = 'always' (or '{version}')" for kind, _ in missing)
        raise DeltaAnalysisError(
            f"[DELTA_STREAMING_CANNOT_CONTINUE_PROCESSING_POST_SCHEMA_EVOLUTION] We've detected one or more "
            f"non-additive schema change(s) ({what}) at table version {version}. These changes may break the query "
            "downstream; review them, then restart the query with the reader option(s) " + keys + ".")


def evolution_error(entry: TrackedSchema) -> DeltaAnalysisError:
    return DeltaAnalysisError(
        "[DELTA_STREAMING_METADATA_EVOLUTION] The schema, table configuration or protocol of your Delta table has "
        "changed during streaming. The schema or metadata tracking log has been updated. Please restart the stream "
        f"to continue processing using the updated metadata. Updated schema: {entry.schema.to_json()}. Updated "
        f"at table version {entry.version}.")
