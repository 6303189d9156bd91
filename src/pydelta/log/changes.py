"""Change data feed planning: which files hold the row changes of versions [start, end].

Pure log work (no Spark), shared by the batch change-feed reader and the streaming
source. The rules are delta-spark's (CDCReader.changesToDF):

- a commit with `cdc` actions is read from those files only; their rows carry
  `_change_type` themselves;
- otherwise `add` files with dataChange=true are inserts and `remove` files with
  dataChange=true are deletes (rows already deleted by the file's deletion vector
  excluded);
- a path both removed and added in one commit only changed its deletion vector:
  rows newly masked are deletes, rows unmasked (RESTORE) are inserts;
- a MERGE commit whose metrics say no row was inserted, updated or deleted has no
  changes;
- change data must have been recorded (delta.enableChangeDataFeed=true) at the start
  version and not switched off inside the range.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC
from typing import Any

import numpy as np

from pydelta.errors import DeltaAnalysisError, DeltaIllegalArgumentError, VersionNotFoundError
from pydelta.log.commits import CommitActions, parse_actions
from pydelta.log.segment import list_log
from pydelta.log.storage import FileInfo, Storage
from pydelta.log.timestamps import commit_timestamp, to_millis
from pydelta.protocol import properties
from pydelta.protocol.actions import Metadata

CDF_PROPERTY = "delta.enableChangeDataFeed"
CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
CDF_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)


@dataclass(frozen=True)
class ChangeFile:
    """One data or change file to read for the change feed, with what its rows mean."""

    path: str  # as written in the log: relative (URI-encoded) or absolute
    partition_values: dict[str, str | None]
    size: int
    version: int
    timestamp: int  # ms since epoch: in-commit timestamp where present, else the commit file's time
    change_type: str | None  # "insert" / "delete"; None for a cdc file (rows carry `_change_type`)
    deletion_vector: dict[str, Any] | None = None  # rows of the file to leave out
    only_rows: np.ndarray | None = None  # when set: read exactly these row indexes (a DV diff)
    stats: str | None = None  # the add/remove's stats JSON (file pruning, row counts); None for cdc files


@dataclass(frozen=True)
class VersionActions:
    """The actions of one commit with its timestamp, as the change feed and streaming need them."""

    version: int
    timestamp: int
    actions: CommitActions


def is_cdf_enabled(metadata: Metadata) -> bool:
    return properties.ENABLE_CHANGE_DATA_FEED.get(metadata.configuration)


def read_versions(
    storage: Storage, table_root: str, start: int, end: int, extra_commits: dict[int, FileInfo] | None = None
) -> Iterator[VersionActions]:
    """Commits start..end (inclusive, clamped to what exists), in order; a gap is an error.

    `extra_commits` are commits not in the listing (a managed table's un-backfilled ones,
    `Snapshot.unbackfilled_commits`), so the feed reaches the owner's latest version.
    """
    commits = list_log(storage, table_root, start).commits
    commits.update(extra_commits or {})  # the owner's copy of a version is authoritative (PROTOCOL.md)
    previous_ts: int | None = None
    for version in range(start, end + 1):
        info: FileInfo | None = commits.get(version)
        if info is None:
            if version > max(commits, default=-1):
                return
            raise VersionNotFoundError(
                f"[DELTA_VERSION_NOT_FOUND] commit {version} of {table_root} is missing "
                "(removed by log cleanup?): cannot read its changes"
            )
        actions = parse_actions(info.read(storage), version, info.path)
        ts = previous_ts = commit_timestamp(info, actions.in_commit_timestamp, previous_ts)
        yield VersionActions(version, ts, actions)


def _skips_noop_merge(commit_info: dict[str, Any] | None) -> bool:
    if not commit_info or commit_info.get("operation") != "MERGE":
        return False
    metrics = commit_info.get("operationMetrics") or {}
    keys = ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted")
    return all(str(metrics.get(k)) == "0" for k in keys)


def change_files(version: VersionActions, table_root: str, storage: Storage | None = None) -> list[ChangeFile]:
    """The change files of one commit, by delta-spark's rules (module docstring); `storage` (the
    table's) reads the deletion vectors of files re-added with other ones."""
    a = version.actions
    v, ts = version.version, version.timestamp
    if a.cdcs:
        return [
            ChangeFile(c["path"], c.get("partitionValues") or {}, int(c.get("size") or 0), v, ts, None)
            for c in a.cdcs
        ]
    if _skips_noop_merge(a.commit_info):
        return []
    adds = [x for x in a.adds or _bodies(a.add_files()) if x.get("dataChange", True)]
    removes = [x for x in a.removes or _bodies(a.remove_files()) if x.get("dataChange", True)]
    removed_by_path = {r["path"]: r for r in removes}
    added_paths = {x["path"] for x in adds}
    out: list[ChangeFile] = []
    for r in removes:
        if r["path"] not in added_paths:
            out.append(_file(r, v, ts, "delete"))
    for x in adds:
        removed = removed_by_path.get(x["path"])
        if removed is None:
            out.append(_file(x, v, ts, "insert"))
        else:
            out.extend(_dv_diff(removed, x, v, ts, table_root, storage))
    return out


def _bodies(array: Any) -> list[Mapping[str, Any]]:
    return array.to_pylist() if len(array) else []


def _file(body: Mapping[str, Any], v: int, ts: int, change_type: str) -> ChangeFile:
    pv = body.get("partitionValues") or {}
    if isinstance(pv, list):  # Arrow map -> list of pairs
        pv = dict(pv)
    return ChangeFile(body["path"], pv, int(body.get("size") or 0), v, ts, change_type, body.get("deletionVector"),
                      stats=body.get("stats"))


def _deleted_rows(dv: dict[str, Any] | None, table_root: str, storage: Storage | None) -> np.ndarray:
    from pydelta.log.deletion_vector_files import read_deleted_rows
    from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor

    if not dv:
        return np.empty(0, dtype=np.uint64)
    return read_deleted_rows(DeletionVectorDescriptor.from_dict(dv), table_root, storage)


def _dv_diff(remove: Mapping[str, Any], add: Mapping[str, Any], v: int, ts: int, table_root: str,
             storage: Storage | None) -> list[ChangeFile]:
    """A file re-added with another deletion vector: newly masked rows deleted, unmasked rows re-inserted."""
    before = _deleted_rows(remove.get("deletionVector"), table_root, storage)
    after = _deleted_rows(add.get("deletionVector"), table_root, storage)
    out = []
    newly_deleted = np.setdiff1d(after, before)
    if len(newly_deleted):
        out.append(_with_rows(_file(remove, v, ts, "delete"), newly_deleted))
    restored = np.setdiff1d(before, after)
    if len(restored):
        out.append(_with_rows(_file(add, v, ts, "insert"), restored))
    return out


def _with_rows(f: ChangeFile, rows: np.ndarray) -> ChangeFile:
    return replace(f, deletion_vector=None, only_rows=rows.astype(np.int64))


# ---- the range of a batch change-feed read ---------------------------------------------


def _missing_change_data(version: int, start: int, end: int) -> DeltaAnalysisError:
    return DeltaAnalysisError(
        f"[DELTA_MISSING_CHANGE_DATA] Error getting change data for range [{start} , {end}] as change data "
        f"was not recorded for version [{version}]. If you've enabled change data feed on this table, use "
        "`DESCRIBE HISTORY` to see when it was first enabled. Otherwise, to start recording change data, use "
        f"`ALTER TABLE table_name SET TBLPROPERTIES ({CDF_PROPERTY}=true)`."
    )


def invalid_range(start: int, end: int) -> DeltaIllegalArgumentError:
    return DeltaIllegalArgumentError(
        f"[DELTA_INVALID_CDC_RANGE] CDC range from start {start} to end {end} was invalid. "
        "End cannot be before start."
    )


def _version_option(value: Any, name: str) -> int:
    if value is None:
        raise DeltaIllegalArgumentError(
            "[DELTA_CDC_READ_NULL_RANGE_BOUNDARY] CDC read start/end parameters cannot be null. "
            "Please provide a valid version or timestamp."
        )
    try:
        version = int(str(value).strip())
    except ValueError:
        raise DeltaIllegalArgumentError(f"[DELTA_INVALID_SOURCE_VERSION] {name}({value}) is invalid") from None
    if version < 0:
        raise DeltaIllegalArgumentError(f"[DELTA_INVALID_SOURCE_VERSION] {name}({value}) is invalid")
    return version


def version_from_start_timestamp(
    timestamps: list[tuple[int, int]], ts_ms: int, table_root: str, can_exceed_latest: bool = False
) -> int:
    """The first version committed at or after `ts_ms` (delta-spark's starting-timestamp rule).

    `timestamps` is [(version, ms)] ascending. A timestamp before the earliest commit gives
    the earliest version; one after the latest commit is an error, or with
    `can_exceed_latest` the version after the latest.
    """
    for version, ts in timestamps:
        if ts >= ts_ms:
            return version
    if can_exceed_latest:
        return timestamps[-1][0] + 1
    from datetime import datetime

    last_v, last_ts = timestamps[-1]
    fmt = datetime.fromtimestamp(last_ts / 1000, tz=UTC).isoformat()
    raise VersionNotFoundError(
        f"[DELTA_TIMESTAMP_GREATER_THAN_COMMIT] The provided timestamp "
        f"({datetime.fromtimestamp(ts_ms / 1000, tz=UTC).isoformat()}) is after the latest version "
        f"available to this table ({fmt}, version {last_v}) of {table_root}. Please use a timestamp before or at {fmt}."
    )


@dataclass(frozen=True)
class ChangeRange:
    start: int
    end: int  # inclusive; end < start means an empty answer


def resolve_range(snapshot: Any, options: dict[str, Any], allow_out_of_range: bool = False) -> ChangeRange:
    """The versions a batch change-feed read covers, from delta-spark's option names.

    `snapshot` is the table's latest snapshot; `options` keys are compared case-insensitively
    (startingVersion / startingTimestamp, endingVersion / endingTimestamp).
    `allow_out_of_range` is delta-spark's changeDataFeed.timestampOutOfRange.enabled: a start
    after the latest version gives no changes and an end after it means the latest.
    """
    from pydelta.log.timestamps import commit_timestamps, ict_enablement_version, version_at

    opts = {k.lower(): v for k, v in options.items()}
    stamps: list[tuple[int, int]] | None = None

    def timestamps() -> list[tuple[int, int]]:
        nonlocal stamps
        if stamps is None:
            got = commit_timestamps(snapshot.storage, snapshot.table_root, ict_enablement_version(snapshot.metadata),
                                    extra_commits=dict(snapshot.unbackfilled_commits))
            stamps = [(c.version, c.timestamp) for c in got]
        return stamps

    latest = snapshot.version
    if "startingversion" in opts:
        start = _version_option(opts["startingversion"], "startingVersion")
        start_ts = None
    elif "startingtimestamp" in opts:
        start_ts = to_millis(opts["startingtimestamp"])
        start = version_from_start_timestamp(timestamps(), start_ts, snapshot.table_root, allow_out_of_range)
    else:
        raise DeltaAnalysisError(
            "[DELTA_NO_START_FOR_CDC_READ] No startingVersion or startingTimestamp provided for CDC read.")
    if start > latest:
        if allow_out_of_range:
            return ChangeRange(start, start - 1)
        raise DeltaIllegalArgumentError(
            f"[DELTA_CDC_START_VERSION_AFTER_LATEST] Start version {start} for change data feed exceeds "
            f"the latest table version {latest}."
        )
    end = latest
    if "endingversion" in opts:
        end = min(_version_option(opts["endingversion"], "endingVersion"), latest)
        if end < start:
            raise invalid_range(start, end)
    elif "endingtimestamp" in opts:
        end_ts = to_millis(opts["endingtimestamp"])
        if start_ts is not None and start_ts > end_ts:
            raise invalid_range(start, end)
        from pydelta.log.timestamps import CommitTimestamp

        stamps_now = timestamps()
        if allow_out_of_range and end_ts > stamps_now[-1][1]:
            end = latest
        else:
            end = version_at([CommitTimestamp(v, t) for v, t in stamps_now], end_ts, snapshot.table_root)
        if end < start:
            if start_ts is not None and end == start - 1:
                return ChangeRange(start, end)  # both timestamps between two commits: no changes
            raise invalid_range(start, end)
    return ChangeRange(start, end)


def plan_changes(snapshot: Any, change_range: ChangeRange, read_schema: tuple[Metadata, int] | None = None
                 ) -> list[ChangeFile]:
    """The change files of versions start..end, checking change data was recorded throughout.

    `snapshot` is the latest snapshot (its storage and root are used); the metadata in force
    at the start version is loaded from the log (a version removed by log cleanup is an error).
    `read_schema` (metadata, version) on a column-mapped table: every schema in the range
    must read as that one (no rename or drop in between), as delta-spark checks.
    """
    from pydelta.log.snapshot import load_snapshot

    start, end = change_range.start, change_range.end
    if end < start:
        return []
    start_metadata = load_snapshot(snapshot.table_root, version=start, storage=snapshot.storage).metadata
    if not is_cdf_enabled(start_metadata):
        raise _missing_change_data(start, start, end)
    # A start schema that does not read as the read schema is reported at the change that ended it.
    start_incompatible = read_schema is not None and not _read_compatible(start_metadata, read_schema[0])
    out: list[ChangeFile] = []
    extra = dict(snapshot.unbackfilled_commits)
    for va in read_versions(snapshot.storage, snapshot.table_root, start, end, extra):
        m = va.actions.metadata
        if m is not None and not is_cdf_enabled(m):
            raise _missing_change_data(va.version, start, end)
        if (m is not None and read_schema is not None and va.version > start
                and (start_incompatible or not _read_compatible(m, read_schema[0]))):
            raise _incompatible_schema_change(va.version, read_schema, change_range)
        out.extend(change_files(va, snapshot.table_root, snapshot.storage))
    if start_incompatible:
        raise _incompatible_schema_change(start, read_schema, change_range)  # type: ignore[arg-type]
    return out


def _read_compatible(metadata: Metadata, read_metadata: Metadata) -> bool:
    """Whether files written under `metadata` read right under `read_metadata`'s column names:
    no column of it renamed or dropped there (columns added later are fine). Column-mapped
    tables only: without column mapping a column cannot be renamed or dropped."""
    from pydelta.protocol.schema import column_mapping_mode, physical_name

    if column_mapping_mode(read_metadata.configuration) == "none":
        return True
    read_names = {physical_name(f): f.name for f in read_metadata.schema.fields}
    return all(read_names.get(physical_name(f)) == f.name for f in metadata.schema.fields)


def _incompatible_schema_change(version: int, read_schema: tuple[Metadata, int],
                                change_range: ChangeRange) -> DeltaAnalysisError:
    read_metadata, read_version = read_schema
    start, end = change_range.start, change_range.end
    return DeltaAnalysisError(
        f"[DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_SCHEMA_CHANGE] Retrieving table changes between version {start} "
        f"and {end} failed because of an incompatible schema change. Your read schema is "
        f"{read_metadata.schema.to_json()} at version {read_version}, but we found an incompatible schema change "
        f"at version {version}. If possible, please query the table changes separately from version {start} to "
        f"{version - 1}, and from version {version} to {end}.")
