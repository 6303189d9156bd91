"""Writing checkpoints: classic, multi-part and V2 (with sidecars), plus `_last_checkpoint`.

A checkpoint is the reconciled state of one version (PROTOCOL.md, "Checkpoints"): protocol,
metaData, txns, domain metadata, live `add`s and the `remove` tombstones that have not
expired, one action per Parquet row, each kind in its own top-level struct column. The
layout follows delta-spark's Checkpoints.scala so other clients read our checkpoints as
they read delta-spark's.

Safety: every file is created through `Storage.put_if_absent` (temp file, then an atomic
link), multi-part sets and sidecars are complete before anything points at them, and
`_last_checkpoint` is written last. Readers only use complete checkpoints and treat
`_last_checkpoint` as a hint, so a writer dying half-way never breaks the table.

Everything per file is vectorized with pyarrow/numpy: no Python loop over files.
"""

from __future__ import annotations

import io
import math
import os
import time
import uuid
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pydelta.errors import CorruptedLogError, DeltaIllegalArgumentError, InvalidTableError
from pydelta.log.arrow_actions import DV_TYPE, STR_MAP
from pydelta.log.last_checkpoint import make_last_checkpoint, parse_last_checkpoint
from pydelta.log.snapshot import Snapshot
from pydelta.log.storage import FileAlreadyExistsError, Storage
from pydelta.protocol.action_types import SidecarFile
from pydelta.protocol.partition_values import partition_values_to_arrow
from pydelta.protocol.properties import parse_interval_ms
from pydelta.protocol.schema import StructType, column_mapping_mode, physical_name
from pydelta.protocol.stats import DEFAULT_NUM_INDEXED_COLS, TIGHT_BOUNDS, parse_stats, stats_schema

__all__ = [
    "CHECKPOINT_METADATA_TYPE",
    "CHECKPOINT_REMOVE_TYPE",
    "DOMAIN_METADATA_TYPE",
    "METADATA_TYPE",
    "PROTOCOL_TYPE",
    "SIDECAR_TYPE",
    "TXN_TYPE",
    "interval_property_ms",
    "parse_interval_ms",
    "spark_partition_ids",
    "write_checkpoint",
]

# ---- Arrow types of the checkpoint columns (delta-spark's field names, order and widths) ----

_STR_LIST = pa.list_(pa.string())

PROTOCOL_TYPE = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", _STR_LIST),
        ("writerFeatures", _STR_LIST),
    ]
)
METADATA_TYPE = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", STR_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", _STR_LIST),
        ("configuration", STR_MAP),
        ("createdTime", pa.int64()),
    ]
)
TXN_TYPE = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
DOMAIN_METADATA_TYPE = pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())])
CHECKPOINT_METADATA_TYPE = pa.struct([("version", pa.int64()), ("tags", STR_MAP)])
SIDECAR_TYPE = pa.struct(
    [("path", pa.string()), ("sizeInBytes", pa.int64()), ("modificationTime", pa.int64()), ("tags", STR_MAP)]
)
# Checkpoints keep tombstones only for VACUUM: delta-spark drops `stats` and `tags`.
CHECKPOINT_REMOVE_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", STR_MAP),
        ("size", pa.int64()),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)
# The add fields every checkpoint carries, in delta-spark's order; stats,
# partitionValues_parsed and stats_parsed follow depending on table properties.
_ADD_BASE_FIELDS = (
    "path",
    "partitionValues",
    "size",
    "modificationTime",
    "dataChange",
    "tags",
    "deletionVector",
    "baseRowId",
    "defaultRowCommitVersion",
    "clusteringProvider",
)

TOMBSTONE_RETENTION_KEY = "delta.deletedFileRetentionDuration"
DEFAULT_TOMBSTONE_RETENTION = "interval 1 week"
CHECKPOINT_POLICY_KEY = "delta.checkpointPolicy"
# delta-spark's default part size for V2 checkpoints (actions per sidecar file).
V2_ACTIONS_PER_SIDECAR = 50_000

# ---- intervals (parsed in protocol/properties.py) -------------------------------------------


def interval_property_ms(configuration: dict[str, str], key: str, default: str) -> int:
    """A duration table property in ms, falling back to delta-spark's default when unset."""
    raw = configuration.get(key)
    try:
        return parse_interval_ms(raw if raw is not None else default)
    except DeltaIllegalArgumentError as e:
        raise InvalidTableError(f"table property {key}={raw!r} is not a valid interval: {e}") from None


def _is_false(configuration: dict[str, str], key: str, default: bool) -> bool:
    raw = configuration.get(key)
    if raw is None:
        return not default
    return raw.strip().lower() == "false"


# ---- Spark-compatible hash partitioning (multi-part checkpoints, sidecars) ----------------

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
_SPARK_HASH_SEED = 42


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    k = _rotl(k * _C1, 15) * _C2
    return _rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)


def _fmix(h: np.ndarray, length: np.ndarray) -> np.ndarray:
    h = h ^ length
    h = (h ^ (h >> np.uint32(16))) * np.uint32(0x85EBCA6B)
    h = (h ^ (h >> np.uint32(13))) * np.uint32(0xC2B2AE35)
    mixed: np.ndarray = h ^ (h >> np.uint32(16))
    return mixed


def _spark_string_hash(strings: pa.Array) -> np.ndarray:
    """Spark's `hash(col)` (Murmur3 x86_32, seed 42, its legacy tail handling) of UTF-8 strings."""
    strings = pc.cast(strings, pa.large_string())
    n = len(strings)
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64)[strings.offset : strings.offset + n + 1]
    data_buf = strings.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    data = np.concatenate([data, np.zeros(4, np.uint8)])
    starts, lengths = offsets[:-1], offsets[1:] - offsets[:-1]
    aligned = lengths - lengths % 4
    h = np.full(n, _SPARK_HASH_SEED, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for i in range(0, int(aligned.max()) if n else 0, 4):
            rows = np.nonzero(aligned > i)[0]
            at = starts[rows] + i
            word = (
                data[at].astype(np.uint32)
                | (data[at + 1].astype(np.uint32) << np.uint32(8))
                | (data[at + 2].astype(np.uint32) << np.uint32(16))
                | (data[at + 3].astype(np.uint32) << np.uint32(24))
            )
            h[rows] = _mix(h[rows], word)
        for j in range(3):  # Spark mixes each trailing byte on its own, sign-extended
            rows = np.nonzero(lengths % 4 > j)[0]
            if len(rows) == 0:
                break
            tail = data[starts[rows] + aligned[rows] + j].astype(np.int8).astype(np.int32).astype(np.uint32)
            h[rows] = _mix(h[rows], tail)
        h = _fmix(h, lengths.astype(np.uint32))
    if strings.null_count:
        h = np.where(np.asarray(strings.is_valid()), h, np.uint32(_SPARK_HASH_SEED))
    return h.view(np.int32)


def spark_partition_ids(paths: pa.Array, parts: int) -> np.ndarray:
    """0-based part of each path under Spark's `repartition(parts, path)` (null paths too).

    PROTOCOL.md requires multi-part checkpoints to be clustered by Spark-style hash
    partitioning, so racing writers (us or delta-spark) put every action in the same part.
    """
    if isinstance(paths, pa.ChunkedArray):
        paths = paths.combine_chunks()
    return np.mod(_spark_string_hash(paths).astype(np.int64), parts)


def _null_part(parts: int) -> int:
    """The part Spark gives rows whose key is null: the non-file actions."""
    return _SPARK_HASH_SEED % parts


# ---- building the actions -----------------------------------------------------------------


@dataclass(frozen=True)
class _Options:
    stats_json: bool
    stats_struct: bool


@dataclass
class _Written:
    """What `_last_checkpoint` needs to know about the checkpoint just written."""

    version: int
    size: int
    parts: int | None
    size_in_bytes: int
    num_adds: int


def _options(snapshot: Snapshot) -> _Options:
    conf = snapshot.metadata.configuration
    struct_raw = conf.get("delta.checkpoint.writeStatsAsStruct")
    return _Options(
        stats_json=not _is_false(conf, "delta.checkpoint.writeStatsAsJson", True),
        stats_struct=struct_raw is not None and struct_raw.strip().lower() == "true",
    )


def _combined(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    return array


def _non_null_maps(maps: pa.Array) -> pa.Array:
    """Null maps as empty maps: `add.partitionValues` is required, other clients insist."""
    if maps.null_count == 0:
        return maps
    return pc.fill_null(maps, pa.scalar([], maps.type))


def _partition_values_parsed(snapshot: Snapshot, partition_values: pa.Array) -> pa.StructArray | None:
    """Typed partition values keyed by physical name, or None when there is nothing to write.

    A value that cannot be parsed to its column type makes the whole column unusable, so
    then the struct columns are left out rather than written wrong.
    """
    columns = snapshot.partition_columns
    if not columns:
        return None
    mapped = column_mapping_mode(snapshot.metadata.configuration) != "none"
    try:
        fields = tuple(snapshot.schema.field(c, case_sensitive=False) for c in columns)
        names = [physical_name(f) if mapped else f.name for f in fields]
        typed = partition_values_to_arrow(
            partition_values, StructType(fields), {f.name: n for f, n in zip(fields, names, strict=True)}
        )
    except (CorruptedLogError, InvalidTableError, DeltaIllegalArgumentError, KeyError):
        return None
    children = [typed.field(i) for i in range(typed.type.num_fields)]
    out_fields = [pa.field(n, typed.type.field(i).type) for i, n in enumerate(names)]
    return pa.StructArray.from_arrays(children, fields=out_fields)


def _stats_parsed(snapshot: Snapshot, stats: pa.Array) -> pa.StructArray:
    """`stats_parsed` as delta-spark types it (empty groups left out, tightBounds with DVs)."""
    conf = snapshot.metadata.configuration
    try:
        num_indexed = int(conf.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    except ValueError:
        num_indexed = DEFAULT_NUM_INDEXED_COLS
    schema = stats_schema(
        snapshot.schema,
        column_mapping_mode(conf),
        num_indexed,
        conf.get("delta.dataSkippingStatsColumns"),
        partition_columns=snapshot.partition_columns,
    )
    keep_tight = snapshot.protocol.has_feature("deletionVectors")
    fields = [
        f
        for f in schema
        if not (pa.types.is_struct(f.type) and f.type.num_fields == 0) and (f.name != TIGHT_BOUNDS or keep_tight)
    ]
    return parse_stats(stats, pa.schema(fields))


def _checkpoint_adds(snapshot: Snapshot, options: _Options) -> pa.Array | pa.ChunkedArray:
    """The live files as checkpoint `add` rows (dataChange false, as delta-spark writes them).

    Built one chunk of the snapshot's state at a time (a checkpoint read in slices, or a
    state grown by updates, is chunked), so the writer never copies the whole state into
    one buffer. A parsed column is kept only if every chunk could produce it.
    """
    state = snapshot.state.adds
    chunks = [c for c in state.chunks if len(c)] if isinstance(state, pa.ChunkedArray) else [state]
    per_chunk = [_checkpoint_add_columns(snapshot, options, c) for c in chunks or [pa.array([], state.type)]]
    names = [n for n in per_chunk[0] if all(n in columns for columns in per_chunk)]
    arrays = [pa.StructArray.from_arrays([columns[n] for n in names],
                                         fields=[pa.field(n, columns[n].type) for n in names])
              for columns in per_chunk]
    return arrays[0] if len(arrays) == 1 else pa.chunked_array(arrays)


def _checkpoint_add_columns(snapshot: Snapshot, options: _Options, adds: pa.StructArray) -> dict[str, pa.Array]:
    columns = {name: _combined(pc.struct_field(adds, name)) for name in _ADD_BASE_FIELDS}
    columns["partitionValues"] = _non_null_maps(columns["partitionValues"])
    columns["dataChange"] = pa.array(np.zeros(len(adds), dtype=bool))
    stats = _combined(pc.struct_field(adds, "stats"))
    if options.stats_json:
        columns["stats"] = stats
    if options.stats_struct:
        columns.update(_struct_columns(snapshot, columns["partitionValues"], stats))
    return columns


def _struct_columns(snapshot: Snapshot, partition_values: pa.Array, stats: pa.Array) -> dict[str, pa.Array]:
    """partitionValues_parsed and stats_parsed; neither if the partition values do not parse."""
    out: dict[str, pa.Array] = {}
    if snapshot.partition_columns:
        parsed = _partition_values_parsed(snapshot, partition_values)
        if parsed is None:
            return out
        out["partitionValues_parsed"] = parsed
    out["stats_parsed"] = _stats_parsed(snapshot, stats)
    return out


def _checkpoint_removes(snapshot: Snapshot, now_ms: int) -> pa.StructArray:
    """Tombstones still within `delta.deletedFileRetentionDuration` (delta-spark's rule)."""
    removes = _combined(snapshot.state.removes)
    conf = snapshot.metadata.configuration
    retention = interval_property_ms(conf, TOMBSTONE_RETENTION_KEY, DEFAULT_TOMBSTONE_RETENTION)
    deleted_at = pc.fill_null(pc.struct_field(removes, "deletionTimestamp"), 0)
    removes = removes.filter(pc.greater(deleted_at, now_ms - retention))
    columns = []
    for f in CHECKPOINT_REMOVE_TYPE:
        if f.name == "dataChange":
            columns.append(pa.array(np.zeros(len(removes), dtype=bool)))
        else:
            columns.append(_combined(pc.struct_field(removes, f.name)))
    return pa.StructArray.from_arrays(columns, fields=list(CHECKPOINT_REMOVE_TYPE))


def _metadata_row(snapshot: Snapshot) -> pa.Array:
    meta = snapshot.metadata
    body = {
        "id": meta.id,
        "name": meta.name,
        "description": meta.description,
        "format": {"provider": meta.format.provider, "options": list(meta.format.options.items())},
        "schemaString": meta.schema_string,
        "partitionColumns": list(meta.partition_columns),
        "configuration": list(meta.configuration.items()),
        "createdTime": meta.created_time,
    }
    return pa.array([body], METADATA_TYPE)


def _non_file_actions(snapshot: Snapshot) -> list[tuple[str, pa.Array]]:
    """protocol, metaData, txn and domainMetadata rows (few, so built from Python objects)."""
    txns = sorted(snapshot.state.txns.values(), key=lambda t: t.app_id)
    domains = sorted((d for d in snapshot.state.domains.values() if not d.removed), key=lambda d: d.domain)
    txn_rows = [{"appId": t.app_id, "version": t.version, "lastUpdated": t.last_updated} for t in txns]
    domain_rows = [{"domain": d.domain, "configuration": d.configuration, "removed": False} for d in domains]
    return [
        ("protocol", pa.array([snapshot.protocol.to_dict()], PROTOCOL_TYPE)),
        ("metaData", _metadata_row(snapshot)),
        ("txn", pa.array(txn_rows, TXN_TYPE)),
        ("domainMetadata", pa.array(domain_rows, DOMAIN_METADATA_TYPE)),
    ]


# ---- tables and files ---------------------------------------------------------------------


def _schema(add_type: pa.DataType, *, v2_columns: bool = False, sidecar: bool = False) -> pa.Schema:
    """Top-level columns in delta-spark's order."""
    if sidecar:
        return pa.schema([("add", add_type), ("remove", CHECKPOINT_REMOVE_TYPE)])
    fields = [
        ("txn", TXN_TYPE),
        ("add", add_type),
        ("remove", CHECKPOINT_REMOVE_TYPE),
        ("metaData", METADATA_TYPE),
        ("protocol", PROTOCOL_TYPE),
        ("domainMetadata", DOMAIN_METADATA_TYPE),
    ]
    if v2_columns:
        fields += [("checkpointMetadata", CHECKPOINT_METADATA_TYPE), ("sidecar", SIDECAR_TYPE)]
    return pa.schema(fields)


def _assemble(schema: pa.Schema, sections: list[tuple[str, pa.Array]]) -> pa.Table:
    """One row per action: each section fills its own column, the other columns are null."""
    tables = [pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)]
    for column, array in sections:
        if len(array) == 0:
            continue
        arrays = [array if f.name == column else pa.nulls(len(array), f.type) for f in schema]
        tables.append(pa.Table.from_arrays(arrays, schema=schema))
    return pa.concat_tables(tables)


def _parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy")
    return buf.getvalue()


def _put_new(storage: Storage, path: str, data: bytes) -> bool:
    """Create `path` atomically; False when it already exists (another writer got there)."""
    try:
        storage.put_if_absent(path, data)
    except FileAlreadyExistsError:
        return False
    return True


def _checkpoint_metadata_row(version: int, tags: dict[str, str] | None) -> tuple[str, pa.Array]:
    body = {"version": version, "tags": list(tags.items()) if tags is not None else None}
    return "checkpointMetadata", pa.array([body], CHECKPOINT_METADATA_TYPE)


@dataclass
class _Job:
    """The actions of one checkpoint and where they go."""

    storage: Storage
    log_dir: str
    version: int
    non_file: list[tuple[str, pa.Array]]
    adds: pa.StructArray | pa.ChunkedArray
    removes: pa.StructArray

    def path(self, suffix: str) -> str:
        return os.path.join(self.log_dir, f"{self.version:020d}.{suffix}")


def _write_classic(job: _Job, v2_spec: bool) -> _Written | None:
    """`N.checkpoint.parquet`; None when another writer already made it."""
    sections = list(job.non_file)
    if v2_spec:  # a classic-named checkpoint of a v2Checkpoint table follows the V2 spec
        sections.insert(0, _checkpoint_metadata_row(job.version, None))
    sections += [("add", job.adds), ("remove", job.removes)]
    table = _assemble(_schema(job.adds.type, v2_columns=v2_spec), sections)
    data = _parquet_bytes(table)
    if not _put_new(job.storage, job.path("checkpoint.parquet"), data):
        return None
    return _Written(job.version, table.num_rows, None, len(data), len(job.adds))


def _slices(array: pa.StructArray | pa.ChunkedArray, parts: int) -> list[pa.Array]:
    """`array` split by Spark's hash partitioning of its `path`, one slice per part."""
    array = _combined(array)
    part = spark_partition_ids(pc.struct_field(array, "path"), parts)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(parts + 1))
    ordered = array.take(pa.array(order))
    return [ordered.slice(bounds[i], bounds[i + 1] - bounds[i]) for i in range(parts)]


def _split(job: _Job, parts: int) -> list[tuple[pa.Array, pa.Array]]:
    """(adds, removes) of each part, clustered by path."""
    return list(zip(_slices(job.adds, parts), _slices(job.removes, parts), strict=True))


def _write_multipart(job: _Job, parts: int) -> _Written:
    """All parts; a part already present was written by a writer racing us with the same content."""
    schema = _schema(job.adds.type)
    size = size_in_bytes = 0
    for i, (adds, removes) in enumerate(_split(job, parts)):
        sections = list(job.non_file) if i == _null_part(parts) else []
        table = _assemble(schema, [*sections, ("add", adds), ("remove", removes)])
        data = _parquet_bytes(table)
        _put_new(job.storage, job.path(f"checkpoint.{i + 1:010d}.{parts:010d}.parquet"), data)
        size += table.num_rows
        size_in_bytes += len(data)
    return _Written(job.version, size, parts, size_in_bytes, len(job.adds))


def _write_sidecars(job: _Job, parts: int) -> list[SidecarFile]:
    """The file actions in `parts` sidecar files (empty ones skipped); their `sidecar` rows."""
    if len(job.adds) + len(job.removes) == 0:
        return []
    schema = _schema(job.adds.type, sidecar=True)
    rows: list[SidecarFile] = []
    for adds, removes in _split(job, max(parts, 1)):
        if len(adds) + len(removes) == 0:
            continue
        data = _parquet_bytes(_assemble(schema, [("add", adds), ("remove", removes)]))
        name = f"{uuid.uuid4()}.parquet"
        job.storage.put_if_absent(os.path.join(job.log_dir, "_sidecars", name), data)
        rows.append({"path": name, "sizeInBytes": len(data), "modificationTime": int(time.time() * 1000)})
    return rows


def _write_v2(job: _Job, parts: int | None) -> _Written:
    """Sidecars first, then the UUID-named top-level file that lists them."""
    file_actions = len(job.adds) + len(job.removes)
    sidecars = _write_sidecars(job, parts if parts is not None else math.ceil(file_actions / V2_ACTIONS_PER_SIDECAR))
    sidecar_bytes = sum(r["sizeInBytes"] for r in sidecars)
    tags = {
        "sidecarNumActions": str(file_actions),
        "sidecarSizeInBytes": str(sidecar_bytes),
        "numOfAddFiles": str(len(job.adds)),
    }
    sections = [
        _checkpoint_metadata_row(job.version, tags),
        *job.non_file,
        ("sidecar", pa.array(sidecars, SIDECAR_TYPE)),
    ]
    table = _assemble(_schema(job.adds.type, v2_columns=True), sections)
    data = _parquet_bytes(table)
    job.storage.put_if_absent(job.path(f"checkpoint.{uuid.uuid4()}.parquet"), data)
    return _Written(job.version, table.num_rows + file_actions, None, len(data) + sidecar_bytes, len(job.adds))


def _write_last_checkpoint(storage: Storage, log_dir: str, written: _Written) -> None:
    """Point `_last_checkpoint` at the new checkpoint unless it already names a newer one."""
    path = os.path.join(log_dir, "_last_checkpoint")
    try:
        current = parse_last_checkpoint(storage.read(path))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        current = None
    if current is not None and current.version > written.version:
        return
    hint = make_last_checkpoint(
        written.version,
        written.size,
        written.parts,
        sizeInBytes=written.size_in_bytes,
        numOfAddFiles=written.num_adds,
    )
    storage.put(path, hint.to_json().encode("utf-8"))


def _use_v2(snapshot: Snapshot, v2: bool | None) -> bool:
    has_feature = snapshot.protocol.has_feature("v2Checkpoint")
    if v2 is None:
        policy = snapshot.metadata.configuration.get(CHECKPOINT_POLICY_KEY, "classic").strip().lower()
        return has_feature and policy == "v2"
    if v2 and not has_feature:
        raise DeltaIllegalArgumentError(
            "V2 checkpoints need the v2Checkpoint table feature (PROTOCOL.md, 'V2 Checkpoint Table Feature')"
        )
    return bool(v2)


def _check_parts(parts: int | None, snapshot: Snapshot, v2: bool) -> int | None:
    if parts is None:
        return None
    if not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
        raise DeltaIllegalArgumentError(f"parts must be a positive integer, got {parts!r}")
    if parts > 1 and not v2 and snapshot.protocol.has_feature("v2Checkpoint"):
        raise DeltaIllegalArgumentError(
            "multi-part checkpoints are forbidden on tables with the v2Checkpoint feature (use v2=True)"
        )
    return parts


def _ensure_backfilled(snapshot: Snapshot) -> None:
    """Managed commits: a checkpoint may only cover `_delta_log/<v>.json`; ask the owner to backfill first."""
    target = os.path.join(snapshot.table_root, "_delta_log", f"{snapshot.version:020d}.json")
    if not snapshot.unbackfilled_commits or snapshot.storage.exists(target):
        return
    from pydelta.errors import CommitOwnerError
    from pydelta.log.commit_owners.registry import owner_of

    owner = owner_of(snapshot.metadata, snapshot.protocol)
    if owner is not None:
        owner.backfill_to_version(snapshot.storage, snapshot.table_root, snapshot.metadata.id, snapshot.version)
    if not snapshot.storage.exists(target):
        raise CommitOwnerError(
            f"cannot checkpoint version {snapshot.version} of {snapshot.table_root}: it is not backfilled "
            "(managed commits allow checkpoints only of versions in _delta_log/)"
        )


def write_checkpoint(
    snapshot: Snapshot, *, parts: int | None = None, v2: bool | None = None, now_ms: int | None = None,
    checksum_mismatch_fatal: bool = True,
) -> None:
    """Write a checkpoint of `snapshot` at its version, then update `_last_checkpoint`.

    `parts` > 1 writes a (deprecated) multi-part checkpoint; with a V2 checkpoint it is the
    number of sidecar files. `v2` None follows the table: V2 when it has the v2Checkpoint
    feature and `delta.checkpointPolicy` is "v2". `now_ms` is the clock used to expire
    tombstones. If the classic checkpoint file already exists, another writer made it and
    nothing is done. As delta-spark, the version's checksum file (if any) is checked against
    the state first: a mismatch raises ChecksumMismatchError unless `checksum_mismatch_fatal`
    is off (then it is logged), so a checkpoint never makes a wrong state permanent.
    """
    from pydelta.log.checksum import validate_checksum

    snapshot.protocol.check_readable()
    validate_checksum(snapshot, fatal=checksum_mismatch_fatal)
    _ensure_backfilled(snapshot)
    use_v2 = _use_v2(snapshot, v2)
    parts = _check_parts(parts, snapshot, use_v2)
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    job = _Job(
        storage=snapshot.storage,
        log_dir=os.path.join(snapshot.table_root, "_delta_log"),
        version=snapshot.version,
        non_file=_non_file_actions(snapshot),
        adds=_checkpoint_adds(snapshot, _options(snapshot)),
        removes=_checkpoint_removes(snapshot, now),
    )
    written: _Written | None
    if use_v2:
        written = _write_v2(job, parts)
    elif parts is not None and parts > 1:
        written = _write_multipart(job, parts)
    else:
        written = _write_classic(job, v2_spec=snapshot.protocol.has_feature("v2Checkpoint"))
    if written is not None:
        _write_last_checkpoint(job.storage, job.log_dir, written)
