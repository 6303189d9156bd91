"""Commit-owner clients by name, and which owner a table names (validating the RFC's invalid states)."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from typing import Callable

from pydelta.errors import InvalidManagedCommitStateError, UnknownCommitOwnerError
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.log.commit_owners.base import (
    COMMIT_OWNER_CONF_KEY,
    COMMIT_OWNER_KEY,
    FEATURE,
    CommitOwnerClient,
    parse_owner_conf,
)

Factory = Callable[[dict[str, str]], CommitOwnerClient]

_FACTORIES: dict[str, Factory] = {}
_CLIENTS: dict[tuple[str, str, int], CommitOwnerClient] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class OwnerSpec:
    """The owner a table's metadata names: name plus its opaque conf (compared as a whole)."""

    name: str
    conf: dict[str, str]

    def same_as(self, other: "OwnerSpec | None") -> bool:
        return other is not None and self.name == other.name and self.conf == other.conf


def register_commit_owner(name: str, factory: Factory) -> None:
    """Make `delta.managedCommit.commitOwner=<name>` resolvable; `factory(conf)` builds a client."""
    with _LOCK:
        _FACTORIES[name] = factory
        for key in [k for k in _CLIENTS if k[0] == name]:
            _CLIENTS.pop(key).close()


def _builtin(name: str) -> Factory | None:
    if name == "sqlite":
        from pydelta.log.commit_owners.sqlite_owner import SqliteCommitOwner

        return SqliteCommitOwner.from_conf
    if name == "postgres":
        from pydelta.log.commit_owners.postgres_owner import PostgresCommitOwner

        return PostgresCommitOwner.from_conf
    return None


def commit_owner(name: str, conf: dict[str, str] | None = None) -> CommitOwnerClient:
    """The (per-process, cached) client for owner `name` with `conf`."""
    conf = dict(conf or {})
    key = (name, json.dumps(conf, sort_keys=True), os.getpid())
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is not None:
            return client
        factory = _FACTORIES.get(name) or _builtin(name)
        if factory is None:
            known = sorted(set(_FACTORIES) | {"sqlite", "postgres"})
            raise UnknownCommitOwnerError(
                f"the table's commit owner {name!r} ({COMMIT_OWNER_KEY}) has no client in pydelta; "
                f"known owners: {', '.join(known)} (register one with register_commit_owner)"
            )
        client = factory(conf)
        _CLIENTS[key] = client
        return client


def owner_spec(metadata: Metadata | None, protocol: Protocol | None) -> OwnerSpec | None:
    """The owner named by the table, or None for a file-system table.

    Raises InvalidManagedCommitStateError for the states the RFC calls invalid: the owner
    property without the managedCommit feature, or the feature without the property.
    """
    if metadata is None or protocol is None:
        return None
    name = metadata.configuration.get(COMMIT_OWNER_KEY)
    has_feature = FEATURE in (protocol.writer_features or frozenset())
    if name is not None and not has_feature:
        raise InvalidManagedCommitStateError(
            f"invalid managed-commit table: {COMMIT_OWNER_KEY}={name!r} is set but the protocol does not "
            f"support the '{FEATURE}' writer feature"
        )
    if name is None:
        if has_feature:
            raise InvalidManagedCommitStateError(
                f"invalid managed-commit table: the protocol supports the '{FEATURE}' writer feature but "
                f"{COMMIT_OWNER_KEY} is not set in the table's metadata"
            )
        if COMMIT_OWNER_CONF_KEY in metadata.configuration:
            raise InvalidManagedCommitStateError(
                f"invalid managed-commit table: {COMMIT_OWNER_CONF_KEY} is set without {COMMIT_OWNER_KEY}"
            )
        return None
    if not name.strip():
        raise InvalidManagedCommitStateError(f"{COMMIT_OWNER_KEY} is empty")
    return OwnerSpec(name, parse_owner_conf(metadata.configuration.get(COMMIT_OWNER_CONF_KEY)))


def owner_of(metadata: Metadata | None, protocol: Protocol | None) -> CommitOwnerClient | None:
    """The client of the owner the table names (None: a file-system table)."""
    spec = owner_spec(metadata, protocol)
    return None if spec is None else commit_owner(spec.name, spec.conf)
