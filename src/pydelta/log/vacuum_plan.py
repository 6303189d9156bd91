"""Which files VACUUM may delete: delta-spark's garbage-collection rule, without Spark.

A file under the table directory is kept when
  * the latest snapshot references it (an `add`, or the add's deletion vector file), or
  * a tombstone (`remove`) newer than the retention cutoff references it (a version still
    inside the retention window may need it for time travel), or
  * it was modified at or after the cutoff (it may belong to a write still in progress).
Everything else that is listed is deleted. Listing skips `_delta_log` and every other
hidden (`_` / `.` prefixed) file or directory, except partition directories (`<col>=...`
for a partition column, even when the column name starts with `_`) and `_change_data`,
`_delta_index`, exactly as delta-spark's `DeltaTableUtils.isHiddenDirectory`. pydelta's own
write staging directory (`_pydelta_staging`) is listed whole too: what a killed write left
there is untracked data, deleted under the same retention rule as any untracked file.
Directories that hold nothing at all are removed too (deepest first).

The cutoff is `now - retention`: the retention is the caller's `retentionHours` (rounded to
whole hours, as delta-spark does) or the table's `delta.deletedFileRetentionDuration`
(default one week). A retention shorter than the table's is refused unless the safety check
is switched off (`spark.databricks.delta.retentionDurationCheck.enabled=false`).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow.compute as pc

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.log.checkpoint_writer import interval_property_ms
from pydelta.log.replay import canonical_path
from pydelta.log.snapshot import Snapshot
from pydelta.log.storage import is_remote_uri

__all__ = [
    "DEFAULT_TOMBSTONE_RETENTION",
    "STAGING_DIR",
    "TOMBSTONE_RETENTION_KEY",
    "VacuumFile",
    "VacuumPlan",
    "check_retention",
    "configured_retention_ms",
    "execute_plan",
    "is_hidden",
    "list_table",
    "plan_vacuum",
    "retention_hours_to_ms",
    "valid_paths",
]

TOMBSTONE_RETENTION_KEY = "delta.deletedFileRetentionDuration"
DEFAULT_TOMBSTONE_RETENTION = "interval 1 week"
_HOUR_MS = 3_600_000
_NOT_HIDDEN_PREFIXES = ("_delta_index", "_change_data", "__cdc_type")
# Where pydelta's writers stage data files before moving them into the table (see
# spark/write/data_files.py). Nothing under it is ever referenced by the log.
STAGING_DIR = "_pydelta_staging"


@dataclass(frozen=True)
class VacuumFile:
    """A listed file: absolute local path, size, modification time (ms)."""

    path: str
    size: int
    modification_time: int


@dataclass
class VacuumPlan:
    """What one VACUUM run deletes, and the numbers delta-spark reports about it."""

    table_root: str
    delete_before_ms: int  # files modified before this (and not needed) are deleted
    configured_retention_ms: int  # the table's delta.deletedFileRetentionDuration
    specified_retention_ms: int | None  # the caller's retentionHours, in ms
    files: list[VacuumFile] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)  # empty directories, deepest first
    num_dirs: int = 1  # directories listed, plus the table root (delta-spark's dirCounts)
    num_listed: int = 0  # files and directories listed
    storage: Any = None  # the object store of a remote table (None: the local file system)
    lite_watermark: int | None = None  # LITE: the latest commit outside the retention window

    @property
    def paths(self) -> list[str]:
        """Everything to delete: files first, then empty directories."""
        return [f.path for f in self.files] + list(self.dirs)

    @property
    def size_to_delete(self) -> int:
        return sum(f.size for f in self.files)


# ---- retention ------------------------------------------------------------------------------


def configured_retention_ms(snapshot: Snapshot) -> int:
    """The table's tombstone retention (`delta.deletedFileRetentionDuration`) in ms."""
    return interval_property_ms(snapshot.metadata.configuration, TOMBSTONE_RETENTION_KEY, DEFAULT_TOMBSTONE_RETENTION)


def retention_hours_to_ms(retention_hours: float | None) -> int | None:
    """delta-spark: `TimeUnit.HOURS.toMillis(math.round(hours))` (half up to whole hours)."""
    if retention_hours is None:
        return None
    if isinstance(retention_hours, bool):
        raise DeltaIllegalArgumentError(f"retentionHours must be a number, got {retention_hours!r}")
    try:
        hours = float(retention_hours)
    except (TypeError, ValueError):
        raise DeltaIllegalArgumentError(f"retentionHours must be a number, got {retention_hours!r}") from None
    if math.isnan(hours) or math.isinf(hours):
        raise DeltaIllegalArgumentError(f"retentionHours must be a finite number, got {retention_hours!r}")
    return math.floor(hours + 0.5) * _HOUR_MS


def check_retention(specified_ms: int | None, configured_ms: int, check_enabled: bool = True) -> None:
    """Refuse a negative retention, and one below the table's unless the check is disabled."""
    if specified_ms is not None and specified_ms < 0:
        raise DeltaIllegalArgumentError(
            "[DELTA_VACUUM_RETENTION_PERIOD_NEGATIVE] Retention period for Vacuum can't be less than 0 hours.")
    if not check_enabled or specified_ms is None or specified_ms >= configured_ms:
        return
    hours = -(-configured_ms // _HOUR_MS)  # rounded up, as delta-spark prints it
    raise DeltaIllegalArgumentError(
        "requirement failed: Are you sure you would like to vacuum files with such a low retention period? "
        "If you have\nwriters that are currently writing to this table, there is a risk that you may corrupt the\n"
        "state of your Delta table.\n\n"
        "If you are certain that there are no operations being performed on this table, such as\n"
        "insert/upsert/delete/optimize, then you may turn off this check by setting:\n"
        "spark.databricks.delta.retentionDurationCheck.enabled = false\n\n"
        f'If you are not sure, please use a value not less than "{hours} hours".'
    )


# ---- listing ----------------------------------------------------------------------------------


def is_hidden(name: str, partition_columns: Sequence[str]) -> bool:
    """delta-spark's isHiddenDirectory for one path component (file or directory name)."""
    if not name.startswith((".", "_")):
        return False
    if name.startswith(_NOT_HIDDEN_PREFIXES):
        return False
    return not any(name.startswith(f"{c}=") for c in partition_columns)


def list_table(table_root: str, partition_columns: Sequence[str]) -> tuple[list[VacuumFile], list[str]]:
    """Every non-hidden file (recursively) and directory under the table root."""
    files: list[VacuumFile] = []
    dirs: list[str] = []

    def walk(directory: str, in_staging: bool = False) -> None:
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            staging = in_staging or (directory == table_root and entry.name == STAGING_DIR)
            if not staging and is_hidden(entry.name, partition_columns):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    dirs.append(entry.path)
                    walk(entry.path, staging)
                elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
                    st = entry.stat(follow_symlinks=False)
                    files.append(VacuumFile(entry.path, st.st_size, st.st_mtime_ns // 1_000_000))
            except FileNotFoundError:
                continue  # deleted while listing

    walk(table_root)
    return files, dirs


def list_remote_table(storage: Any, table_root: str, partition_columns: Sequence[str]) -> list[VacuumFile]:
    """Every non-hidden object under an object-store table root (stores have no directories)."""
    files = []
    prefix = table_root.rstrip("/") + "/"
    for info in storage.list_recursive(table_root):
        parts = info.path[len(prefix):].split("/")
        if parts[0] != STAGING_DIR and any(is_hidden(part, partition_columns) for part in parts):
            continue
        files.append(VacuumFile(info.path, info.size, info.modification_time))
    return files


def _norm(path: str) -> str:
    """A path compared as VACUUM lists it: normalized locally, an object-store URI as it is."""
    return path if is_remote_uri(path) else os.path.normpath(path)


# ---- what the table still needs ------------------------------------------------------------------


def _dv_paths(dvs: Iterable[dict[str, Any] | None], table_root: str) -> set[str]:
    from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor

    out: set[str] = set()
    for dv in dvs:
        if not dv or dv.get("storageType") in (None, "i"):
            continue
        try:
            path = DeletionVectorDescriptor.from_dict(dv).absolute_path(table_root)
        except Exception:
            continue
        if path is not None and not path.startswith("hdfs:"):
            out.add(_norm(path))
    return out


def valid_paths(snapshot: Snapshot, delete_before_ms: int) -> set[str]:
    """Absolute paths the table needs: live files, unexpired tombstones, their DV files."""
    root = snapshot.table_root
    out: set[str] = set()
    files = snapshot.files()
    out.update(_norm(canonical_path(p, root)) for p in files.column("path").to_pylist())
    out |= _dv_paths(files.column("deletion_vector").to_pylist(), root)
    tombstones = snapshot.tombstones()
    if tombstones.num_rows:
        deleted_at = pc.fill_null(tombstones.column("deletionTimestamp"), 0)
        keep = tombstones.filter(pc.greater_equal(deleted_at, delete_before_ms))
        out.update(_norm(canonical_path(p, root)) for p in keep.column("path").to_pylist())
        out |= _dv_paths(keep.column("deletionVector").to_pylist(), root)
    return out


def _ancestors(path: str, root: str) -> Iterable[str]:
    parent = os.path.dirname(path)
    while len(parent) > len(root) and parent.startswith(root):
        yield parent
        parent = os.path.dirname(parent)


def plan_vacuum(
    snapshot: Snapshot,
    retention_hours: float | None = None,
    *,
    now_ms: int | None = None,
    check_enabled: bool = True,
) -> VacuumPlan:
    """The files and empty directories VACUUM deletes from the table of `snapshot`."""
    if snapshot.version < 0:
        raise DeltaIllegalArgumentError(
            "No state defined for this table. Is this really a Delta table? Refusing to garbage collect."
        )
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    configured = configured_retention_ms(snapshot)
    specified = retention_hours_to_ms(retention_hours)
    check_retention(specified, configured, check_enabled)
    delete_before = now - (specified if specified is not None else configured)

    remote = is_remote_uri(snapshot.table_root)
    root = _norm(snapshot.table_root)
    partition_dirs = _partition_dir_names(snapshot)
    listed_files: list[VacuumFile]
    listed_dirs: list[str]
    if remote:
        listed_files, listed_dirs = list_remote_table(snapshot.storage, root, partition_dirs), []
    else:
        listed_files, listed_dirs = list_table(root, partition_dirs)
    valid = valid_paths(snapshot, delete_before)

    files = [f for f in listed_files if f.modification_time < delete_before and _norm(f.path) not in valid]
    # A directory goes only when nothing at all was listed under it and no needed file lives there.
    occupied: set[str] = set()
    for f in listed_files:
        occupied.update(_ancestors(_norm(f.path), root))
    for p in valid:
        occupied.update(_ancestors(p, root))
    empty_dirs = [d for d in listed_dirs if os.path.normpath(d) not in occupied]
    empty_dirs.sort(key=lambda d: (-d.count(os.sep), d))
    files.sort(key=lambda f: f.path)
    return VacuumPlan(
        table_root=root,
        delete_before_ms=delete_before,
        configured_retention_ms=configured,
        specified_retention_ms=specified,
        files=files,
        dirs=empty_dirs,
        num_dirs=len(listed_dirs) + 1,
        num_listed=len(listed_files) + len(listed_dirs),
        storage=snapshot.storage if remote else None,
    )


def _partition_dir_names(snapshot: Snapshot) -> list[str]:
    """Names partition directories start with: physical names under column mapping, plus logical."""
    from pydelta.protocol.schema import column_mapping_mode, physical_name

    names = list(snapshot.partition_columns)
    if column_mapping_mode(snapshot.configuration) != "none":
        for name in snapshot.partition_columns:
            with contextlib.suppress(KeyError):
                names.append(physical_name(snapshot.schema.field(name, case_sensitive=False)))
    return names


def execute_plan(plan: VacuumPlan) -> int:
    """Delete what `plan` lists; returns how many files and directories were deleted."""
    deleted = 0
    if plan.storage is not None:  # an object store: delete the objects (there are no directories)
        for f in plan.files:
            plan.storage.delete(f.path)
            deleted += 1
        return deleted
    for f in plan.files:
        try:
            os.unlink(f.path)
            deleted += 1
        except FileNotFoundError:
            continue
        except IsADirectoryError:
            continue
        # Hadoop's local file system keeps a hidden `.<name>.crc` next to a file: drop it too.
        crc = os.path.join(os.path.dirname(f.path), f".{os.path.basename(f.path)}.crc")
        with contextlib.suppress(OSError):
            os.unlink(crc)
    for d in plan.dirs:
        try:
            os.rmdir(d)
            deleted += 1
        except OSError:
            continue  # not empty (a hidden file, or something new arrived): delta-spark skips it too
    return deleted


# ---- VACUUM LITE ----------------------------------------------------------------------------------


def lite_plan(snapshot: Snapshot, plan: VacuumPlan) -> VacuumPlan:
    """VACUUM LITE (delta-spark 3.3+): of what a full VACUUM would delete, only the files the
    log names: add/remove actions of the commits after the last VACUUM's watermark
    (`_last_vacuum_info`) up to the latest commit made before the retention cutoff, with no
    listing of strangers and no directories. Commits missing since the watermark (or since 0,
    without one) mean the log may miss files: delta-spark's DELTA_CANNOT_VACUUM_LITE."""
    import json

    from pydelta.log.last_vacuum_info import read_watermark
    from pydelta.log.segment import list_log
    from pydelta.log.timestamps import commit_timestamps, ict_enablement_version

    storage = snapshot.storage
    commits = list_log(storage, snapshot.table_root).commits
    stamps = {c.version: c.timestamp for c in commit_timestamps(
        storage, snapshot.table_root, ict_enablement_version(snapshot.metadata), {})}
    versions = sorted(v for v in commits if v <= snapshot.version)
    outside = [v for v in versions if stamps.get(v, commits[v].modification_time) <= plan.delete_before_ms]
    plan.dirs = []
    if not outside:  # no commit outside the retention window: nothing to vacuum
        plan.files = []
        return plan
    plan.lite_watermark = watermark = outside[-1]
    earliest = versions[0]
    last = read_watermark(storage, snapshot.table_root)
    if earliest != 0 and (last is None or last < earliest):
        raise DeltaIllegalArgumentError(
            "[DELTA_CANNOT_VACUUM_LITE] VACUUM LITE cannot delete all eligible files as some files are not "
            "referenced by the Delta log. Please run VACUUM FULL.")
    start = min(snapshot.version, last + 1 if last is not None else earliest)
    named: set[str] = set()
    for version in (v for v in versions if start <= v <= watermark):
        for line in commits[version].read(storage).splitlines():
            action = json.loads(line) if line.strip() else {}
            for kind in ("add", "remove"):
                if kind in action:
                    named.add(_norm(canonical_path(action[kind]["path"], snapshot.table_root)))
    plan.files = [f for f in plan.files if _norm(f.path) in named]
    return plan
