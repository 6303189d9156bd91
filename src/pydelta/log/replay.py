"""Reconciling actions into a table state (PROTOCOL.md, "Action Reconciliation").

The base (a checkpoint, or an already loaded state) stays in Arrow; only the
commits after it are parsed in Python. A file is keyed by its canonical path
plus its deletion vector's unique id; the newest action for a key wins.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pydelta.errors import MissingMetadataError, MissingProtocolError
from pydelta.log.arrow_actions import ADD_TYPE, REMOVE_TYPE, concat, rows_to_struct
from pydelta.log.checkpoint_reader import read_checkpoint
from pydelta.log.commits import CommitActions, parse_actions
from pydelta.log.segment import LogSegment
from pydelta.log.storage import Storage, to_local_path
from pydelta.protocol.actions import DomainMetadata, Metadata, Protocol, Txn


@dataclass
class TableState:
    """Everything a snapshot knows, with files as Arrow struct arrays."""

    version: int
    protocol: Protocol
    metadata: Metadata
    adds: pa.StructArray
    removes: pa.StructArray
    txns: dict[str, Txn] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    latest_commit_info: dict[str, Any] | None = None
    # (version, protocol, metadata) of the newest change of each, for ICT rules
    metadata_version: int = 0


def canonical_path(path: str, table_root: str) -> str:
    """Decoded absolute path of a (URI-encoded, relative or absolute) file path."""
    if path.startswith("file:") or path.startswith("/") or "://" in path:
        return to_local_path(unquote(path) if not path.startswith("file:") else path)
    return os.path.join(table_root, unquote(path))


def _dv_uid(dv: dict[str, Any] | None) -> str:
    if not dv:
        return ""
    uid = dv["storageType"] + dv["pathOrInlineDv"]
    if dv.get("offset") is not None:
        uid += "@" + str(dv["offset"])
    return uid


def action_key(body: dict[str, Any], table_root: str) -> str:
    return canonical_path(body["path"], table_root) + "\x00" + _dv_uid(body.get("deletionVector"))


def file_keys(files: pa.StructArray, table_root: str) -> pa.Array:
    """Vectorized `action_key` for an add/remove struct array."""
    paths = pc.struct_field(files, "path")
    simple = pc.invert(
        pc.or_(
            pc.or_(pc.match_substring(paths, "%"), pc.match_substring(paths, ":")),
            pc.starts_with(paths, "/"),
        )
    )
    prefix = table_root.rstrip("/") + "/"
    canonical = pc.binary_join_element_wise(pa.scalar(prefix), paths, "")
    if not pc.all(simple).as_py():
        slow = [canonical_path(p, table_root) for p in paths.filter(pc.invert(simple)).to_pylist()]
        idx = pc.indices_nonzero(pc.invert(simple))
        canonical = canonical.to_pylist()
        for i, value in zip(idx.to_pylist(), slow):
            canonical[i] = value
        canonical = pa.array(canonical, pa.string())
    dv = pc.struct_field(files, "deletionVector")
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


def _drop_touched(files: pa.StructArray, touched: dict[str, Any], table_root: str) -> pa.StructArray:
    """`files` minus rows whose key a newer commit touched.

    Full keys are only computed for rows that could match: rows whose raw path
    equals a touched path's relative form, and rows with unusual paths.
    """
    if len(files) == 0:
        return files
    prefix = table_root.rstrip("/") + "/"
    relative = set()
    for key in touched:
        path = key.split("\x00", 1)[0]
        if path.startswith(prefix):
            relative.add(path[len(prefix):])
    paths = pc.struct_field(files, "path")
    unusual = pc.match_substring_regex(paths, r"^/|[%:]")
    candidates = pc.or_(pc.is_in(paths, value_set=pa.array(sorted(relative), pa.string())), unusual)
    if not pc.any(candidates).as_py():
        return files
    idx = pc.indices_nonzero(candidates)
    keys = file_keys(files.take(idx), table_root)
    hit = pc.is_in(keys, value_set=pa.array(list(touched), pa.string()))
    drop = idx.filter(hit)
    if len(drop) == 0:
        return files
    keep = np.ones(len(files), dtype=bool)
    keep[drop.to_numpy()] = False
    return files.filter(pa.array(keep))


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
            out.append(parse_actions(storage.read(comp.file.path), comp.end, comp.file.path))
            skip_until = comp.end
            continue
        out.append(parse_actions(storage.read(info.path), version, info.path))
    return out


def apply_commits(
    base: TableState | None, commits: list[CommitActions], table_root: str, target_version: int
) -> TableState:
    protocol = base.protocol if base else None
    metadata = base.metadata if base else None
    metadata_version = base.metadata_version if base else 0
    txns = dict(base.txns) if base else {}
    domains = dict(base.domains) if base else {}
    latest_info = base.latest_commit_info if base else None
    touched: dict[str, tuple[bool, dict[str, Any]]] = {}
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
        for r in commit.removes:
            touched[action_key(r, table_root)] = (False, r)
        for a in commit.adds:
            touched[action_key(a, table_root)] = (True, a)
        latest_info = commit.commit_info
    if protocol is None:
        raise MissingProtocolError(f"no protocol action found in the log of {table_root} up to version {target_version}")
    if metadata is None:
        raise MissingMetadataError(f"no metaData action found in the log of {table_root} up to version {target_version}")
    adds = base.adds if base else pa.array([], type=ADD_TYPE)
    removes = base.removes if base else pa.array([], type=REMOVE_TYPE)
    if touched:
        adds = _drop_touched(adds, touched, table_root)
        removes = _drop_touched(removes, touched, table_root)
        new_adds = [body for is_add, body in touched.values() if is_add]
        new_removes = [body for is_add, body in touched.values() if not is_add]
        adds = concat([adds, rows_to_struct(new_adds, ADD_TYPE)], ADD_TYPE)
        removes = concat([removes, rows_to_struct(new_removes, REMOVE_TYPE)], REMOVE_TYPE)
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
