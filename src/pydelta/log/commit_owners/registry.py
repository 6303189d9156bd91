"""Commit-owner clients by name, and which owner a table names (validating the RFC's invalid states).

A table names its owner in one of two ways:
- seed 001's managed commits: `delta.managedCommit.commitOwner` (+ `...commitOwnerConf`) with the
  `managedCommit` writer feature; commits are staged in `_delta_log/_commits/`;
- PROTOCOL.md's catalog-managed tables: the `catalogManaged` reader-writer feature, the catalog
  named by pydelta's `io.pydelta.catalog` (+ `io.pydelta.catalog.conf`); commits are staged in
  `_delta_log/_staged_commits/`. A catalogManaged table with `io.unitycatalog.tableId` belongs
  to a Unity Catalog server, reached through the binding its name's resolution made
  (`unity_catalog.bind_table`). A catalogManaged table with neither property belongs to a
  catalog pydelta does not know: it can be neither read nor written here.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pydelta.errors import (
    CatalogManagedTableError,
    CommitOwnerError,
    InvalidManagedCommitStateError,
    UnknownCommitOwnerError,
)
from pydelta.log.commit_owners.base import (
    COMMIT_OWNER_CONF_KEY,
    COMMIT_OWNER_KEY,
    FEATURE,
    STAGED_COMMITS_DIR,
    CommitOwnerClient,
    parse_owner_conf,
)
from pydelta.log.commit_owners.unity_catalog import NAME as UC_NAME
from pydelta.log.commit_owners.unity_catalog import TABLE_ID_KEY as UC_TABLE_ID_KEY
from pydelta.log.commit_owners.unity_catalog import from_conf as unity_catalog_owner
from pydelta.protocol.actions import Metadata, Protocol

CATALOG_KEY = "io.pydelta.catalog"
CATALOG_CONF_KEY = "io.pydelta.catalog.conf"
CATALOG_FEATURE = "catalogManaged"
PREVIEW_CATALOG_FEATURE = "catalogOwned-preview"
CATALOG_MANAGED = "catalogManaged"  # OwnerSpec.kind
MANAGED_COMMIT = "managedCommit"
# In `io.pydelta.catalog.conf`: commits of at most this many bytes are inline commits, whose
# content the catalog stores until they are published (PROTOCOL.md); default 0: all staged.
INLINE_COMMIT_BYTES_KEY = "inlineCommitBytes"

Factory = Callable[[dict[str, str]], CommitOwnerClient]

_FACTORIES: dict[str, Factory] = {}
_CLIENTS: dict[tuple[str, str, int, str], CommitOwnerClient] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class OwnerSpec:
    """The owner a table's metadata names: name plus its opaque conf (compared as a whole)."""

    name: str
    conf: dict[str, str]
    kind: str = MANAGED_COMMIT  # or CATALOG_MANAGED

    def same_as(self, other: OwnerSpec | None) -> bool:
        return other is not None and (self.name, self.conf, self.kind) == (other.name, other.conf, other.kind)

    @property
    def catalog_managed(self) -> bool:
        return self.kind == CATALOG_MANAGED


def register_commit_owner(name: str, factory: Factory) -> None:
    """Make `delta.managedCommit.commitOwner=<name>` resolvable; `factory(conf)` builds a client."""
    with _LOCK:
        _FACTORIES[name] = factory
        for key in [k for k in _CLIENTS if k[0] == name]:
            _CLIENTS.pop(key).close()


def _builtin(name: str) -> Factory | None:
    if name == UC_NAME:
        return unity_catalog_owner
    if name == "sqlite":
        from pydelta.log.commit_owners.sqlite_owner import SqliteCommitOwner

        return SqliteCommitOwner.from_conf
    if name == "postgres":
        from pydelta.log.commit_owners.postgres_owner import PostgresCommitOwner

        return PostgresCommitOwner.from_conf
    return None


def commit_owner(name: str, conf: dict[str, str] | None = None, kind: str = MANAGED_COMMIT) -> CommitOwnerClient:
    """The (per-process, cached) client for owner `name` with `conf`, staging commits as `kind` says."""
    conf = dict(conf or {})
    key = (name, json.dumps(conf, sort_keys=True), os.getpid(), kind)
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is not None:
            return client
        factory = _FACTORIES.get(name) or _builtin(name)
        if factory is None:
            known = sorted(set(_FACTORIES) | {"sqlite", "postgres", UC_NAME})
            raise UnknownCommitOwnerError(
                f"the table's commit owner {name!r} ({COMMIT_OWNER_KEY}) has no client in pydelta; "
                f"known owners: {', '.join(known)} (register one with register_commit_owner)"
            )
        client = factory(conf)
        if kind == CATALOG_MANAGED:
            client.commits_dir = STAGED_COMMITS_DIR
            client.inline_commit_bytes = _inline_commit_bytes(name, conf, client)
        _CLIENTS[key] = client
        return client


def _inline_commit_bytes(name: str, conf: dict[str, str], client: CommitOwnerClient) -> int:
    raw = conf.get(INLINE_COMMIT_BYTES_KEY, "0")
    try:
        limit = int(raw)
    except ValueError:
        limit = -1
    if limit < 0:
        raise CommitOwnerError(f"{CATALOG_CONF_KEY} {INLINE_COMMIT_BYTES_KEY} must be a byte count (0 or more), "
                               f"got {raw!r}")
    if limit and not client.stores_inline_commits:
        raise CommitOwnerError(f"the {name!r} catalog cannot store inline commits ({INLINE_COMMIT_BYTES_KEY})")
    return limit


def owner_spec(metadata: Metadata | None, protocol: Protocol | None) -> OwnerSpec | None:
    """The owner (or catalog) named by the table, or None for a file-system table.

    Raises InvalidManagedCommitStateError for the states the RFC calls invalid: the owner
    property without the managedCommit feature, or the feature without the property (and
    the same for catalogManaged and `io.pydelta.catalog`); CatalogManagedTableError for a
    catalogManaged table of a catalog pydelta has no client for.
    """
    if metadata is None or protocol is None:
        return None
    catalog = _catalog_spec(metadata, protocol)
    name = metadata.configuration.get(COMMIT_OWNER_KEY)
    has_feature = FEATURE in (protocol.writer_features or frozenset())
    if catalog is not None and (name is not None or has_feature):
        raise InvalidManagedCommitStateError(
            f"invalid table: it is both catalog-managed ({CATALOG_KEY}) and a managed-commit table "
            f"({COMMIT_OWNER_KEY})")
    if catalog is not None:
        return catalog
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


def _catalog_spec(metadata: Metadata, protocol: Protocol) -> OwnerSpec | None:
    """The pydelta catalog of a catalogManaged table (None for other tables)."""
    features = (protocol.writer_features or frozenset()) | (protocol.reader_features or frozenset())
    name = metadata.configuration.get(CATALOG_KEY)
    if PREVIEW_CATALOG_FEATURE in features:  # the pre-release spelling: only other catalogs wrote it
        raise CatalogManagedTableError(
            f"this table is catalog-managed ('{PREVIEW_CATALOG_FEATURE}' table feature) by a catalog pydelta has no "
            "client for: PROTOCOL.md requires readers and writers to go through the table's catalog, so read and "
            "write it through that catalog's engine", frozenset({PREVIEW_CATALOG_FEATURE}))
    if CATALOG_FEATURE not in features:
        if name is not None or CATALOG_CONF_KEY in metadata.configuration:
            raise InvalidManagedCommitStateError(
                f"invalid table: {CATALOG_KEY} is set but the protocol does not support the "
                f"'{CATALOG_FEATURE}' table feature")
        return None
    uc_table = metadata.configuration.get(UC_TABLE_ID_KEY)
    if (name is None or not name.strip()) and uc_table and uc_table.strip():
        return OwnerSpec(UC_NAME, {"tableId": uc_table.strip()}, CATALOG_MANAGED)
    if name is None or not name.strip():
        raise CatalogManagedTableError(
            f"this table is catalog-managed ('{CATALOG_FEATURE}' table feature) by a catalog pydelta has no client "
            f"for (no {CATALOG_KEY} property): PROTOCOL.md requires readers and writers to go through the table's "
            "catalog, so read and write it through that catalog's engine", frozenset({CATALOG_FEATURE}))
    return OwnerSpec(name, parse_owner_conf(metadata.configuration.get(CATALOG_CONF_KEY), CATALOG_CONF_KEY),
                     CATALOG_MANAGED)


def owner_of(metadata: Metadata | None, protocol: Protocol | None) -> CommitOwnerClient | None:
    """The client of the owner the table names (None: a file-system table)."""
    spec = owner_spec(metadata, protocol)
    return None if spec is None else client_of(spec)


def client_of(spec: OwnerSpec) -> CommitOwnerClient:
    return commit_owner(spec.name, spec.conf, spec.kind)
