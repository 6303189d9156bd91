"""What pydelta's catalogs permit on the catalog-managed tables they manage.

PROTOCOL.md forbids metadata cleanup, VACUUM, OPTIMIZE and REORG on a catalog-managed table
unless its catalog explicitly permits them. pydelta's SQLite and PostgreSQL catalogs keep
those permissions per table; an administrator grants them here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.log.commit_owners.registry import client_of, owner_spec

if TYPE_CHECKING:
    from pydelta.log.snapshot import Snapshot

# The maintenance operations PROTOCOL.md leaves to a catalog-managed table's catalog, and their names.
OPERATIONS = {"metadataCleanup": "metadata cleanup", "vacuum": "VACUUM", "optimize": "OPTIMIZE", "reorg": "REORG"}


def maintenance_permitted(snapshot: Snapshot, operation: str) -> bool:
    """Whether `operation` (one of OPERATIONS) may run on the table: always on other tables; on a
    catalog-managed one only where its catalog permits it."""
    spec = owner_spec(snapshot.metadata, snapshot.protocol)
    if spec is None or not spec.catalog_managed:
        return True
    return client_of(spec).permits(snapshot.metadata.id, operation)


def grant_maintenance(path: str, operation: str, allowed: bool = True,
                      storage_options: Mapping[str, str] | None = None) -> None:
    """Permit (allowed=False: forbid again) `operation` on the catalog-managed table at `path`."""
    if operation not in OPERATIONS:
        raise DeltaIllegalArgumentError(f"unknown maintenance operation {operation!r}; one of {', '.join(OPERATIONS)}")
    from pydelta.log.snapshot import load_snapshot

    snapshot = load_snapshot(path, storage_options=storage_options)
    spec = owner_spec(snapshot.metadata, snapshot.protocol)
    if spec is None or not spec.catalog_managed:
        raise DeltaIllegalArgumentError(
            f"{path} is not a catalog-managed table: every maintenance operation is allowed")
    client = client_of(spec)
    grant = getattr(client, "grant", None)
    if grant is None:
        raise DeltaIllegalArgumentError(f"the {spec.name} catalog keeps no maintenance permissions")
    grant(snapshot.metadata.id, operation, allowed)
