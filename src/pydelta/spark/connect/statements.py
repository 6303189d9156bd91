"""Running Delta DML and DDL statements on a Spark Connect session.

`connect_grammar` splits a statement into its parts; here each kind runs through the same
operations the classic SQL front uses (prepare_delete / prepare_update, the DeltaTable merge
builder, `insert_into`, the table builder and `table_as_select`, `ddl.alter`). Conditions,
assignments and queries stay SQL text, analyzed by the Spark server. Statements whose target
is not a Delta table answer NOT_DELTA: the caller hands them to Spark unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydelta.errors import DeltaAnalysisError
from pydelta.log.snapshot import Snapshot
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.engine import table_snapshot
from pydelta.spark.base.jplan import NOT_DELTA, empty_result
from pydelta.spark.base.unity_catalogs import unity_catalog
from pydelta.spark.connect import grammar as g
from pydelta.spark.ddl.create_options import split_options
from pydelta.spark.sql.targets import DeltaTarget, path_parts, quote_parts, resolve, target_for_create

RunQuery = Callable[[str], "DataFrame"]  # spark.sql on this session, Delta relations served


def run_statement(spark: SparkSession, statement: g.Statement, query: RunQuery) -> Any:
    """Run `statement` (its target a Delta table) and return what spark.sql returns for it."""
    if isinstance(statement, g.CreateTable):
        return _create(spark, statement, query)
    target = resolve(spark, statement.target.parts)
    if target is None:
        return NOT_DELTA
    if isinstance(statement, g.Delete):
        return _delete(spark, target, statement)
    if isinstance(statement, g.Update):
        return _update(spark, target, statement)
    if isinstance(statement, g.Merge):
        return _merge(spark, target, statement, query)
    if isinstance(statement, g.Insert):
        return _insert(spark, target, statement, query)
    if isinstance(statement, g.Truncate):
        from pydelta.spark.sql.dml import truncate

        truncate(spark, target)
        return empty_result(spark)
    return _alter(spark, target, statement)


def _catalog_name(parts: tuple[str, ...]) -> tuple[str, ...] | None:
    """A session-catalog name without its `spark_catalog.` prefix; None for other catalogs."""
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    return parts if 1 <= len(parts) <= 2 else None


def _delta_table(
    spark: SparkSession, target: DeltaTarget, alias: str | None, parts: tuple[str, ...]
) -> tuple[Snapshot, str]:
    """The snapshot of `target` and its alias (an unaliased table is known by its own name)."""
    return table_snapshot(spark, target.path), alias or parts[-1]


def _affected(spark: SparkSession, rows: Any) -> DataFrame:
    return spark.createDataFrame([(int(rows),)], "num_affected_rows BIGINT")


def _delete(spark: SparkSession, target: DeltaTarget, statement: g.Delete) -> DataFrame:
    from pydelta.spark.dml.delete import prepare_delete

    snapshot, alias = _delta_table(spark, target, statement.alias, statement.target.parts)
    prepared = prepare_delete(spark, snapshot, statement.condition, alias=alias)
    prepared.commit()
    return _affected(spark, prepared.metrics.get("numDeletedRows", -1))


def _set_clause(spark: SparkSession, snapshot: Snapshot, alias: str, assignments: dict[str, str]) -> dict[str, str]:
    """SET / VALUES as {column: SQL}: the target's alias dropped from column names, the DEFAULT
    keyword replaced by the column's default (NULL without one)."""
    from pydelta.spark.sql.dml import column_defaults

    defaults = column_defaults(spark, snapshot)
    out = {}
    for column, value in assignments.items():
        if column.lower().startswith(alias.lower() + "."):
            column = column[len(alias) + 1:]
        default = value.strip().upper() == "DEFAULT"
        out[column] = defaults.get(column.strip("`").lower(), "NULL") if default else value
    return out


def _update(spark: SparkSession, target: DeltaTarget, statement: g.Update) -> DataFrame:
    from pydelta.spark.dml.update import prepare_update
    from pydelta.spark.read.conditions import column_mapping

    snapshot, alias = _delta_table(spark, target, statement.alias, statement.target.parts)
    assignments = _set_clause(spark, snapshot, alias, statement.assignments)
    prepared = prepare_update(spark, snapshot, statement.condition, column_mapping(assignments, "SET"),
                              alias=alias)
    prepared.commit()
    return _affected(spark, prepared.metrics.get("numUpdatedRows", 0))


def _merge_source(spark: SparkSession, statement: g.Merge, query: RunQuery) -> DataFrame:
    if statement.source is None:
        source = query(statement.source_query or "")
        return source.alias(statement.source_alias) if statement.source_alias else source
    alias = statement.source_alias or statement.source.parts[-1]
    delta = resolve(spark, statement.source.parts)
    if delta is not None:
        from pydelta.spark.read.options import read_delta

        return read_delta(spark, delta.path, {}).alias(alias)
    return spark.table(quote_parts(statement.source.parts)).alias(alias)


def _merge(spark: SparkSession, target: DeltaTarget, statement: g.Merge, query: RunQuery) -> DataFrame:
    from pydelta.spark.dml.merge import run_merge, sql_clause

    snapshot, alias = _delta_table(spark, target, statement.alias, statement.target.parts)
    source = _merge_source(spark, statement, query)
    clauses = [sql_clause(c.when, c.action, c.condition,
                          _set_clause(spark, snapshot, alias, c.assignments) if c.assignments else {})
               for c in statement.clauses]
    return run_merge(spark, snapshot, source, statement.condition, clauses,
                     schema_evolution=bool(statement.schema_evolution), alias=alias)


def _insert(spark: SparkSession, target: DeltaTarget, statement: g.Insert, query: RunQuery) -> DataFrame:
    from pydelta.spark.sql.insert import insert_into

    snapshot = table_snapshot(spark, target.path)
    insert_into(spark, target, snapshot, _insert_data(spark, target, snapshot, statement, query),
                by_name=statement.by_name,
                user_cols=statement.columns, static=statement.partition, overwrite=statement.overwrite,
                replace_where=statement.replace_where, evolve=False)
    return empty_result(spark)


def _insert_data(spark: SparkSession, target: DeltaTarget, snapshot: Any, statement: g.Insert,
                 query: RunQuery) -> DataFrame:
    """The rows INSERT writes; a VALUES list's DEFAULT keywords become the columns' defaults."""
    rows = None if statement.by_name else g.values_rows(statement.query)
    cells = [[None if cell.strip().upper() == "DEFAULT" else cell for cell in row] for row in rows or []]
    if not any(cell is None for row in cells for cell in row):
        return query(statement.query)
    from pydelta.spark.ddl.column_defaults import values_frame
    from pydelta.spark.read.scan import spark_schema
    from pydelta.spark.sql.insert import field_lookup, positional_columns

    schema = spark_schema(snapshot.schema)
    return values_frame(spark, cells, positional_columns(schema, statement.columns, statement.partition),
                        field_lookup(schema, target))


def _create(spark: SparkSession, statement: g.CreateTable, query: RunQuery) -> Any:
    from pydelta.log.storage import to_local_path

    parts = statement.target.parts if path_parts(statement.target.parts) else _catalog_name(statement.target.parts)
    if parts is None and len(statement.target.parts) == 3 and unity_catalog(spark, statement.target.parts[0]):
        parts = statement.target.parts  # a Unity Catalog name: created through its catalog
    if parts is None:
        return NOT_DELTA  # another catalog's table: Spark's
    target = target_for_create(spark, parts)
    location = to_local_path(statement.location) if statement.location is not None else None
    if location is not None and target.name is None and location != target.path:
        raise DeltaAnalysisError("a path table delta.`...` cannot have a different LOCATION")
    path = location or target.path
    if statement.create:
        kind = "createOrReplace" if statement.replace else "createIfNotExists" if statement.if_not_exists else "create"
    else:
        kind = "replace"
    plain_create = statement.create and not statement.replace and statement.query is None
    properties, write_options = split_options(spark, plain_create, statement.properties, statement.options)
    if statement.query is not None:
        from pydelta.spark.ddl.table_as_select import table_as_select

        table_as_select(query(statement.query), path, name=target.name,
                        kind="create" if kind == "createIfNotExists" else kind,
                        if_not_exists=kind == "createIfNotExists", partition_by=statement.partitioned_by or None,
                        properties=properties, comment=statement.comment,
                        managed=None if target.name is not None and location is None else False,
                        cluster_by=statement.clustered_by, options=write_options)
        return empty_result(spark)
    if not statement.columns:
        from pydelta.spark.ddl.existing_table import register_existing

        register_existing(spark, target.name, path, kind, properties, statement.comment, statement.partitioned_by)
        return empty_result(spark)
    from pydelta.spark.ddl.table_definition import create_table

    builder = _table_builder(spark, kind, statement, properties)
    if target.name is not None:
        builder = builder.tableName(target.name)
    if location is not None or target.name is None:
        builder = builder.location(path)
    create_table(builder)
    return empty_result(spark)


def _table_builder(spark: SparkSession, kind: str, statement: g.CreateTable, properties: dict[str, str]) -> Any:
    from pydelta.spark.ddl.column_defaults import checked_default
    from pydelta.spark.ddl.table_definition import IdentityGenerator, TableDefinition

    builder = TableDefinition(spark, kind)
    for column in statement.columns:
        always: Any = column.generated
        by_default = None
        if column.identity is not None:
            generator = IdentityGenerator(column.identity[1], column.identity[2])
            by_default, always = (generator, None) if column.identity[0] else (None, generator)
        builder = builder.addColumn(column.name, column.type, column.nullable, generatedAlwaysAs=always,
                                    generatedByDefaultAs=by_default, comment=column.comment)
        if column.default is not None:
            builder._default_last_column(
                checked_default(spark, column.default, column.type, column.name, "CREATE TABLE"))
    if statement.partitioned_by:
        builder = builder.partitionedBy(*statement.partitioned_by)
    if statement.clustered_by is not None:
        builder = builder.clusterBy(*statement.clustered_by)
    for key, value in properties.items():
        builder = builder.property(key, value)
    if statement.comment is not None:
        builder = builder.comment(statement.comment)
    return builder


def _delta_type(type_sql: str) -> Any:
    """A DDL type (`DECIMAL(10,2)`) as a Delta schema type; Spark's server parses the text."""
    from pyspark.sql.types import _parse_datatype_string

    from pydelta.protocol.schema import parse_data_type

    return parse_data_type(json.loads(_parse_datatype_string(type_sql).json()))


def _alter(spark: SparkSession, target: DeltaTarget, statement: g.AlterTable) -> Any:
    from pydelta.spark.ddl import alter, alter_mapping

    display, path, action = target.display(), target.path, statement.action
    if action == "renameTable" or (action == "setLocation" and target.name is not None):
        return NOT_DELTA  # the catalog's entry changes: Spark runs the statement
    if action == "setLocation":
        raise DeltaAnalysisError(alter.SET_LOCATION_ON_PATH)
    if action == "notAllowed":
        raise DeltaAnalysisError(alter.operation_not_allowed(statement.command or "this ALTER TABLE statement"))
    if action == "setProperties":
        alter.set_table_properties(spark, path, statement.properties, display=display)
    elif action == "unsetProperties":  # Spark's DSv2 path is always IF EXISTS, as on classic sessions
        alter.unset_table_properties(spark, path, statement.keys, True, display=display)
    elif action == "addColumns":
        alter.add_columns(spark, path, [_new_column(c) for c in statement.columns], display=display)
    elif action == "replaceColumns":
        from pydelta.spark.ddl.alter_replace import replace_columns

        replace_columns(spark, path, [_new_column(c) for c in statement.columns], display=display)
    elif action == "changeColumns":
        alter.change_columns(spark, path, [_column_change(c) for c in statement.changes], display=display)
    elif action == "addConstraint":
        alter.add_constraint(spark, path, statement.names[0], statement.expression or "", display=display)
    elif action == "dropConstraint":
        alter.drop_constraint(spark, path, statement.names[0], statement.if_exists, display=display)
    elif action == "renameColumn":
        alter_mapping.rename_column(spark, path, g.column_parts(statement.names[0]), statement.names[1],
                                    display=display)
    else:
        alter_mapping.drop_columns(spark, path, [g.column_parts(n) for n in statement.names], statement.if_exists,
                                   display=display)
    return empty_result(spark)


def _new_column(column: g.ColumnDefinition) -> Any:
    from pydelta.spark.ddl import schema_edits
    from pydelta.spark.sql.alter import DEFAULT_NOT_ALLOWED_ON_ADD

    if column.default is not None:
        raise DeltaAnalysisError(DEFAULT_NOT_ALLOWED_ON_ADD)
    return schema_edits.NewColumn(g.column_parts(column.name), _delta_type(column.type), column.nullable,
                                  column.comment, _position(column.position))


def _position(position: str | None) -> Any:
    """FIRST / AFTER <column> as ddl.alter's Position; None when the statement gives none."""
    from pydelta.spark.ddl import schema_edits

    if position is None:
        return None
    return schema_edits.Position() if position == "FIRST" else schema_edits.Position(g.column_parts(position)[-1])


def _column_change(spec: g.ColumnSpec) -> Any:
    from pydelta.spark.ddl import schema_edits

    return schema_edits.ColumnChange(
        g.column_parts(spec.name), data_type=_delta_type(spec.type) if spec.type is not None else None,
        nullable=spec.nullable, comment=spec.comment, drop_comment=spec.drop_comment, drop_default=spec.drop_default,
        position=_position(spec.position), default=spec.default)
