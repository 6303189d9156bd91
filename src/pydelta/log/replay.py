"""Reconciling actions into a table state (PROTOCOL.md, "Action Reconciliation").

The base (a checkpoint, or an already loaded state) stays in Arrow; large
commits are parsed by pyarrow's JSON reader (json_actions), small ones row by
row, and reconciliation of their file actions is vectorized. A file is keyed by its canonical path
plus its deletion vector's unique id; the newest action for a key wins.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pydelta.errors import MissingMetadataError, MissingProtocolError
from pydelta.log.arrow_actions import ADD_TYPE, REMOVE_TYPE, concat
from pydelta.log.checkpoint_reader import read_checkpoint
from pydelta.log.commits import CommitActions
from pydelta.log.file_info import FileInfo, InlineCommit
from pydelta.log.json_actions import CommitBytes, parse_commit
from pydelta.log.segment import LogSegment
from pydelta.log.storage import LocalStorage, Storage, to_local_path
from pydelta.protocol.actions import DomainMetadata, Metadata, Protocol, Txn
from pydelta.protocol.deletion_vectors import dv_unique_id


@dataclass
class TableState:
    """Everything a snapshot knows, with files as Arrow struct arrays."""

    version: int
    protocol: Protocol
    metadata: Metadata
    # StructArrays of ADD_TYPE / REMOVE_TYPE; after an incremental update (a large state plus
    # a few new actions) a ChunkedArray, so that the state is not copied.
    adds: pa.StructArray | pa.ChunkedArray
    removes: pa.StructArray | pa.ChunkedArray
    txns: dict[str, Txn] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    latest_commit_info: dict[str, Any] | None = None
    # (version, protocol, metadata) of the newest change of each, for ICT rules
    metadata_version: int = 0
    # True when every add (remove) path is a plain relative path (no leading '/', '%' or
    # ':'), so incremental updates can match paths without a regex; None: not known yet.
    plain_add_paths: bool | None = None
    plain_remove_paths: bool | None = None


def canonical_path(path: str, table_root: str) -> str:
    """Decoded absolute path of a (URI-encoded, relative or absolute) file path."""
    if path.startswith("file:") or path.startswith("/") or "://" in path:
        return to_local_path(unquote(path) if not path.startswith("file:") else path)
    return os.path.join(table_root, unquote(path))


def action_key(body: dict[str, Any], table_root: str) -> str:
    return canonical_path(body["path"], table_root) + "\x00" + dv_unique_id(body.get("deletionVector"))


def _canonical_paths(paths: pa.Array, table_root: str) -> pa.Array:
    """Vectorized `canonical_path`: plain relative paths in bulk, odd ones per row."""
    prefix = table_root.rstrip("/") + "/"
    if _all_plain(paths):
        return pc.binary_join_element_wise(pa.scalar(prefix), paths, "")
    simple = pc.invert(
        pc.or_(
            pc.or_(pc.match_substring(paths, "%"), pc.match_substring(paths, ":")),
            pc.starts_with(paths, "/"),
        )
    )
    canonical = pc.binary_join_element_wise(pa.scalar(prefix), paths, "")
    if not pc.all(simple).as_py():
        slow = [canonical_path(p, table_root) for p in paths.filter(pc.invert(simple)).to_pylist()]
        idx = pc.indices_nonzero(pc.invert(simple))
        canonical = canonical.to_pylist()
        for i, value in zip(idx.to_pylist(), slow, strict=True):
            canonical[i] = value
        canonical = pa.array(canonical, pa.string())
    return canonical


def _keys_of(files: pa.StructArray, canonical: pa.Array) -> pa.Array:
    return _keys_from(canonical, pc.struct_field(files, "deletionVector"))


def _keys_from(canonical: pa.Array, dv: pa.Array) -> pa.Array:
    if dv.null_count == len(dv):
        return pc.binary_join_element_wise(canonical, pa.scalar(""), "\x00")
    uid = pc.binary_join_element_wise(
        pc.struct_field(dv, "storageType"), pc.struct_field(dv, "pathOrInlineDv"), ""
    )
    offset = pc.struct_field(dv, "offset")
    offset_part = pc.if_else(
        pc.is_valid(offset),
        pc.binary_join_element_wise(pa.scalar("@"), pc.cast(offset, pa.string()), ""),
        pa.scalar(""),
    )
    uid = pc.fill_null(pc.binary_join_element_wise(uid, pc.fill_null(offset_part, ""), ""), "")
    return pc.binary_join_element_wise(canonical, uid, "\x00")


def file_keys(files: pa.StructArray, table_root: str) -> pa.Array:
    """Vectorized `action_key` for an add/remove struct array."""
    return _keys_of(files, _canonical_paths(pc.struct_field(files, "path"), table_root))


def _all_plain(paths: pa.Array | pa.ChunkedArray) -> bool:
    """Whether no path starts with '/' or holds '%' or ':' (a quick, conservative check).

    Looks at the raw string bytes (memchr) and first bytes instead of running a regex
    per row; bytes outside a sliced array can only make the answer False.
    """
    chunks = paths.chunks if isinstance(paths, pa.ChunkedArray) else [paths]
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        if chunk.type != pa.string():
            return False
        _, offsets_buf, data_buf = chunk.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int32)[chunk.offset:chunk.offset + len(chunk) + 1]
        if data_buf is None or offsets[-1] == offsets[0]:
            continue
        raw = memoryview(data_buf)[offsets[0]:offsets[-1]].tobytes()
        if b"%" in raw or b":" in raw:
            return False
        starts = offsets[:-1][offsets[1:] > offsets[:-1]] - offsets[0]
        if len(starts) and (np.frombuffer(raw, dtype=np.uint8)[starts] == ord("/")).any():
            return False
    return True


def _take(files: pa.Array | pa.ChunkedArray, idx: pa.Array) -> pa.Array:
    """`files.take(idx)` for ascending `idx`, without concatenating a chunked `files` first."""
    if not isinstance(files, pa.ChunkedArray):
        return files.take(idx)
    chunks = [c for c in files.chunks if len(c)]
    wanted = idx.to_numpy().astype(np.int64)
    bounds = np.cumsum([0] + [len(c) for c in chunks])
    parts = []
    for i, chunk in enumerate(chunks):
        lo, hi = np.searchsorted(wanted, [bounds[i], bounds[i + 1]])
        if hi > lo:
            parts.append(chunk.take(pa.array(wanted[lo:hi] - bounds[i])))
    return concat(parts, files.type)


class _Touched:
    """The paths (and DVs) of the file actions of some commits, keyed lazily."""

    def __init__(self, paths: pa.Array, dvs: pa.Array, table_root: str) -> None:
        self.paths = paths
        self.dvs = dvs
        self.table_root = table_root
        self.plain = _all_plain(paths)
        self.has_dvs = dvs.null_count != len(dvs)

    @cached_property
    def canonical(self) -> pa.Array:
        return _canonical_paths(self.paths, self.table_root)

    @cached_property
    def keys(self) -> pa.Array:
        """`action_key` of each action."""
        return _keys_from(self.canonical, self.dvs)

    def dedupe_keys(self) -> pa.Array:
        """Keys equal exactly when `keys` are (plain relative paths need no table root)."""
        if not self.plain:
            return self.keys
        return _keys_from(self.paths, self.dvs) if self.has_dvs else self.paths

    def relative(self) -> pa.Array:
        """The paths as relative to the table root, where they are under it."""
        if self.plain:
            return self.paths
        prefix = self.table_root.rstrip("/") + "/"
        under = pc.starts_with(self.canonical, prefix)
        return pc.utf8_slice_codeunits(self.canonical.filter(under), len(prefix))  # code points, as len()


def _drop_touched(
    files: pa.StructArray | pa.ChunkedArray, touched: _Touched, table_root: str, plain: bool | None
) -> tuple[pa.StructArray | pa.ChunkedArray, bool | None]:
    """`files` minus rows whose key a newer commit (`touched`) touched.

    Full keys are only computed for rows that could match: rows whose raw path
    equals a touched path's relative form, and rows with unusual paths. Also returns
    whether all paths of `files` are plain (`plain`: known answer, None: compute it).
    """
    if len(files) == 0:
        return files, True
    paths = pc.struct_field(files, "path")
    if plain is None:
        plain = _all_plain(paths)
    candidates = pc.is_in(paths, value_set=pc.unique(touched.relative()))
    if not plain:
        candidates = pc.or_(candidates, pc.match_substring_regex(paths, r"^/|[%:]"))
    if not pc.any(candidates).as_py():
        return files, plain
    idx = pc.indices_nonzero(candidates)
    hit = pc.is_in(file_keys(_take(files, idx), table_root), value_set=pc.unique(touched.keys))
    drop = idx.filter(hit)
    if len(drop) == 0:
        return files, plain
    return _without_rows(files, np.unique(drop.to_numpy()).astype(np.int64)), plain


# Pieces of this many rows are filtered on their own: dropping a few files copies only the
# pieces that held them, never a whole checkpoint.
_PIECE_ROWS = 65_536


def _without_rows(files: pa.StructArray | pa.ChunkedArray, drop: np.ndarray) -> pa.StructArray | pa.ChunkedArray:
    """`files` without the rows at the sorted positions `drop`."""
    whole = files if isinstance(files, pa.ChunkedArray) else pa.chunked_array([files])
    pieces: list[pa.Array] = []
    offset = 0
    for chunk in whole.chunks:
        for lo in range(0, len(chunk), _PIECE_ROWS):
            piece = chunk.slice(lo, _PIECE_ROWS)
            start = offset + lo
            first, last = np.searchsorted(drop, [start, start + len(piece)])
            if first == last:
                pieces.append(piece)
                continue
            keep = np.ones(len(piece), dtype=bool)
            keep[drop[first:last] - start] = False
            if keep.any():
                pieces.append(piece.filter(pa.array(keep)))
        offset += len(chunk)
    if len(pieces) == 1:
        return pieces[0]
    return pa.chunked_array(pieces, type=files.type)


def _newest_per_key(
    commits: list[CommitActions], table_root: str
) -> tuple[list[pa.Array], list[pa.Array], _Touched] | None:
    """The file actions of `commits`, the newest per key, ordered by the key's first appearance.

    Returns (new add arrays, new remove arrays, the touched paths),
    the arrays to be concatenated in order; within a commit removes come before adds,
    as in the row-by-row reconciliation. Arrays are only copied when keys repeat.
    """
    adds: list[pa.Array] = []
    removes: list[pa.Array] = []
    kinds: list[np.ndarray] = []
    locals_: list[np.ndarray] = []
    paths: list[pa.Array] = []
    dvs: list[pa.Array] = []
    n_adds = n_removes = 0
    for commit in commits:
        for is_add, chunks in ((False, commit.remove_chunks()), (True, commit.add_chunks())):
            for files in chunks:
                paths.append(pc.struct_field(files, "path"))
                dvs.append(pc.struct_field(files, "deletionVector"))
                kinds.append(np.full(len(files), is_add))
                start = n_adds if is_add else n_removes
                locals_.append(np.arange(start, start + len(files), dtype=np.int64))
                if is_add:
                    adds.append(files)
                    n_adds += len(files)
                else:
                    removes.append(files)
                    n_removes += len(files)
    if not paths:
        return None
    touched = _Touched(
        pa.concat_arrays(paths) if len(paths) > 1 else paths[0], pa.concat_arrays(dvs) if len(dvs) > 1 else dvs[0],
        table_root,
    )
    keys = touched.dedupe_keys()
    if len(keys) > 1:
        # Codes number keys in order of first appearance; the newest action of each wins.
        codes = pc.dictionary_encode(keys).indices.to_numpy()
        n_keys = int(codes.max()) + 1
        if n_keys != len(keys):
            kind = np.concatenate(kinds)
            local = np.concatenate(locals_)
            winners = np.full(n_keys, -1, dtype=np.int64)
            np.maximum.at(winners, codes, np.arange(len(codes), dtype=np.int64))
            kind, local = kind[winners], local[winners]
            adds = _gather(adds, local[kind], ADD_TYPE)
            removes = _gather(removes, local[~kind], REMOVE_TYPE)
    return adds, removes, touched


def _gather(chunks: list[pa.Array], indices: np.ndarray, target: pa.DataType) -> list[pa.Array]:
    """Rows `indices` of the concatenation of `chunks`, as zero-copy slices where the indices run on."""
    if len(indices) == 0 or not chunks:
        return []
    steps = np.diff(indices)
    if (steps > 0).all():  # ascending (the usual case): filter only the pieces that lose rows
        whole = pa.chunked_array(chunks, type=target)
        keep = np.zeros(len(whole), dtype=bool)
        keep[indices] = True
        kept = _without_rows(whole, np.flatnonzero(~keep))
        return [c for c in (kept.chunks if isinstance(kept, pa.ChunkedArray) else [kept]) if len(c)]
    breaks = np.flatnonzero(steps != 1) + 1
    starts = indices[np.concatenate([[0], breaks])]
    lengths = np.diff(np.concatenate([[0], breaks, [len(indices)]]))
    if len(starts) > 4096:
        return [concat(chunks, target).take(pa.array(indices))]
    whole = pa.chunked_array(chunks, type=target)
    out: list[pa.Array] = []
    for start, length in zip(starts.tolist(), lengths.tolist(), strict=True):
        out.extend(c for c in whole.slice(start, length).chunks if len(c))
    return out


def _append(base: pa.Array | pa.ChunkedArray, new: list[pa.Array], target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """`base` followed by `new`, as chunks: runs of small chunks are merged, large chunks are kept
    as they are (a big checkpoint or commit is never copied to append a few files to it)."""
    chunks = [c for c in (base.chunks if isinstance(base, pa.ChunkedArray) else [base]) if len(c)]
    merged = _coalesce(chunks + [c for c in new if len(c)], target)
    if len(merged) == 1:
        return merged[0]
    return pa.chunked_array(merged, type=target) if merged else concat([], target)


# Chunks this long stay as they are; shorter neighbours are merged until they reach it, so the
# chunk count stays near rows / _MIN_CHUNK_ROWS however many commits were applied.
_MIN_CHUNK_ROWS = 8192


def _coalesce(chunks: list[pa.Array], target: pa.DataType) -> list[pa.Array]:
    out: list[pa.Array] = []
    run: list[pa.Array] = []
    run_rows = 0
    for chunk in chunks:
        if len(chunk) >= _MIN_CHUNK_ROWS:
            if run:
                out.append(concat(run, target))
                run, run_rows = [], 0
            out.append(chunk)
            continue
        run.append(chunk)
        run_rows += len(chunk)
        if run_rows >= _MIN_CHUNK_ROWS:
            out.append(concat(run, target))
            run, run_rows = [], 0
    if run:
        out.append(concat(run, target))
    return out


def read_commits(storage: Storage, segment: LogSegment) -> list[CommitActions]:
    """Commits of the segment in order, a compaction file standing in for its range."""
    compactions = {c.start: c for c in segment.compactions}
    out: list[CommitActions] = []
    skip_until = -1
    for version, info in segment.commits:
        if version <= skip_until:
            continue
        comp = compactions.get(version)
        if comp is not None:
            out.append(parse_commit(_read_commit(storage, comp.file), comp.end, comp.file.path))
            skip_until = comp.end
            continue
        out.append(parse_commit(_read_commit(storage, info), version, info.path))
    return out


def _read_commit(storage: Storage, info: FileInfo) -> CommitBytes:
    """A commit's bytes; a large local file memory-mapped, as `parse_commit` only reads it."""
    if isinstance(storage, LocalStorage) and not isinstance(info, InlineCommit):
        return storage.read_mapped(info.path)
    return info.read(storage)


def apply_commits(
    base: TableState | None, commits: list[CommitActions], table_root: str, target_version: int
) -> TableState:
    protocol = base.protocol if base else None
    metadata = base.metadata if base else None
    metadata_version = base.metadata_version if base else 0
    txns = dict(base.txns) if base else {}
    domains = dict(base.domains) if base else {}
    latest_info = base.latest_commit_info if base else None
    for commit in commits:
        if commit.protocol is not None:
            protocol = commit.protocol
        if commit.metadata is not None:
            metadata = commit.metadata
            metadata_version = commit.version
        for t in commit.txns:
            txns[t.app_id] = t
        for d in commit.domains:
            if d.removed:
                domains.pop(d.domain, None)
            else:
                domains[d.domain] = d
        latest_info = commit.commit_info
    if protocol is None:
        raise MissingProtocolError(
            f"no protocol action found in the log of {table_root} up to version {target_version}")
    if metadata is None:
        raise MissingMetadataError(
            f"no metaData action found in the log of {table_root} up to version {target_version}")
    adds = base.adds if base else pa.array([], type=ADD_TYPE)
    removes = base.removes if base else pa.array([], type=REMOVE_TYPE)
    plain_adds = base.plain_add_paths if base else True
    plain_removes = base.plain_remove_paths if base else True
    newest = _newest_per_key(commits, table_root)
    if newest is not None:
        new_adds, new_removes, touched = newest
        adds, plain_adds = _drop_touched(adds, touched, table_root, plain_adds)
        removes, plain_removes = _drop_touched(removes, touched, table_root, plain_removes)
        if plain_adds:
            plain_adds = all(_all_plain(pc.struct_field(c, "path")) for c in new_adds)
        if plain_removes:
            plain_removes = all(_all_plain(pc.struct_field(c, "path")) for c in new_removes)
        adds = _append(adds, new_adds, ADD_TYPE)
        removes = _append(removes, new_removes, REMOVE_TYPE)
    return TableState(
        version=target_version,
        protocol=protocol,
        metadata=metadata,
        adds=adds,
        removes=removes,
        txns=txns,
        domains=domains,
        latest_commit_info=latest_info,
        metadata_version=metadata_version,
        plain_add_paths=plain_adds,
        plain_remove_paths=plain_removes,
    )


def replay_segment(storage: Storage, table_root: str, segment: LogSegment) -> TableState:
    """Replay a whole segment: its checkpoint (if any), then its commits."""
    base = None
    if segment.checkpoint is not None:
        cp = read_checkpoint(storage, segment.log_dir, segment.checkpoint)
        base = TableState(
            version=cp.version,
            protocol=cp.protocol,  # type: ignore[arg-type]  # checked by apply_commits
            metadata=cp.metadata,  # type: ignore[arg-type]
            adds=cp.adds,
            removes=cp.removes,
            txns=cp.txns,
            domains=cp.domains,
            metadata_version=cp.version,
        )
    return apply_commits(base, read_commits(storage, segment), table_root, segment.version)
