"""Reading checkpoints (classic, multi-part, V2 with sidecars) into Arrow.

The add/remove columns of a checkpoint are read and filtered with pyarrow
only: no Python loop per file, so huge tables load fast.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pydelta.errors import CorruptedLogError, MissingDataFileError, UnreadableCheckpointError
from pydelta.log.arrow_actions import ADD_TYPE, REMOVE_TYPE, concat, conform, rows_to_struct
from pydelta.log.commits import CommitActions, parse_actions
from pydelta.log.segment import Checkpoint
from pydelta.log.storage import FileInfo, LocalStorage, Storage
from pydelta.protocol.action_types import SidecarFile
from pydelta.protocol.actions import DomainMetadata, Metadata, Protocol, Txn

_TOP_LEVEL = ("add", "remove", "metaData", "protocol", "txn", "domainMetadata", "sidecar", "checkpointMetadata")


@dataclass
class CheckpointContents:
    version: int
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, Txn] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    # one StructArray, or a ChunkedArray of them for checkpoints read in several slices
    adds: pa.StructArray | pa.ChunkedArray = field(default_factory=lambda: pa.array([], type=ADD_TYPE))
    removes: pa.StructArray | pa.ChunkedArray = field(default_factory=lambda: pa.array([], type=REMOVE_TYPE))


def _non_null(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if column.null_count == 0:
        return column
    return column.filter(column.is_valid())


# Rows decoded at a time: a 1M-file checkpoint is read in slices, so the reader's peak
# memory is the result plus one slice, not the whole decoded file on top of the result.
_BATCH_ROWS = 65_536


def _open_parquet(storage: Storage, path: str) -> pq.ParquetFile:
    try:
        source = path if isinstance(storage, LocalStorage) else io.BytesIO(storage.read(path))
        return pq.ParquetFile(source)
    except FileNotFoundError:
        raise MissingDataFileError(f"checkpoint file {path} is missing") from None
    except (pa.ArrowException, OSError) as e:
        raise UnreadableCheckpointError(f"checkpoint file {path} cannot be read: {e}") from None


def _read_parquet(storage: Storage, path: str) -> pa.Table:
    """The action columns of a checkpoint file, whole."""
    return pa.concat_tables(_parquet_batches(storage, path))


def _parquet_batches(storage: Storage, path: str) -> Iterator[pa.Table]:
    """The action columns of a checkpoint file, `_BATCH_ROWS` rows at a time."""
    pf = _open_parquet(storage, path)
    present = [c for c in _TOP_LEVEL if c in pf.schema_arrow.names]
    try:
        if pf.metadata.num_rows == 0:
            yield pf.read(columns=present)
            return
        for batch in pf.iter_batches(batch_size=_BATCH_ROWS, columns=present):
            yield pa.Table.from_batches([batch])
    except (pa.ArrowException, OSError) as e:
        raise UnreadableCheckpointError(f"checkpoint file {path} cannot be read: {e}") from None


def _small_actions(table: pa.Table, out: CheckpointContents, sidecars: list[SidecarFile]) -> None:
    """protocol, metaData, txn, domainMetadata, sidecar: few rows, fine in Python."""
    names = table.column_names
    if "protocol" in names:
        for p in _non_null(table.column("protocol")).to_pylist():
            out.protocol = Protocol.from_dict(p)
    if "metaData" in names:
        for m in _non_null(table.column("metaData")).to_pylist():
            m["configuration"] = _as_dict(m.get("configuration"))
            fmt = m.get("format") or {}
            fmt["options"] = _as_dict(fmt.get("options"))
            m["format"] = fmt
            out.metadata = Metadata.from_dict(m)
    if "txn" in names:
        for t in _non_null(table.column("txn")).to_pylist():
            out.txns[t["appId"]] = Txn(t["appId"], int(t["version"]), t.get("lastUpdated"))
    if "domainMetadata" in names:
        for d in _non_null(table.column("domainMetadata")).to_pylist():
            if not d.get("removed"):
                out.domains[d["domain"]] = DomainMetadata(d["domain"], d.get("configuration") or "", False)
    if "sidecar" in names:
        sidecars.extend(_non_null(table.column("sidecar")).to_pylist())


def _as_dict(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return dict(value)  # pyarrow gives maps as lists of (key, value)


def read_checkpoint(storage: Storage, log_dir: str, checkpoint: Checkpoint) -> CheckpointContents:
    out = CheckpointContents(checkpoint.version)
    adds: list[pa.Array] = []
    removes: list[pa.Array] = []
    sidecars: list[SidecarFile] = []
    for f in checkpoint.files:
        if f.name.endswith(".json"):
            actions = _json_checkpoint(storage, f, checkpoint.version)
            out.protocol = actions.protocol or out.protocol
            out.metadata = actions.metadata or out.metadata
            out.txns.update({t.app_id: t for t in actions.txns})
            out.domains.update({d.domain: d for d in actions.domains if not d.removed})
            sidecars.extend(actions.sidecars)
            if actions.adds:
                adds.append(rows_to_struct(actions.adds, ADD_TYPE))
            if actions.removes:
                removes.append(rows_to_struct(actions.removes, REMOVE_TYPE))
            continue
        for table in _parquet_batches(storage, f.path):
            _small_actions(table, out, sidecars)
            _collect_files(table, adds, removes)
    for sidecar in _existing_sidecars(storage, log_dir, checkpoint, sidecars):
        for table in _parquet_batches(storage, sidecar.path):
            _collect_files(table, adds, removes)
    out.adds = _chunked(adds, ADD_TYPE)
    out.removes = _chunked(removes, REMOVE_TYPE)
    return out


def _json_checkpoint(storage: Storage, f: FileInfo, version: int) -> CommitActions:
    """A V2 checkpoint's JSON top-level file, parsed; unparsable is unreadable."""
    try:
        return parse_actions(storage.read(f.path), version, f.path)
    except FileNotFoundError:
        raise MissingDataFileError(f"checkpoint file {f.path} is missing") from None
    except CorruptedLogError as e:
        raise UnreadableCheckpointError(f"checkpoint file {f.path} cannot be read: {e}") from None


def sidecar_files(storage: Storage, log_dir: str, checkpoint: Checkpoint) -> list[FileInfo]:
    """The sidecar files a V2 checkpoint's top-level file names (read from that file alone),
    with the sizes it records for them."""
    sidecars: list[SidecarFile] = []
    for f in checkpoint.files:
        if f.name.endswith(".json"):
            sidecars.extend(_json_checkpoint(storage, f, checkpoint.version).sidecars)
            continue
        pf = _open_parquet(storage, f.path)
        if "sidecar" in pf.schema_arrow.names:
            sidecars.extend(_non_null(pf.read(columns=["sidecar"]).column("sidecar")).to_pylist())
    return _existing_sidecars(storage, log_dir, checkpoint, sidecars)


def _existing_sidecars(storage: Storage, log_dir: str, checkpoint: Checkpoint,
                       sidecars: list[SidecarFile]) -> list[FileInfo]:
    """Sidecar actions as files: a bare name lives in `_delta_log/_sidecars`; every one must exist."""
    files = []
    for sidecar in sidecars:
        path = os.path.join(log_dir, "_sidecars", sidecar["path"]) if "/" not in sidecar["path"] else sidecar["path"]
        if not storage.exists(path):
            raise MissingDataFileError(f"sidecar file {path} of checkpoint {checkpoint.version} is missing")
        files.append(FileInfo(path, int(sidecar.get("sizeInBytes") or 0), int(sidecar.get("modificationTime") or 0)))
    return files


def _chunked(arrays: list[pa.Array], target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """The slices as one chunked array (one array when there is one): no copy into one buffer."""
    arrays = [a for a in arrays if len(a)]
    if len(arrays) <= 1:
        return concat(arrays, target)
    return pa.chunked_array(arrays, type=target)


def _collect_files(table: pa.Table, adds: list[pa.Array], removes: list[pa.Array]) -> None:
    if "add" in table.column_names:
        raw = _non_null(table.column("add"))
        adds.append(_stats_from_parsed(raw, conform(raw, ADD_TYPE)))
    if "remove" in table.column_names:
        removes.append(conform(_non_null(table.column("remove")), REMOVE_TYPE))


def _json_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, datetime):
        utc = value.astimezone(UTC) if value.tzinfo else value
        text = utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}"
        return text + ("Z" if value.tzinfo else "")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


def _stats_from_parsed(raw: pa.StructArray, adds: pa.StructArray) -> pa.StructArray:
    """Fill `stats` from `stats_parsed` where a writer kept only the struct form.

    Only rows without JSON stats are converted (in Python), so the usual case costs nothing.
    """
    if len(raw) == 0 or raw.type.get_field_index("stats_parsed") < 0:
        return adds
    stats = pc.struct_field(adds, "stats")
    missing = pc.is_null(stats)
    if not pc.any(missing).as_py():
        return adds
    idx = pc.indices_nonzero(missing)
    parsed = pc.struct_field(raw, "stats_parsed").take(idx).to_pylist()
    filled = stats.to_pylist()
    for i, row in zip(idx.to_pylist(), parsed, strict=True):
        if row:
            filled[i] = json.dumps(_json_value(row), separators=(",", ":"))
    return with_stats(adds, filled)


def with_stats(adds: pa.StructArray, stats: list[str | None]) -> pa.StructArray:
    """`adds` with its `stats` field replaced by `stats` (one JSON string or None per add)."""
    children = [pa.array(stats, pa.string()) if f.name == "stats" else adds.field(i) for i, f in enumerate(adds.type)]
    return pa.StructArray.from_arrays(children, fields=list(adds.type),
                                      mask=adds.is_null() if adds.null_count else None)


def stats_parsed_from_checkpoint(storage: Storage, checkpoint: Checkpoint) -> pa.Array | None:
    """`add.stats_parsed` if every part of the checkpoint has it (used when `stats` is absent)."""
    arrays = []
    for f in checkpoint.files:
        if not f.name.endswith(".parquet"):
            return None
        table = _read_parquet(storage, f.path)
        if "add" not in table.column_names:
            continue
        add = _non_null(table.column("add"))
        if "stats_parsed" not in [x.name for x in add.type]:
            return None
        arrays.append(pc.struct_field(add, "stats_parsed"))
    return pa.concat_arrays(arrays) if arrays else None


def stats_from_parsed_stats(storage: Storage, paths: list[str], wanted: set[str]) -> dict[str, str]:
    """JSON stats, from `add.stats_parsed`, of the adds in checkpoint files `paths` whose path
    is in `wanted` (for checkpoints written with delta.checkpoint.writeStatsAsJson=false).

    Reads only `add.path` and `add.stats_parsed`; files without stats_parsed give nothing.
    """
    out: dict[str, str] = {}
    for path in paths:
        pf = _open_parquet(storage, path)
        if "add" not in pf.schema_arrow.names:
            continue
        add_type = pf.schema_arrow.field("add").type
        if add_type.get_field_index("stats_parsed") < 0:
            continue
        add = _non_null(pf.read(columns=["add.path", "add.stats_parsed"]).column("add"))
        keep = pc.is_in(pc.struct_field(add, "path"), value_set=pa.array(sorted(wanted), pa.string()))
        for row in add.filter(keep).to_pylist():
            if row.get("stats_parsed"):
                out[row["path"]] = json.dumps(_json_value(row["stats_parsed"]), separators=(",", ":"))
    return out
