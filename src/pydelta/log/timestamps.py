"""Commit timestamps and timestamp -> version resolution for time travel.

A commit's timestamp is its file's modification time, made monotonic as
delta-spark does, or its `commitInfo.inCommitTimestamp` from the version in
which in-commit timestamps were enabled on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydelta.errors import DeltaIllegalArgumentError, VersionNotFoundError
from pydelta.log.segment import list_log
from pydelta.log.storage import FileInfo, Storage

if TYPE_CHECKING:
    from pydelta.protocol.actions import Metadata



def ict_enablement_version(metadata: Metadata) -> int | None:
    """First version whose commit timestamp is its in-commit timestamp, or None."""
    conf = metadata.configuration
    if conf.get("delta.enableInCommitTimestamps", "false").lower() != "true":
        return None
    return int(conf.get("delta.inCommitTimestampEnablementVersion", "0"))


@dataclass(frozen=True)
class CommitTimestamp:
    version: int
    timestamp: int  # ms since epoch


def _first_commit_info(data: bytes) -> dict[str, Any] | None:
    for line in data.splitlines():
        line = line.strip()
        if not line:
            continue
        action = json.loads(line)
        if "commitInfo" in action:
            info: dict[str, Any] | None = action["commitInfo"]
            return info
    return None


def commit_timestamps(
    storage: Storage,
    table_root: str,
    ict_enablement_version: int | None,
    extra_commits: dict[int, FileInfo] | None = None,
) -> list[CommitTimestamp]:
    """Timestamps of all commits still in the log, ascending by version.

    `extra_commits` are commits not in the listing (a managed table's un-backfilled ones).
    """
    commits = list_log(storage, table_root).commits
    commits.update(extra_commits or {})  # the owner's copy of a version is authoritative (PROTOCOL.md)
    out: list[CommitTimestamp] = []
    previous = None
    for version in sorted(commits):
        info = commits[version]
        ict = None
        if ict_enablement_version is not None and version >= ict_enablement_version:
            ci = _first_commit_info(info.read(storage))
            if ci is not None and ci.get("inCommitTimestamp") is not None:
                ict = int(ci["inCommitTimestamp"])
        ts = commit_timestamp(info, ict, previous)
        out.append(CommitTimestamp(version, ts))
        previous = ts
    return out


def commit_timestamp(info: FileInfo, in_commit_timestamp: int | None, previous: int | None) -> int:
    """One commit's timestamp: its in-commit timestamp, else its file time made monotonic.

    delta-spark bumps a file time that is not after the previous commit's timestamp to
    previous + 1, so versions keep a strict order in time.
    """
    if in_commit_timestamp is not None:
        return in_commit_timestamp
    ts = info.modification_time
    return previous + 1 if previous is not None and ts <= previous else ts


def to_millis(timestamp: object) -> int:
    """Accept datetime, date string, ISO timestamp string, or epoch ms."""
    if isinstance(timestamp, bool):
        raise DeltaIllegalArgumentError(f"invalid timestamp {timestamp!r}")
    if isinstance(timestamp, (int, float)):
        return int(timestamp)
    if isinstance(timestamp, datetime):
        dt = timestamp if timestamp.tzinfo else timestamp.astimezone()
        return int(dt.timestamp() * 1000)
    if isinstance(timestamp, str):
        text = timestamp.strip().replace("Z", "+00:00")
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise DeltaIllegalArgumentError(f"cannot parse timestamp {timestamp!r}") from None
        if dt.tzinfo is None:
            dt = dt.astimezone()  # session-local, as Spark interprets a bare timestamp
        return int(dt.timestamp() * 1000)
    raise DeltaIllegalArgumentError(f"invalid timestamp {timestamp!r}")


def version_at(timestamps: list[CommitTimestamp], ts_ms: int, table_root: str) -> int:
    """The newest version committed at or before `ts_ms` (delta-spark's rule)."""
    if not timestamps:
        raise VersionNotFoundError(f"no commits found in {table_root}")
    if ts_ms < timestamps[0].timestamp:
        raise VersionNotFoundError(
            f"timestamp {_fmt(ts_ms)} is before the earliest available version "
            f"{timestamps[0].version} ({_fmt(timestamps[0].timestamp)}) of {table_root}",
            error_class="DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION",
        )
    if ts_ms > timestamps[-1].timestamp:
        raise VersionNotFoundError(
            f"timestamp {_fmt(ts_ms)} is after the latest version {timestamps[-1].version} "
            f"({_fmt(timestamps[-1].timestamp)}) of {table_root}",
            error_class="DELTA_TIMESTAMP_GREATER_THAN_COMMIT",
        )
    best = timestamps[0].version
    for ct in timestamps:
        if ct.timestamp <= ts_ms:
            best = ct.version
        else:
            break
    return best


def _fmt(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()
