"""DESCRIBE, SHOW TBLPROPERTIES, SHOW COLUMNS and SHOW CREATE TABLE on Delta tables.

delta-spark answers these through Spark's v2 commands (DescribeTableExec,
DescribeColumnExec, ShowTablePropertiesExec, ShowCreateTableExec) over what its
DeltaTableV2 reports: the schema, partitioning, description and configuration of
the Delta log (never the catalog's copy), the protocol as `delta.minReaderVersion`,
`delta.minWriterVersion` and `delta.feature.<name>` properties, and the catalog's
location, table type, owner and storage options. This module builds the same
rows. Spark's JVM formats the data types, so they read exactly as Spark prints them.
As in delta-spark 4.4, a managed table reports `is_managed_location` = true (a row of
DESCRIBE EXTENDED; SHOW CREATE TABLE then leaves LOCATION out).

delta-spark refuses SHOW CREATE TABLE on Delta tables; pydelta answers it in the
format of Spark's ShowCreateTableExec, with generated columns added, so that the
statement recreates the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydelta.errors import DeltaAnalysisError
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.column_names import quote_if_needed
from pydelta.protocol.schema import CURRENT_DEFAULT_KEY
from pydelta.spark.base import jplan
from pydelta.spark.base._typing import JavaObject, SparkSession
from pydelta.spark.base.conf import conf_bool, session_time_zone
from pydelta.spark.base.engine import table_snapshot
from pydelta.spark.base.jplan import NOT_DELTA
from pydelta.spark.base.jvm import jvm
from pydelta.spark.base.unity_catalogs import unity_catalog_of
from pydelta.spark.sql.column_ddl import column_ddl, escape_single_quoted
from pydelta.spark.sql.targets import DeltaTarget, resolve

# Spark's CatalogV2Util.TABLE_RESERVED_PROPERTIES, in its order: shown by DESCRIBE EXTENDED
# as rows of their own, never as table properties.
RESERVED = ("comment", "collation", "location", "provider", "owner", "external", "is_managed_location", "table_type")
OPTION_PREFIX = "option."

DESCRIBE_SCHEMA = "col_name STRING NOT NULL, data_type STRING NOT NULL, comment STRING"
DESCRIBE_COLUMN_SCHEMA = "info_name STRING NOT NULL, info_value STRING NOT NULL"
PROPERTIES_SCHEMA = "key STRING NOT NULL, value STRING NOT NULL"
COLUMNS_SCHEMA = "col_name STRING"
CREATE_SCHEMA = "createtab_stmt STRING NOT NULL"


@dataclass(frozen=True)
class DeltaTableInfo:
    """A Delta table a statement names: its snapshot and what the catalog knows of it."""

    target: DeltaTarget
    snapshot: Snapshot
    parts: tuple[str, ...]  # Spark's resolved identifier: catalog, namespace, table (or path)
    catalog_table: Any = None  # Spark's CatalogTable (py4j), None for delta.`/path`

    @property
    def is_path(self) -> bool:
        return self.target.name is None

    def v2_name(self) -> str:
        """DeltaTableV2.name(): the catalog's unquoted name, or delta.`<qualified path>`."""
        if self.catalog_table is not None:
            return str(self.catalog_table.identifier().unquotedString())
        if self.is_path:
            return f"delta.`{qualified_location(self.target.path)}`"
        return ".".join(self.parts)

    def location(self) -> str:
        """The `location` property: the catalog's location, or the path as the statement gives it."""
        if self.is_path:
            return self.parts[-1].rstrip("/") or "/"
        return qualified_location(self.target.path)


def qualified_location(path: str) -> str:
    """A path as Spark qualifies a local one (file:/...)."""
    return path if "://" in path or path.startswith("file:") else "file:" + path


def load_table(spark: SparkSession, node: Any) -> DeltaTableInfo | None:
    """The Delta table an UnresolvedTableOrView names, or None when it is not a Delta table."""
    parts = tuple(jplan.identifier_parts(node))
    target = resolve(spark, parts)
    if target is None:
        return None
    snapshot = table_snapshot(spark, target.path)  # raises "... is not a Delta table" for an empty path
    if target.name is None:
        return DeltaTableInfo(target, snapshot, ("spark_catalog", "delta", parts[-1]))
    if unity_catalog_of(spark, target.name) is not None:  # Spark's catalog has no entry for it
        return DeltaTableInfo(target, snapshot, parts)
    catalog = spark._jsparkSession.sessionState().catalog()
    ident = spark._jsparkSession.sessionState().sqlParser().parseTableIdentifier(target.name)
    if not catalog.tableExists(ident):  # a Delta directory at the default location, not registered
        db = parts[-2] if len(parts) > 1 else str(catalog.getCurrentDatabase())
        return DeltaTableInfo(target, snapshot, ("spark_catalog", db, parts[-1]))
    meta = catalog.getTableMetadata(ident)
    return DeltaTableInfo(target, snapshot, tuple(str(p) for p in jplan.seq(meta.identifier().nameParts())), meta)


def table_properties(table: DeltaTableInfo) -> dict[str, str]:
    """DeltaTableV2.properties(): the reserved keys plus the table's properties."""
    meta = table.catalog_table
    if meta is None:
        return delta_properties(table.snapshot, table.location())
    storage = {str(k): str(v) for k, v in jplan.scala_map(meta.storage().properties()).items()}
    return delta_properties(table.snapshot, table.location(), str(meta.owner()) if meta.owner() else None, storage,
                            str(meta.tableType().name()))


def delta_properties(snapshot: Snapshot, location: str, owner: str | None = None,
                     storage: dict[str, str] | None = None, table_type: str | None = None) -> dict[str, str]:
    """`table_properties` from the snapshot and what the catalog knows (its owner, storage
    properties and table type; none for a path)."""
    protocol = snapshot.protocol
    props = {k: v for k, v in snapshot.metadata.configuration.items() if k != "path"}
    props["delta.minReaderVersion"] = str(protocol.min_reader_version)
    props["delta.minWriterVersion"] = str(protocol.min_writer_version)
    if protocol.supports_reader_features or protocol.supports_writer_features:
        names = (protocol.reader_features or frozenset()) | (protocol.writer_features or frozenset())
        for name in sorted(names):
            props[f"delta.feature.{name}"] = "supported"
    props["provider"] = "delta"
    props["location"] = location
    if owner:
        props["owner"] = owner
    for key, value in (storage or {}).items():
        if not key.startswith("fs."):
            props[OPTION_PREFIX + key] = value
    if table_type == "EXTERNAL":
        props["external"] = "true"
    elif table_type == "MANAGED":
        props["is_managed_location"] = "true"
    if snapshot.metadata.description is not None:
        props["comment"] = snapshot.metadata.description
    return props


def user_properties(props: dict[str, str]) -> list[tuple[str, str]]:
    """The non-reserved properties, sorted by key (SHOW TBLPROPERTIES, DESCRIBE EXTENDED)."""
    return sorted((k, v) for k, v in props.items() if k not in RESERVED)


def jvm_schema(spark: SparkSession, snapshot: Snapshot) -> Any:
    """The table's schema as Spark's (JVM) StructType, field metadata included."""
    return jvm(spark).org.apache.spark.sql.types.DataType.fromJson(snapshot.metadata.schema_string)


def _comment(field: Any) -> str | None:
    metadata = field.metadata()
    return str(metadata.getString("comment")) if metadata.contains("comment") else None


def _same_name(a: str, b: str, case_sensitive: bool) -> bool:
    """Whether two column names resolve alike under spark.sql.caseSensitive."""
    return a == b or (not case_sensitive and a.lower() == b.lower())


# ---- DESCRIBE [EXTENDED] t ----------------------------------------------------------------


@dataclass(frozen=True)
class ColumnInfo:
    """A top-level column as DESCRIBE shows it."""

    name: str
    type_text: str  # Spark's simpleString of its type
    comment: str | None
    default: str | None  # its CURRENT_DEFAULT expression


def describe_rows(spark: SparkSession, table: DeltaTableInfo, extended: bool) -> list[tuple[str, str, str | None]]:
    """DescribeTableExec's rows for a Delta table."""
    columns = [ColumnInfo(str(f.name()), str(f.dataType().simpleString()), _comment(f),
                          str(f.metadata().getString(CURRENT_DEFAULT_KEY)) if f.metadata().contains(CURRENT_DEFAULT_KEY)
                          else None)
               for f in jvm_schema(spark, table.snapshot).fields()]
    return rows_of_describe(columns, table.snapshot.metadata.partition_columns,
                            table_properties(table) if extended else None, table.v2_name(),
                            conf_bool(spark, "spark.sql.caseSensitive", False), quote_if_needed)


def rows_of_describe(columns: list[ColumnInfo], partition_columns: tuple[str, ...] | list[str],
                     props: dict[str, str] | None, v2_name: str, case_sensitive: bool,
                     quote: Callable[[str], str]) -> list[tuple[str, str, str | None]]:
    """DESCRIBE's rows from a table's columns; with `props` (DESCRIBE EXTENDED) its details too."""
    rows: list[tuple[str, str, str | None]] = [(c.name, c.type_text, c.comment) for c in columns]
    if partition_columns:
        rows.append(("# Partition Information", "", ""))
        rows.append(("# col_name", "data_type", "comment"))
        for name in partition_columns:
            column = next((c for c in columns if _same_name(c.name, name, case_sensitive)), None)
            if column is None:
                raise DeltaAnalysisError(f"partition column {name} is not in the table's schema")
            rows.append((quote(column.name), column.type_text, column.comment))
    if props is None:
        return rows
    rows.append(("", "", ""))
    rows.append(("# Detailed Table Information", "", ""))
    rows.append(("Name", v2_name, ""))
    rows.append(("Type", "EXTERNAL" if "external" in props else "MANAGED", ""))
    for key in RESERVED:
        if key != "external" and key in props:
            rows.append((key[0].upper() + key[1:], props[key], ""))
    rows.append(("Table Properties", "[" + ",".join(f"{k}={v}" for k, v in user_properties(props)) + "]", ""))
    defaults = [c for c in columns if c.default is not None]
    if defaults:
        rows.append(("", "", ""))
        rows.append(("# Column Default Values", "", ""))
        for c in defaults:
            rows.append((c.name, c.type_text, c.default))
    return rows


def describe_table(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """DESCRIBE [TABLE] [EXTENDED | FORMATTED] t."""
    if jplan.kind(plan.relation()) != "UnresolvedTableOrView":
        return NOT_DELTA
    table = load_table(spark, plan.relation())
    if table is None:
        return NOT_DELTA
    if jplan.has_method(plan, "partitionSpec") and not plan.partitionSpec().isEmpty():
        # Spark 4.0 keeps DESCRIBE ... PARTITION in DescribeRelation (4.1+: DescribeTablePartition)
        raise DeltaAnalysisError("DESCRIBE does not support partition for v2 tables.")
    return spark.createDataFrame(describe_rows(spark, table, bool(plan.isExtended())), DESCRIBE_SCHEMA)


# ---- DESCRIBE t column --------------------------------------------------------------------


def _column_parts(names: list[str], table_parts: tuple[str, ...], parts: list[str], case_sensitive: bool) -> list[str]:
    """The column's name parts without a leading table qualifier (t.c, db.t.c, ...)."""
    if len(parts) > 1 and not any(_same_name(n, parts[0], case_sensitive) for n in names):
        qualifier = [p.lower() for p in table_parts]
        for size in range(min(len(qualifier), len(parts) - 1), 0, -1):
            if [p.lower() for p in parts[:size]] == qualifier[-size:]:
                return parts[size:]
    return parts


def column_rows(columns: list[ColumnInfo], table_parts: tuple[str, ...], written: list[str],
                case_sensitive: bool) -> list[tuple[str, str]]:
    """DescribeColumnExec's rows (col_name, data_type, comment) for the column `written` names, its
    type text the raw catalog string (char/varchar kept); Spark's errors for others and nested ones."""
    parts = _column_parts([c.name for c in columns], table_parts, written, case_sensitive)
    column = next((c for c in columns if _same_name(c.name, parts[0], case_sensitive)), None)
    if column is None:
        names = ", ".join(f"`{c.name}`" for c in columns)
        raise DeltaAnalysisError(
            f"[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name "
            f"`{'`.`'.join(written)}` cannot be resolved. Did you mean one of the following? [{names}].")
    if len(parts) > 1:
        raise DeltaAnalysisError(f"DESC TABLE COLUMN does not support nested column: {'.'.join(written)}.")
    return [("col_name", column.name), ("data_type", column.type_text),
            ("comment", column.comment if column.comment is not None else "NULL")]


def describe_column(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """DESCRIBE [TABLE] [EXTENDED] t column: DescribeColumnExec's col_name, data_type and comment."""
    table = load_table(spark, plan.relation())
    if table is None:
        return NOT_DELTA
    raw_type = jvm(spark).org.apache.spark.sql.catalyst.util.CharVarcharUtils.getRawType
    columns = []
    for field in jvm_schema(spark, table.snapshot).fields():
        data_type = jplan.option(raw_type(field.metadata())) or field.dataType()
        columns.append(ColumnInfo(str(field.name()), str(data_type.catalogString()), _comment(field), None))
    written = [str(p) for p in jplan.seq(plan.column().nameParts())]
    rows = column_rows(columns, table.parts, written, conf_bool(spark, "spark.sql.caseSensitive", False))
    return spark.createDataFrame(rows, DESCRIBE_COLUMN_SCHEMA)


# ---- SHOW TBLPROPERTIES / SHOW COLUMNS ----------------------------------------------------


def resolved_name(spark: SparkSession, table: DeltaTableInfo) -> str:
    """Spark's ResolvedTable.name: catalog.namespace.table, each part quoted if needed."""
    return ".".join(quote_if_needed(p) for p in table.parts)


def show_properties(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """SHOW TBLPROPERTIES t [('key')]."""
    table = load_table(spark, plan.table())
    if table is None:
        return NOT_DELTA
    props = dict(user_properties(table_properties(table)))
    key = jplan.option(plan.propertyKey())
    if key is None:
        return spark.createDataFrame(sorted(props.items()), PROPERTIES_SCHEMA)
    key = str(key)
    value = props.get(key, f"Table {resolved_name(spark, table)} does not have property: {key}")
    return spark.createDataFrame([(key, value)], PROPERTIES_SCHEMA)


def check_show_columns_namespace(given: str, database: str) -> None:
    """SHOW COLUMNS IN db.t IN db2: Spark's error when the two databases differ."""
    if given.lower() != database.lower():
        raise DeltaAnalysisError(
            f"[SHOW_COLUMNS_WITH_CONFLICT_NAMESPACE] SHOW COLUMNS with conflicting namespaces: "
            f"`{given}` != `{database}`.")


def show_columns(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """SHOW COLUMNS {IN | FROM} t [{IN | FROM} db]."""
    table = load_table(spark, plan.child())
    if table is None:
        return NOT_DELTA
    namespace = jplan.option(plan.namespace())
    if namespace is not None:
        check_show_columns_namespace(str(jplan.seq(namespace)[0]), table.parts[-2])
    names = [(str(f.name()),) for f in jvm_schema(spark, table.snapshot).fields()]
    return spark.createDataFrame(names, COLUMNS_SCHEMA)


# ---- SHOW PARTITIONS ----------------------------------------------------------------------


def show_partitions(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """SHOW PARTITIONS t [PARTITION (k = v, ...)]."""
    table = load_table(spark, plan.table())
    if table is None:
        return NOT_DELTA
    spec: dict[str, str | None] = {}
    pattern = jplan.option(plan.pattern())
    if pattern is not None:
        spec = {str(k): (None if v is None else str(v)) for k, v in jplan.scala_map(pattern.spec()).items()}
    return partitions_of(spark, table.snapshot, table.v2_name(), spec)


def partitions_of(spark: SparkSession, snapshot: Snapshot, name: str, spec: dict[str, str | None]) -> Any:
    """SHOW PARTITIONS of the Delta table `name`, as delta-spark 4.4: one typed column per
    partition column, one row per distinct partition of the live files matching `spec`."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    from pydelta.protocol.partition_values import partition_values_to_arrow
    from pydelta.protocol.schema import StructType, column_mapping_mode, physical_name
    from pydelta.spark.read.scan import spark_schema

    columns = list(snapshot.partition_columns)
    if not columns:
        raise DeltaAnalysisError(f"[DELTA_SHOW_PARTITION_IN_NON_PARTITIONED_TABLE] SHOW PARTITIONS is not allowed on a "
                                 f"table that is not partitioned: {name}")
    unknown = [k for k in spec if k not in columns]
    if unknown:
        raise DeltaAnalysisError(f"[DELTA_SHOW_PARTITION_IN_NON_PARTITIONED_COLUMN] Non-partitioning column(s) "
                                 f"[{', '.join(unknown)}] are specified for SHOW PARTITIONS")
    fields = StructType(tuple(snapshot.schema.field(c) for c in columns))
    mapped = column_mapping_mode(snapshot.metadata.configuration) != "none"
    typed = partition_values_to_arrow(
        snapshot.files().column("partition_values"), fields,
        {f.name: physical_name(f) if mapped else f.name for f in fields.fields},
        timezone=session_time_zone(spark))
    distinct = pa.Table.from_struct_array(typed).group_by(columns, use_threads=False).aggregate([])
    rows = pc.take(distinct, pc.sort_indices(distinct, [(c, "ascending") for c in columns])).to_pylist()
    out = spark.createDataFrame([tuple(r[c] for c in columns) for r in rows], spark_schema(fields))
    for key, value in spec.items():
        out = out.where(F.col(f"`{key}`").eqNullSafe(F.lit(value)))
    return out


# ---- SHOW CREATE TABLE --------------------------------------------------------------------


def _lines(items: list[str]) -> str:
    return "(\n  " + ",\n  ".join(items) + ")\n"


def create_statement(name: str, snapshot: Snapshot, props: dict[str, str]) -> str:
    """The CREATE TABLE statement of the Delta table `name` (as printed), formatted as Spark's
    ShowCreateTableExec; `props` are its DeltaTableV2 properties (`delta_properties`)."""
    import json

    from pyspark.sql.types import StructType as SparkStructType

    fields = SparkStructType.fromJson(json.loads(snapshot.metadata.schema_string)).fields
    out = f"CREATE TABLE {name} " + _lines([column_ddl(f) for f in fields]) + "USING delta\n"
    options = sorted((k[len(OPTION_PREFIX):], v) for k, v in props.items() if k.startswith(OPTION_PREFIX))
    if options:
        out += "OPTIONS " + _lines([f"'{escape_single_quoted(k)}' = '{escape_single_quoted(v)}'" for k, v in options])
    partition_columns = snapshot.metadata.partition_columns
    if partition_columns:
        out += "PARTITIONED BY (" + ", ".join(quote_if_needed(c) for c in partition_columns) + ")\n"
    if "comment" in props:
        out += f"COMMENT '{escape_single_quoted(props['comment'])}'\n"
    if props.get("is_managed_location", "false").lower() != "true":
        out += f"LOCATION '{escape_single_quoted(props['location'])}'\n"
    shown = [(k, v) for k, v in user_properties(props) if not k.startswith(OPTION_PREFIX)]
    if shown:
        out += "TBLPROPERTIES " + _lines(
            [f"'{escape_single_quoted(k)}' = '{escape_single_quoted(v)}'" for k, v in shown])
    return out


def show_create_table(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """SHOW CREATE TABLE t."""
    table = load_table(spark, plan.child())
    if table is None:
        return NOT_DELTA
    if plan.asSerde():
        raise DeltaAnalysisError(
            f"SHOW CREATE TABLE AS SERDE is not supported for v2 tables: {table.v2_name()} is a Delta table.")
    # A path table is named delta.`/path` (Spark would print spark_catalog.delta.`/path`) so
    # that the statement runs again.
    name = f"delta.`{table.target.path}`" if table.is_path else resolved_name(spark, table)
    return spark.createDataFrame([(create_statement(name, table.snapshot, table_properties(table)),)], CREATE_SCHEMA)


# ---- statements Delta tables do not support -----------------------------------------------


def _unsupported(message: str) -> Callable[[Any, str, Any], Any]:
    """A statement Spark refuses on v2 tables (so on delta-spark's Delta tables), with its message."""
    def handler(spark: SparkSession, text: str, plan: JavaObject) -> Any:
        if jplan.kind(plan.child()) != "UnresolvedTableOrView" or load_table(spark, plan.child()) is None:
            return NOT_DELTA
        raise DeltaAnalysisError(message)

    return handler


DESCRIBE_HANDLERS: dict[str, Callable[[Any, str, Any], Any]] = {
    "DescribeRelation": describe_table,
    "DescribeColumn": describe_column,
    "ShowTableProperties": show_properties,
    "ShowColumns": show_columns,
    "ShowCreateTable": show_create_table,
    "ShowPartitions": show_partitions,
    "DescribeTablePartition": _unsupported("DESCRIBE does not support partition for v2 tables."),
    "DescribeRelationJsonCommand": _unsupported("DESCRIBE ... AS JSON is not supported for Delta tables"),
}
