"""Unity Catalog tables by name: resolve `catalog.schema.table` to its location (binding the table
to the server, see `log.commit_owners.unity_catalog`), create a managed table through a staging
table, drop one.

Creation follows the Delta REST API: reserve a staging table (the catalog assigns its uuid and
location and says which protocol features and properties the table must have), write version 0
into `_delta_log/` directly (it is a file-system commit, as delta-kernel-rs writes it), then
`createTable` turns the reservation into the table. Nothing is in the catalog until that last
call, so a failed creation leaves at most an unreferenced directory under the staging location.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.log.commit_owners.unity_catalog import (
    TABLE_ID_KEY,
    TableName,
    UnityCatalogCommitOwner,
    bind_table,
    uc_columns,
)
from pydelta.log.commit_owners.unity_catalog_rest import StagingTable, UnityCatalogRestClient
from pydelta.log.storage import to_local_path
from pydelta.protocol.actions import Metadata

# What UC OSS requires beyond the catalog's staging answer (olai-uc-server asks for less):
# deletion vectors on, as UC OSS's contract and delta-kernel-rs's create path have it.
PORTABLE_PROPERTIES = {"delta.enableDeletionVectors": "true"}


@dataclass(frozen=True)
class UnityCatalogTable:
    """A Unity Catalog table as this process reaches it: name, location (a local path for
    `file:` locations) and uuid; its commits go through `owner`."""

    name: TableName
    location: str
    table_id: str
    owner: UnityCatalogCommitOwner


def parse_name(full_name: str) -> TableName:
    """`catalog.schema.table` (each part optionally in backquotes) as its three parts."""
    parts = [p.strip().strip("`") for p in _split(full_name)]
    if len(parts) != 3 or not all(parts):
        raise DeltaIllegalArgumentError(
            f"a Unity Catalog table name has three parts (catalog.schema.table), got {full_name!r}")
    return TableName(parts[0], parts[1], parts[2])


def _split(name: str) -> list[str]:
    out, part, quoted = [], "", False
    for ch in name:
        if ch == "`":
            quoted = not quoted
        elif ch == "." and not quoted:
            out.append(part)
            part = ""
            continue
        part += ch
    out.append(part)
    return out


class UnityCatalog:
    """A Unity Catalog server (`uri`, bearer `token`: default the UC_TOKEN environment variable)."""

    def __init__(self, uri: str, token: str | None = None, *, rest: UnityCatalogRestClient | None = None) -> None:
        self.rest = rest or UnityCatalogRestClient(uri, token)

    def __repr__(self) -> str:
        return f"UnityCatalog({self.rest.uri!r})"

    def table(self, full_name: str) -> UnityCatalogTable:
        """The table `full_name`, bound so that its path loads and commits through this catalog."""
        name = parse_name(full_name)
        loaded = self.rest.load_table(name.catalog, name.schema, name.name)
        table_id = loaded.properties.get(TABLE_ID_KEY) or loaded.table_id
        owner = bind_table(self.rest, name, table_id)
        return UnityCatalogTable(name, to_local_path(loaded.location), table_id, owner)

    def exists(self, full_name: str) -> bool:
        from pydelta.errors import DeltaTableNotFoundError

        try:
            self.table(full_name)
        except DeltaTableNotFoundError:
            return False
        return True

    def create_table(
        self,
        full_name: str,
        metadata: Metadata | None = None,
        *,
        write: Callable[[str, dict[str, str]], object] | None = None,
        comment: str | None = None,
        engine_info: str | None = None,
    ) -> UnityCatalogTable:
        """Create the managed table `full_name`.

        Version 0 is a CREATE TABLE commit of `metadata` (schema, partitioning, properties) plus
        the properties and features the catalog requires; or, with `write`, whatever
        `write(location, required_properties)` commits there (the Spark layer's CREATE TABLE,
        CTAS and saveAsTable), which must include those properties.
        """
        from pydelta.log.snapshot import load_snapshot

        if (metadata is None) == (write is None):
            raise DeltaIllegalArgumentError("create_table needs either metadata or write, not both")
        name = parse_name(full_name)
        staging = self.rest.create_staging_table(name.catalog, name.schema, name.name)
        owner = bind_table(self.rest, name, staging.table_id, staged=True)
        location = to_local_path(staging.location)
        required = required_properties(staging)
        if "://" not in location:
            os.makedirs(location, exist_ok=True)
        if write is not None:
            write(location, required)
        else:
            assert metadata is not None
            _commit_create(location, replace(metadata, configuration={**metadata.configuration, **required}),
                           engine_info)
        snapshot = load_snapshot(location, version=0)
        self.rest.create_table(name.catalog, name.schema, _create_request(name, staging.location, snapshot, comment))
        owner.staged = False
        return UnityCatalogTable(name, location, staging.table_id, owner)

    def drop_table(self, full_name: str) -> None:
        """Remove `full_name` from the catalog (the catalog owns a managed table's files)."""
        name = parse_name(full_name)
        self.rest.delete_table(name.catalog, name.schema, name.name)


def _commit_create(location: str, metadata: Metadata, engine_info: str | None) -> None:
    from pydelta.txn.transaction import Operation, OptimisticTransaction

    txn = OptimisticTransaction(location, None, engine_info=engine_info)
    txn.update_metadata(metadata)
    txn.commit([], Operation.create_table(metadata))


def required_properties(staging: StagingTable) -> dict[str, str]:
    """The table properties a new table of the staging reservation must have: the catalog's, its
    protocol features (as `delta.feature.*`), and deletion vectors as UC OSS requires them."""
    out = dict(PORTABLE_PROPERTIES)
    out.update(staging.required_properties)
    protocol = staging.required_protocol
    for feature in [*(protocol.get("reader-features") or []), *(protocol.get("writer-features") or [])]:
        out[f"delta.feature.{feature}"] = "supported"
    out[TABLE_ID_KEY] = staging.table_id
    return out


def _create_request(name: TableName, location: str, snapshot: Any, comment: str | None) -> dict[str, Any]:
    protocol = snapshot.protocol
    schema = json.loads(snapshot.metadata.schema_string)
    request: dict[str, Any] = {
        "name": name.name,
        "location": location,
        "table-type": "MANAGED",
        "data-source-format": "DELTA",
        "columns": uc_columns(schema),
        "partition-columns": list(snapshot.metadata.partition_columns),
        "protocol": {
            "min-reader-version": protocol.min_reader_version,
            "min-writer-version": protocol.min_writer_version,
            "reader-features": sorted(protocol.reader_features or ()),
            "writer-features": sorted(protocol.writer_features or ()),
        },
        "properties": dict(snapshot.metadata.configuration),
        "last-commit-timestamp-ms": int(snapshot.timestamp),
    }
    if comment:
        request["comment"] = comment
    return request
