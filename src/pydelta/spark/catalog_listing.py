"""spark.catalog.listTables / getTable with the right type and comment for Delta tables.

Spark lists a Delta table through the "delta" anchor data source as a V2 table, which
loses two facts the catalog entry has: whether the table is EXTERNAL, and its comment.
pydelta corrects both from the catalog entry and the Delta log.
"""

from __future__ import annotations

from typing import Any
from pydelta.spark._typing import SparkSession


def _corrected(spark: SparkSession, table: Any) -> Any:
    if table.isTemporary or table.tableType not in ("MANAGED", "EXTERNAL"):
        return table
    from pydelta.spark.catalog import lookup

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
        try:
            from pydelta.log.snapshot import load_snapshot

            description = load_snapshot(entry.location).metadata.description
        except Exception:  # noqa: BLE001
            pass
    return table._replace(tableType="MANAGED" if entry.managed else "EXTERNAL", description=description)


def install() -> None:
    """Patch pyspark's Catalog once per process."""
    from pyspark.sql.catalog import Catalog

    if getattr(Catalog, "_pydelta_hooked", False):
        return
    list_tables, get_table = Catalog.listTables, Catalog.getTable

    def listTables(self: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return [_corrected(self._sparkSession, t) for t in list_tables(self, *args, **kwargs)]

    def getTable(self: Any, tableName: str) -> Any:
        return _corrected(self._sparkSession, get_table(self, tableName))

    setattr(Catalog, "listTables", listTables)  # patched on purpose: pydelta's view of Delta tables
    setattr(Catalog, "getTable", getTable)
    setattr(Catalog, "_pydelta_hooked", True)
