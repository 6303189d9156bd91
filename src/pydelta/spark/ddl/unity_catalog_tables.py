"""Creating tables named in a Unity Catalog catalog of the session (`catalog.schema.table` where
`spark.sql.catalog.<catalog>.uri` names the server): CREATE TABLE, CTAS, saveAsTable and the
DeltaTable builder all create a managed table through the catalog's staging table
(`txn.unity_catalog.UnityCatalog.create_table`), writing version 0 as they write any table's.
"""

from __future__ import annotations

from collections.abc import Callable

from pydelta.errors import DeltaAnalysisError, TableAlreadyExistsError
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.unity_catalogs import unity_table
from pydelta.txn.unity_catalog import UnityCatalog


def create_in_unity_catalog(
    spark: SparkSession, catalog: UnityCatalog, name: str, kind: str, location: str | None,
    write: Callable[[str, dict[str, str]], object], comment: str | None = None,
) -> tuple[str, bool]:
    """Create (or replace) `name` as `kind` says ("create", "createIfNotExists", "createOrReplace",
    "replace"): `write(location, required_properties)` creates the table at a new staging
    location, or replaces the existing one at its location (no properties required: it keeps its
    own). Returns the table's location and whether anything was written (False: an existing
    table kept by createIfNotExists)."""
    if location is not None:
        raise DeltaAnalysisError(
            f"a Unity Catalog managed table ({name}) lives where its catalog puts it: LOCATION is not allowed")
    parts = [p.strip("`") for p in name.split(".")]
    existing = unity_table(catalog, parts)
    if existing is not None:
        if kind == "createIfNotExists":
            return existing.location, False
        if kind == "create":
            raise TableAlreadyExistsError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] Table {name} already exists")
        # REPLACE: a new definition committed to the same table, which keeps its id and the
        # properties that bind it to the catalog (txn.commit_checks.replacing_metadata).
        write(existing.location, {})
        return existing.location, True
    if kind == "replace":
        from pydelta.errors import DeltaTableNotFoundError

        raise DeltaTableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] Table {name} cannot be replaced as it does not exist")
    return catalog.create_table(name, write=write, comment=comment).location, True
