"""Metadata cleanup: deleting expired log files (PROTOCOL.md, "Metadata Cleanup").

The rule keeps the table reconstructable at every version it still lists:
 1. `cutoff` is midnight UTC of (now - `delta.logRetentionDuration`), as delta-spark does,
    so the log is trimmed at most once a day.
 2. The cutoff commit is the newest commit whose timestamp is not after `cutoff`; commit
    timestamps are file modification times made strictly increasing with the version
    (delta-spark's adjustment, since file systems may disagree).
 3. The cutoff checkpoint is the newest complete checkpoint at or before the cutoff commit.
    Without one nothing is deleted.
 4. Deleted: commits, checkpoints (any kind, incomplete multi-part sets included) and `.crc`
    files of versions before the cutoff checkpoint, and log compactions starting at or
    before it. The checkpoint and its own commit are kept (commitInfo lives only there).
 5. Managed commits (seed 001): un-backfilled commit files in `_delta_log/_commits` with a
    version <= the cutoff checkpoint are deleted too (ratified ones are backfilled by then,
    the rest are failed attempts). Only backfilled commits count for steps 2-4, and the
    checkpoint's own backfilled commit is always kept (>= 1 backfilled commit preserved).
 6. Sidecars in `_delta_log/_sidecars` that no remaining checkpoint references and that
    are older than `cutoff` (so in-progress checkpoints are safe) are deleted, as are
    leftover temp files of crashed writers older than `cutoff`.
"""

from __future__ import annotations

import io
import json
import os
import re
import time
from dataclasses import dataclass

import pyarrow.parquet as pq

from pydelta.log.checkpoint_writer import interval_property_ms
from pydelta.log.segment import classify
from pydelta.log.snapshot import Snapshot
from pydelta.log.storage import FileInfo, Storage

__all__ = ["DEFAULT_LOG_RETENTION", "LOG_RETENTION_KEY", "cleanup_expired_logs"]

LOG_RETENTION_KEY = "delta.logRetentionDuration"
DEFAULT_LOG_RETENTION = "interval 30 days"
ENABLE_CLEANUP_KEY = "delta.enableExpiredLogCleanup"
_DAY_MS = 86_400_000

_VERSIONED = re.compile(r"^(\d{20})\.(json|crc|checkpoint\..*)$")
_COMPACTION = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
# `Storage.list_from` lists names >= a start name; every log file name (digits, '.', '_')
# sorts after a space, and a trailing "/" would be normalized away.
_LIST_ALL = " "
_UNBACKFILLED = re.compile(r"^(\d{20})\.[0-9a-fA-F-]{36}\.json$")
_TEMP = re.compile(r"^\..+\.[0-9a-fA-F-]{32,36}\.tmp$")


@dataclass(frozen=True)
class _LogFiles:
    """The `_delta_log` listing, with each versioned file's version."""

    files: list[FileInfo]
    versioned: list[tuple[int, FileInfo]]
    compactions: list[tuple[int, FileInfo]]  # (start version, file)
    temps: list[FileInfo]


def _list_log(storage: Storage, log_dir: str) -> _LogFiles:
    files = list(storage.list_from(os.path.join(log_dir, _LIST_ALL)))
    versioned, compactions, temps = [], [], []
    for f in files:
        if m := _COMPACTION.match(f.name):
            compactions.append((int(m.group(1)), f))
        elif m := _VERSIONED.match(f.name):
            versioned.append((int(m.group(1)), f))
        elif _TEMP.match(f.name):
            temps.append(f)
    return _LogFiles(files, versioned, compactions, temps)


def _cutoff_ms(snapshot: Snapshot, now_ms: int, retention_ms: int | None, granularity_ms: int) -> int:
    if retention_ms is None:
        retention_ms = interval_property_ms(snapshot.metadata.configuration, LOG_RETENTION_KEY, DEFAULT_LOG_RETENTION)
    cutoff = now_ms - retention_ms
    return cutoff - cutoff % granularity_ms


def _cutoff_commit(commits: dict[int, FileInfo], max_version: int, cutoff: int) -> int | None:
    """Newest version whose (monotonically adjusted) commit time is not after `cutoff`."""
    found, previous = None, None
    for version in sorted(v for v in commits if v <= max_version):
        ts = commits[version].modification_time
        if previous is not None and ts <= previous:
            ts = previous + 1
        previous = ts
        if ts > cutoff:
            break
        found = version
    return found


def _cutoff_checkpoint(log: _LogFiles, snapshot: Snapshot, cutoff: int) -> int | None:
    listing = classify(log.files)
    commit = _cutoff_commit(listing.commits, snapshot.version, cutoff)
    if commit is None:
        return None
    candidates = [v for v in listing.checkpoints if v <= commit]
    return max(candidates) if candidates else None


def _expired(log: _LogFiles, checkpoint_version: int, cutoff: int) -> list[FileInfo]:
    """Log files the cutoff checkpoint makes unnecessary, oldest version first."""
    out = [(v, f) for v, f in log.versioned if v < checkpoint_version]
    out += [(v, f) for v, f in log.compactions if v <= checkpoint_version]
    # Per version, the commit goes before its checkpoint (checkpoint protection, requirement d).
    out.sort(key=lambda vf: (vf[0], ".checkpoint." in vf[1].name, vf[1].name))
    return [f for _, f in out] + [f for f in log.temps if f.modification_time < cutoff]


def _sidecar_refs(storage: Storage, files: list[FileInfo]) -> set[str] | None:
    """Sidecar file names referenced by the checkpoints in `files`; None if one is unreadable."""
    refs: set[str] = set()
    for f in files:
        if ".checkpoint." not in f.name or _VERSIONED.match(f.name) is None:
            continue
        try:
            refs.update(_refs_of(storage, f))
        except Exception:  # noqa: BLE001 - a checkpoint we cannot read may reference anything
            return None
    return refs


def _refs_of(storage: Storage, f: FileInfo) -> set[str]:
    if f.name.endswith(".json"):
        names = set()
        for line in storage.read(f.path).splitlines():
            if line.strip():
                sidecar = json.loads(line).get("sidecar")
                if sidecar and sidecar.get("path"):
                    names.add(os.path.basename(sidecar["path"]))
        return names
    pf = pq.ParquetFile(io.BytesIO(storage.read(f.path)))
    if "sidecar" not in pf.schema_arrow.names:
        return set()
    column = pf.read(columns=["sidecar"]).column("sidecar")
    return {os.path.basename(s["path"]) for s in column.to_pylist() if s and s.get("path")}


def _unreferenced_sidecars(storage: Storage, log_dir: str, remaining: list[FileInfo], cutoff: int) -> list[FileInfo]:
    listed = storage.list_from(os.path.join(log_dir, "_sidecars", _LIST_ALL))
    sidecars = [f for f in listed if f.modification_time < cutoff]
    if not sidecars:
        return []
    refs = _sidecar_refs(storage, remaining)
    if refs is None:
        return []
    return [f for f in sidecars if f.name not in refs]


def _expired_unbackfilled(storage: Storage, log_dir: str, checkpoint_version: int) -> list[FileInfo]:
    """`_delta_log/_commits/<v>.<uuid>.json` (managed commits) and `_staged_commits/` (catalog-managed)
    files with v <= the cutoff checkpoint, oldest first."""
    from pydelta.log.commit_owners.base import UNPUBLISHED_DIRS

    out = []
    for directory in UNPUBLISHED_DIRS:
        for f in storage.list_from(os.path.join(log_dir, directory, _LIST_ALL)):
            m = _UNBACKFILLED.match(f.name)
            if m and int(m.group(1)) <= checkpoint_version:
                out.append(f)
    return sorted(out, key=lambda f: f.name)


def cleanup_expired_logs(
    snapshot: Snapshot, *, now_ms: int | None = None, retention_ms: int | None = None, granularity_ms: int = _DAY_MS
) -> list[str]:
    """Delete log files older than the log retention that no kept version needs; return their paths.

    Nothing happens when `delta.enableExpiredLogCleanup` is "false" or no checkpoint is old
    enough to stand in for the deleted commits. Files are deleted oldest first, so an
    interrupted cleanup leaves a log that still starts at a usable checkpoint.
    `retention_ms` / `granularity_ms` replace `delta.logRetentionDuration` and the daily
    cutoff (DROP FEATURE ... TRUNCATE HISTORY uses its own retention, by the minute).
    """
    conf = snapshot.metadata.configuration
    if conf.get(ENABLE_CLEANUP_KEY, "true").strip().lower() == "false":
        return []
    from pydelta.log.catalog_maintenance import maintenance_permitted

    if not maintenance_permitted(snapshot, "metadataCleanup"):
        return []  # a catalog-managed table: only where its catalog permits it (PROTOCOL.md)
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    cutoff = _cutoff_ms(snapshot, now, retention_ms, granularity_ms)
    storage = snapshot.storage
    log_dir = os.path.join(snapshot.table_root, "_delta_log")
    log = _list_log(storage, log_dir)
    checkpoint = _cutoff_checkpoint(log, snapshot, cutoff)
    if checkpoint is None:
        return []
    doomed = _expired(log, checkpoint, cutoff)
    deleted = [f.path for f in doomed]
    for f in doomed:
        storage.delete(f.path)
    for f in _expired_unbackfilled(storage, log_dir, checkpoint):
        storage.delete(f.path)
        deleted.append(f.path)
    gone = set(deleted)
    remaining = [f for f in log.files if f.path not in gone]
    for f in _unreferenced_sidecars(storage, log_dir, remaining, cutoff):
        storage.delete(f.path)
        deleted.append(f.path)
    return deleted
