"""Parsing one commit (or compacted range) of JSON actions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydelta.errors import CorruptedLogError
from pydelta.protocol.action_types import AddCDCFile, AddFile, RemoveFile, SidecarFile
from pydelta.protocol.actions import DomainMetadata, Metadata, Protocol, Txn


@dataclass
class CommitActions:
    """The actions of one log file, split by kind."""

    version: int
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    commit_info: dict[str, Any] | None = None
    txns: list[Txn] = field(default_factory=list)
    domains: list[DomainMetadata] = field(default_factory=list)
    adds: list[AddFile] = field(default_factory=list)
    removes: list[RemoveFile] = field(default_factory=list)
    cdcs: list[AddCDCFile] = field(default_factory=list)
    sidecars: list[SidecarFile] = field(default_factory=list)
    checkpoint_metadata: dict[str, Any] | None = None
    # Set by the vectorized parser (json_actions.parse_commit): file actions as Arrow
    # chunked arrays of ADD_TYPE / REMOVE_TYPE, in file order, instead of `adds`/`removes`.
    add_array: Any = None
    remove_array: Any = None

    def add_files(self) -> Any:
        """Add actions as one Arrow array of ADD_TYPE, in file order."""
        from pydelta.log.arrow_actions import ADD_TYPE

        return _as_array(self.add_chunks(), ADD_TYPE)

    def remove_files(self) -> Any:
        """Remove actions as one Arrow array of REMOVE_TYPE, in file order."""
        from pydelta.log.arrow_actions import REMOVE_TYPE

        return _as_array(self.remove_chunks(), REMOVE_TYPE)

    def add_chunks(self) -> list[Any]:
        """Add actions as Arrow arrays of ADD_TYPE (concatenated: file order), not copied."""
        from pydelta.log.arrow_actions import ADD_TYPE

        return _chunks(self.add_array, self.adds, ADD_TYPE)

    def remove_chunks(self) -> list[Any]:
        from pydelta.log.arrow_actions import REMOVE_TYPE

        return _chunks(self.remove_array, self.removes, REMOVE_TYPE)

    @property
    def in_commit_timestamp(self) -> int | None:
        if self.commit_info is None:
            return None
        ts = self.commit_info.get("inCommitTimestamp")
        return int(ts) if ts is not None else None


def _chunks(array: Any, rows: Sequence[Mapping[str, Any]], target: Any) -> list[Any]:
    from pydelta.log.arrow_actions import rows_to_struct

    parts = [c for c in array.chunks if len(c)] if array is not None else []
    if rows:
        parts.append(rows_to_struct(rows, target))
    return parts


def _as_array(parts: list[Any], target: Any) -> Any:
    from pydelta.log.arrow_actions import concat

    return concat(parts, target)


def parse_actions(data: bytes, version: int, source: str) -> CommitActions:
    out = CommitActions(version)
    for lineno, line in enumerate(data.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            action = json.loads(line)
        except ValueError as e:
            raise CorruptedLogError(f"{source}: line {lineno} is not valid JSON ({e})") from None
        if not isinstance(action, dict):
            raise CorruptedLogError(f"{source}: line {lineno} is not a JSON object")
        try:
            _add_action(out, action)
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptedLogError(f"{source}: line {lineno} has an invalid action ({e!r})") from None
    return out


def _add_action(out: CommitActions, action: dict[str, Any]) -> None:
    for kind, body in action.items():
        # The file actions stay the JSON objects they are (typed by their keys, checked when replayed).
        if kind == "add":
            out.adds.append(cast("AddFile", body))
        elif kind == "remove":
            out.removes.append(cast("RemoveFile", body))
        elif kind == "metaData":
            out.metadata = Metadata.from_dict(body)
        elif kind == "protocol":
            out.protocol = Protocol.from_dict(body)
        elif kind == "commitInfo":
            out.commit_info = body
        elif kind == "txn":
            out.txns.append(Txn(body["appId"], int(body["version"]), body.get("lastUpdated")))
        elif kind == "domainMetadata":
            out.domains.append(
                DomainMetadata(body["domain"], body.get("configuration") or "", bool(body.get("removed", False)))
            )
        elif kind == "cdc":
            out.cdcs.append(cast("AddCDCFile", body))
        elif kind == "sidecar":
            out.sidecars.append(cast("SidecarFile", body))
        elif kind == "checkpointMetadata":
            out.checkpoint_metadata = body
        # Unknown actions are ignored, as the protocol allows.
