"""DESCRIBE, SHOW TBLPROPERTIES / COLUMNS / PARTITIONS and SHOW CREATE TABLE of Delta tables
over Spark Connect.

The server resolves a Delta table name through pydelta's Python data source, which knows
nothing of the log: its DESCRIBE shows no partitioning, no location, comment or properties,
SHOW TBLPROPERTIES nothing, and the catalog's copy of the schema is not updated when the
table's schema evolves. So these statements are answered here, from the log and the catalog's
entry (SHOW TABLE EXTENDED), with what a classic session gives: the rows are built by the same
functions of `describe` from plain values (`rows_of_describe`, `column_rows`,
`delta_properties`, `create_statement`, `partitions_of`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydelta.errors import DeltaAnalysisError, DeltaParseError
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.column_names import quote_if_needed
from pydelta.protocol.schema import CURRENT_DEFAULT_KEY
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.conf import conf_bool
from pydelta.spark.base.engine import table_snapshot
from pydelta.spark.base.jplan import NOT_DELTA
from pydelta.spark.base.tokens import Token, dotted_name_end
from pydelta.spark.sql.column_ddl import RAW_TYPE
from pydelta.spark.sql.describe import (
    COLUMNS_SCHEMA,
    CREATE_SCHEMA,
    DESCRIBE_COLUMN_SCHEMA,
    DESCRIBE_SCHEMA,
    PROPERTIES_SCHEMA,
    ColumnInfo,
    check_show_columns_namespace,
    column_rows,
    create_statement,
    delta_properties,
    partitions_of,
    qualified_location,
    rows_of_describe,
    user_properties,
)

# What DESCRIBE may describe besides a table (HISTORY and DETAIL are Delta's own statements).
_NOT_TABLES = {"DATABASE", "SCHEMA", "NAMESPACE", "CATALOG", "FUNCTION", "QUERY", "PROCEDURE", "HISTORY", "DETAIL"}


@dataclass(frozen=True)
class _Table:
    snapshot: Snapshot
    name: str  # DeltaTableV2.name(): spark_catalog.db.t, or delta.`file:/path`
    parts: tuple[str, ...]  # Spark's resolved identifier: spark_catalog, db, t (or delta, path)
    location: str
    owner: str | None = None
    storage: dict[str, str] | None = None
    table_type: str | None = None
    is_path: bool = False

    @property
    def resolved(self) -> str:
        """Spark's ResolvedTable.name: each part quoted if needed."""
        return ".".join(quote_if_needed(p) for p in self.parts)


def run_catalog_statement(spark: SparkSession, tokens: list[Token]) -> Any:
    """The answer to a DESCRIBE / SHOW TBLPROPERTIES / SHOW CREATE TABLE / SHOW PARTITIONS
    statement on a Delta table, or NOT_DELTA for any other statement (Spark's to run)."""
    words = [t.upper if t.kind == "word" else t.text for t in tokens]
    if words[:1] in (["DESCRIBE"], ["DESC"]) and words[1:2] != [] and words[1] not in _NOT_TABLES:
        i = 1 + (words[1:2] == ["TABLE"])
        extended = words[i:i + 1] in (["EXTENDED"], ["FORMATTED"])
        found = _table_at(spark, tokens, i + extended)
        if found is None:
            return NOT_DELTA
        end, table = found
        case_sensitive = conf_bool(spark, "spark.sql.caseSensitive", False)
        if end < len(tokens):
            column = _column_name(tokens, end)
            if column is None:  # a PARTITION clause: Spark's
                return NOT_DELTA
            info = column_rows(_columns(table.snapshot, raw_types=True), table.parts, column, case_sensitive)
            return spark.createDataFrame(info, DESCRIBE_COLUMN_SCHEMA)
        props = _properties(table) if extended else None
        columns = _columns(table.snapshot)
        rows = rows_of_describe(columns, table.snapshot.metadata.partition_columns, props, table.name,
                                case_sensitive, quote_if_needed)
        return spark.createDataFrame(rows, DESCRIBE_SCHEMA)
    if words[:2] == ["SHOW", "TBLPROPERTIES"]:
        found = _table_at(spark, tokens, 2)
        if found is None:
            return NOT_DELTA
        end, table = found
        props = dict(user_properties(_properties(table)))
        if end == len(tokens):
            return spark.createDataFrame(sorted(props.items()), PROPERTIES_SCHEMA)
        inside = tokens[end + 1:-1]
        if tokens[end].text != "(" or tokens[-1].text != ")" or not inside:
            return NOT_DELTA  # not a form this reads: Spark's
        key = inside[0].value() if len(inside) == 1 else "".join(t.text for t in inside)  # 'k' or a.b.c
        return spark.createDataFrame(
            [(key, props.get(key, f"Table {table.resolved} does not have property: {key}"))], PROPERTIES_SCHEMA)
    if words[:2] == ["SHOW", "COLUMNS"] and words[2:3] in (["IN"], ["FROM"]):
        return _show_columns(spark, tokens)
    if words[:3] == ["SHOW", "CREATE", "TABLE"]:
        found = _table_at(spark, tokens, 3)
        if found is None:
            return NOT_DELTA
        end, table = found
        if end < len(tokens):  # AS SERDE
            raise DeltaAnalysisError(
                f"SHOW CREATE TABLE AS SERDE is not supported for v2 tables: {table.name} is a Delta table.")
        # A path table is named delta.`/path` (Spark would print spark_catalog.delta.`/path`) so that
        # the statement runs again.
        name = f"delta.`{table.parts[2]}`" if table.is_path else table.resolved
        return spark.createDataFrame([(create_statement(name, table.snapshot, _properties(table)),)], CREATE_SCHEMA)
    if words[:2] == ["SHOW", "PARTITIONS"]:
        found = _table_at(spark, tokens, 2)
        if found is None:
            return NOT_DELTA
        end, table = found
        return partitions_of(spark, table.snapshot, table.name, _partition_spec(tokens, end))
    return NOT_DELTA


def _partition_spec(tokens: list[Token], i: int) -> dict[str, str | None]:
    """`PARTITION (k = v, ...)` from token i to the end, each value as Spark's spec holds it (a
    string; NULL as None); empty when nothing follows."""
    if i == len(tokens):
        return {}
    words = [t.upper if t.kind == "word" else t.text for t in tokens[i:]]
    if words[:2] != ["PARTITION", "("] or words[-1] != ")":
        raise DeltaParseError(f"expected PARTITION (column = value, ...) after the table: {' '.join(words)}")
    spec: dict[str, str | None] = {}
    inside = tokens[i + 2:-1]
    for k in range(0, len(inside), 4):
        key, equals, value = inside[k:k + 3] if len(inside) >= k + 3 else (None, None, None)
        separator = inside[k + 3] if k + 3 < len(inside) else None
        if key is None or equals is None or value is None or equals.text != "=" or key.kind not in ("word", "quoted") \
                or value.kind not in ("string", "number", "word") or (separator is not None and separator.text != ","):
            raise DeltaParseError("expected PARTITION (column = literal, ...) in SHOW PARTITIONS")
        spec[key.value()] = None if value.kind == "word" and value.upper == "NULL" else value.value()
    return spec


def _table_at(spark: SparkSession, tokens: list[Token], i: int) -> tuple[int, _Table] | None:
    """The Delta table named at token i (delta.`path` or a catalog name): (the index after it, the
    table); None when what is there is no Delta table."""
    from pydelta.spark.base.catalog import connect_table_information, delta_location

    if i + 2 < len(tokens) and tokens[i].kind == "word" and tokens[i].upper == "DELTA" and tokens[i + 1].text == "." \
            and tokens[i + 2].kind == "quoted":
        path = tokens[i + 2].value()
        return i + 3, _Table(table_snapshot(spark, path), f"delta.`{qualified_location(path)}`",
                             ("spark_catalog", "delta", path), path.rstrip("/") or "/", is_path=True)
    if i >= len(tokens) or tokens[i].kind not in ("word", "quoted"):
        return None
    j = dotted_name_end(tokens, i)
    name = "".join(t.text for t in tokens[i:j + 1])
    if j == i and _temporary_view(spark, tokens[i].value()):
        return None  # a temporary view shadows a table of its name: Spark's
    found = connect_table_information(spark, name)
    location = delta_location(spark, name, found[0] if found is not None else None)
    if location is None:
        return None
    snapshot = table_snapshot(spark, location)
    if found is None:  # a Delta directory at the default location, not registered
        parts = [t.value() for t in tokens[i:j + 1:2]]
        database = parts[-2] if len(parts) > 1 else spark.catalog.currentDatabase()
        return j + 1, _Table(snapshot, f"spark_catalog.{database}.{parts[-1]}",
                             ("spark_catalog", database, parts[-1]), qualified_location(location))
    entry, info = found
    database, _, table_name = entry.name.partition(".")
    return j + 1, _Table(snapshot, f"spark_catalog.{entry.name}", ("spark_catalog", database, table_name),
                         qualified_location(location), info.get("Owner") or None,
                         _storage_properties(info.get("Storage Properties", "")), info.get("Type", "").upper())


def _column_name(tokens: list[Token], i: int) -> list[str] | None:
    """The parts of the (dotted) column name from token i to the end; None if that is something else."""
    if tokens[i].kind not in ("word", "quoted") or dotted_name_end(tokens, i) != len(tokens) - 1:
        return None
    return [t.value() for t in tokens[i::2]]


def _show_columns(spark: SparkSession, tokens: list[Token]) -> Any:
    """SHOW COLUMNS {IN | FROM} t [{IN | FROM} db] of a Delta table: its columns from the log."""
    end = dotted_name_end(tokens, 3) if len(tokens) > 3 and tokens[3].kind in ("word", "quoted") else None
    if end is None:
        return NOT_DELTA
    database = None
    if end + 1 < len(tokens):
        if len(tokens) != end + 3 or tokens[end + 1].upper not in ("IN", "FROM") \
                or tokens[end + 2].kind not in ("word", "quoted"):
            return NOT_DELTA
        database = tokens[end + 2].value()
    table_tokens = tokens[3:end + 1]
    if database is not None and len(table_tokens) == 1:  # SHOW COLUMNS IN t IN db: the table db.t
        table_tokens = [tokens[end + 2], Token("punct", ".", 0, 0), table_tokens[0]]
    found = _table_at(spark, table_tokens, 0)
    if found is None:
        return NOT_DELTA
    table = found[1]
    if database is not None:
        check_show_columns_namespace(database, table.parts[-2])
    return spark.createDataFrame([(c.name,) for c in _columns(table.snapshot)], COLUMNS_SCHEMA)


def _temporary_view(spark: SparkSession, name: str) -> bool:
    from pydelta.spark.base.raw import raw_sql

    if any(c in name for c in "*|'\\`"):  # LIKE pattern characters: no view lookup by pattern
        return False
    return any(r.isTemporary and r.viewName.lower() == name.lower()
               for r in raw_sql(spark, f"SHOW VIEWS LIKE '{name}'").collect())


def _properties(table: _Table) -> dict[str, str]:
    return delta_properties(table.snapshot, table.location, table.owner, table.storage, table.table_type)


def _columns(snapshot: Snapshot, raw_types: bool = False) -> list[ColumnInfo]:
    """The table's columns; with `raw_types`, char(n)/varchar(n) as written rather than string."""
    from pyspark.sql.types import StructType

    fields = StructType.fromJson(json.loads(snapshot.metadata.schema_string)).fields
    return [ColumnInfo(f.name, (raw_types and f.metadata.get(RAW_TYPE)) or f.dataType.simpleString(),
                       f.metadata.get("comment"), f.metadata.get(CURRENT_DEFAULT_KEY)) for f in fields]


def _storage_properties(text: str) -> dict[str, str]:
    """SHOW TABLE EXTENDED's "Storage Properties: [k=v, k2=v2]"."""
    inner = text.strip()[1:-1] if text.strip().startswith("[") else ""
    pairs = [p.split("=", 1) for p in inner.split(", ") if "=" in p]
    return {k: v for k, v in pairs}
