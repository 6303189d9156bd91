"""Handlers for Spark's parsed ALTER TABLE plans whose table is a Delta table.

Each handler reads the statement's parts from Spark's unresolved plan and calls the
matching operation in `pydelta.spark.ddl.alter` (one metadata-only commit), or refuses the
statement clearly. Tables that are not Delta tables are left to Spark (NOT_DELTA).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydelta.errors import DeltaAnalysisError, DeltaNotImplementedError
from pydelta.protocol.schema import DataType, UnsupportedDataTypeError, parse_data_type
from pydelta.spark.base import jplan
from pydelta.spark.base._typing import JavaObject, SparkSession
from pydelta.spark.base.jplan import NOT_DELTA
from pydelta.spark.ddl import alter, schema_edits
from pydelta.spark.ddl.alter import unnamed_check_constraint, unsupported_constraint
from pydelta.spark.sql.targets import DeltaTarget, resolve

DEFAULT_NOT_ALLOWED_ON_ADD = (
    "[WRONG_COLUMN_DEFAULTS_FOR_DELTA_ALTER_TABLE_ADD_COLUMN_NOT_SUPPORTED] Failed to execute the command because "
    "DEFAULT values are not supported when adding new columns to previously existing Delta tables; please add the "
    "column without a default value first, then run a second ALTER TABLE ALTER COLUMN SET DEFAULT command to apply "
    "for future inserted rows instead.")


def _target(spark: SparkSession, table: Any) -> DeltaTarget | None:
    """The Delta table an ALTER statement names (UnresolvedTable / UnresolvedRelation), else None."""
    if jplan.kind(table) not in ("UnresolvedTable", "UnresolvedTableOrView", "UnresolvedRelation"):
        return None
    return resolve(spark, jplan.identifier_parts(table))


def _delta_type(jtype: Any) -> DataType:
    try:
        return parse_data_type(json.loads(jtype.json()))
    except UnsupportedDataTypeError:
        raise DeltaNotImplementedError(
            f"columns of type {jtype.sql()} are not supported by pydelta yet (use STRING for CHAR/VARCHAR)") from None


def _position(node: Any) -> schema_edits.Position | None:
    """FIRST / AFTER col from an UnresolvedFieldPosition, or None."""
    if node is None:
        return None
    position = node.position()
    if jplan.kind(position) == "First":
        return schema_edits.Position()
    return schema_edits.Position(str(position.column()))


def _table_of(plan: JavaObject) -> Any:
    """The table node of an ALTER plan (`table`, or `child` for some statements)."""
    return plan.table() if jplan.has_method(plan, "table") else plan.child()


def _command(plan: JavaObject) -> str:
    """Spark's name for the statement, e.g. 'ALTER TABLE ... RENAME COLUMN'."""
    table = _table_of(plan)
    if jplan.has_method(table, "commandName"):
        return str(table.commandName())
    return "this ALTER TABLE statement"


# ---- handlers -------------------------------------------------------------------------------


def _set_properties(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target = _target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    properties = {str(k): str(v) for k, v in jplan.scala_map(plan.properties()).items()}
    alter.set_table_properties(spark, target.path, properties, display=target.display())
    return jplan.empty_result(spark)


def _comment_on_table(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """COMMENT ON TABLE t IS 'text' | NULL: the table comment is the metadata's description.

    As in delta-spark, the statement is SET TBLPROPERTIES ('comment' = ...); Spark's parser
    turns IS NULL into the empty string, so the description becomes "" (UNSET clears it).
    """
    target = _target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    comment = plan.comment()
    alter.set_table_properties(spark, target.path, {"comment": "" if comment is None else str(comment)},
                               display=target.display())
    return jplan.empty_result(spark)


def _unset_properties(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target = _target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    keys = [str(k) for k in jplan.seq(plan.propertyKeys())]
    # Spark's DSv2 path is always IF EXISTS (delta-spark's DeltaCatalog): missing keys are ignored.
    alter.unset_table_properties(spark, target.path, keys, True, display=target.display())
    return jplan.empty_result(spark)


def _replace_columns(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    from pydelta.spark.ddl.alter_replace import replace_columns

    target = _target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    columns = [schema_edits.NewColumn(tuple(str(p) for p in jplan.seq(col.name())), _delta_type(col.dataType()),
                               bool(col.nullable()), jplan.option(col.comment()))
               for col in jplan.seq(plan.columnsToAdd())]
    replace_columns(spark, target.path, columns, display=target.display())
    return jplan.empty_result(spark)


def _add_columns(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target = _target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    columns = []
    for col in jplan.seq(plan.columnsToAdd()):
        name = tuple(str(p) for p in jplan.seq(col.name()))
        if jplan.option(col.default()) is not None:
            raise DeltaAnalysisError(DEFAULT_NOT_ALLOWED_ON_ADD)
        columns.append(schema_edits.NewColumn(name, _delta_type(col.dataType()), bool(col.nullable()),
                                       jplan.option(col.comment()), _position(jplan.option(col.position()))))
    alter.add_columns(spark, target.path, columns, display=target.display())
    return jplan.empty_result(spark)


def _alter_columns(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target = _target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    changes = []
    for spec in jplan.seq(plan.specs()):
        name = tuple(str(p) for p in jplan.seq(spec.column().name()))
        new_default = jplan.option(spec.newDefaultExpression())
        new_type = jplan.option(spec.newDataType())
        nullable = jplan.option(spec.newNullability())
        changes.append(schema_edits.ColumnChange(
            name,
            data_type=_delta_type(new_type) if new_type is not None else None,
            nullable=bool(nullable) if nullable is not None else None,
            comment=jplan.option(spec.newComment()),
            drop_comment=bool(spec.dropComment()) if jplan.has_method(spec, "dropComment") else False,
            drop_default=_drops_default(spec, new_default),
            position=_position(jplan.option(spec.newPosition())),
            default=_new_default(new_default),
        ))
    alter.change_columns(spark, target.path, changes, display=target.display())
    return jplan.empty_result(spark)


def _drops_default(spec: JavaObject, new_default: Any) -> bool:
    """ALTER COLUMN ... DROP DEFAULT: a flag of its own on Spark 4.1+, an empty default text on 4.0."""
    if jplan.has_method(spec, "dropDefault"):
        return bool(spec.dropDefault())
    return new_default is not None and jplan.expression_sql(new_default) == ""


def _new_default(new_default: Any) -> str | None:
    text = jplan.expression_sql(new_default) if new_default is not None else ""
    return text or None


def _add_check_constraint(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    relation = next((n for n in jplan.walk(plan.child()) if jplan.kind(n) == "UnresolvedRelation"), None)
    target = _target(spark, relation) if relation is not None else None
    if target is None:
        return NOT_DELTA
    constraint = plan.checkConstraint()
    name = constraint.userProvidedName()
    if name is None:
        raise unnamed_check_constraint()
    alter.add_constraint(spark, target.path, str(name), str(constraint.condition()), display=target.display())
    return jplan.empty_result(spark)


def _add_other_constraint(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target = _target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    raise unsupported_constraint(jplan.kind(plan.tableConstraint()), target.display())


def _drop_constraint(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target = _target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    alter.drop_constraint(spark, target.path, str(plan.name()), bool(plan.ifExists()), display=target.display())
    return jplan.empty_result(spark)


def _rename_column(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    from pydelta.spark.ddl.alter_mapping import rename_column

    target = _target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    column = tuple(str(p) for p in jplan.seq(plan.column().name()))
    rename_column(spark, target.path, column, str(plan.newName()), display=target.display())
    return jplan.empty_result(spark)


def _drop_columns(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    from pydelta.spark.ddl.alter_mapping import drop_columns

    target = _target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    columns = [tuple(str(p) for p in jplan.seq(c.name())) for c in jplan.seq(plan.columnsToDrop())]
    drop_columns(spark, target.path, columns, bool(plan.ifExists()), display=target.display())
    return jplan.empty_result(spark)


def _not_allowed(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """Partition and SerDe statements: delta-spark refuses them on Delta tables."""
    target = _target(spark, _table_of(plan))
    if target is None:
        return NOT_DELTA
    raise DeltaAnalysisError(alter.operation_not_allowed(_command(plan)))


def _set_location(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target = _target(spark, plan.table())
    if target is None or target.name is not None:
        return NOT_DELTA  # a named table: Spark's catalog records the new location
    raise DeltaAnalysisError(alter.SET_LOCATION_ON_PATH)


ALTER_HANDLERS: dict[str, Callable[[Any, str, Any], Any]] = {
    "SetTableProperties": _set_properties,
    "UnsetTableProperties": _unset_properties,
    "CommentOnTable": _comment_on_table,
    "AddColumns": _add_columns,
    "AlterColumns": _alter_columns,
    "AddCheckConstraint": _add_check_constraint,
    "AddConstraint": _add_other_constraint,
    "DropConstraint": _drop_constraint,
    "RenameColumn": _rename_column,
    "DropColumns": _drop_columns,
    "ReplaceColumns": _replace_columns,
    "AddPartitions": _not_allowed,
    "DropPartitions": _not_allowed,
    "RenamePartitions": _not_allowed,
    "RecoverPartitions": _not_allowed,
    "SetTableSerDeProperties": _not_allowed,
    "SetTableLocation": _set_location,
}
