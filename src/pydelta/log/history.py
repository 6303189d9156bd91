"""Table history from the commitInfo of each commit (DESCRIBE HISTORY), no Spark needed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydelta.log.segment import list_log
from pydelta.log.snapshot import Snapshot
from pydelta.log.storage import Storage
from pydelta.log.timestamps import commit_timestamps, ict_enablement_version


@dataclass(frozen=True)
class HistoryEntry:
    version: int
    timestamp: int  # ms
    commit_info: dict[str, Any]


def _commit_info(data: bytes) -> dict[str, Any]:
    for line in data.splitlines():
        line = line.strip()
        if line.startswith(b'{"commitInfo"'):
            first: dict[str, Any] = json.loads(line)["commitInfo"]
            return first
    for line in data.splitlines():
        line = line.strip()
        if line:
            action = json.loads(line)
            if "commitInfo" in action:
                found: dict[str, Any] = action["commitInfo"]
                return found
    return {}


def history(snapshot: Snapshot, limit: int | None = None) -> list[HistoryEntry]:
    """Newest first, at most `limit` entries, for versions whose commit file still exists."""
    storage: Storage = snapshot.storage
    commits = list_log(storage, snapshot.table_root).commits
    extra = dict(snapshot.unbackfilled_commits)  # managed commits the owner ratified, not backfilled yet
    commits.update(extra)  # the owner's copy of a version is authoritative (PROTOCOL.md)
    stamps = {
        c.version: c.timestamp
        for c in commit_timestamps(storage, snapshot.table_root, ict_enablement_version(snapshot.metadata), extra)
    }
    versions = sorted((v for v in commits if v <= snapshot.version), reverse=True)
    if limit is not None:  # delta-spark: a limit below 1 lists nothing
        versions = versions[:max(limit, 0)]
    out = []
    for v in versions:
        commit_info = _commit_info(commits[v].read(storage))
        out.append(HistoryEntry(v, stamps.get(v, commits[v].modification_time), commit_info))
    return out
