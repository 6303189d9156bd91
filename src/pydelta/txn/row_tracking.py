"""Row tracking on commit (PROTOCOL.md "Row Tracking", writer requirements).

While `rowTracking` is supported and not suspended (`delta.rowTrackingSuspended`), every
committed `add` gets a `baseRowId` above the table's high-water mark (the `delta.rowTracking`
domain's `rowIdHighWaterMark`, raised in the same commit) and `defaultRowCommitVersion` =
the commit's version. An add or remove of a path that is live in the read snapshot (a
deletion-vector update, a remove) carries that file's values instead, so default row IDs
stay stable. Values are assigned per commit attempt: after losing a race the transaction
takes the winner's high-water mark and the new version.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from pydelta.errors import DeltaNotImplementedError
from pydelta.protocol import properties
from pydelta.protocol.action_types import Action, kind_and_body
from pydelta.protocol.actions import Metadata, Protocol

if TYPE_CHECKING:
    from pydelta.log.snapshot import Snapshot

DOMAIN = "delta.rowTracking"
ENABLE_KEY = "delta.enableRowTracking"
SUSPENDED_KEY = "delta.rowTrackingSuspended"
ROW_ID_COLUMN_KEY = "delta.rowTracking.materializedRowIdColumnName"
COMMIT_VERSION_COLUMN_KEY = "delta.rowTracking.materializedRowCommitVersionColumnName"


def assigns_row_ids(protocol: Protocol, metadata: Metadata) -> bool:
    """Row tracking supported and not suspended: commits must assign row IDs and versions."""
    from pydelta.txn.protocol_upgrade import all_features

    return "rowTracking" in all_features(protocol) and not properties.flag(metadata.configuration, SUSPENDED_KEY)


def enabled(metadata: Metadata) -> bool:
    return properties.flag(metadata.configuration, ENABLE_KEY)


def with_materialized_column_names(metadata: Metadata, protocol: Protocol) -> Metadata:
    """Tables supporting row tracking name their hidden materialized columns (delta-spark's
    `_row-id-col-<uuid>` / `_row-commit-version-col-<uuid>`) once, in the configuration."""
    from dataclasses import replace
    from uuid import uuid4

    from pydelta.txn.protocol_upgrade import all_features

    conf = metadata.configuration
    if "rowTracking" not in all_features(protocol) or (ROW_ID_COLUMN_KEY in conf and COMMIT_VERSION_COLUMN_KEY in conf):
        return metadata
    named = dict(conf)
    named.setdefault(ROW_ID_COLUMN_KEY, f"_row-id-col-{uuid4()}")
    named.setdefault(COMMIT_VERSION_COLUMN_KEY, f"_row-commit-version-col-{uuid4()}")
    return replace(metadata, configuration=named)


def high_water_mark(domains: Mapping[str, str]) -> int:
    """The highest fresh row ID assigned so far (-1: none)."""
    raw = domains.get(DOMAIN)
    if not raw:
        return -1
    return int(json.loads(raw).get("rowIdHighWaterMark", -1))


def domain_configuration(mark: int) -> str:
    return json.dumps({"rowIdHighWaterMark": mark}, separators=(",", ":"))


def live_row_tracking(snapshot: Snapshot | None) -> dict[str, tuple[Any, Any]]:
    """path (as logged) -> (baseRowId, defaultRowCommitVersion) of the snapshot's live files."""
    if snapshot is None:
        return {}
    files = snapshot.files()
    if "base_row_id" not in files.column_names:
        return {}
    return {p: (b, v) for p, b, v in zip(files.column("path").to_pylist(), files.column("base_row_id").to_pylist(),
                                         files.column("default_row_commit_version").to_pylist(), strict=True)
            if b is not None}


def _num_records(add: Mapping[str, Any]) -> int:
    stats = add.get("stats")
    records = json.loads(stats).get("numRecords") if stats else None
    if records is None:
        raise ValueError(f"row tracking needs numRecords in the stats of {add.get('path')!r}")
    return int(records)


def assign(file_actions: Sequence[Action], version: int, mark: int,
           live: Mapping[str, tuple[Any, Any]]) -> tuple[list[Action], int]:
    """`file_actions` with row IDs and commit versions filled in, and the new high-water mark."""
    out: list[Action] = []
    for action in file_actions:
        kind, original = kind_and_body(action)
        if kind not in ("add", "remove"):
            out.append(action)
            continue
        body = dict(original)
        known = live.get(body["path"])
        if known is not None:
            body.setdefault("baseRowId", known[0])
            if known[1] is not None:
                body.setdefault("defaultRowCommitVersion", known[1])
        elif kind == "add":
            records = _num_records(body)
            if body.get("baseRowId") is None:
                body["baseRowId"] = mark + 1
            mark = max(mark, int(body["baseRowId"]) + records - 1)
            body.setdefault("defaultRowCommitVersion", version)
        out.append(cast("Action", {kind: body}))
    return out, mark


def validate_configuration(conf: Mapping[str, str]) -> None:
    """Row IDs cannot be both required (enabled) and switched off (suspended)."""
    from pydelta.errors import InvalidTableError

    if properties.flag(conf, ENABLE_KEY) and properties.flag(conf, SUSPENDED_KEY):
        raise InvalidTableError(
            "[DELTA_ROW_TRACKING_ILLEGAL_PROPERTY_COMBINATION] Illegal table state was detected. Table properties "
            f"`{ENABLE_KEY}` and `{SUSPENDED_KEY}` are both set to true. The issue can be resolved by disabling "
            "any of the two table properties.")


def has_row_ids(snapshot: Snapshot) -> bool:
    """Does any live file still carry a baseRowId or defaultRowCommitVersion?"""
    files = snapshot.files()
    return any(c in files.column_names and files.column(c).null_count < files.num_rows
               for c in ("base_row_id", "default_row_commit_version"))


# ---- rewriting rows keeps their IDs (the materialized columns) ------------------------------------


def check_row_ids_preserved(snapshot: Snapshot, operation: str, *, supported: bool = True) -> None:
    """Rewriting rows of a table with row tracking enabled must keep their stable row IDs in the
    materialized columns: refuse by name where that is not done (`supported` False, or a
    table without the materialized column names)."""
    if enabled(snapshot.metadata) and not (supported and materializes_row_ids(snapshot.metadata)):
        raise DeltaNotImplementedError(
            f"{operation} rewrites rows of a table with row tracking enabled (delta.enableRowTracking); keeping "
            f"their row IDs in materialized row-tracking columns is not implemented for {operation} yet")


def materialized_names(metadata: Metadata) -> list[str]:
    """The table's materialized row ID and row commit version column names."""
    return [metadata.configuration[ROW_ID_COLUMN_KEY], metadata.configuration[COMMIT_VERSION_COLUMN_KEY]]


def materializes_row_ids(metadata: Metadata) -> bool:
    """Row tracking is enabled: rewritten rows must keep their stable row IDs and commit versions."""
    conf = metadata.configuration
    return enabled(metadata) and ROW_ID_COLUMN_KEY in conf and COMMIT_VERSION_COLUMN_KEY in conf
