"""Table names for Delta tables, through Spark's session catalog.

A name resolves through Spark's session catalog (in-memory, or the Hive metastore
when the session has Hive support), where pydelta registers Delta tables with
provider `delta` and their location. The Delta log stays the schema of record; the
catalog entry only maps a name to a location. For tables written before names were
registered, a name whose default managed location (under spark.sql.warehouse.dir)
holds a `_delta_log` also resolves.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.log.storage import to_local_path
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.conf import conf_value
from pydelta.spark.base.jplan import string_literal
from pydelta.spark.base.raw import raw_sql


@dataclass(frozen=True)
class CatalogEntry:
    """What Spark's catalog knows of a table."""

    name: str
    provider: str | None
    location: str | None
    managed: bool


def _jcatalog(spark: SparkSession) -> Any:
    return spark._jsparkSession.sessionState().catalog()


def name_parts(name: str) -> list[str]:
    """[table] or [database, table] of a session-catalog table name (`spark_catalog.` dropped);
    DeltaIllegalArgumentError for anything else."""
    if not isinstance(name, str) or not name.strip():
        raise DeltaIllegalArgumentError(f"invalid table name {name!r}")
    parts = [p.strip("`") for p in name.split(".")]
    if parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise DeltaIllegalArgumentError(f"invalid table name {name!r}")
    return parts


def _identifier(spark: SparkSession, name: str) -> Any:
    name_parts(name)
    if name.split(".")[0].strip("`").lower() == "spark_catalog":
        name = ".".join(name.split(".")[1:])
    try:
        return spark._jsparkSession.sessionState().sqlParser().parseTableIdentifier(name)
    except Exception:  # py4j ParseException
        raise DeltaIllegalArgumentError(f"invalid table name {name!r}") from None


def _quoted(spark: SparkSession, name: str) -> str:
    """`name` as a quoted identifier (`db`.`t`), checked by Spark's parser on a classic session."""
    from pydelta.spark.base.connect_session import is_connect

    if not is_connect(spark):
        return str(_identifier(spark, name).quotedString())
    return ".".join("`" + p.replace("`", "``") + "`" for p in name_parts(name))


def is_temp_view(spark: SparkSession, name: str) -> bool:
    return bool(_jcatalog(spark).isTempView(_identifier(spark, name)))


def table_metadata(spark: SparkSession, name: str) -> Any:
    """Spark's CatalogTable of `name` (a py4j object), or None when the catalog has no such table."""
    try:
        return _jcatalog(spark).getTableMetadata(_identifier(spark, name))
    except Exception as e:  # noqa: BLE001 - py4j's NoSuchTableException / NoSuchDatabaseException
        if "NoSuch" in str(e) or "NOT_FOUND" in str(e):
            return None
        raise


def alter_table_metadata(spark: SparkSession, metadata: Any) -> None:
    """Replace a catalog entry by `metadata` (a CatalogTable): its data and location stay as they are."""
    _jcatalog(spark).alterTable(metadata)


def _lookup_over_connect(spark: SparkSession, name: str) -> CatalogEntry | None:
    """`lookup` on a Spark Connect session, which has no catalog objects on the client."""
    found = connect_table_information(spark, name)
    return found[0] if found is not None else None


def connect_table_information(spark: SparkSession, name: str) -> tuple[CatalogEntry, dict[str, str]] | None:
    """On a Spark Connect session: the catalog entry of `name` and all of its lines as "Key: value"
    pairs (Owner, Storage Properties, ...), from the server's SHOW TABLE EXTENDED (a listing, so a
    missing table is no error and no table is resolved through its provider); None when the
    catalog has no such table."""
    parts = name_parts(name)
    if any(c in parts[-1] for c in "*|'\\"):  # LIKE pattern characters: not a name SHOW can look up
        raise DeltaIllegalArgumentError(f"invalid table name {name!r}")
    where = f" IN `{parts[0]}`" if len(parts) == 2 else ""
    try:
        rows = raw_sql(spark, f"SHOW TABLE EXTENDED{where} LIKE '{parts[-1]}'").collect()
    except Exception as e:  # noqa: BLE001 - Spark's AnalysisException for a missing database
        if "NOT_FOUND" in str(e) or "NoSuch" in str(e):
            return None
        raise
    rows = [r for r in rows if not r.isTemporary and r.tableName.lower() == parts[-1].lower()]
    if not rows:
        return None
    info = dict(line.split(": ", 1) for line in str(rows[0].information).splitlines() if ": " in line)
    location = info.get("Location")
    entry = CatalogEntry(f"{rows[0].namespace}.{rows[0].tableName}", info.get("Provider"),
                         to_local_path(location) if location else None, info.get("Type", "").upper() == "MANAGED")
    return entry, info


def lookup(spark: SparkSession, name: str) -> CatalogEntry | None:
    """The catalog entry of `name`, or None when the catalog has no such table."""
    from pydelta.spark.base.connect_session import is_connect

    if is_connect(spark):
        return _lookup_over_connect(spark, name)
    ident = _identifier(spark, name)
    catalog = _jcatalog(spark)
    try:
        meta = catalog.getTableMetadata(ident)  # one metastore round trip; missing tables raise
    except Exception as e:  # noqa: BLE001 - py4j's NoSuchTableException / NoSuchDatabaseException
        if "NoSuch" in str(e) or "NOT_FOUND" in str(e):
            return None
        raise
    provider = meta.provider().get() if meta.provider().isDefined() else None
    location = meta.storage().locationUri()
    loc = to_local_path(location.get().toString()) if location.isDefined() else None
    return CatalogEntry(meta.identifier().unquotedString(), provider, loc, meta.tableType().name() == "MANAGED")


def default_location(spark: SparkSession, name: str) -> str:
    """Where Spark puts a managed table of this name (warehouse/name, warehouse/db.db/name)."""
    from pydelta.spark.base.connect_session import is_connect

    if is_connect(spark):  # no catalog objects on a Connect client: Spark's layout from the server's warehouse
        parts = name_parts(name)
        warehouse = to_local_path(conf_value(spark, "spark.sql.warehouse.dir", "spark-warehouse"))
        if len(parts) == 2 and parts[0].lower() != "default":
            return os.path.join(warehouse, f"{parts[0].lower()}.db", parts[1].lower())
        return os.path.join(warehouse, parts[-1].lower())
    ident = _identifier(spark, name)
    try:
        return to_local_path(_jcatalog(spark).defaultTablePath(ident).toString())
    except Exception:  # the database does not exist: Spark's layout all the same
        warehouse = to_local_path(conf_value(spark, "spark.sql.warehouse.dir", "spark-warehouse"))
        db = ident.database()
        table = ident.table().lower()
        if db.isDefined() and db.get().lower() != "default":
            return os.path.join(warehouse, f"{db.get().lower()}.db", table)
        return os.path.join(warehouse, table)


def table_location(spark: SparkSession, name: str) -> str:
    """The location of table `name`: its catalog location, else its default managed location."""
    entry = lookup(spark, name)
    if entry is not None and entry.location:
        return entry.location
    return default_location(spark, name)


def delta_location(spark: SparkSession, name: str, entry: CatalogEntry | None) -> str | None:
    """Where the Delta table `name` lives, given its catalog entry (`lookup(spark, name)`).

    None when `name` is not a Delta table. A name that was never registered still is one
    when its default managed location holds a `_delta_log` (tables written before names
    were registered).
    """
    if entry is not None:
        if (entry.provider or "").lower() != "delta":
            return None
        return entry.location or default_location(spark, name)
    location = default_location(spark, name)
    return location if os.path.isdir(os.path.join(location, "_delta_log")) else None


def delta_table_location(spark: SparkSession, name: str) -> str | None:
    """The location of the Delta table `name` (one catalog round trip), or None when it is not one.
    A `catalog.schema.table` name of a Unity Catalog catalog (`spark.sql.catalog.<catalog>.uri`)
    resolves through that server."""
    from pydelta.spark.base.unity_catalogs import unity_catalog_of, unity_table

    unity = unity_catalog_of(spark, name)
    if unity is not None:
        table = unity_table(unity, [p.strip("`") for p in name.split(".")])
        return table.location if table is not None else None
    try:
        return delta_location(spark, name, lookup(spark, name))
    except DeltaIllegalArgumentError:
        return None


def is_delta_name(spark: SparkSession, name: str) -> bool:
    """True when `name` is a Delta table: registered with provider delta, or a Delta directory."""
    return delta_table_location(spark, name) is not None


def register_table(spark: SparkSession, name: str, location: str, schema: Any, comment: str | None = None) -> bool:
    """Record `name` -> `location` in Spark's catalog as a table of provider delta.

    `schema` is the table's Spark StructType (the catalog's copy is informational:
    the Delta log stays the schema of record). A table at its default managed
    location is registered as managed (DROP TABLE removes its data, as in Spark)
    when that directory does not exist yet, so callers register before the first
    commit; any other table is registered as external. Returns True when a new
    entry was made (the caller drops it again if its commit fails). The session must already
    serve the `delta` source: every entrance (enable(), the spark.sql and writer patches, the
    streaming sink) registers it (`datasource.register`) before anything reaches here.
    """
    entry = lookup(spark, name)
    if entry is not None:
        if (entry.provider or "").lower() != "delta":
            from pydelta.errors import TableAlreadyExistsError

            raise TableAlreadyExistsError(f"table {name} already exists and is not a Delta table")
        return False
    ident = _quoted(spark, name)
    location = to_local_path(location)
    managed = (os.path.normpath(location) == os.path.normpath(default_location(spark, name))
               and not os.path.exists(location))
    sql = f"CREATE TABLE {ident} ({schema.toDDL()}) USING delta"
    if not managed:
        sql += f" LOCATION {string_literal(location)}"
    if comment:
        sql += f" COMMENT {string_literal(comment)}"
    raw_sql(spark, sql)
    return True


@contextmanager
def registered_while_created(spark: SparkSession, name: str | None, location: str, schema: Any,
                             comment: str | None = None) -> Iterator[None]:
    """`name` (if any) entered in the catalog before the table at `location` is first committed,
    and dropped again if that fails. Registered first, a new table at its default location is
    managed (DROP TABLE removes its data), as delta-spark's CREATE TABLE and CLONE make it."""
    registered = name is not None and register_table(spark, name, location, schema, comment)
    try:
        yield
    except BaseException:
        if registered and name is not None:
            unregister_table(spark, name)
        raise


def unregister_table(spark: SparkSession, name: str) -> None:
    """Drop the catalog entry made by register_table (a managed table's empty directory goes too)."""
    raw_sql(spark, f"DROP TABLE IF EXISTS {_quoted(spark, name)}")
