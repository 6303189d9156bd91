"""Finding the files that make up a table version: a checkpoint plus commits.

A LogSegment is what replay needs for version v: the newest complete
checkpoint at or below v (if any) and every commit after it up to v.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from pydelta.errors import (
    DeltaTableNotFoundError,
    LogNotContiguousError,
    VersionNotFoundError,
)
from pydelta.log.last_checkpoint import parse_last_checkpoint
from pydelta.log.storage import FileInfo, Storage

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CLASSIC_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTIPART_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.([0-9a-fA-F-]{36})\.(json|parquet)$")
_COMPACTION = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
_CHECKSUM = re.compile(r"^(\d{20})\.crc$")


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint: one file (classic or V2) or all parts of a multi-part one."""

    version: int
    kind: str  # "classic", "multipart", "v2"
    files: tuple[FileInfo, ...]


@dataclass(frozen=True)
class Compaction:
    start: int
    end: int
    file: FileInfo


@dataclass
class LogSegment:
    log_dir: str
    version: int
    checkpoint: Checkpoint | None
    commits: list[tuple[int, FileInfo]]  # ascending, strictly after the checkpoint
    compactions: list[Compaction] = field(default_factory=list)
    checksum: FileInfo | None = None  # the version checksum file of `version`, if listed

    @property
    def last_commit_timestamp(self) -> int:
        if self.commits:
            return self.commits[-1][1].modification_time
        assert self.checkpoint is not None
        return self.checkpoint.files[0].modification_time


@dataclass
class LogListing:
    """Everything found in `_delta_log` from some version on, classified."""

    commits: dict[int, FileInfo] = field(default_factory=dict)
    checkpoints: dict[int, list[Checkpoint]] = field(default_factory=dict)
    compactions: list[Compaction] = field(default_factory=list)
    checksums: dict[int, FileInfo] = field(default_factory=dict)


def classify(files: list[FileInfo]) -> LogListing:
    listing = LogListing()
    multipart: dict[tuple[int, int], dict[int, FileInfo]] = {}
    for f in files:
        name = f.name
        if m := _COMMIT.match(name):
            listing.commits[int(m.group(1))] = f
        elif m := _CLASSIC_CHECKPOINT.match(name):
            listing.checkpoints.setdefault(int(m.group(1)), []).append(Checkpoint(int(m.group(1)), "classic", (f,)))
        elif m := _MULTIPART_CHECKPOINT.match(name):
            version, part, parts = int(m.group(1)), int(m.group(2)), int(m.group(3))
            multipart.setdefault((version, parts), {})[part] = f
        elif m := _V2_CHECKPOINT.match(name):
            listing.checkpoints.setdefault(int(m.group(1)), []).append(Checkpoint(int(m.group(1)), "v2", (f,)))
        elif m := _COMPACTION.match(name):
            listing.compactions.append(Compaction(int(m.group(1)), int(m.group(2)), f))
        elif m := _CHECKSUM.match(name):
            listing.checksums[int(m.group(1))] = f
    for (version, parts), found in multipart.items():
        if len(found) == parts and all(i in found for i in range(1, parts + 1)):
            cp = Checkpoint(version, "multipart", tuple(found[i] for i in range(1, parts + 1)))
            listing.checkpoints.setdefault(version, []).append(cp)
    return listing


def log_dir_of(table_root: str) -> str:
    return os.path.join(table_root, "_delta_log")


def _list(storage: Storage, log_dir: str, from_version: int) -> LogListing:
    return classify(list(storage.list_from(os.path.join(log_dir, f"{from_version:020d}"))))


def _preferred(cps: list[Checkpoint]) -> Checkpoint:
    order = {"v2": 0, "classic": 1, "multipart": 2}
    return sorted(cps, key=lambda c: order[c.kind])[0]


def build_segment(storage: Storage, table_root: str, version: int | None = None) -> LogSegment:
    """The segment for `version` (latest when None). Uses `_last_checkpoint` only as a hint."""
    log_dir = log_dir_of(table_root)
    hint_version = None
    if version is None:
        try:
            hint = parse_last_checkpoint(storage.read(os.path.join(log_dir, "_last_checkpoint")))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            hint = None
        if hint is not None:
            hint_version = hint.version
    if hint_version is not None:
        listing = _list(storage, log_dir, hint_version)
        segment = _segment_from(listing, log_dir, version, min_checkpoint=hint_version)
        if segment is not None:
            return segment
    listing = _list(storage, log_dir, 0)
    segment = _segment_from(listing, log_dir, version, min_checkpoint=None)
    if segment is None:
        if not storage.exists(log_dir) or (not listing.commits and not listing.checkpoints):
            raise DeltaTableNotFoundError(f"{table_root} is not a Delta table (no commits in {log_dir})")
        if version is not None:
            raise VersionNotFoundError(
                f"cannot reconstruct version {version} of {table_root}: "
                f"available versions are {_available_range(listing)}"
            )
        raise LogNotContiguousError(f"cannot find a usable checkpoint or version 0 in {log_dir}")
    return segment


def segment_before_checkpoint(storage: Storage, table_root: str, segment: LogSegment) -> LogSegment | None:
    """The same version as `segment` from an older checkpoint (or from version 0), for when
    `segment`'s checkpoint cannot be read: None when no older checkpoint with every commit
    after it, nor the whole log from version 0, is left (delta-spark's
    getLogSegmentWithMaxExclusiveCheckpointVersion)."""
    if segment.checkpoint is None:
        return None
    listing = _list(storage, log_dir_of(table_root), 0)
    listing.checkpoints = {v: cps for v, cps in listing.checkpoints.items() if v < segment.checkpoint.version}
    try:
        return _segment_from(listing, log_dir_of(table_root), segment.version, min_checkpoint=None)
    except LogNotContiguousError:
        return None


def _available_range(listing: LogListing) -> str:
    versions = sorted(set(listing.commits) | set(listing.checkpoints))
    if not versions:
        return "none"
    earliest = min(listing.checkpoints) if listing.checkpoints else versions[0]
    return f"[{earliest}, {versions[-1]}]"


def _segment_from(
    listing: LogListing, log_dir: str, version: int | None, min_checkpoint: int | None
) -> LogSegment | None:
    """Build a segment from a listing; None when this listing cannot serve it (caller relists)."""
    all_versions = set(listing.commits) | set(listing.checkpoints)
    if not all_versions:
        return None
    latest = max(all_versions)
    target = latest if version is None else version
    if version is not None and version > latest:
        raise VersionNotFoundError(f"version {version} does not exist; the latest version is {latest}")
    candidates = [v for v in listing.checkpoints if v <= target]
    checkpoint = _preferred(listing.checkpoints[max(candidates)]) if candidates else None
    if min_checkpoint is not None and checkpoint is None:
        return None  # hint pointed at a missing or incomplete checkpoint
    start = checkpoint.version + 1 if checkpoint else 0
    if checkpoint is None and 0 not in listing.commits:
        return None
    commits = []
    expected = start
    for v in sorted(x for x in listing.commits if start <= x <= target):
        if v != expected:
            raise LogNotContiguousError(
                f"versions are not contiguous in {log_dir}: expected version {expected}, found {v}"
            )
        commits.append((v, listing.commits[v]))
        expected = v + 1
    if expected <= target:
        if version is not None and checkpoint is None:
            return None
        raise LogNotContiguousError(f"versions are not contiguous in {log_dir}: version {expected} is missing")
    compactions = [c for c in listing.compactions if c.start >= start and c.end <= target]
    return LogSegment(log_dir, target, checkpoint, commits, _non_overlapping(compactions),
                      listing.checksums.get(target))


def _non_overlapping(compactions: list[Compaction]) -> list[Compaction]:
    """Greedy choice of the widest disjoint compaction files, in order."""
    chosen: list[Compaction] = []
    for c in sorted(compactions, key=lambda c: (c.start, -c.end)):
        if not chosen or c.start > chosen[-1].end:
            chosen.append(c)
    return chosen


def list_log(storage: Storage, table_root: str, from_version: int = 0) -> LogListing:
    return _list(storage, log_dir_of(table_root), from_version)
