"""Moving a table under one of pydelta's catalogs (PROTOCOL.md's catalog-managed tables).

PROTOCOL.md says nothing about converting an existing table, and delta-spark refuses to; for
pydelta it is two ordinary commits. A seed-001 managed-commit table first returns to the file
system (its owner publishes everything and ratifies the conversion as its last commit); then
one file-system commit, accepted by the catalog beforehand (the `to_managed` route), adds the
`catalogManaged` feature and names the catalog. From the next version on, every commit is
staged in `_delta_log/_staged_commits/` and ratified by the catalog.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.log.commit_owners.base import COMMIT_OWNER_CONF_KEY, COMMIT_OWNER_KEY
from pydelta.log.commit_owners.registry import CATALOG_CONF_KEY, CATALOG_KEY, owner_spec
from pydelta.log.snapshot import load_snapshot
from pydelta.txn.commit_info import Operation
from pydelta.txn.transaction import OptimisticTransaction

if TYPE_CHECKING:
    from pydelta.log.snapshot import Snapshot


def migrate_to_catalog(path: str, catalog: str, catalog_conf: Mapping[str, str] | None = None,
                       storage_options: Mapping[str, str] | None = None) -> int:
    """Make the table at `path` catalog-managed by pydelta's `catalog` (sqlite, postgres, or a
    registered one) with `catalog_conf`; returns the version of the upgrading commit."""
    snapshot = load_snapshot(path, storage_options=storage_options)
    spec = owner_spec(snapshot.metadata, snapshot.protocol)
    if spec is not None and spec.catalog_managed:
        raise DeltaIllegalArgumentError(f"{path} is catalog-managed already (by {spec.name})")
    if spec is not None:  # a managed-commit table: back to the file system first
        conf = {k: v for k, v in snapshot.metadata.configuration.items()
                if k not in (COMMIT_OWNER_KEY, COMMIT_OWNER_CONF_KEY)}
        _set_properties(path, snapshot, conf, {})
        snapshot = load_snapshot(path, storage_options=storage_options)
    added = {"delta.feature.catalogManaged": "supported", CATALOG_KEY: catalog,
             CATALOG_CONF_KEY: json.dumps(dict(catalog_conf or {}), sort_keys=True)}
    return _set_properties(path, snapshot, {**snapshot.metadata.configuration, **added}, added)


def _set_properties(path: str, snapshot: Snapshot, configuration: dict[str, str], changed: dict[str, str]) -> int:
    txn = OptimisticTransaction(path, snapshot, storage=snapshot.storage)
    txn.update_metadata(replace(snapshot.metadata, configuration=configuration))
    return txn.commit([], Operation.set_table_properties(changed))
