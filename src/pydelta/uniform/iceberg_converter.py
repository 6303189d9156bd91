"""UniForm (Iceberg): bring a Delta table's Iceberg metadata up to a committed version.

Files go where delta-spark's converter puts them: `<table>/metadata/NNNNN-<uuid>.metadata.json`
(format version 2), manifest lists `snap-<snapshot id>-1-<uuid>.avro`, manifests
`<uuid>-m<N>.avro`. The Iceberg table properties record the conversion as delta-spark's do:
`delta-version`, `delta-timestamp`, `base-delta-version` and `schema.name-mapping.default`.

Incremental: every Delta commit after the last converted one becomes one Iceberg snapshot
(append, delete, overwrite, or replace for a rewrite that changes no data; a commit with no
file change makes none), so commits written by clients without UniForm are caught up by the
next writer that has it. A first conversion, or one more than `MAX_PENDING_COMMITS` behind (or
whose commits were cleaned up), writes one snapshot of every live file.

A path-based table has no catalog to hold the newest metadata location (delta-spark keeps it
in its catalog); pydelta writes `metadata/version-hint.text` naming it, which pyiceberg's
`StaticTable.from_metadata(<table>)` follows, and `latest_metadata_location` finds it too.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.schema import Schema
from pyiceberg.serializers import FromInputFile, ToOutputFile
from pyiceberg.table.metadata import TableMetadata, TableMetadataV2
from pyiceberg.table.name_mapping import create_mapping_from_schema
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import (
    Operation,
    Snapshot,
    SnapshotSummaryCollector,
    Summary,
    update_snapshot_summaries,
)
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import (
    AddSchemaUpdate,
    AddSnapshotUpdate,
    SetCurrentSchemaUpdate,
    SetPropertiesUpdate,
    SetSnapshotRefUpdate,
    update_table_metadata,
)

from pydelta.errors import DeltaError, FileAlreadyExistsError, VersionNotFoundError
from pydelta.log.changes import read_versions
from pydelta.log.replay import canonical_path
from pydelta.log.snapshot import Snapshot as DeltaSnapshot
from pydelta.log.storage import Storage
from pydelta.protocol.actions import Metadata
from pydelta.protocol.iceberg_compat import uniform_iceberg_enabled
from pydelta.protocol.partition_values import hadoop_path
from pydelta.protocol.properties import UNIVERSAL_FORMAT_CONFIG_PREFIX
from pydelta.uniform.iceberg_schema import file_metrics, iceberg_schema, partition_record, partition_spec
from pydelta.uniform.storage_io import StorageFileIO

logger = logging.getLogger(__name__)

METADATA_DIR = "metadata"
VERSION_HINT = "version-hint.text"
DELTA_VERSION = "delta-version"
DELTA_TIMESTAMP = "delta-timestamp"
BASE_DELTA_VERSION = "base-delta-version"
NAME_MAPPING = "schema.name-mapping.default"
#: delta-spark's spark.databricks.delta.iceberg.maxPendingCommits default.
MAX_PENDING_COMMITS = 100
_METADATA_FILE = re.compile(r"^(\d{5,})-[0-9a-fA-F-]{36}\.metadata\.json$")


_ATTEMPTS = 5


class _NumberTaken(Exception):
    """Another converter created the metadata file of the number this one was writing."""


class UniformConversionError(DeltaError):
    """The Iceberg metadata of a committed version could not be written (the Delta commit stands)."""

    error_class = "DELTA_UNIVERSAL_FORMAT_CONVERSION_FAILED"


def metadata_dir(table_root: str) -> str:
    return f"{table_root.rstrip('/')}/{METADATA_DIR}"


def latest_metadata_location(storage: Storage, table_root: str) -> str | None:
    """The newest `NNNNN-<uuid>.metadata.json` of the table (highest NNNNN), or None."""
    best: tuple[int, str] | None = None
    for info in storage.list_from(f"{metadata_dir(table_root)}/0"):
        name = info.path.rstrip("/").rsplit("/", 1)[-1]
        match = _METADATA_FILE.match(name)
        if match and (best is None or (int(match.group(1)), name) > best):
            best = (int(match.group(1)), name)
    return f"{metadata_dir(table_root)}/{best[1]}" if best else None


def converted_version(storage: Storage, location: str) -> int | None:
    """The Delta version the Iceberg metadata file at `location` was converted from."""
    return _delta_version(FromInputFile.table_metadata(StorageFileIO(storage).new_input(location)))


def _delta_version(metadata: TableMetadata) -> int | None:
    raw = metadata.properties.get(DELTA_VERSION)
    return int(raw) if raw is not None else None


# ---- conversion ----------------------------------------------------------------------------------


def convert(snapshot: DeltaSnapshot, storage: Storage | None = None) -> str | None:
    """Write the Iceberg metadata of `snapshot`'s version (and of every unconverted commit before
    it); returns the new metadata location (None: UniForm is off, or the version is converted)."""
    if not uniform_iceberg_enabled(snapshot.metadata.configuration):
        return None
    storage = storage or snapshot.storage
    try:
        for _ in range(_ATTEMPTS):
            try:
                return _Conversion(snapshot, storage).run()
            except _NumberTaken:
                continue  # another converter wrote that metadata file first: convert on top of it
        raise UniformConversionError(
            f"[DELTA_UNIVERSAL_FORMAT_CONVERSION_FAILED] Failed to convert the table version {snapshot.version} "
            f"to the universal format iceberg: other converters took {_ATTEMPTS} metadata versions in a row")
    except DeltaError:
        raise
    except Exception as e:  # noqa: BLE001 - named for the caller, who keeps the commit
        raise UniformConversionError(
            f"[DELTA_UNIVERSAL_FORMAT_CONVERSION_FAILED] Failed to convert the table version {snapshot.version} "
            f"to the universal format iceberg. {type(e).__name__}: {e}") from e


@dataclass
class _NewSnapshot:
    """An Iceberg snapshot built but not yet added: its manifests are written."""

    snapshot_id: int
    manifests: list[ManifestFile]
    summary: Summary
    timestamp: int


@dataclass
class _FileChange:
    """One Delta commit's file changes, as Iceberg sees them."""

    timestamp: int
    added: list[Mapping[str, Any]] = field(default_factory=list)
    removed: set[str] = field(default_factory=set)  # Iceberg file paths
    data_change: bool = False


class _Conversion:
    def __init__(self, snapshot: DeltaSnapshot, storage: Storage) -> None:
        self.delta = snapshot
        self.storage = storage
        self.io = StorageFileIO(storage)
        self.root = snapshot.table_root
        self.commit_uuid = uuid.uuid4()
        self.manifest_count = 0
        self.schema = iceberg_schema(snapshot.schema)
        self.spec = partition_spec(snapshot.schema, snapshot.partition_columns)

    # -- the run ------------------------------------------------------------------------------------
    def run(self) -> str | None:
        previous_location = latest_metadata_location(self.storage, self.root)
        base = FromInputFile.table_metadata(self.io.new_input(previous_location)) if previous_location else None
        last = _delta_version(base) if base is not None else None
        if last is not None and last >= self.delta.version:
            return None
        metadata = self._with_current_schema(base) if base is not None else self._new_metadata()
        changes = self._changes_since(last) if last is not None else None
        if changes is None:
            if self.delta.num_files or metadata.current_snapshot() is not None:  # an empty new table: none
                metadata = self._add_snapshot(metadata, self._full_snapshot(metadata))
        else:
            for change in changes:
                built = self._incremental_snapshot(metadata, change)
                if built is not None:
                    metadata = self._add_snapshot(metadata, built)
        metadata = update_table_metadata(metadata, (SetPropertiesUpdate(updates=self._properties(last)),),
                                         metadata_location=previous_location)
        number = _number(previous_location) + 1 if previous_location else 0
        # The name's uuid follows from the table and the number, and the file is created only if
        # absent: of two converters at once, one writes number N and the other starts again from it.
        name_uuid = uuid.uuid5(uuid.NAMESPACE_URL, f"delta-uniform:{self.delta.metadata.id}/{number}")
        location = f"{metadata_dir(self.root)}/{number:05d}-{name_uuid}.metadata.json"
        try:
            ToOutputFile.table_metadata(metadata, self.io.new_output(location))
        except FileAlreadyExistsError:
            raise _NumberTaken(location) from None
        self.storage.put(f"{metadata_dir(self.root)}/{VERSION_HINT}", location.rsplit("/", 1)[-1].encode())
        return location

    def _new_metadata(self) -> TableMetadata:
        last_column_id = max(self.schema.highest_field_id, _max_column_id(self.delta.metadata))
        return TableMetadataV2(
            location=hadoop_path(self.root), table_uuid=uuid.uuid4(), last_column_id=last_column_id,
            schemas=[self.schema], current_schema_id=self.schema.schema_id,
            partition_specs=[self.spec], default_spec_id=self.spec.spec_id,
            last_partition_id=max([p.field_id for p in self.spec.fields], default=999),
            sort_orders=[UNSORTED_SORT_ORDER], default_sort_order_id=UNSORTED_SORT_ORDER.order_id,
            properties={}, last_sequence_number=0)

    def _with_current_schema(self, base: TableMetadata) -> TableMetadata:
        """The base with the Delta table's current schema (a new Iceberg schema when it changed)."""
        current = base.schema()
        spec = base.spec()
        if [f.source_id for f in spec.fields] != [f.source_id for f in self.spec.fields]:
            raise UniformConversionError(
                "[DELTA_UNIVERSAL_FORMAT_CONVERSION_FAILED] Delta does not support partition evolution: the "
                f"Iceberg metadata is partitioned by {[f.name for f in spec.fields]}, the table by "
                f"{list(self.delta.partition_columns)}")
        self.spec = spec
        if current.as_struct() == self.schema.as_struct():
            self.schema = current
            return base
        new_id = max(s.schema_id for s in base.schemas) + 1
        self.schema = Schema(*self.schema.fields, schema_id=new_id)
        last_column_id = max(base.last_column_id, self.schema.highest_field_id, _max_column_id(self.delta.metadata))
        return update_table_metadata(base, (AddSchemaUpdate(schema_=self.schema, last_column_id=last_column_id),
                                            SetCurrentSchemaUpdate(schema_id=-1)))

    def _properties(self, last: int | None) -> dict[str, str]:
        conf = self.delta.metadata.configuration
        props = {k[len(UNIVERSAL_FORMAT_CONFIG_PREFIX) + len("iceberg."):]: v for k, v in conf.items()
                 if k.lower().startswith(UNIVERSAL_FORMAT_CONFIG_PREFIX + "iceberg.")}
        props.update({
            DELTA_VERSION: str(self.delta.version),
            DELTA_TIMESTAMP: str(self.delta.timestamp),
            NAME_MAPPING: create_mapping_from_schema(self.schema).model_dump_json(),
        })
        if last is not None:
            props[BASE_DELTA_VERSION] = str(last)
        return props

    # -- which files changed --------------------------------------------------------------------------
    def _changes_since(self, last: int) -> list[_FileChange] | None:
        """Each commit after `last` as file changes; None when they cannot all be read (cleaned up,
        or too many: the conversion then writes the whole table)."""
        if self.delta.version - last > MAX_PENDING_COMMITS:
            return None
        try:
            versions = list(read_versions(self.storage, self.root, last + 1, self.delta.version,
                                          getattr(self.delta, "unbackfilled_commits", None)))
        except VersionNotFoundError:
            return None
        if [v.version for v in versions] != list(range(last + 1, self.delta.version + 1)):
            return None
        out = []
        for v in versions:
            change = _FileChange(v.timestamp)
            for remove in v.actions.removes:
                change.removed.add(self._location(remove["path"]))
                change.data_change |= bool(remove.get("dataChange", True))
            for add in v.actions.adds:
                change.added.append(add)
                change.data_change |= bool(add.get("dataChange", True))
            out.append(change)
        return out

    def _location(self, path: str) -> str:
        return hadoop_path(canonical_path(path, self.root))

    def _data_file(self, add: Mapping[str, Any]) -> DataFile:
        metrics = file_metrics(self.delta.schema, add.get("stats"))
        if "record_count" not in metrics:
            raise UniformConversionError(
                f"[DELTA_UNIVERSAL_FORMAT_CONVERSION_FAILED] the file {add['path']} has no numRecords statistic, "
                "which Iceberg needs (IcebergCompat requires it of every file)")
        data_file = DataFile.from_args(
            content=DataFileContent.DATA, file_path=self._location(add["path"]), file_format=FileFormat.PARQUET,
            partition=partition_record(self.delta.schema, self.delta.partition_columns,
                                       add.get("partitionValues") or {}),
            file_size_in_bytes=int(add["size"]), **metrics)
        data_file.spec_id = self.spec.spec_id
        return data_file

    # -- snapshots -------------------------------------------------------------------------------------
    def _full_snapshot(self, metadata: TableMetadata) -> _NewSnapshot:
        """One snapshot holding every live file of the Delta version (nothing of the previous ones)."""
        files = self.delta.files()
        adds = [{"path": p, "size": s, "stats": st, "partitionValues": dict(pv or [])}
                for p, s, st, pv in zip(files.column("path").to_pylist(), files.column("size").to_pylist(),
                                        files.column("stats").to_pylist(),
                                        files.column("partition_values").to_pylist(), strict=True)]
        snapshot_id = metadata.new_snapshot_id()
        collector = SnapshotSummaryCollector()
        data_files = [self._data_file(a) for a in adds]
        manifests = [self._manifest(snapshot_id, data_files, collector)] if data_files else []
        previous = metadata.current_snapshot()
        operation = Operation.OVERWRITE if previous is not None else Operation.APPEND
        summary = Summary(operation, **collector.build())
        summary = _with_totals(summary, data_files, replaced=previous)
        return _NewSnapshot(snapshot_id, manifests, summary, self.delta.timestamp)

    def _incremental_snapshot(self, metadata: TableMetadata,
                              change: _FileChange) -> _NewSnapshot | None:
        parent = metadata.current_snapshot()
        added = [self._data_file(a) for a in change.added]
        if not added and not change.removed:
            return None
        # each live manifest with its entries, read once
        live = [(m, m.fetch_manifest_entry(self.io, discard_deleted=True))
                for m in (parent.manifests(self.io) if parent is not None else [])]
        # a re-added path (new statistics, a clone's restore) replaces its old entry
        added_paths = {d.file_path for d in added}
        removed = change.removed | {e.data_file.file_path for _, entries in live for e in entries
                                    if e.data_file.file_path in added_paths}
        snapshot_id = metadata.new_snapshot_id()
        collector = SnapshotSummaryCollector()
        manifests: list[ManifestFile] = []
        if added:
            manifests.append(self._manifest(snapshot_id, added, collector))
        for manifest, entries in live:
            if not any(e.data_file.file_path in removed for e in entries):
                manifests.append(manifest)
                continue
            manifests.append(self._rewritten(snapshot_id, entries, removed, collector))
        if added and removed:
            operation = Operation.OVERWRITE if change.data_change else Operation.REPLACE
        else:
            operation = Operation.APPEND if added else Operation.DELETE
        if operation == Operation.REPLACE:  # pyiceberg builds no replace summary: Iceberg's own fields
            summary = Summary(operation, **collector.build())
            summary = _carried_totals(summary, parent)
        else:
            summary = update_snapshot_summaries(Summary(operation, **collector.build()),
                                                parent.summary if parent is not None else None)
        return _NewSnapshot(snapshot_id, manifests, summary, change.timestamp)

    def _manifest(self, snapshot_id: int, files: Iterable[DataFile],
                  collector: SnapshotSummaryCollector) -> ManifestFile:
        with write_manifest(2, self.spec, self.schema, self.io.new_output(self._manifest_path()),
                            snapshot_id, "deflate") as writer:
            for data_file in files:
                writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                                                   data_file=data_file))
                collector.add_file(data_file, schema=self.schema, partition_spec=self.spec)
        return writer.to_manifest_file()

    def _rewritten(self, snapshot_id: int, entries: list[ManifestEntry], removed: set[str],
                   collector: SnapshotSummaryCollector) -> ManifestFile:
        with write_manifest(2, self.spec, self.schema, self.io.new_output(self._manifest_path()),
                            snapshot_id, "deflate") as writer:
            for entry in entries:
                if entry.data_file.file_path in removed:
                    writer.delete(entry)
                    collector.remove_file(entry.data_file, schema=self.schema, partition_spec=self.spec)
                else:
                    writer.existing(entry)
        return writer.to_manifest_file()

    def _manifest_path(self) -> str:
        path = f"{metadata_dir(self.root)}/{self.commit_uuid}-m{self.manifest_count}.avro"
        self.manifest_count += 1
        return path

    def _add_snapshot(self, metadata: TableMetadata, built: _NewSnapshot) -> TableMetadata:
        parent = metadata.current_snapshot()
        snapshot_id, manifests = built.snapshot_id, built.manifests
        sequence = metadata.next_sequence_number()
        manifest_list = f"{metadata_dir(self.root)}/snap-{snapshot_id}-1-{self.commit_uuid}.avro"
        with write_manifest_list(2, self.io.new_output(manifest_list), snapshot_id,
                                 parent.snapshot_id if parent else None, sequence, "deflate") as writer:
            writer.add_manifests(manifests)
        # Snapshot times follow the Delta commits, never going back (Iceberg orders its history by them).
        timestamp = max(built.timestamp, parent.timestamp_ms if parent is not None else 0)
        snapshot = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent.snapshot_id if parent else None,
                            sequence_number=sequence, timestamp_ms=timestamp, manifest_list=manifest_list,
                            summary=built.summary, schema_id=self.schema.schema_id)
        return update_table_metadata(metadata, (
            AddSnapshotUpdate(snapshot=snapshot),
            SetSnapshotRefUpdate(ref_name="main", type=SnapshotRefType.BRANCH, snapshot_id=snapshot_id,
                                 max_ref_age_ms=None, max_snapshot_age_ms=None, min_snapshots_to_keep=None)))


def _number(location: str) -> int:
    match = _METADATA_FILE.match(location.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else -1


def _max_column_id(metadata: Metadata) -> int:
    try:
        return int(metadata.configuration.get("delta.columnMapping.maxColumnId", "0"))
    except ValueError:
        return 0


_TOTALS = ("total-records", "total-files-size", "total-data-files", "total-delete-files",
           "total-position-deletes", "total-equality-deletes")


def _with_totals(summary: Summary, files: list[DataFile], replaced: Snapshot | None) -> Summary:
    """A full snapshot's totals: exactly its files (and what it replaced as deleted)."""
    extra = {
        "total-records": str(sum(f.record_count for f in files)),
        "total-files-size": str(sum(f.file_size_in_bytes for f in files)),
        "total-data-files": str(len(files)),
        "total-delete-files": "0", "total-position-deletes": "0", "total-equality-deletes": "0",
    }
    if replaced is not None and replaced.summary is not None:
        extra["deleted-data-files"] = replaced.summary.get("total-data-files", "0") or "0"
        extra["deleted-records"] = replaced.summary.get("total-records", "0") or "0"
    return Summary(summary.operation, **{**summary.additional_properties, **extra})


def _carried_totals(summary: Summary, parent: Snapshot | None) -> Summary:
    """A rewrite's totals: the parent's, less what it removed, plus what it added."""
    def count(source: Mapping[str, str] | None, key: str) -> int:
        try:
            return int((source or {}).get(key, "0") or 0)
        except ValueError:
            return 0

    props = dict(summary.additional_properties)
    previous = parent.summary.additional_properties if parent is not None and parent.summary else {}
    totals = {
        "total-data-files": count(previous, "total-data-files") + count(props, "added-data-files")
        - count(props, "deleted-data-files"),
        "total-records": count(previous, "total-records") + count(props, "added-records")
        - count(props, "deleted-records"),
        "total-files-size": count(previous, "total-files-size") + count(props, "added-files-size")
        - count(props, "removed-files-size"),
    }
    props.update({k: str(v) for k, v in totals.items()})
    for key in ("total-delete-files", "total-position-deletes", "total-equality-deletes"):
        props.setdefault(key, previous.get(key, "0"))
    return Summary(summary.operation, **props)

