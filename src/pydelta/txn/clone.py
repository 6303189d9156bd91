"""CLONE: a new table (or a replaced one) with a source table's files and metadata at a version.

A shallow clone's log references the source's data files (and deletion vector files) by
absolute URI, so no data is copied and the clone stays valid as long as the source's
files are not vacuumed. A deep clone copies the data files and deletion vectors into the
target first and references them relatively. Either way the clone is one commit
(operation CLONE, delta-spark's parameters and metrics); a replaced target keeps its
table id, and its old files are removed in that same commit. Row ids and row commit
versions are not carried over (delta-spark drops them too).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from dataclasses import replace

from pydelta.errors import DeltaIllegalArgumentError, TableAlreadyExistsError
from pydelta.log.file_actions import add_action_from_file_row
from pydelta.log.replay import canonical_path
from pydelta.log.snapshot import Snapshot, load_snapshot
from pydelta.log.storage import to_local_path
from pydelta.protocol.action_types import AddFile, RemoveFile, as_add, as_remove
from pydelta.protocol.partition_values import file_uri, to_uri_path
from pydelta.txn import protocol_upgrade as pu
from pydelta.txn.commit_info import Operation
from pydelta.txn.transaction import OptimisticTransaction

# Table properties a clone never copies (an owner of the source's commits is not the clone's).
_NOT_COPIED_PREFIXES = ("delta.managedCommit.", "delta.coordinatedCommits.")


def _is_absolute(path: str) -> bool:
    return path.startswith(("file:", "/")) or "://" in path


def _shallow(add: AddFile, source_root: str) -> AddFile:
    """The add action with its file and deletion vector referenced by absolute URI."""
    from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor

    out = add.copy()
    if not _is_absolute(add["path"]):
        out["path"] = file_uri(canonical_path(add["path"], source_root))
    dv = add.get("deletionVector")
    if dv and dv.get("storageType") == "u":
        descriptor = DeletionVectorDescriptor.from_dict(dv)
        local = descriptor.absolute_path(source_root)
        assert local is not None  # a stored ('u') deletion vector has a file
        out["deletionVector"] = {**dv, "storageType": "p", "pathOrInlineDv": file_uri(local)}
    return out


def _deep(add: AddFile, source_root: str, target_root: str, copied: list[str]) -> AddFile:
    """The add action for a copy of its file (and relative deletion vector) inside the target."""
    from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor

    out = add.copy()
    src = canonical_path(add["path"], source_root)
    rel = add["path"] if not _is_absolute(add["path"]) else f"clone-{uuid.uuid4()}-{os.path.basename(src)}"
    dst = canonical_path(rel, target_root)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(src, dst)
    copied.append(dst)
    out["path"] = rel if not _is_absolute(add["path"]) else to_uri_path(rel)
    dv = add.get("deletionVector")
    if dv and dv.get("storageType") == "u":
        descriptor = DeletionVectorDescriptor.from_dict(dv)
        dv_src = descriptor.absolute_path(source_root)
        dv_dst = descriptor.absolute_path(target_root)
        if dv_src and dv_dst and not os.path.exists(dv_dst):
            os.makedirs(os.path.dirname(dv_dst), exist_ok=True)
            shutil.copyfile(dv_src, dv_dst)
            copied.append(dv_dst)
    return out


def _existing(target_root: str) -> Snapshot | None:
    if not os.path.isdir(os.path.join(target_root, "_delta_log")):
        return None
    try:
        return load_snapshot(target_root)
    except Exception:  # noqa: BLE001 - an empty or foreign _delta_log: nothing to keep
        return None


def clone_table(
    source: Snapshot,
    target: str,
    *,
    shallow: bool,
    replace_existing: bool = False,
    properties: dict[str, str] | None = None,
    source_name: str | None = None,
    engine_info: str | None = None,
) -> Snapshot:
    """Clone `source` (a snapshot at the version to clone) to the table root `target`; returns the clone."""
    source.protocol.check_readable()
    target_root = to_local_path(target).rstrip("/") or "/"
    if os.path.realpath(target_root) == os.path.realpath(source.table_root):
        raise DeltaIllegalArgumentError("a table cannot be cloned onto itself")
    existing = _existing(target_root)
    if existing is not None and not replace_existing:
        raise TableAlreadyExistsError(f"[DELTA_TABLE_ALREADY_EXISTS] Table {target} already exists.")
    configuration = {k: v for k, v in source.metadata.configuration.items() if not k.startswith(_NOT_COPIED_PREFIXES)}
    configuration.update(properties or {})
    metadata = replace(
        source.metadata,
        id=existing.metadata.id if existing is not None else str(uuid.uuid4()),
        name=existing.metadata.name if existing is not None else None,
        description=existing.metadata.description if existing is not None else None,
        configuration=configuration,
    )
    rows = source.files().to_pylist()
    adds: list[AddFile] = []
    copied: list[str] = []
    try:
        for row in rows:
            add = add_action_from_file_row(row)
            add.pop("baseRowId", None)
            add.pop("defaultRowCommitVersion", None)
            adds.append(_shallow(add, source.table_root) if shallow
                        else _deep(add, source.table_root, target_root, copied))
        now = int(time.time() * 1000)
        removes: list[RemoveFile] = []
        if existing is not None:
            # A file the clone adds again (re-cloning the same source shallowly: the same absolute
            # path) is replaced by its new add; a remove of it in the same commit would be refused.
            readded = {a["path"] for a in adds}
            for row in existing.files().to_pylist():
                old = add_action_from_file_row(row)
                if old["path"] in readded:
                    continue
                remove: RemoveFile = {"path": old["path"], "deletionTimestamp": now, "dataChange": True,
                                      "extendedFileMetadata": True, "partitionValues": old["partitionValues"],
                                      "size": old["size"]}
                if old.get("deletionVector"):
                    remove["deletionVector"] = old["deletionVector"]
                removes.append(remove)
        txn = OptimisticTransaction(target_root, existing, engine_info=engine_info)
        txn.read_whole_table()
        txn.update_metadata(metadata)
        current = txn.protocol  # the target's, or what the new metadata needs
        protocol = source.protocol if current is None else pu.merge(source.protocol, current)
        if current is None or protocol != current:
            txn.update_protocol(protocol)
        source_size = sum(int(r["size"] or 0) for r in rows)
        metrics = {
            "sourceTableSize": source_size,
            "sourceNumOfFiles": len(rows),
            "numRemovedFiles": len(removes),
            "numCopiedFiles": 0 if shallow else len(rows),
            "removedFilesSize": sum(r.get("size") or 0 for r in removes),
            "copiedFilesSize": 0 if shallow else source_size,
        }
        name = source_name or f"delta.`{file_uri(source.table_root)}`"
        actions = [as_remove(r) for r in removes] + [as_add(a) for a in adds]
        txn.commit(actions, Operation.clone(name, source.version), operation_metrics=metrics)
    except BaseException:
        for path in copied:  # a failed deep clone leaves no copies behind
            with contextlib.suppress(OSError):
                os.remove(path)
        raise
    return txn.post_commit_snapshot()
