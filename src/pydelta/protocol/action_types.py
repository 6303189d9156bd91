"""The log's actions as they cross floors: TypedDicts of the JSON objects PROTOCOL.md defines.

A commit file is one action per line, each a one-key object (`{"add": {...}}`); these types
name the keys and their value types, so mypy checks what the Spark layer hands to a
transaction and what the log core hands back (kernel-rs and pyiceberg type theirs the same
way). `Metadata` and `Protocol` have dataclasses of their own (`protocol.actions`); their JSON
forms travel as plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Required, TypedDict, cast


class DeletionVectorDict(TypedDict, total=False):
    """A deletion vector descriptor (`deletionVector` of add and remove)."""

    storageType: Required[str]
    pathOrInlineDv: Required[str]
    offset: int | None
    sizeInBytes: Required[int]
    cardinality: Required[int]


class AddFile(TypedDict, total=False):
    """An `add` action: a data file that is part of the table from this version on."""

    path: Required[str]
    partitionValues: Required[dict[str, str | None]]
    size: Required[int]
    modificationTime: Required[int]
    dataChange: Required[bool]
    stats: str | None
    tags: dict[str, str] | None
    deletionVector: DeletionVectorDict | None
    baseRowId: int | None
    defaultRowCommitVersion: int | None
    clusteringProvider: str | None


class RemoveFile(TypedDict, total=False):
    """A `remove` action: a data file (with its deletion vector) no longer in the table."""

    path: Required[str]
    deletionTimestamp: int | None
    dataChange: Required[bool]
    extendedFileMetadata: bool
    partitionValues: dict[str, str | None]
    size: int | None
    stats: str | None
    tags: dict[str, str] | None
    deletionVector: DeletionVectorDict | None
    baseRowId: int | None
    defaultRowCommitVersion: int | None


class AddCDCFile(TypedDict, total=False):
    """A `cdc` action: a change-data file of this version."""

    path: Required[str]
    partitionValues: Required[dict[str, str | None]]
    size: Required[int]
    dataChange: Required[bool]
    tags: dict[str, str] | None


class SidecarFile(TypedDict, total=False):
    """A `sidecar` action of a V2 checkpoint: a file holding some of its add and remove actions."""

    path: Required[str]
    sizeInBytes: Required[int]
    modificationTime: Required[int]
    tags: dict[str, str] | None


class Action(TypedDict, total=False):
    """One line of a commit: exactly one of these keys."""

    add: AddFile
    remove: RemoveFile
    cdc: AddCDCFile
    metaData: dict[str, Any]
    protocol: dict[str, Any]
    txn: dict[str, Any]
    domainMetadata: dict[str, Any]
    commitInfo: dict[str, Any]
    checkpointMetadata: dict[str, Any]
    sidecar: SidecarFile


def as_add(add: AddFile) -> Action:
    """`{"add": add}`, typed."""
    return {"add": add}


def as_remove(remove: RemoveFile) -> Action:
    """`{"remove": remove}`, typed."""
    return {"remove": remove}


def kind_and_body(action: Action) -> tuple[str, Mapping[str, Any]]:
    """The one key of a commit line and its body (an action holds exactly one)."""
    ((kind, body),) = action.items()
    return kind, cast("Mapping[str, Any]", body)
