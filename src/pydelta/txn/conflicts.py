"""Deciding whether a transaction that lost the race for version N can still commit.

Mirrors delta-spark's ConflictChecker: each winning commit since the read
version is checked in order (protocol, metadata, domain metadata, app ids,
added files, deleted files). A real conflict raises the exception delta-spark
raises, with its message; otherwise the caller rebases onto the winner.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import pyarrow as pa

from pydelta.errors import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    DeltaConcurrentModificationException,
    MetadataChangedException,
    ProtocolChangedException,
)
from pydelta.log.commits import CommitActions, parse_actions
from pydelta.log.replay import canonical_path
from pydelta.protocol.action_types import AddFile, RemoveFile
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.protocol.features import feature_spec
from pydelta.protocol.predicates import Predicate
from pydelta.txn import protocol_upgrade as pu

if TYPE_CHECKING:
    from pydelta.log.file_info import FileInfo
    from pydelta.log.snapshot import Snapshot
    from pydelta.log.storage import Storage

DOCS_LINK = "https://docs.delta.io/latest/concurrency-control.html"

SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
SNAPSHOT_ISOLATION = "SnapshotIsolation"
ISOLATION_LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE, SNAPSHOT_ISOLATION)


@dataclass
class WinningCommit:
    """One commit that landed after our read version."""

    version: int
    actions: CommitActions
    file_modification_time: int = 0

    @classmethod
    def read(cls, storage: Storage, info: FileInfo, version: int) -> WinningCommit:
        return cls(version, parse_actions(info.read(storage), version, info.path), info.modification_time)

    @property
    def commit_info(self) -> dict[str, Any] | None:
        return self.actions.commit_info

    @property
    def operation(self) -> str:
        return (self.commit_info or {}).get("operation") or "TRANSACTION"

    @property
    def is_blind_append(self) -> bool:
        return bool((self.commit_info or {}).get("isBlindAppend", False))

    @property
    def txn_id(self) -> str | None:
        return (self.commit_info or {}).get("txnId")

    @property
    def timestamp(self) -> int:
        """The winner's commit time: its in-commit timestamp, else its file time."""
        ict = self.actions.in_commit_timestamp
        return ict if ict is not None else self.file_modification_time


@dataclass
class CurrentTransaction:
    """What conflict checks need to know about the transaction trying to commit."""

    table_root: str
    read_snapshot: Snapshot | None
    isolation_level: str
    is_blind_append: bool
    protocol: Protocol | None  # the protocol this commit will be valid under (may adopt a winner's)
    metadata_changed: bool = False
    has_protocol_action: bool = False
    read_predicates: list[Predicate] = field(default_factory=list)
    read_files: set[str] = field(default_factory=set)  # canonical paths
    read_whole_table: bool = False
    read_app_ids: set[str] = field(default_factory=set)
    removed_files: dict[str, Mapping[str, Any] | None] = field(default_factory=dict)  # canonical -> partitionValues
    domains: set[str] = field(default_factory=set)

    @property
    def read_metadata(self) -> Metadata | None:
        return self.read_snapshot.metadata if self.read_snapshot is not None else None

    @property
    def read_protocol(self) -> Protocol | None:
        return self.read_snapshot.protocol if self.read_snapshot is not None else None


def check_conflicts(txn: CurrentTransaction, winner: WinningCommit) -> None:
    """Raise the delta-spark exception if `winner` invalidates `txn`; else return (rebase is safe).

    May update `txn.protocol` when the winner upgraded the protocol compatibly.
    """
    _check_protocol(txn, winner)
    _check_metadata(txn, winner)
    _check_domain_metadata(txn, winner)
    _check_app_ids(txn, winner)
    _check_added_files(txn, winner)
    _check_deleted_read(txn, winner)
    _check_deleted_deleted(txn, winner)


# ---- individual checks -----------------------------------------------------------


def _conflicting_commit(winner: WinningCommit) -> str:
    info = winner.commit_info
    if info is None:
        return ""
    body = {"version": winner.version, **info}
    return "\nConflicting commit: " + json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def _raise(
    cls: type[DeltaConcurrentModificationException], message: str, winner: WinningCommit, **attrs: Any
) -> NoReturn:
    exc = cls(message)
    exc.version = winner.version
    exc.operation = winner.operation
    for key, value in attrs.items():
        setattr(exc, key, value)
    raise exc


def _check_protocol(txn: CurrentTransaction, winner: WinningCommit) -> None:
    new = winner.actions.protocol
    if new is None:
        return
    extra = ""
    if winner.version == 0:
        extra = (
            "This happens when multiple writers are writing to an empty directory. "
            "Creating the table ahead of time will avoid this conflict. "
        )
    message = (
        "ProtocolChangedException: The protocol version of the Delta table has been changed by a "
        f"concurrent update. {extra}{_conflicting_commit(winner)}\nRefer to {DOCS_LINK} for more details."
    )
    if txn.has_protocol_action:
        _raise(ProtocolChangedException, message, winner)
    # The winner's protocol must still be one we can write (raises UnsupportedFeatureError).
    new.check_writable()
    read = txn.read_protocol
    if pu.removes_features(new, read):
        _raise(ProtocolChangedException, message, winner)
    unsafe = [n for n in pu.added_features(new, read) if feature_spec(n).fail_concurrent_at_upgrade]
    if unsafe:
        _raise(ProtocolChangedException, message, winner, features=sorted(unsafe))
    txn.protocol = new


def _table_name(txn: CurrentTransaction) -> str:
    return f"delta.`{txn.table_root}`"


def _check_metadata(txn: CurrentTransaction, winner: WinningCommit) -> None:
    if winner.actions.metadata is None:
        return
    _raise(
        MetadataChangedException,
        f"MetadataChangedException: The metadata of the Delta table {_table_name(txn)} has been changed "
        f"by a concurrent update. Please try the operation again.{_conflicting_commit(winner)}\n"
        f"Refer to {DOCS_LINK} for more details.",
        winner,
    )


def _check_domain_metadata(txn: CurrentTransaction, winner: WinningCommit) -> None:
    for d in winner.actions.domains:
        if d.domain in txn.domains:
            _raise(
                ConcurrentTransactionException,
                f"A conflicting metadata domain {d.domain} is added.",
                winner,
                domain=d.domain,
            )


def _check_app_ids(txn: CurrentTransaction, winner: WinningCommit) -> None:
    for t in winner.actions.txns:
        if t.app_id in txn.read_app_ids:
            _raise(
                ConcurrentTransactionException,
                "ConcurrentTransactionException: This error occurs when multiple streaming queries are "
                "using the same checkpoint to write into this table. Did you run multiple instances of "
                f"the same streaming query at the same time?{_conflicting_commit(winner)}\n"
                f"Refer to {DOCS_LINK} for more details.",
                winner,
                app_id=t.app_id,
            )


def _partition_hint(txn: CurrentTransaction, values: Mapping[str, Any] | None) -> str | None:
    """delta-spark's "[a=1, b=null]" for a file's partition, or None for unpartitioned tables."""
    md = txn.read_metadata
    if md is None or not md.partition_columns or not values:
        return None
    from pydelta.protocol.schema import column_mapping_mode, physical_name

    mode = column_mapping_mode(md.configuration)
    parts = []
    for name in md.partition_columns:
        key = name
        if mode != "none":
            with contextlib.suppress(KeyError):
                key = physical_name(md.schema.field(name, case_sensitive=False))
        value = values.get(key)
        parts.append(f"{name}={'null' if value is None else value}")
    return "[" + ", ".join(parts) + "]"


def _files_table(adds: Sequence[AddFile]) -> pa.Table:
    """The shape Snapshot.files() has, enough for FileSkipper: path, partition_values, stats."""
    return pa.table(
        {
            "path": pa.array([a.get("path") for a in adds], pa.string()),
            "partition_values": pa.array(
                [list((a.get("partitionValues") or {}).items()) for a in adds],
                pa.map_(pa.string(), pa.string()),
            ),
            "stats": pa.array([a.get("stats") for a in adds], pa.string()),
        }
    )


def first_matching_file(txn: CurrentTransaction, adds: Sequence[AddFile]) -> AddFile | None:
    """The first added file this transaction's reads would have seen, or None."""
    if not adds or txn.is_blind_append:
        return None
    md = txn.read_metadata
    if txn.read_whole_table or md is None:
        return adds[0]
    if not txn.read_predicates:
        # Only exact files were read: like delta-spark, any append to an unpartitioned table
        # conflicts, while a partitioned table needs a predicate to conflict.
        return adds[0] if not md.partition_columns else None
    from pydelta.log.data_skipping import FileSkipper

    skipper = FileSkipper.for_metadata(_files_table(adds), md)
    for predicate in txn.read_predicates:
        mask = skipper.keep_mask(predicate).to_pylist()
        for add, keep in zip(adds, mask, strict=True):
            if keep:
                return add
    return None


def _check_added_files(txn: CurrentTransaction, winner: WinningCommit) -> None:
    adds = winner.actions.adds
    if not adds:
        return
    level = txn.isolation_level
    if level == SNAPSHOT_ISOLATION:
        return
    if level == WRITE_SERIALIZABLE and not txn.metadata_changed and winner.is_blind_append:
        return  # WriteSerializable: blind appends may be ordered after us
    match = first_matching_file(txn, adds)
    if match is None:
        return
    hint = _partition_hint(txn, match.get("partitionValues"))
    detail = (
        f"The concurrent operation modified data in the partition {hint} that should have been read by "
        if hint
        else "The concurrent operation modified data that should have been read by "
    )
    _raise(
        ConcurrentAppendException,
        f"Transaction conflict detected. a concurrent {winner.operation} added data to table "
        f"{_table_name(txn)} committed at version {winner.version}. {detail}this operation. Please retry "
        f"the operation. Refer to {DOCS_LINK} for more information. Conflicting file: {match.get('path')}",
        winner,
        path=match.get("path"),
        partition=hint,
    )


def _canonical(paths: Iterable[AddFile | RemoveFile], root: str) -> list[tuple[str, AddFile | RemoveFile]]:
    return [(canonical_path(r["path"], root), r) for r in paths]


def _check_deleted_read(txn: CurrentTransaction, winner: WinningCommit) -> None:
    removes = winner.actions.removes
    if not removes:
        return
    for key, remove in _canonical(removes, txn.table_root):
        if key in txn.read_files:
            _delete_read(txn, winner, remove.get("path"), _partition_hint(txn, remove.get("partitionValues")))
    if txn.read_whole_table:
        _delete_read(txn, winner, removes[0].get("path"), None)


def _delete_read(txn: CurrentTransaction, winner: WinningCommit, path: str | None, hint: str | None) -> None:
    detail = (
        f"The concurrent operation deleted data in the partition {hint} that was read by this operation."
        if hint
        else "The concurrent operation deleted data that was read by this operation."
    )
    _raise(
        ConcurrentDeleteReadException,
        f"Transaction conflict detected, a concurrent {winner.operation} deleted data from table "
        f"{_table_name(txn)} (committed at version {winner.version}) that this transaction read. {detail} "
        f"Please retry the operation. Refer to {DOCS_LINK} for more information. Conflicting file: {path}",
        winner,
        path=path,
        partition=hint,
    )


def _check_deleted_deleted(txn: CurrentTransaction, winner: WinningCommit) -> None:
    if not txn.removed_files:
        return
    for key, remove in _canonical(winner.actions.removes, txn.table_root):
        if key in txn.removed_files:
            hint = _partition_hint(txn, txn.removed_files[key])
            detail = (
                f"The concurrent operation deleted data in the partition {hint} that was read by this operation."
                if hint
                else "The concurrent operation deleted data that was read by this operation."
            )
            _raise(
                ConcurrentDeleteDeleteException,
                f"Transaction conflict detected, a concurrent {winner.operation} deleted data from table "
                f"{_table_name(txn)} (committed at version {winner.version}) that this transaction attempted "
                f"to delete. {detail} Please retry the operation. Refer to {DOCS_LINK} for more information. "
                f"Conflicting file: {remove.get('path')}",
                winner,
                path=remove.get("path"),
                partition=hint,
            )
