"""`spark.readStream.format("delta")`: a Delta table as a Structured Streaming source.

Behaves like delta-spark's DeltaSource, on PySpark's Python streaming data source API:

- A fresh query without startingVersion/startingTimestamp first streams the snapshot at
  query start (its live files, ordered by modificationTime then path, as delta-spark's
  DeltaSourceSnapshot does), then the data-changing `add` files of
  every later commit. With a starting version/timestamp it streams only the commits from
  there. Offsets are delta-spark's (see source_offsets.py).
- Every method but `read` runs in one long-lived Python process on the driver; `read` runs
  in Python workers. Nothing is remembered across processes: `partitions(start, end)`
  recomputes the files between two offsets from the log alone, which is what makes a
  restart from a checkpoint resume exactly where it stopped. What is cached in the driver
  process (the initial snapshot, the Trigger.AvailableNow bound) only saves work or is
  per-run state delta-spark keeps per run as well.
- Rate limits are delta-spark's admission rules: a file is admitted while the batch still
  has capacity (so at least one file per batch, and a large file is never split); the
  commit-end markers are free; with readChangeFeed a commit is admitted whole.
- Commits removing data fail the stream (DELTA_SOURCE_TABLE_IGNORE_CHANGES /
  DELTA_SOURCE_IGNORE_DELETE) unless ignoreDeletes / skipChangeCommits / ignoreChanges
  say otherwise; dataChange=false commits (OPTIMIZE) contribute nothing. A read-incompatible
  schema change fails it with DELTA_SCHEMA_CHANGED_WITH_VERSION; with schemaTrackingLocation
  (column-mapped tables) the stream logs the new schema and restarts across it instead
  (schema_tracking.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

try:  # admission control for Python streaming sources arrived in PySpark 4.2
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxBytes,
        ReadMaxFiles,
        SupportsTriggerAvailableNow,
    )

    HAS_ADMISSION_CONTROL = True
except ModuleNotFoundError:  # PySpark 4.0 / 4.1: see PacedStreamReader
    HAS_ADMISSION_CONTROL = False

from pydelta.errors import (
    DeltaAnalysisError,
    DeltaIllegalArgumentError,
    DeltaNotImplementedError,
    DeltaUnsupportedOptionError,
    VersionNotFoundError,
)
from pydelta.log.changes import VersionActions, change_files, is_cdf_enabled, read_versions
from pydelta.protocol.actions import Metadata
from pydelta.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    StructType,
    column_mapping_mode,
    parse_schema,
    without_field_metadata,
)
from pydelta.spark.streaming.arrow_files import FileToRead, ReadSpec, read_files
from pydelta.spark.streaming.source_offsets import BASE_INDEX, SourceOffset, parse_offset
from pydelta.spark.streaming.source_storage import OPTION as STORAGE_OPTION
from pydelta.spark.streaming.source_storage import ZONE_OPTION
from pydelta.spark.streaming.source_storage import carried as carried_storage_options
from pydelta.spark.streaming.trigger_marks import TOKEN_OPTION as TRIGGER_TOKEN_OPTION

if TYPE_CHECKING:
    from pydelta.log.snapshot import Snapshot


def _hadoop_path(root: str) -> str:
    """A table root as delta-spark's messages show it (a Hadoop Path: `file:/tmp/t` for a local path)."""
    return f"file:{root}" if root.startswith("/") else root


END_INDEX = 2**63 - 101  # delta-spark's END_INDEX: "past the last file of this version", never serialized
MAX_FILES_DEFAULT = 1000
_NO_END = 2**62
_PARTITION_BYTES = 128 * 1024 * 1024

# Stream options pydelta implements (case-insensitive), and those it refuses by name.
STREAM_SUPPORTED = (
    "path", "startingVersion", "startingTimestamp", "maxFilesPerTrigger", "maxBytesPerTrigger",
    "ignoreDeletes", "ignoreChanges", "skipChangeCommits", "ignoreFileDeletion", "readChangeFeed",
    "readChangeData", "excludeRegex", "failOnDataLoss", "schemaTrackingLocation", "schemaLocation",
    "streamingSourceTrackingId", "allowSourceColumnDrop", "allowSourceColumnRename", "allowSourceColumnTypeChange",
)
STREAM_REFUSED = ("endingVersion", "endingTimestamp", "versionAsOf", "timestampAsOf")
# Options pydelta's own hooks add on the driver (source_storage.py, trigger_marks.py).
_PYDELTA_OPTIONS = (STORAGE_OPTION.lower(), TRIGGER_TOKEN_OPTION.lower(), ZONE_OPTION.lower())


# ---- options ------------------------------------------------------------------------------


def _illegal(name: str, value: Any, explain: str) -> DeltaIllegalArgumentError:
    return DeltaIllegalArgumentError(f"[DELTA_ILLEGAL_OPTION] Invalid value '{value}' for option '{name}', {explain}")


def _bool(opts: Mapping[str, str], name: str) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return False
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise _illegal(name, raw, "must be 'true' or 'false'")
    return text == "true"


_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30,
               "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}


def _bytes(name: str, raw: str) -> int:
    """Spark's byte strings ("1g", "512m", "1048576"), as delta-spark's maxBytesPerTrigger takes them."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(raw))
    if not m or m.group(2).lower() not in _BYTE_UNITS or int(m.group(1)) <= 0:
        raise _illegal(name, raw, "must be a size configuration such as '10g'")
    return int(m.group(1)) * _BYTE_UNITS[m.group(2).lower()]


@dataclass(frozen=True)
class StreamOptions:
    path: str
    starting_version: str | None = None
    starting_timestamp: str | None = None
    session_zone: str | None = None  # the driver's session time zone (source_storage.ZONE_OPTION)
    max_files: int | None = None
    max_bytes: int | None = None
    ignore_deletes: bool = False
    ignore_changes: bool = False
    skip_change_commits: bool = False
    change_feed: bool = False
    exclude_regex: str | None = None
    schema_tracking: str | None = None  # schemaTrackingLocation
    tracking_id: str | None = None  # streamingSourceTrackingId
    consent: tuple[tuple[str, str], ...] = ()  # allowSourceColumn* options

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> StreamOptions:
        """delta-spark's stream options; unknown or unimplemented ones are refused by name."""
        opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
        given = {str(k).lower(): str(k) for k in options}
        supported = {k.lower() for k in STREAM_SUPPORTED}
        refused = {k.lower(): k for k in STREAM_REFUSED}
        for key in opts:
            if key in refused:
                name = refused[key]
                raise DeltaUnsupportedOptionError(
                    f"The Delta streaming source option {name}={opts[key]!r} is not supported by pydelta; remove it.",
                    option=name,
                )
            if key not in supported and not key.startswith("delta.") and key not in _PYDELTA_OPTIONS:
                raise DeltaUnsupportedOptionError(
                    f"The streaming read option {given[key]!r} is not an option pydelta implements (it implements "
                    f"{', '.join(STREAM_SUPPORTED)}); remove it.",
                    option=given[key],
                )
        path = opts.get("path")
        if not path:
            raise DeltaIllegalArgumentError(
                "A Delta streaming source needs the table's path: use spark.readStream.format('delta').load(path) "
                "or spark.readStream.table(name) for a Delta table in the catalog."
            )
        if "failondataloss" in opts and not _bool(opts, "failOnDataLoss"):
            raise DeltaUnsupportedOptionError(
                "The Delta streaming source option failOnDataLoss=false is not supported by pydelta: a missing "
                "commit always fails the stream.", option="failOnDataLoss")
        if "startingversion" in opts and "startingtimestamp" in opts:
            raise DeltaIllegalArgumentError(
                "[DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET] Please either provide 'startingVersion' or "
                "'startingTimestamp'"
            )
        starting_version = opts.get("startingversion")
        if starting_version is not None:
            text = starting_version.strip()
            if text.lower() != "latest" and (not text.isdigit()):
                raise _illegal("startingVersion", starting_version,
                               "must be greater than or equal to zero and an integer, or 'latest'")
            starting_version = text.lower() if text.lower() == "latest" else text
        max_files = None
        if "maxfilespertrigger" in opts:
            raw = opts["maxfilespertrigger"]
            if not raw.strip().isdigit() or int(raw) <= 0:
                raise _illegal("maxFilesPerTrigger", raw, "must be a positive integer")
            max_files = int(raw)
        max_bytes = _bytes("maxBytesPerTrigger", opts["maxbytespertrigger"]) if "maxbytespertrigger" in opts else None
        exclude = opts.get("excluderegex")
        if exclude is not None:
            try:
                re.compile(exclude)
            except re.error as e:
                raise _illegal("excludeRegex", exclude, f"not a valid regular expression ({e})") from None
        ignore_file_deletion = _bool(opts, "ignoreFileDeletion")
        return cls(
            path=path,
            starting_version=starting_version,
            starting_timestamp=opts.get("startingtimestamp"),
            session_zone=opts.get(ZONE_OPTION.lower()),
            max_files=max_files,
            max_bytes=max_bytes,
            ignore_deletes=_bool(opts, "ignoreDeletes") or ignore_file_deletion,
            ignore_changes=_bool(opts, "ignoreChanges") or ignore_file_deletion,
            skip_change_commits=_bool(opts, "skipChangeCommits"),
            change_feed=_bool(opts, "readChangeFeed") or _bool(opts, "readChangeData"),
            exclude_regex=exclude,
            schema_tracking=opts.get("schematrackinglocation") or opts.get("schemalocation"),
            tracking_id=opts.get("streamingsourcetrackingid"),
            consent=tuple((k, v) for k, v in opts.items() if k.startswith("allowsourcecolumn")),
        )


# ---- admission control ----------------------------------------------------------------------


class _Admission:
    """How much one batch may take (delta-spark's AdmissionLimits)."""

    def __init__(self, files: float, bytes_: float) -> None:
        self.files = files
        self.bytes = bytes_
        self.started = False

    @classmethod
    def from_options(cls, opts: StreamOptions) -> _Admission:
        """The stream's own maxFilesPerTrigger / maxBytesPerTrigger (default 1000 files unless only bytes are set)."""
        inf = float("inf")
        default_files = MAX_FILES_DEFAULT if opts.max_bytes is None else inf
        return cls(opts.max_files if opts.max_files is not None else default_files,
                   opts.max_bytes if opts.max_bytes is not None else inf)

    @classmethod
    def of(cls, limit: ReadLimit | None, opts: StreamOptions) -> _Admission | None:
        """Spark's read limit for this batch, in place of the stream's own limit of the same kind."""
        if limit is None or isinstance(limit, ReadAllAvailable):
            return None
        admission = cls.from_options(opts)
        if isinstance(limit, ReadMaxFiles):
            admission.files = limit.max_files
            return admission
        if isinstance(limit, ReadMaxBytes):
            admission.bytes = limit.max_bytes
            return admission
        raise DeltaIllegalArgumentError(f"[DELTA_UNKNOWN_READ_LIMIT] Unknown ReadLimit: {limit!r}")

    def admit(self, unit: Sequence[_Item], whole_commit: bool) -> bool:
        """Admit one file (while there is capacity left), or one whole commit (if it fits, or is the first).

        End-of-version markers are free, so empty commits never fill a batch.
        """
        files = [i.file for i in unit if i.file is not None]
        if not files:
            return True
        size = sum(f.size for f in files)
        if whole_commit:
            ok = not self.started or (self.files - len(files) >= 0 and self.bytes - size >= 0)
        else:
            ok = self.files > 0 and self.bytes > 0
        self.started = True
        self.files -= len(files)
        self.bytes -= size
        return ok


@dataclass(frozen=True)
class _Item:
    version: int
    index: int
    file: FileToRead | None  # None: the end-of-version marker

    @property
    def key(self) -> tuple[int, int]:
        return (self.version, self.index)


class DeltaStreamPartition(InputPartition):
    """The files one Python worker reads for a micro-batch."""

    def __init__(self, spec: ReadSpec, files: list[FileToRead]) -> None:
        super().__init__(None)
        self.spec = spec
        self.files = files


# ---- schema checks -----------------------------------------------------------------------


def _nullable_ok(read_nullable: bool, data_nullable: bool) -> bool:
    return read_nullable or not data_nullable  # the stream must not read nulls into a non-nullable column


def _type_compatible(data: DataType, read: DataType) -> bool:
    if isinstance(data, StructType) and isinstance(read, StructType):
        return _struct_compatible(data, read)
    if isinstance(data, ArrayType) and isinstance(read, ArrayType):
        return _nullable_ok(read.contains_null, data.contains_null) and _type_compatible(
            data.element_type, read.element_type)
    if isinstance(data, MapType) and isinstance(read, MapType):
        return (_nullable_ok(read.value_contains_null, data.value_contains_null)
                and _type_compatible(data.key_type, read.key_type)
                and _type_compatible(data.value_type, read.value_type))
    return str(data) == str(read)


def _struct_compatible(data: StructType, read: StructType, *, allow_missing: bool = True) -> bool:
    """delta-spark's isReadCompatible: no new column, same types, no tightened nullability."""
    read_by = {f.name.lower(): f for f in read.fields}
    data_names = {f.name.lower() for f in data.fields}
    if not data_names <= set(read_by) or (not allow_missing and data_names != set(read_by)):
        return False
    for f in data.fields:
        r = read_by[f.name.lower()]
        if not _nullable_ok(r.nullable, f.nullable) or not _type_compatible(f.type, r.type):
            return False
    return True


def _tree(schema: StructType, extra: tuple[Any, ...] = ()) -> str:
    import json

    from pyspark.sql.types import StructType as SparkStructType

    spark = SparkStructType.fromJson(json.loads(schema.to_json()))
    for field in extra:
        spark = spark.add(field)
    return spark.treeString().rstrip("\n")


# ---- the reader -----------------------------------------------------------------------------


class DeltaStreamReader(DataSourceStreamReader):
    """Offsets, batches and rows of one streaming query over one Delta table.

    How the end of the next batch is found depends on the PySpark: the data source
    (spark/datasource.py) picks AdmissionControlledReader (4.2+) or PacedStreamReader (4.0, 4.1).
    """

    def __init__(self, options: Mapping[str, Any], schema: Any) -> None:
        # An error raised here reaches the user wrapped in a PySpark runner bug (an
        # UnboundLocalError in its `finally`), so it is kept and raised by the first call.
        self._error: BaseException | None = None
        try:
            self._setup(options, schema)
        except Exception as e:  # noqa: BLE001 - re-raised unchanged by _ready()
            self._error = e

    def _ready(self) -> None:
        if self._error is not None:
            raise self._error

    def _setup(self, options: Mapping[str, Any], schema: Any) -> None:
        import json

        from pydelta.log.snapshot import load_snapshot

        self.opts = StreamOptions.parse(options)
        storage_options = carried_storage_options(options)  # this process has no session
        self.snapshot = load_snapshot(self.opts.path, storage_options=storage_options)
        self.table_root = self.snapshot.table_root
        self.table_id = self.snapshot.metadata.id
        self.metadata = self.snapshot.metadata
        cdf_names = {"_change_type", "_commit_version", "_commit_timestamp"}
        data_fields = [f for f in schema.fields if not (self.opts.change_feed and f.name in cdf_names)]
        self.cdf_fields = tuple(f for f in schema.fields if self.opts.change_feed and f.name in cdf_names)
        planned = parse_schema(json.dumps({"type": "struct", "fields": [json.loads(f.json()) for f in data_fields]}))
        # The planned schema is the table's at query start as readers see it, without internal
        # metadata (`remove_internal_metadata`): take the log's copy (physical names, ids) when it
        # has the same columns.
        self.schema = planned
        self.tracking = self._tracking_log()
        if self.tracking is not None:
            self.schema = self._tracked_schema()
        elif _same(_without_field_metadata(self.snapshot.schema), _without_field_metadata(planned)):
            self.schema = self.snapshot.schema
        elif column_mapping_mode(self.metadata.configuration) != "none":
            # The columns changed since the query was planned: their physical names are unknown.
            raise self._schema_changed(self.snapshot.schema, self.snapshot.version)
        self.partition_columns = tuple(self.metadata.partition_columns)
        self.mapping_mode = column_mapping_mode(self.metadata.configuration)
        if self.opts.change_feed and not is_cdf_enabled(self.metadata):
            raise self._missing_change_data(self.snapshot.version)
        self.spec = ReadSpec(
            self.table_root, self.schema.to_json(), schema.json(), self.partition_columns, self.mapping_mode,
            self.opts.change_feed, tuple(sorted((storage_options or {}).items())),
        )
        self._snapshots: dict[int, list[FileToRead]] = {}
        self._available_now = False
        self._bound: tuple[int, int] | None = None
        self._schema_boundary: int | None = None

    # -- offsets
    def initialOffset(self) -> dict[str, Any]:
        """Where a fresh query starts: before the snapshot at query start, or before the starting version."""
        self._ready()
        version = self._starting_version()
        if version is None:
            return SourceOffset(self.table_id, self._latest().version, BASE_INDEX, True).to_dict()
        return SourceOffset(self.table_id, version, BASE_INDEX, False).to_dict()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        self._ready()
        begin, stop = parse_offset(start, self.table_id), parse_offset(end, self.table_id)
        if begin.initial_snapshot and begin.index == BASE_INDEX:
            # Only the first batch starts here, and a restarted query recomputes this initial
            # offset (the table may have moved on): the batch's end says which snapshot to read
            # (delta-spark's extractStartingState; the version before a commit offset is as good).
            version = stop.version if stop.initial_snapshot else stop.version - 1
            begin = SourceOffset(self.table_id, version, BASE_INDEX, True)
        if begin.key >= stop.key:
            return []
        files = [i.file for i in self._items(begin, stop.key, None) if i.file is not None]
        if self.opts.exclude_regex:  # matched against the path relative to the table, as in the log
            pattern = re.compile(self.opts.exclude_regex)
            files = [f for f in files if not pattern.search(os.path.relpath(f.path, self.table_root))]
        return [DeltaStreamPartition(self.spec, group) for group in _pack(files)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, DeltaStreamPartition)
        return read_files(partition.spec, partition.files)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the source keeps no per-batch state."""

    def _batch_end(self, start: dict[str, Any], admission: _Admission | None) -> dict[str, Any]:
        """The end of the batch after `start`: as far as `admission` lets it go (and, in a
        Trigger.AvailableNow run, no further than what was there when the run began)."""
        begin = parse_offset(start, self.table_id)
        if self._available_now and self._bound is None:
            # Trigger.AvailableNow: everything there is right now, and never more in this run
            # (through a tracked schema change: the batch after it stops the run for a restart).
            self._schema_boundary = None
            last = self._last(self._items(begin, None, None))
            self._bound = self._next_offset(last, begin).key if last else begin.key
            if self._schema_boundary is not None:
                self._bound = (self._schema_boundary, END_INDEX)
        last = self._last(self._items(begin, self._bound, admission))
        return self._next_offset(last, begin).to_dict() if last else start

    # -- the indexed files after an offset
    @staticmethod
    def _last(items: Iterator[_Item]) -> _Item | None:
        last = None
        for item in items:
            last = item
        return last

    def _next_offset(self, last: _Item, begin: SourceOffset) -> SourceOffset:
        if last.index == END_INDEX:
            return SourceOffset(self.table_id, last.version + 1, BASE_INDEX, False)
        return SourceOffset(self.table_id, last.version, last.index,
                            begin.initial_snapshot and last.version == begin.version)

    # -- schema tracking (schemaTrackingLocation)
    def _tracking_log(self) -> Any:
        if self.opts.schema_tracking is None:
            return None
        from pydelta.spark.streaming.schema_tracking import SchemaTrackingLog

        return SchemaTrackingLog(self.opts.schema_tracking, self.table_id, self.opts.tracking_id)

    def _tracked_schema(self) -> StructType:
        """The schema the log says this stream reads with (recording the table's on first use), after
        the user's consent to the non-additive changes the last evolution made."""
        from pydelta.spark.streaming.schema_tracking import TrackedSchema, check_consent, non_additive_changes

        entries: list[TrackedSchema] = self.tracking.entries()
        if not entries:
            self.tracking.add(TrackedSchema.of(self.metadata, self.snapshot.version))
            return self.snapshot.schema
        if len(entries) > 1:
            check_consent(dict(self.opts.consent), non_additive_changes(entries[-2].schema, entries[-1].schema),
                          entries[-1].version)
        return entries[-1].schema

    def _items(self, begin: SourceOffset, bound: tuple[int, int] | None,
               admission: _Admission | None) -> Iterator[_Item]:
        """Indexed files after `begin`, up to `bound` (inclusive), while `admission` admits them.

        With schema tracking, a commit changing the schema ends the files before it; when it is
        the first thing after `begin`, the new schema is logged and the stream stops to restart.
        """
        produced = False
        try:
            for item in self._items_unchecked(begin, bound, admission):
                produced = True
                yield item
        except _SchemaEvolution as change:
            if produced:
                self._schema_boundary = change.version  # an AvailableNow run must still reach it
                return
            from pydelta.spark.streaming.schema_tracking import TrackedSchema, evolution_error

            entry = TrackedSchema.of(change.metadata, change.version)
            latest = self.tracking.entries()
            if not latest or latest[-1].version != change.version:
                self.tracking.add(entry)
            raise evolution_error(entry) from None

    def _items_unchecked(self, begin: SourceOffset, bound: tuple[int, int] | None,
                         admission: _Admission | None) -> Iterator[_Item]:
        for unit, whole in self._units(begin, bound):
            unit = [i for i in unit if i.key > begin.key]
            if not unit:
                continue
            if bound is not None and unit[-1].key > bound:
                unit = [i for i in unit if i.key <= bound]
                if admission is None or admission.admit(unit, whole):
                    yield from unit
                return
            if admission is not None and not admission.admit(unit, whole):
                return
            yield from unit

    def _units(self, begin: SourceOffset, bound: tuple[int, int] | None) -> Iterator[tuple[list[_Item], bool]]:
        """Admission units in offset order: single files, whole commits (change feed), end markers."""
        first_commit = begin.version
        if begin.initial_snapshot:
            v = begin.version
            for i, f in enumerate(self._snapshot_files(v)):
                yield [_Item(v, i, f)], False
            yield [_Item(v, END_INDEX, None)], False
            first_commit = v + 1
        last_commit = _NO_END if bound is None else (bound[0] - 1 if bound[1] == BASE_INDEX else bound[0])
        if last_commit < first_commit:
            return
        extra = dict(self.snapshot.unbackfilled_commits)  # a managed table's commits known to its owner only
        for va in read_versions(self.snapshot.storage, self.table_root, first_commit, last_commit, extra):
            files = self._commit_files(va)
            items = [_Item(va.version, i, f) for i, f in enumerate(files)]
            if self.opts.change_feed:
                if items:
                    yield items, True
            else:
                for item in items:
                    yield [item], False
            yield [_Item(va.version, END_INDEX, None)], False

    def _snapshot_files(self, version: int) -> list[FileToRead]:
        if version not in self._snapshots:
            from pydelta.log.snapshot import load_snapshot

            snap = (self.snapshot if version == self.snapshot.version
                    else load_snapshot(self.table_root, version=version, storage=self.snapshot.storage))
            if not _same(snap.schema, self.schema) and not _struct_compatible(snap.schema, self.schema):
                raise self._schema_changed(snap.schema, version)
            ts = snap.timestamp
            # delta-spark's order: oldest files first (modificationTime), then by path.
            columns = ["path", "partition_values", "size", "deletion_vector", "modification_time"]
            rows = sorted(snap.files().select(columns).to_pylist(),
                          key=lambda r: (r["modification_time"] or 0, r["path"]))
            self._snapshots = {version: [
                FileToRead(snap.absolute_path(r["path"]), _pv(r["partition_values"]), int(r["size"] or 0), version, ts,
                           "insert" if self.opts.change_feed else None, r["deletion_vector"] or None)
                for r in rows
            ]}
        return self._snapshots[version]

    def _commit_files(self, va: VersionActions) -> list[FileToRead]:
        """The files a commit contributes, after delta-spark's checks on what the commit did."""
        from pydelta.log.replay import canonical_path

        a = va.actions
        if a.metadata is not None:
            self._check_metadata(a.metadata, va.version)
        if self.opts.change_feed:
            return [
                FileToRead(canonical_path(c.path, self.table_root), _pv(c.partition_values), c.size, c.version,
                           c.timestamp, c.change_type, c.deletion_vector or None,
                           tuple(int(x) for x in c.only_rows) if c.only_rows is not None else None)
                for c in change_files(va, self.table_root, self.snapshot.storage)
            ]
        adds = [x for x in a.adds or _bodies(a.add_files()) if x.get("dataChange", True)]
        removes = [x for x in a.removes or _bodies(a.remove_files()) if x.get("dataChange", True)]
        if removes:
            allow_changes = self.opts.ignore_changes or self.opts.skip_change_commits
            if adds and not allow_changes:
                raise self._ignore_changes_error(va, removes[0]["path"])
            if not adds and not (allow_changes or self.opts.ignore_deletes):
                raise DeltaNotImplementedError(
                    f"[DELTA_SOURCE_IGNORE_DELETE] Detected deleted data (for example {removes[0]['path']}) from "
                    f"streaming source at version {va.version}. This is currently not supported. If you'd like to "
                    f"ignore deletes, set the option 'ignoreDeletes' to 'true'. The source table can be found at "
                    f"path {_hadoop_path(self.table_root)}."
                )
            if self.opts.skip_change_commits:
                return []
        return [
            FileToRead(canonical_path(x["path"], self.table_root), _pv(x.get("partitionValues")),
                       int(x.get("size") or 0), va.version, va.timestamp, None, x.get("deletionVector") or None)
            for x in adds
        ]

    # -- errors and checks
    def _ignore_changes_error(self, va: VersionActions, path: str) -> DeltaNotImplementedError:
        info = va.actions.commit_info or {}
        change = path
        if info.get("operation"):
            # delta-spark holds each operation parameter as the JSON text of its logged value
            # (a string parameter keeps its quotes) and prints the Scala Map of them.
            params = info.get("operationParameters") or {}
            shown = ", ".join(f"{k} -> {json.dumps(v, separators=(',', ':'), ensure_ascii=False)}"
                              for k, v in params.items())
            change = f"{info['operation']} (Map({shown}))"
        return DeltaNotImplementedError(
            f"[DELTA_SOURCE_TABLE_IGNORE_CHANGES] Detected a data update (for example {change}) in the source table "
            f"at version {va.version}. This is currently not supported. If this is going to happen regularly and "
            "you are okay to skip changes, set the option 'skipChangeCommits' to 'true'. If you would like the data "
            "update to be reflected, please restart this query with a fresh checkpoint directory. The source table "
            f"can be found at path {_hadoop_path(self.table_root)}."
        )

    def _check_metadata(self, metadata: Metadata, version: int) -> None:
        if metadata.id != self.table_id:
            raise DeltaIllegalArgumentError(
                f"[DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE] The streaming query was reading from an unexpected "
                f"Delta table (id = '{metadata.id}'). It used to read from another Delta table (id = "
                f"'{self.table_id}') according to checkpoint. This may happen when you changed the code to read from "
                "a new table or you deleted and re-created a table. Please revert your change or delete your "
                "streaming query checkpoint to restart from scratch."
            )
        if self.opts.change_feed and not is_cdf_enabled(metadata):
            raise self._missing_change_data(version)
        same_partitioning = ([c.lower() for c in metadata.partition_columns]
                             == [c.lower() for c in self.partition_columns])
        mapped = column_mapping_mode(metadata.configuration) != "none"
        if not same_partitioning or not _struct_compatible(metadata.schema, self.schema, allow_missing=not mapped) or (
            mapped and _physical_names(metadata.schema) != _physical_names(self.schema)
        ):
            if self.tracking is not None and same_partitioning and mapped:
                raise _SchemaEvolution(version, metadata)
            raise self._schema_changed(metadata.schema, version)

    def _schema_changed(self, data_schema: StructType, version: int) -> DeltaAnalysisError:
        cls, tail = "DELTA_SCHEMA_CHANGED_WITH_VERSION", ""
        if self.opts.starting_version is not None or self.opts.starting_timestamp is not None:
            cls = "DELTA_SCHEMA_CHANGED_WITH_STARTING_OPTIONS"
            tail = (" If the issue persists after changing to a new checkpoint directory, you may need to change the "
                    "existing 'startingVersion' or 'startingTimestamp' option to start from a version newer than "
                    f"{version} with a new checkpoint directory.")
        return DeltaAnalysisError(
            f"[{cls}] Detected schema change in version {version}:\n"
            f"streaming source schema: {_tree(self.schema, self.cdf_fields)}\n\n"
            f"data file schema: {_tree(data_schema, self.cdf_fields)}\n\n"
            "Please try restarting the query. If this issue repeats across query restarts without making progress, "
            "you have made an incompatible schema change and need to start your query from scratch using a new "
            f"checkpoint directory.{tail}"
        )

    def _missing_change_data(self, version: int) -> DeltaAnalysisError:
        return DeltaAnalysisError(
            f"[DELTA_MISSING_CHANGE_DATA] Error getting change data for range [{version} , {version}] as change data "
            f"was not recorded for version [{version}]. If you've enabled change data feed on this table, use "
            "`DESCRIBE HISTORY` to see when it was first enabled. Otherwise, to start recording change data, use "
            "`ALTER TABLE table_name SET TBLPROPERTIES (delta.enableChangeDataFeed=true)`."
        )

    # -- starting point
    def _latest(self) -> Snapshot:
        self.snapshot = self.snapshot.update()
        return self.snapshot

    def _starting_version(self) -> int | None:
        """startingVersion / startingTimestamp as a version (None: start with the snapshot)."""
        latest = self._latest().version
        if self.opts.starting_version == "latest":
            return latest + 1
        if self.opts.starting_version is not None:
            version = int(self.opts.starting_version)
            if version > latest:
                from pydelta.log.segment import list_log

                earliest = min(list_log(self.snapshot.storage, self.table_root, 0).commits, default=0)
                raise VersionNotFoundError(
                    f"[DELTA_VERSION_NOT_FOUND] Cannot time travel Delta table to version {version}. Available "
                    f"versions: [{earliest}, {latest}]."
                )
            return version
        if self.opts.starting_timestamp is not None:
            from pydelta.log.changes import version_from_start_timestamp
            from pydelta.log.timestamps import commit_timestamps, ict_enablement_version
            from pydelta.spark.read.time_travel import timestamp_ms_in, zone_named

            stamps = commit_timestamps(self.snapshot.storage, self.table_root, ict_enablement_version(self.metadata))
            zone = zone_named(self.opts.session_zone) if self.opts.session_zone else None
            return version_from_start_timestamp([(c.version, c.timestamp) for c in stamps],
                                                timestamp_ms_in(zone, self.opts.starting_timestamp),
                                                self.table_root)
        return None


if HAS_ADMISSION_CONTROL:

    class AdmissionControlledReader(DeltaStreamReader, SupportsTriggerAvailableNow):
        """PySpark 4.2+: Spark hands each batch its start and read limit (delta-spark's admission control)."""

        def getDefaultReadLimit(self) -> ReadLimit:
            self._ready()
            if self.opts.max_bytes is not None and self.opts.max_files is None:
                return ReadMaxBytes(self.opts.max_bytes)
            return ReadMaxFiles(self.opts.max_files or MAX_FILES_DEFAULT)  # maxBytes, if also set, applies too

        def prepareForTriggerAvailableNow(self) -> None:
            self._ready()
            self._available_now = True

        def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
            self._ready()
            return self._batch_end(start, _Admission.of(limit, self.opts))


class _SchemaEvolution(Exception):
    """A commit changes the schema of a stream that tracks its schema (see `_items`)."""

    def __init__(self, version: int, metadata: Metadata) -> None:
        super().__init__(version)
        self.version = version
        self.metadata = metadata


def _without_field_metadata(schema: StructType) -> StructType:
    out = without_field_metadata(schema)
    assert isinstance(out, StructType)  # a struct stays a struct
    return out


def _same(a: StructType, b: StructType) -> bool:
    return a.to_json() == b.to_json()


def _physical_names(schema: StructType) -> dict[str, str]:
    from pydelta.protocol.schema import physical_name

    return {f.name.lower(): physical_name(f) for f in schema.fields}


def _pv(value: Any) -> dict[str, str | None]:
    if not value:
        return {}
    if isinstance(value, list):  # an Arrow map as a list of pairs
        return {k: v for k, v in value}
    return dict(value)


def _bodies(array: Any) -> list[dict[str, Any]]:
    return array.to_pylist() if len(array) else []


def _pack(files: list[FileToRead]) -> list[list[FileToRead]]:
    """Consecutive files into partitions of about total/cores bytes (at most 128 MiB), one per worker task."""
    if not files:
        return []
    total = sum(max(f.size, 1) for f in files)
    target = min(_PARTITION_BYTES, max(1, total // max(1, os.cpu_count() or 1)))
    groups: list[list[FileToRead]] = [[]]
    size = 0
    for f in files:
        if groups[-1] and size + f.size > target:
            groups.append([])
            size = 0
        groups[-1].append(f)
        size += f.size
    return groups
