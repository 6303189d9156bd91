"""A Snapshot: the state of a table at one version, loaded without Spark."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from pydelta.errors import (
    DeltaIllegalArgumentError,
    DeltaTableNotFoundError,
    MissingDataFileError,
    UnreadableCheckpointError,
    VersionNotFoundError,
)
from pydelta.log.arrow_actions import ADD_TYPE, rows_to_struct, struct_to_table
from pydelta.log.arrow_pool import prefer_jemalloc
from pydelta.log.replay import TableState, apply_commits, read_commits, replay_segment
from pydelta.log.segment import LogSegment, build_segment, list_log, segment_before_checkpoint
from pydelta.log.storage import FileInfo, Storage, storage_for, to_local_path
from pydelta.log.timestamps import commit_timestamps, ict_enablement_version, to_millis, version_at
from pydelta.protocol.actions import Metadata, Protocol

if TYPE_CHECKING:
    from pydelta.log.checksum import VersionChecksum
    from pydelta.protocol.schema import StructType

logger = logging.getLogger(__name__)

_FILE_COLUMNS = {
    "path": "path",
    "partitionValues": "partition_values",
    "size": "size",
    "modificationTime": "modification_time",
    "dataChange": "data_change",
    "stats": "stats",
    "tags": "tags",
    "deletionVector": "deletion_vector",
    "baseRowId": "base_row_id",
    "defaultRowCommitVersion": "default_row_commit_version",
    "clusteringProvider": "clustering_provider",
}


def parse_num_records(stats: pa.Array) -> pa.Array:
    """`numRecords` of each stats JSON string (null where unknown), vectorized.

    Writers put numRecords first, so a regex on the string prefix answers almost
    every row; the rest go through Arrow's JSON parser.
    """
    if len(stats) == 0:
        return pa.array([], pa.int64())
    if isinstance(stats, pa.ChunkedArray):
        stats = stats.combine_chunks()
    found = pc.extract_regex(stats, r'^\{"numRecords":(?P<n>[0-9]+)[,}]')
    counts = pc.cast(pc.struct_field(found, "n"), pa.int64())
    missing = pc.and_(pc.is_null(counts), pc.is_valid(stats))
    if not pc.any(missing).as_py():
        return counts
    idx = pc.indices_nonzero(missing)
    slow = _parse_num_records_json(stats.take(idx))
    out = counts.to_pylist()
    for i, value in zip(idx.to_pylist(), slow.to_pylist(), strict=True):
        out[i] = value
    return pa.array(out, pa.int64())


def _parse_num_records_json(stats: pa.Array) -> pa.Array:
    filled = pc.fill_null(stats, "{}")
    filled = pc.if_else(pc.equal(pc.utf8_length(filled), 0), "{}", filled)
    # One object per line for Arrow's reader: a line break in a stats string can only be JSON
    # whitespace (pretty-printed stats; JSON strings cannot hold a raw one), so it becomes a space.
    filled = pc.replace_substring_regex(filled, "[\r\n]", " ")
    buf = pa.py_buffer("\n".join(filled.to_pylist()).encode("utf-8"))
    schema = pa.schema([("numRecords", pa.int64())])
    table = pajson.read_json(
        pa.BufferReader(buf),
        parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        read_options=pajson.ReadOptions(block_size=max(1 << 20, buf.size + 1)),
    )
    return table.column("numRecords").combine_chunks()


def _files_of(adds: pa.StructArray) -> pa.Table:
    """Add actions (ADD_TYPE) as a table with Snapshot.files()' column names (without num_records)."""
    return struct_to_table(adds).rename_columns([_FILE_COLUMNS[n] for n in adds.type.names if n in _FILE_COLUMNS])


def files_table(actions: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Add, remove or cdc action bodies as a table with every column of `Snapshot.files()` (null
    where an action lacks the field), for reading files that are not one snapshot's (the change feed).

    The Spark read path (`read.build_dataframe`) looks up columns of the files table by name, so
    a narrower table breaks it. `num_records` is known only where `size` is: the deletion-vector
    anti join keys rows by file size when every file has a row count, and a remove's size is optional.
    """
    table = _files_of(rows_to_struct(actions, ADD_TYPE))
    sizes = table.column("size")
    sized = pc.fill_null(pc.greater(sizes, 0), False)
    records = parse_num_records(table.column("stats"))
    return table.append_column("num_records", pc.if_else(sized, records, pa.scalar(None, pa.int64())))


class Snapshot:
    """Protocol, metadata and live files of a table version.

    Loaded with the version's checksum file (`log.checksum`), a snapshot answers its protocol,
    metadata, file count, size, in-commit timestamp, app transactions and domains from it, as
    delta-spark and kernel-rs do, and replays the log only when something else is asked for
    (its files, above all). Without one, the log is replayed when the snapshot is made.
    """

    def __init__(self, table_root: str, storage: Storage, segment: LogSegment, state: TableState | None,
                 checksum: VersionChecksum | None = None, replayer: Replayer | None = None) -> None:
        self.table_root = table_root
        self.storage = storage
        self.segment = segment
        self.replayer = replayer  # the engine's, for very large logs; kept by every later snapshot
        if state is None and (checksum is None or checksum.metadata is None or checksum.protocol is None):
            raise DeltaIllegalArgumentError("a snapshot needs its replayed state or a complete checksum")
        self._replayed = state
        self._checksum = checksum

    @property
    def _state(self) -> TableState:
        """The replayed state, replayed on first use when the snapshot started from its checksum."""
        if self._replayed is None:
            try:
                self.segment, state = self._replay(self.segment)
            except (MissingDataFileError, FileNotFoundError):
                # A file of the listed segment went since (a checkpoint replaced, the log cleaned
                # up): the same version from the log as it is now.
                self.segment, state = self._replay(build_segment(self.storage, self.table_root, self.segment.version))
            _check_against_checksum(self, state)
            self._replayed = state
        return self._replayed

    @property
    def replayed(self) -> bool:
        """Whether the log has been replayed (False: so far answered from the checksum file)."""
        return self._replayed is not None

    @property
    def checksum(self) -> VersionChecksum | None:
        """The version checksum this snapshot was loaded with (None: not read, or there is none)."""
        return self._checksum

    # ---- identity -----------------------------------------------------------------
    @property
    def version(self) -> int:
        return self._replayed.version if self._replayed is not None else self.segment.version

    @property
    def protocol(self) -> Protocol:
        if self._replayed is None and self._checksum is not None and self._checksum.protocol is not None:
            return self._checksum.protocol
        return self._state.protocol

    @property
    def metadata(self) -> Metadata:
        if self._replayed is None and self._checksum is not None and self._checksum.metadata is not None:
            return self._checksum.metadata
        return self._state.metadata

    @property
    def schema(self) -> StructType:
        return self.metadata.schema

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.partition_columns)

    @property
    def configuration(self) -> dict[str, str]:
        return dict(self.metadata.configuration)

    @property
    def transactions(self) -> dict[str, int]:
        """appId -> latest version, for idempotent writers."""
        if self._replayed is None and self._checksum is not None and self._checksum.set_transactions is not None:
            return {t.app_id: t.version for t in self._checksum.set_transactions}
        return {k: t.version for k, t in self._state.txns.items()}

    @property
    def domain_metadata(self) -> dict[str, str]:
        if self._replayed is None and self._checksum is not None and self._checksum.domain_metadata is not None:
            return {d.domain: d.configuration for d in self._checksum.domain_metadata if not d.removed}
        return {k: d.configuration for k, d in self._state.domains.items()}

    @property
    def state(self) -> TableState:
        return self._state

    @property
    def latest_commit_info(self) -> dict[str, Any] | None:
        return self._state.latest_commit_info

    @cached_property
    def timestamp(self) -> int:
        """Commit timestamp of this version in ms (in-commit timestamp when enabled)."""
        ict = ict_enablement_version(self.metadata)
        if ict is None or self.version < ict:
            return self.segment.last_commit_timestamp
        if self._replayed is None and self._checksum is not None and self._checksum.in_commit_timestamp is not None:
            return self._checksum.in_commit_timestamp
        info = self._state.latest_commit_info
        if ict is not None and self.version >= ict and info and info.get("inCommitTimestamp") is not None:
            return int(info["inCommitTimestamp"])
        return self.segment.last_commit_timestamp

    # ---- files --------------------------------------------------------------------
    @property
    def num_files(self) -> int:
        if self._replayed is None and self._checksum is not None:
            return self._checksum.num_files
        return len(self._state.adds)

    @property
    def size_in_bytes(self) -> int:
        """The total size of the live data files."""
        if self._replayed is None and self._checksum is not None:
            return self._checksum.table_size_bytes
        adds = self._state.adds
        return int(pc.sum(pc.struct_field(adds, "size")).as_py() or 0) if len(adds) else 0

    def files(self) -> pa.Table:
        """One row per live data file: path, size, partition_values, num_records, stats, deletion_vector, ..."""
        return _files_of(self._state.adds).append_column("num_records", self._num_records())

    def tombstones(self) -> pa.Table:
        return struct_to_table(self._state.removes)

    def _num_records(self) -> pa.Array:
        return parse_num_records(pc.struct_field(self._state.adds, "stats"))

    def absolute_path(self, path: str) -> str:
        """Local file-system path of a file path as stored in the log."""
        from pydelta.log.replay import canonical_path

        return canonical_path(path, self.table_root)

    # ---- evolution ------------------------------------------------------------------
    def update(self) -> Snapshot:
        """The latest snapshot, reading only commits newer than this one (and the owner's, if managed)."""
        listing = list_log(self.storage, self.table_root, self.version + 1)
        versions = sorted(v for v in listing.commits if v > self.version)
        if not versions:
            return self.with_owner_commits()
        if versions != list(range(self.version + 1, versions[-1] + 1)):
            newer = build_segment(self.storage, self.table_root)
            fresh = self._at(newer)
            return fresh.with_owner_commits()
        return self.applying([(v, listing.commits[v]) for v in versions]).with_owner_commits()

    def applying(self, new_commits: list[tuple[int, FileInfo]]) -> Snapshot:
        """This snapshot moved forward by `new_commits` (ascending, contiguous after this version)."""
        if not new_commits:
            return self
        last = new_commits[-1][0]
        state = apply_commits(
            self._state,
            read_commits(self.storage, LogSegment(self.segment.log_dir, last, None, new_commits)),
            self.table_root,
            last,
        )
        segment = LogSegment(
            self.segment.log_dir, last, self.segment.checkpoint, self.segment.commits + new_commits,
            self.segment.compactions,
        )
        return Snapshot(self.table_root, self.storage, segment, state, replayer=self.replayer)

    def _replay(self, segment: LogSegment) -> tuple[LogSegment, TableState]:
        return replay_with_fallback(self.storage, self.table_root, segment, self.replayer)

    def _at(self, segment: LogSegment) -> Snapshot:
        """Another segment of this table, replayed as this snapshot replays."""
        segment, state = self._replay(segment)
        return Snapshot(self.table_root, self.storage, segment, state, replayer=self.replayer)

    def with_owner_commits(self, end: int | None = None) -> Snapshot:
        """Managed commits: this snapshot plus the owner's ratified, un-backfilled commits (up to `end`).

        A catalogManaged table (PROTOCOL.md) reads to its catalog's latest ratified version L:
        published files past L are not part of the table (nor are staged files the catalog did
        not ratify), so a snapshot listed past L is rebuilt at L. A file-system table (no owner,
        no catalog) is returned unchanged.
        """
        conf = self.metadata.configuration
        features = (self.protocol.writer_features or frozenset()) | (self.protocol.reader_features or frozenset())
        if not ({"delta.managedCommit.commitOwner", "io.pydelta.catalog"} & conf.keys()) and not (
            {"managedCommit", "catalogManaged", "catalogOwned-preview"} & features
        ):
            return self
        from pydelta.log.commit_owners.reader import owner_commits

        listed_from = self.segment.commits[0][0] if self.segment.commits else self.version + 1
        commits, latest = owner_commits(self.storage, self.table_root, self.metadata, self.protocol, self.version, end,
                                        held_from=listed_from)
        if "catalogManaged" in features and self.version > latest:
            if latest < 0:
                raise DeltaTableNotFoundError(
                    f"{self.table_root} is catalog-managed and its catalog has no ratified version of it")
            return self._at(build_segment(self.storage, self.table_root, latest)).with_owner_commits(end)
        held = dict((v, f) for v, f in commits if v <= self.version)
        return self._reading_held(held).applying([(v, f) for v, f in commits if v > self.version])

    def _reading_held(self, held: dict[int, FileInfo]) -> Snapshot:
        """This snapshot with the owner's copy of versions it read from published files.

        The owner still holds a version it ratified until it hears that the version is
        published; its copy is the authority (PROTOCOL.md). Published as ratified (the usual
        case: a publisher died before telling the owner), nothing changes; a published file
        that differs was written past the owner, and the snapshot is replayed from the owner's.
        """
        listed = dict(self.segment.commits)
        differing = {v: f for v, f in held.items()
                     if f.path != listed[v].path and f.read(self.storage) != listed[v].read(self.storage)}
        if not differing:
            return self
        commits = [(v, differing.get(v, f)) for v, f in self.segment.commits]
        segment = LogSegment(self.segment.log_dir, self.version, self.segment.checkpoint, commits,
                             [c for c in self.segment.compactions if not any(c.start <= v <= c.end for v in differing)])
        return self._at(segment)

    @property
    def unbackfilled_commits(self) -> list[tuple[int, FileInfo]]:
        """Commits of this snapshot read from `_delta_log/_commits/` or `_staged_commits/` (ratified
        by a commit owner or catalog, not published yet)."""
        from pydelta.log.commit_owners.base import UNPUBLISHED_DIRS

        return [(v, f) for v, f in self.segment.commits
                if os.path.basename(os.path.dirname(f.path)) in UNPUBLISHED_DIRS]

    def __repr__(self) -> str:
        return f"Snapshot(path={self.table_root!r}, version={self.version}, files={self.num_files})"


def _check_against_checksum(snapshot: Snapshot, state: TableState) -> None:
    """A snapshot that answered from its checksum should replay to the same protocol and metadata.
    When it does not (a checksum another writer got wrong, a commit edited by hand) the replay
    wins from here on and the difference is logged as DELTA_TXN_LOG_FAILED_INTEGRITY; delta-spark
    trusts the checksum's without checking at all. Checkpoints check the whole checksum and stop
    on a difference (`checksum.validate_checksum`)."""
    checksum = snapshot.checksum
    if checksum is None:
        return
    wrong = [name for name, ours, theirs in (("protocol", state.protocol, checksum.protocol),
                                             ("metadata", state.metadata, checksum.metadata))
             if theirs is not None and ours.to_dict() != theirs.to_dict()]
    if wrong:
        logger.warning(
            "[DELTA_TXN_LOG_FAILED_INTEGRITY] The transaction log has failed integrity checks. Failed verification "
            "at version %d of %s: the version checksum's %s differ from the log's; the log's are used",
            snapshot.version, snapshot.table_root, " and ".join(wrong))


def _usable_checksum(storage: Storage, root: str, segment: LogSegment) -> VersionChecksum | None:
    """The segment version's checksum, when listed, readable and complete (protocol and metadata)."""
    if segment.checksum is None or not _USE_CHECKSUMS:
        return None
    from pydelta.log.checksum import read_checksum

    checksum = read_checksum(storage, root, segment.version)
    if checksum is None or checksum.metadata is None or checksum.protocol is None:
        return None
    return checksum


# Whether snapshots start from their version's checksum (tests switch it off to compare).
_USE_CHECKSUMS = True


def _normalize_root(path: str) -> str:
    if not isinstance(path, str) or not path:
        raise DeltaIllegalArgumentError(f"invalid table path {path!r}")
    return to_local_path(path).rstrip("/") or "/"


def _owner_version(storage: Storage, root: str, version: int, replayer: Replayer | None) -> Snapshot | None:
    """`version` of a managed-commit table known only to its owner, or None."""
    latest = build_segment(storage, root)
    if latest.version >= version:
        return None
    latest, state = replay_with_fallback(storage, root, latest, replayer)
    snapshot = Snapshot(root, storage, latest, state, replayer=replayer).with_owner_commits(end=version)
    return snapshot if snapshot.version == version else None


# A replayer for very large logs, given by an engine (the Spark layer's runs a Spark job on its
# session); it returns None for logs it leaves to the driver. The log core never imports it.
Replayer = Callable[[Storage, str, LogSegment], TableState | None]


def _replay(storage: Storage, root: str, segment: LogSegment, replayer: Replayer | None = None) -> TableState:
    if replayer is not None:
        state = replayer(storage, root, segment)
        if state is not None:
            return state
    return replay_segment(storage, root, segment)


# How many older checkpoints a load tries when one cannot be read (delta-spark's
# spark.databricks.delta.snapshotLoading.maxRetries default).
CHECKPOINT_RETRIES = 2
_UNREADABLE = (UnreadableCheckpointError, MissingDataFileError)


def replay_with_fallback(storage: Storage, root: str, segment: LogSegment,
                         replayer: Replayer | None = None) -> tuple[LogSegment, TableState]:
    """Replay `segment`; when its checkpoint cannot be read (corrupt, truncated, a part or a
    sidecar missing), replay the same version from an older checkpoint or from the commits, as
    delta-spark does, trying at most `CHECKPOINT_RETRIES` older ones. Returns the segment that
    served; raises the first error when none does (a named pydelta error naming the file). A
    checkpoint that reads but says something impossible (no protocol, no metadata) is not
    replaced: that is the table's state, and an error, as in delta-spark."""
    try:
        return segment, _replay(storage, root, segment, replayer)
    except _UNREADABLE as e:
        first = e
    for _ in range(CHECKPOINT_RETRIES):
        older = segment_before_checkpoint(storage, root, segment)
        if older is None:
            break
        logger.warning("version %d of %s: %s; replaying it from %s instead", segment.version, root, first,
                       f"the checkpoint of version {older.checkpoint.version}" if older.checkpoint else "its commits")
        segment = older
        try:
            return segment, _replay(storage, root, segment, replayer)
        except _UNREADABLE:
            continue
    raise first


def load_snapshot(
    path: str, version: int | None = None, timestamp: object | None = None, check_protocol: bool = True,
    storage_options: Mapping[str, str] | None = None, storage: Storage | None = None,
    replayer: Replayer | None = None,
) -> Snapshot:
    """Load the table at `path`: latest, or at `version`, or as of `timestamp`.

    `storage_options`: object-store settings for `s3://`, `gs://`, `abfss://`... paths
    (see `storage_for`); the snapshot's storage keeps them for later commits.
    `storage`: read through this storage instead of the one the path's scheme selects.
    `replayer`: an engine's replay of very large logs (the Spark layer's runs on its session);
    without one, the log is replayed here.
    """
    prefer_jemalloc()
    if version is not None and timestamp is not None:
        raise DeltaIllegalArgumentError("give either version or timestamp, not both")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool) or version < 0):
        raise DeltaIllegalArgumentError(f"invalid version {version!r}")
    root = _normalize_root(path)
    storage = storage or storage_for(path, storage_options)
    if not storage.is_directory(os.path.join(root, "_delta_log")):
        raise DeltaTableNotFoundError(f"{path} is not a Delta table (no _delta_log directory)")
    if timestamp is not None:
        latest = load_snapshot(root, check_protocol=check_protocol, storage_options=storage_options, storage=storage,
                               replayer=replayer)
        stamps = commit_timestamps(
            storage, root, ict_enablement_version(latest.metadata), extra_commits=dict(latest.unbackfilled_commits)
        )
        version = version_at(stamps, to_millis(timestamp), root)
        if version == latest.version:
            return latest
    try:
        segment = build_segment(storage, root, version)
    except VersionNotFoundError:
        if version is None:
            raise
        snapshot = _owner_version(storage, root, version, replayer)  # ratified by a commit owner, not backfilled?
        if snapshot is None:
            raise
    else:
        checksum = _usable_checksum(storage, root, segment)
        state = None
        if checksum is None:
            segment, state = replay_with_fallback(storage, root, segment, replayer)
        snapshot = Snapshot(root, storage, segment, state, checksum, replayer).with_owner_commits(end=version)
        if version is not None and snapshot.version != version:  # published, but past what the catalog ratified
            raise VersionNotFoundError(f"version {version} of {root} was not ratified by its catalog "
                                       f"(its latest version is {snapshot.version})")
    if check_protocol:
        snapshot.protocol.check_readable()
    return snapshot
