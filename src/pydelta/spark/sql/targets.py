"""Deciding whether a table a statement names is a Delta table, and where it lives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from pydelta.log.storage import to_local_path
from pydelta.spark.base import catalog
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.unity_catalogs import unity_catalog, unity_table


@dataclass(frozen=True)
class DeltaTarget:
    """A Delta table named by a statement: its location and, for catalog tables, its name."""

    path: str
    name: str | None = None  # None for delta.`/path`

    def display(self) -> str:
        return self.name if self.name is not None else f"delta.`{self.path}`"


# One statement's lookups: a name's lowercased parts -> its Delta table (None: not a Delta table).
TargetCache: TypeAlias = dict[tuple[str, ...], DeltaTarget | None]


def looks_like_path(text: str) -> bool:
    return text.startswith("/") or "://" in text or text.startswith("file:")


def quote_parts(parts: list[str] | tuple[str, ...]) -> str:
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def path_parts(parts: list[str] | tuple[str, ...]) -> str | None:
    """The path of a `delta.`/path`` identifier, else None."""
    if len(parts) == 2 and parts[0].lower() == "delta" and looks_like_path(parts[1]):
        return to_local_path(parts[1])
    return None


def _is_temp_view(spark: SparkSession, parts: list[str] | tuple[str, ...]) -> bool:
    if len(parts) != 1:
        return False
    from pydelta.spark.base.connect_session import is_connect

    if is_connect(spark):  # no parser on the client: the catalog says whether the name is a temp view
        try:
            return bool(spark.catalog.getTable(quote_parts(parts)).isTemporary)
        except Exception:  # noqa: BLE001 - no such table or view
            return False
    return bool(spark._jsparkSession.sessionState().catalog().isTempView(
        spark._jsparkSession.sessionState().sqlParser().parseMultipartIdentifier(quote_parts(parts))))


def resolve(spark: SparkSession, parts: list[str] | tuple[str, ...],
            cache: TargetCache | None = None) -> DeltaTarget | None:
    """The Delta table `parts` names, or None when it names something else (or nothing).

    `cache` (one per statement) saves repeated catalog round trips for the same name.
    """
    if cache is not None:
        key = tuple(p.lower() for p in parts)
        if key not in cache:
            cache[key] = resolve(spark, parts)
        return cache[key]
    path = path_parts(parts)
    if path is not None:
        return DeltaTarget(path)
    unity = unity_catalog(spark, parts[0]) if len(parts) == 3 else None
    if unity is not None:
        table = unity_table(unity, parts)
        if table is None:  # Spark has no plugin for this catalog: the answer is ours to give
            from pydelta.errors import DeltaTableNotFoundError

            raise DeltaTableNotFoundError(
                f"[TABLE_OR_VIEW_NOT_FOUND] The table or view {quote_parts(parts)} cannot be found in the Unity "
                f"Catalog catalog {parts[0]} (spark.sql.catalog.{parts[0]}.uri).")
        return DeltaTarget(table.location, ".".join(parts))
    if not parts or len(parts) > 3 or (len(parts) == 3 and parts[0].lower() != "spark_catalog"):
        return None
    if _is_temp_view(spark, parts):
        return None
    name = quote_parts(parts[1:] if len(parts) == 3 else parts)
    location = catalog.delta_table_location(spark, name)
    return DeltaTarget(location, name) if location is not None else None


def target_for_create(spark: SparkSession, parts: list[str] | tuple[str, ...]) -> DeltaTarget:
    """Where a new table of this name goes: its catalog or default managed location."""
    path = path_parts(parts)
    if path is not None:
        return DeltaTarget(path)
    unity = unity_catalog(spark, parts[0]) if len(parts) == 3 else None
    if unity is not None:
        # The catalog decides where a new table goes (its staging table); an existing one is where it is.
        existing = unity_table(unity, parts)
        return DeltaTarget(existing.location if existing is not None else "", ".".join(parts))
    name = quote_parts(parts[1:] if len(parts) == 3 and parts[0].lower() == "spark_catalog" else parts)
    return DeltaTarget(catalog.table_location(spark, name), name)
