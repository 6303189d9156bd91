"""spark.catalog.listTables / getTable with the right type and comment for Delta tables.

Spark lists a Delta table through the "delta" anchor data source as a V2 table, which
loses two facts the catalog entry has: whether the table is EXTERNAL, and its comment.
pydelta corrects both from the catalog entry and the Delta log.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.engine import table_snapshot


def _corrected(spark: SparkSession, table: Any) -> Any:
    if table.isTemporary or table.tableType not in ("MANAGED", "EXTERNAL"):
        return table
    from pydelta.spark.base.catalog import lookup

    parts = [*(table.namespace or []), table.name]
    name = ".".join("`" + p.replace("`", "``") + "`" for p in parts)
    try:
        entry = lookup(spark, name)
    except Exception:  # noqa: BLE001 - listing must never fail over a correction
        return table
    if entry is None or (entry.provider or "").lower() != "delta":
        return table
    description = table.description
    if description is None and entry.location:
        with contextlib.suppress(Exception):  # as above: listing must never fail over a correction
            description = table_snapshot(spark, entry.location).metadata.description
    return table._replace(tableType="MANAGED" if entry.managed else "EXTERNAL", description=description)


def install() -> None:
    """Patch pyspark's Catalog, classic and Spark Connect's, once per process."""
    from pyspark.sql.catalog import Catalog

    from pydelta.spark.base.connect_session import connect_classes

    classes: list[type] = [Catalog]
    if connect_classes() is not None:  # Connect's client loads here
        from pyspark.sql.connect.catalog import Catalog as ConnectCatalog

        classes.append(ConnectCatalog)
    for catalog_class in classes:
        _patch(catalog_class)


def _patch(catalog_class: type) -> None:
    if catalog_class.__dict__.get("_pydelta_hooked", False):
        return
    list_tables, get_table = catalog_class.listTables, catalog_class.getTable  # type: ignore[attr-defined]

    def listTables(self: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return [_corrected(self._sparkSession, t) for t in list_tables(self, *args, **kwargs)]

    def getTable(self: Any, tableName: str) -> Any:
        return _corrected(self._sparkSession, get_table(self, tableName))

    listTables.__doc__, getTable.__doc__ = list_tables.__doc__, get_table.__doc__
    # Patched on purpose: pydelta's view of Delta tables (setattr: mypy knows no such attributes on `type`).
    setattr(catalog_class, "listTables", listTables)  # noqa: B010 - see above
    setattr(catalog_class, "getTable", getTable)  # noqa: B010 - see above
    setattr(catalog_class, "_pydelta_hooked", True)  # noqa: B010 - the marker checked above
