"""What a transaction checks on the changes it stages, before anything touches the table.

Metadata (schema, partition columns, checkpoint interval, identity columns, row tracking),
the managed-commit and catalog-managed gates on metadata and protocol, and the file actions
of a commit (paths, partition values, duplicates, appendOnly, deletion vectors).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydelta.errors import (
    CatalogManagedTableError,
    DeltaAnalysisError,
    DeltaIllegalArgumentError,
    DeltaProtocolError,
    InvalidTableError,
)
from pydelta.log.commit_owners.base import COMMIT_OWNER_CONF_KEY, COMMIT_OWNER_KEY
from pydelta.log.commit_owners.base import FEATURE as MANAGED_COMMIT
from pydelta.log.commit_owners.registry import CATALOG_CONF_KEY, CATALOG_KEY
from pydelta.log.commit_owners.unity_catalog import TABLE_ID_KEY as UC_TABLE_ID_KEY
from pydelta.protocol import properties as P
from pydelta.protocol.action_types import Action, kind_and_body
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.protocol.deletion_vectors import dv_unique_id
from pydelta.protocol.features import CATALOG_MANAGED_FEATURES
from pydelta.txn import protocol_upgrade as pu
from pydelta.txn import row_tracking
from pydelta.txn.commit_info import ICT_ENABLED, ICT_TIMESTAMP, ICT_VERSION

__all__ = [
    "physical_partition_columns",
    "refuse_catalog_managed",
    "replacing_metadata",
    "require_maintenance_permitted",
    "validate_file_actions",
    "validate_metadata",
    "with_managed_commit_requirements",
    "without_managed_commit",
]


def refuse_catalog_managed(protocol: Protocol, metadata: Metadata | None) -> None:
    """A catalog-managed table accepts commits only through its catalog: pydelta's own catalogs
    (`io.pydelta.catalog`) for the `catalogManaged` feature; never the preview spelling."""
    found = CATALOG_MANAGED_FEATURES & (
        (protocol.writer_features or frozenset()) | (protocol.reader_features or frozenset())
    )
    if not found or (found == {"catalogManaged"} and metadata is not None
                     and {CATALOG_KEY, UC_TABLE_ID_KEY} & metadata.configuration.keys()):
        return
    names = ", ".join(sorted(found))
    raise CatalogManagedTableError(
        f"cannot write to a table with the {names} table feature: its commits must go through the catalog "
        f"that manages it, and pydelta has a committer only for its own catalogs ({CATALOG_KEY}); "
        "write it through its catalog's engine",
        found,
    )


def require_maintenance_permitted(snapshot: Any, operation: str) -> None:
    """CatalogManagedOperationBlockedError unless `operation` may run on the table."""
    from pydelta.errors import CatalogManagedOperationBlockedError
    from pydelta.log.catalog_maintenance import OPERATIONS, maintenance_permitted

    if not maintenance_permitted(snapshot, operation):
        raise CatalogManagedOperationBlockedError(
            f"[DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION] {OPERATIONS[operation]} is blocked by "
            f"the catalog for catalog-managed table {snapshot.table_root}: PROTOCOL.md allows it only where the "
            "managing catalog permits it (pydelta's catalogs: grant it with "
            "pydelta.log.catalog_maintenance.grant_maintenance)")


def with_managed_commit_requirements(metadata: Metadata) -> Metadata:
    """Enabling managed commits (seed 001) or a catalog (catalogManaged: pydelta's, Unity Catalog)
    enables in-commit timestamps: both require them of every writer."""
    conf = metadata.configuration
    key, conf_key = ((CATALOG_KEY, CATALOG_CONF_KEY) if CATALOG_KEY in conf
                     else (UC_TABLE_ID_KEY, None) if UC_TABLE_ID_KEY in conf
                     else (COMMIT_OWNER_KEY, COMMIT_OWNER_CONF_KEY))
    if key not in conf:
        for orphan_conf, owner_key in ((COMMIT_OWNER_CONF_KEY, COMMIT_OWNER_KEY), (CATALOG_CONF_KEY, CATALOG_KEY)):
            if orphan_conf in conf:
                raise InvalidTableError(f"{orphan_conf} is set without {owner_key}")
        return metadata
    from pydelta.log.commit_owners.base import parse_owner_conf

    if conf_key is not None:
        parse_owner_conf(conf.get(conf_key), conf_key)
    raw = conf.get(ICT_ENABLED)
    if raw is not None and str(raw).strip().lower() != "true":
        raise InvalidTableError(
            f"{'managed commits' if key == COMMIT_OWNER_KEY else 'catalog-managed tables'} ({key}) require in-commit "
            f"timestamps, but {ICT_ENABLED}={raw!r}"
        )
    if raw is None:
        return replace(metadata, configuration={**conf, ICT_ENABLED: "true"})
    return metadata


# What a REPLACE keeps of a table owned by a catalog or commit owner (delta-spark 4.4 keeps the same:
# updateMetadataForNewTableInReplace): the catalog that holds it, always; and, unless the new
# definition sets them, its commit owner, the in-commit timestamps the owner requires and what
# Unity Catalog required at creation.
_CATALOG_KEYS = (CATALOG_KEY, CATALOG_CONF_KEY, UC_TABLE_ID_KEY)
_KEPT_UNLESS_GIVEN = (COMMIT_OWNER_KEY, COMMIT_OWNER_CONF_KEY, ICT_ENABLED, ICT_VERSION, ICT_TIMESTAMP,
                      "delta.checkpointPolicy", "delta.checkpoint.writeStatsAsStruct",
                      "delta.checkpoint.writeStatsAsJson")


def replacing_metadata(previous: Metadata, new: Metadata) -> Metadata:
    """The metadata a REPLACE TABLE commits over `previous`: `new` as given, except that a table of
    a catalog or commit owner keeps its Delta table id (the owner knows the table by it) and the
    properties that bind it to its owner; a file-system table takes `new` whole."""
    conf = previous.configuration
    if not {CATALOG_KEY, UC_TABLE_ID_KEY, COMMIT_OWNER_KEY} & conf.keys():
        return new
    kept = {k: conf[k] for k in _KEPT_UNLESS_GIVEN if k in conf and k not in new.configuration}
    kept.update({k: conf[k] for k in _CATALOG_KEYS if k in conf})
    return replace(new, id=previous.id, configuration={**new.configuration, **kept})


def without_managed_commit(protocol: Protocol) -> Protocol:
    """`protocol` minus the managedCommit writer feature (the one feature a commit may drop)."""
    features = protocol.writer_features
    if not features or MANAGED_COMMIT not in features:
        return protocol
    return replace(protocol, writer_features=frozenset(features - {MANAGED_COMMIT}))


def validate_metadata(metadata: Metadata) -> None:
    """Schema parses, partition columns exist once, checkpoint interval is sane, identity columns valid."""
    schema = metadata.schema  # raises InvalidTableError on a bad schema string
    names = {f.name.lower() for f in schema.fields}
    seen: set[str] = set()
    for column in metadata.partition_columns:
        if column.lower() not in names:
            raise InvalidTableError(f"Partition column `{column}` not found in schema {schema.field_names}")
        if column.lower() in seen:
            raise InvalidTableError(f"Found duplicate partition column `{column}`")
        seen.add(column.lower())
    raw = metadata.configuration.get("delta.checkpointInterval")
    if raw is not None:
        try:
            ok = int(raw) > 0
        except ValueError:
            ok = False
        if not ok:
            raise InvalidTableError(f"delta.checkpointInterval needs to be a positive integer, got {raw!r}")
    from pydelta.protocol import identity

    identity.validate(schema, metadata.partition_columns)
    row_tracking.validate_configuration(metadata.configuration)


def validate_file_actions(
    file_actions: Sequence[Action],
    metadata: Metadata,
    protocol: Protocol,
    table_root: str,
    read_metadata: Metadata | None,
) -> dict[str, Mapping[str, Any] | None]:
    """Duplicate paths, partition values, appendOnly, DV support. Returns removed canonical paths.

    `read_metadata` is the read snapshot's (None for a new table): appendOnly is its setting.
    """
    from pydelta.log.replay import canonical_path

    expected_keys = physical_partition_columns(metadata)
    features = pu.all_features(protocol)
    adds: dict[str, str] = {}
    removes: dict[str, str] = {}
    removed: dict[str, Mapping[str, Any] | None] = {}
    for action in file_actions:
        kind, body = kind_and_body(action)
        path = body.get("path")
        if not isinstance(path, str) or not path:
            raise DeltaIllegalArgumentError(f"{kind} action without a path: {body!r:.200}")
        if kind == "cdc":
            continue
        key = canonical_path(path, table_root) + "\x00" + dv_unique_id(body.get("deletionVector"))
        if kind == "add":
            missing = [k for k in ("partitionValues", "size", "modificationTime", "dataChange") if k not in body]
            if missing:
                raise DeltaIllegalArgumentError(f"add action for {path} is missing {', '.join(missing)}")
            _check_duplicate("add", key, path, adds, removes)
            values = body.get("partitionValues") or {}
            if set(values) != expected_keys:
                raise InvalidTableError(
                    f"The AddFile for {path} contains partitioning schema different from the table's "
                    f"partitioning schema: expected partition values for {sorted(expected_keys)}, "
                    f"got {sorted(values)}"
                )
            if body.get("deletionVector") and "deletionVectors" not in features:
                raise DeltaProtocolError(
                    f"AddFile {path} has a deletion vector but the table protocol does not support "
                    "the deletionVectors feature"
                )
        else:
            if "dataChange" not in body:
                raise DeltaIllegalArgumentError(f"remove action for {path} is missing dataChange")
            _check_duplicate("remove", key, path, removes, adds)
            removed[canonical_path(path, table_root)] = body.get("partitionValues")
    if (read_metadata is not None and P.flag(read_metadata.configuration, "delta.appendOnly")
            and any("remove" in a and a["remove"].get("dataChange", True) for a in file_actions)):
        raise DeltaAnalysisError(
            "This table is configured to only allow appends. If you would like to permit updates "
            "or deletes, use 'ALTER TABLE <table_name> SET TBLPROPERTIES (delta.appendOnly=false)'."
        )
    return removed


def _check_duplicate(kind: str, key: str, path: str, same: dict[str, str], other: dict[str, str]) -> None:
    """delta-spark's DELTA_DUPLICATE_ACTIONS_FOUND: one path (+DV) at most once per commit."""
    conflict = same.get(key) if key in same else other.get(key)
    if conflict is None:
        same[key] = path
        return
    raise DeltaIllegalArgumentError(
        f"File operation '{kind if key in same else 'add/remove'}' for path {path} was specified several times. "
        f"It conflicts with {conflict}. It is not valid for multiple file operations with the same path to exist "
        "in a single commit."
    )


def physical_partition_columns(metadata: Metadata) -> set[str]:
    """Keys an add's partitionValues must have: physical names under column mapping."""
    from pydelta.protocol.schema import column_mapping_mode, physical_name

    mode = column_mapping_mode(metadata.configuration)
    if mode == "none":
        return set(metadata.partition_columns)
    schema = metadata.schema
    return {physical_name(schema.field(c, case_sensitive=False)) for c in metadata.partition_columns}
