"""`unity-catalog`: Unity Catalog as the catalog of catalog-managed tables (PROTOCOL.md), through its
Delta REST API (`/delta/v1`, see `unity_catalog_rest`).

A Unity Catalog table names its catalog only by `io.unitycatalog.tableId`: the server is known
to whoever resolved the table's name (`catalog.schema.table`). Resolving a name therefore binds
the table id to a client of that server (`bind_table`); a table that was never resolved by name
in this process cannot be read or written by path, as in delta-spark, which reaches such tables
only through their catalog. The binding is keyed by the table's uuid, which the catalog assigns
and which is unique, so two catalogs (or two sessions) never overwrite each other's bindings.

A commit: the staged file `_delta_log/_staged_commits/<v>.<uuid>.json` is written, then
`updateTable` with `add-commit` ratifies it (409: another writer has version v) and tells the
catalog how far the table is published (`set-latest-backfilled-version`, sent with every
commit, since the server accepts only a few unpublished commits).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydelta.errors import (
    CatalogManagedTableError,
    CommitOwnerConflictError,
    CommitOwnerError,
    CommitOwnerUnavailableError,
)
from pydelta.log.commit_owners.base import Commit, CommitOwnerClient, GetCommitsResponse
from pydelta.log.commit_owners.unity_catalog_rest import UnityCatalogError, UnityCatalogRestClient
from pydelta.log.storage import Storage

logger = logging.getLogger(__name__)

NAME = "unity-catalog"
TABLE_ID_KEY = "io.unitycatalog.tableId"  # the table's uuid in Unity Catalog: all a table says of its catalog
# A commit whose answer was lost and that the catalog then shows as not landed is sent this many more times.
_LOST_ANSWER_RESENDS = 3


class TooManyUnpublishedCommitsError(CommitOwnerError):
    """The catalog refuses more commits (429) until the ratified ones are published."""


@dataclass
class TableName:
    catalog: str
    schema: str
    name: str

    def __str__(self) -> str:
        return f"{self.catalog}.{self.schema}.{self.name}"


class UnityCatalogCommitOwner(CommitOwnerClient):
    """The catalog of one Unity Catalog table (its uuid), reached through `rest`."""

    name = NAME

    def __init__(self, rest: UnityCatalogRestClient, table: TableName, table_uuid: str, *, staged: bool) -> None:
        self.rest = rest
        self.table = table
        self.table_uuid = table_uuid
        # A staging table becomes a table once version 0 is written and createTable accepted:
        # until then the catalog knows no version of it, and version 0 is the table's only commit.
        self.staged = staged
        self._published = -1  # the highest version this client knows is in _delta_log/
        self._local = threading.local()  # per thread: the catalog updates of the commit being ratified

    def commit(
        self, storage: Storage, table_root: str, table_id: str, version: int, payload: bytes,
        commit_timestamp: int, *, release: bool = False,
    ) -> Commit:
        """As every catalog's commit, and a commit that changes the table's schema, properties or
        protocol changes the catalog's copy of them in the same request (the catalog shows them)."""
        self._local.updates = self._catalog_updates(payload)
        try:
            try:
                return super().commit(storage, table_root, table_id, version, payload, commit_timestamp,
                                      release=release)
            except TooManyUnpublishedCommitsError:
                # Writers that died left ratified commits unpublished, up to the catalog's limit:
                # publish them (any client may), then ask once more.
                self.backfill_to_version(storage, table_root, table_id)
                return super().commit(storage, table_root, table_id, version, payload, commit_timestamp,
                                      release=release)
        finally:
            self._local.updates = []

    def _catalog_updates(self, payload: bytes) -> list[dict[str, object]]:
        """set-columns / set-partition-columns / set-properties / remove-properties / set-table-comment
        for a commit's metaData action, set-protocol for its protocol action."""
        metadata: dict[str, Any] | None = None
        protocol: dict[str, Any] | None = None
        for line in payload.splitlines():
            if b'"metaData"' in line or b'"protocol"' in line:
                action = json.loads(line)
                metadata = action.get("metaData", metadata)
                protocol = action.get("protocol", protocol)
        out: list[dict[str, object]] = []
        if metadata is not None:
            conf = {k: str(v) for k, v in (metadata.get("configuration") or {}).items()}
            current = self.rest.load_table(*self._parts()).properties
            removals = sorted(k for k in current if k not in conf and not _derived_by_catalog(k))
            partitioning = list(metadata.get("partitionColumns") or [])
            out += [{"action": "set-columns", "columns": uc_columns(json.loads(metadata["schemaString"]))},
                    {"action": "set-partition-columns", "partition-columns": partitioning},
                    {"action": "set-properties", "updates": conf}]
            if removals:
                out.append({"action": "remove-properties", "removals": removals})
            if metadata.get("description") is not None:
                out.append({"action": "set-table-comment", "comment": metadata["description"]})
        if protocol is not None:
            out.append({"action": "set-protocol", "protocol": {
                "min-reader-version": protocol["minReaderVersion"], "min-writer-version": protocol["minWriterVersion"],
                "reader-features": sorted(protocol.get("readerFeatures") or []),
                "writer-features": sorted(protocol.get("writerFeatures") or [])}})
        return out

    # ---- the ratification store -------------------------------------------------------------
    def _register(self, table_id: str, table_root: str, version: int) -> None:
        if not self.staged or version != 0:
            raise CommitOwnerError(
                f"{self.table} is already a Unity Catalog table; an existing table cannot be moved into "
                "Unity Catalog by a commit (create it through its staging table)")

    def _ratify(self, table_id: str, commit: Commit, release: bool) -> None:
        if release:
            raise CommitOwnerError(f"{self.table} cannot leave Unity Catalog: its commits go through the catalog")
        if self.staged:
            raise CommitOwnerError(f"{self.table} is not created in Unity Catalog yet (version 0 only)")
        updates: list[dict[str, object]] = [{"action": "add-commit", "commit": {
            "version": commit.version, "timestamp": commit.commit_timestamp, "file-name": commit.file_name,
            "file-size": commit.size, "file-modification-timestamp": commit.modification_time}}]
        if 0 < self._published < commit.version:
            updates.append({"action": "set-latest-backfilled-version", "latest-published-version": self._published})
        updates += getattr(self._local, "updates", [])
        try:
            self._send_commit(commit, updates)
        except CommitOwnerConflictError as e:
            raise CommitOwnerConflictError(
                f"version {commit.version} of {self.table} was ratified for another writer: {e}",
                e.latest_version, maybe_ratified=e.maybe_ratified) from None
        except UnityCatalogError as e:
            if e.status == 429:
                raise TooManyUnpublishedCommitsError(
                    f"Unity Catalog holds too many unpublished commits of {self.table}: {e}") from e
            raise

    def _send_commit(self, commit: Commit, updates: list[dict[str, object]]) -> None:
        """Send the add-commit; when its answer is lost, ask the catalog what became of it (reads
        are retried until the catalog answers): ratified as ours (done), version still free (sent
        again), or taken (CommitOwnerConflictError: the transaction's rebase finds out whether the
        winner is in fact this commit, published by another client). "Still free" does not prove
        the lost send will not land (seen: the catalog applied it after answering the read), so a
        resend refused for its version is a conflict that may be ours too (`maybe_ratified`)."""
        for attempt in range(_LOST_ANSWER_RESENDS + 1):
            try:
                self._update(updates)
                return
            except CommitOwnerConflictError as e:
                if attempt > 0:  # the version was taken: perhaps by the first send, applied after all
                    raise CommitOwnerConflictError(str(e), e.latest_version, maybe_ratified=True) from None
                raise
            except CommitOwnerUnavailableError:
                loaded = self.rest.load_table(*self._parts())  # raises Unavailable if it stays down
                if any(int(c["version"]) == commit.version and c["file-name"] == commit.file_name
                       for c in loaded.commits):
                    return
                if loaded.latest_table_version >= commit.version:
                    # It may be ours, ratified, then published and let go by another client: the
                    # staged file stays (readers may still be reading the catalog's earlier answer),
                    # and the transaction's rebase recognises its own commit by its txnId.
                    raise CommitOwnerConflictError(
                        f"version {commit.version} of {self.table} is taken (latest: {loaded.latest_table_version})",
                        loaded.latest_table_version, maybe_ratified=True) from None
        raise CommitOwnerUnavailableError(f"Unity Catalog lost the answer to commit {commit.version} of {self.table} "
                                          f"{_LOST_ANSWER_RESENDS + 1} times")

    def _update(self, updates: list[dict[str, object]]) -> None:
        self.rest.update_table(*self._parts(), self.table_uuid, updates)

    def _unbackfilled(self, table_id: str, start: int, end: int | None) -> GetCommitsResponse:
        if self.staged:
            return GetCommitsResponse([], 0)
        loaded = self.rest.load_table(*self._parts())
        if loaded.table_id and loaded.table_id != self.table_uuid:
            raise CommitOwnerError(
                f"{self.table} is now another table (uuid {loaded.table_id}, was {self.table_uuid}): "
                "it was dropped and created again; resolve its name again")
        commits = [_commit(c) for c in loaded.commits]
        return GetCommitsResponse(
            [c for c in commits if c.version >= start and (end is None or c.version <= end)],
            loaded.latest_table_version)

    def _mark_backfilled(self, table_id: str, first: int, last: int) -> None:
        """Unity Catalog hears one number, "published up to v", and forgets every commit up to it;
        pydelta's catalogs hear the range first..last. A commit below `first` the catalog still
        holds was not published as ratified (a different file took its place), so the number
        sent stops below it, and readers go on taking that commit from the catalog."""
        if self.staged or last < 1:
            return  # version 0 is published by creation: the catalog tracks commits from 1 on
        held_below = [c.version for c in self._unbackfilled(table_id, 0, first - 1).commits]
        upto = min(held_below) - 1 if held_below else last
        if upto < 1:
            return
        self._published = max(self._published, upto)
        try:
            self._update([{"action": "set-latest-backfilled-version", "latest-published-version": upto}])
        except CommitOwnerError as e:  # a later commit or reader tells it again
            logger.info("Unity Catalog did not take the published version %d of %s: %s", upto, self.table, e)

    def ratified_commits(self, table_id: str) -> list[Commit]:
        """Unity Catalog keeps only unpublished commits: those are what it can show."""
        return self._unbackfilled(table_id, 0, None).commits

    def permits(self, table_id: str, operation: str) -> bool:
        return False

    def _parts(self) -> tuple[str, str, str]:
        return self.table.catalog, self.table.schema, self.table.name

    def __repr__(self) -> str:
        return f"UnityCatalogCommitOwner({self.rest.uri}, {self.table}, {self.table_uuid})"


# Properties the catalog derives itself (UC OSS's delta.yaml: never written back by clients).
_CATALOG_DERIVED = ("delta.minReaderVersion", "delta.minWriterVersion", "delta.lastUpdateVersion",
                    "delta.lastCommitTimestamp", "delta.clusteringColumns", "delta.rowTracking.rowIdHighWaterMark")


def _derived_by_catalog(key: str) -> bool:
    return key in _CATALOG_DERIVED or key.startswith("delta.feature.")


_KEBAB = {"elementType": "element-type", "containsNull": "contains-null", "keyType": "key-type",
          "valueType": "value-type", "valueContainsNull": "value-contains-null"}


def uc_columns(schema: Any) -> Any:
    """A Delta schema (its JSON) as the Delta REST API's `columns`: the same tree with array and
    map keys in kebab-case."""
    if isinstance(schema, dict):
        return {_KEBAB.get(k, k): (v if k == "metadata" else uc_columns(v)) for k, v in schema.items()}
    if isinstance(schema, Sequence) and not isinstance(schema, str):
        return [uc_columns(v) for v in schema]
    return schema


def _commit(raw: dict[str, object]) -> Commit:
    return Commit(
        version=int(str(raw["version"])),
        file_name=str(raw["file-name"]),
        size=int(str(raw.get("file-size", 0))),
        modification_time=int(str(raw.get("file-modification-timestamp", 0))),
        commit_timestamp=int(str(raw.get("timestamp", 0))),
    )


# ---- bindings: which server holds the table with this uuid -----------------------------------
_BOUND: dict[str, UnityCatalogCommitOwner] = {}
_LOCK = threading.Lock()


def bind_table(rest: UnityCatalogRestClient, table: TableName, table_uuid: str, *,
               staged: bool = False) -> UnityCatalogCommitOwner:
    """Remember that the table `table_uuid` is `table` in the catalog `rest` serves (resolving
    its name again refreshes the binding in place)."""
    with _LOCK:
        owner = _BOUND.get(table_uuid)
        if owner is None:
            owner = _BOUND[table_uuid] = UnityCatalogCommitOwner(rest, table, table_uuid, staged=staged)
        else:
            owner.rest, owner.table, owner.staged = rest, table, staged
        return owner


def from_conf(conf: dict[str, str]) -> UnityCatalogCommitOwner:
    """The commit-owner registry's factory: the bound owner of the table `conf["tableId"]`."""
    table_uuid = conf.get("tableId", "")
    with _LOCK:
        owner = _BOUND.get(table_uuid)
    if owner is None:
        raise CatalogManagedTableError(
            f"this table is managed by Unity Catalog ({TABLE_ID_KEY}={table_uuid}): read and write it by its "
            "name (catalog.schema.table) through a session whose spark.sql.catalog.<catalog>.uri names the "
            "server, or pydelta.unity_catalog.UnityCatalog(uri).table(name); a path alone does not say which "
            "catalog holds it", frozenset({"catalogManaged"}))
    return owner
