"""ALTER TABLE on Delta tables: each statement is one metadata-only commit, as in delta-spark.

Semantics, error texts and commitInfo follow delta-spark (alterDeltaTableCommands.scala,
DeltaCatalog.alterTable, DeltaConfigs.validateConfigurations, DeltaOperations):

* SET TBLPROPERTIES validates `delta.*` keys (unknown ones are refused unless
  spark.databricks.delta.allowArbitraryProperties.enabled is true) and normalizes their
  case; the transaction derives the protocol: `delta.feature.<name>`, `delta.min*Version`
  and feature-enabling properties upgrade it, and none of the requests is stored.
  `comment` sets the table description. Enabling column mapping (none -> name) gives the
  existing columns their own names as physical names, so existing files stay readable.
* UNSET TBLPROPERTIES removes keys (SQL always passes if_exists=True: Spark's DSv2 path
  is always IF EXISTS, and delta-spark records it so).
* ADD COLUMNS adds nullable columns (NOT NULL is refused) at the end, FIRST or AFTER a
  sibling, also inside structs (through array `element` and map `key`/`value`).
* ADD CONSTRAINT checks the existing rows with one Spark job; DROP CONSTRAINT.
* ALTER/CHANGE COLUMN: COMMENT, DROP NOT NULL, SET NOT NULL (after checking that no
  existing row is null; delta-spark itself refuses SET NOT NULL), FIRST/AFTER, DROP
  DEFAULT. A type change is a widening (delta.enableTypeWidening), recorded in delta.typeChanges.

Every check runs before the commit, so a refused statement leaves the table unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, NoReturn

from pydelta.errors import DeltaAnalysisError, DeltaNotImplementedError
from pydelta.log.snapshot import Snapshot
from pydelta.protocol import type_widening
from pydelta.protocol.actions import Metadata
from pydelta.protocol.properties import (
    ALLOW_ARBITRARY_PROPERTIES_CONF,
    CONSTRAINT_PREFIX,
    FEATURE_PREFIX,
    normalize_keys,
    validate_properties,
)
from pydelta.protocol.schema import (
    COLUMN_MAPPING_MODE_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    CURRENT_DEFAULT_KEY,
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    column_mapping_mode,
    quote_path,
    walk_fields,
    without_field_metadata,
)
from pydelta.protocol.schema_evolution import assign_column_mapping
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.conf import conf_bool
from pydelta.spark.base.engine import table_snapshot
from pydelta.spark.ddl import remove_column_mapping as remove_cm
from pydelta.spark.ddl.schema_edits import (
    ColumnChange,
    NewColumn,
    Position,
    _attribute_name,
    _case_sensitive,
    _check_name_characters,
    _display,
    _field_map,
    _find,
    _json,
    _not_found,
    _replace_at,
    _resolve,
    _type_sql,
    change_operation,
    commit_metadata,
)
from pydelta.txn import row_tracking, row_tracking_backfill
from pydelta.txn.commit_info import Operation

ALLOW_ARBITRARY_PROPERTIES = ALLOW_ARBITRARY_PROPERTIES_CONF
ASSUME_DROP_CONSTRAINT_IF_EXISTS = "spark.databricks.delta.constraints.assumesDropIfExists.enabled"
RESERVED_CONSTRAINT_NAME = "__CHAR_VARCHAR_STRING_LENGTH_CHECK__"
SET_LOCATION_ON_PATH = ("[DELTA_CANNOT_SET_LOCATION_ON_PATH_IDENTIFIER] Cannot change the location of a path based "
                        "table.")


def operation_not_allowed(command: str) -> str:
    """delta-spark's refusal of a statement Delta tables do not have (partitions, SerDe)."""
    return f"[DELTA_OPERATION_NOT_ALLOWED] Operation not allowed: `{command}` is not supported for Delta tables"


# ---- statement parts ---------------------------------------------------------------------


# ---- table properties: protocol/properties.py -------------------------------------------------


def _conf_true(spark: SparkSession, key: str) -> bool:
    return conf_bool(spark, key, False)


def set_table_properties(
    spark: SparkSession, path: str, properties: Mapping[str, str], *, display: str | None = None
) -> int:
    """ALTER TABLE ... SET TBLPROPERTIES; returns the committed version."""
    validated = validate_properties(properties, _conf_true(spark, ALLOW_ARBITRARY_PROPERTIES))
    snapshot = table_snapshot(spark, path)
    if (str(validated.get(row_tracking.ENABLE_KEY, "")).strip().lower() == "true"
            and not row_tracking.enabled(snapshot.metadata) and snapshot.num_files):
        from pydelta.spark.base.transactions import engine_info

        snapshot = row_tracking_backfill.backfill(snapshot, engine_info(spark))  # existing rows get row IDs first
    if (validated.get(COLUMN_MAPPING_MODE_KEY) == "none" and remove_cm.removal_allowed(spark)
            and column_mapping_mode(snapshot.metadata.configuration) != "none"):
        version = remove_cm.remove_column_mapping(spark, path, unset=False)  # rewrites every file, own commit
        if len(validated) == 1:
            return version
        snapshot = table_snapshot(spark, path)  # the other properties follow in a second commit, as in delta-spark
    metadata = snapshot.metadata
    added: dict[str, str] = {}
    for key, value in validated.items():
        lower = key.lower()
        if lower.startswith(CONSTRAINT_PREFIX):
            raise DeltaAnalysisError(
                "[DELTA_ADD_CONSTRAINTS] Please use ALTER TABLE ADD CONSTRAINT to add CHECK constraints.")
        if key == "location":
            raise DeltaAnalysisError("[DELTA_CANNOT_CHANGE_LOCATION] Cannot change the 'location' of the Delta table "
                                     "using SET TBLPROPERTIES. Please use ALTER TABLE SET LOCATION instead.")
        if key == "provider":
            raise DeltaAnalysisError("[DELTA_CANNOT_CHANGE_PROVIDER] 'provider' is a reserved table property, "
                                     "and cannot be altered.")
        if lower == FEATURE_PREFIX + "clustering":
            raise DeltaAnalysisError("[DELTA_ALTER_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED] Cannot enable "
                                     "clustering table feature using ALTER TABLE SET TBLPROPERTIES. Please use CREATE "
                                     "OR REPLACE TABLE CLUSTER BY to create a Delta table with clustering.")
        if key == "clusteringColumns":
            raise DeltaAnalysisError("[DELTA_CANNOT_MODIFY_TABLE_PROPERTY] The Delta table configuration "
                                     "clusteringColumns cannot be specified by the user")
        if key != "comment":
            added[key] = value
    configuration = {**metadata.configuration, **added}
    schema = _column_mapping_schema(metadata, configuration)
    new = replace(metadata, configuration=configuration, schema_string=schema.to_json(),
                  description=validated.get("comment", metadata.description))
    return commit_metadata(spark, snapshot, new, Operation.set_table_properties(validated))


def _column_mapping_schema(metadata: Metadata, configuration: dict[str, str]) -> StructType:
    """The schema under the new column mapping mode (and maxColumnId into `configuration`)."""
    old, new = column_mapping_mode(metadata.configuration), column_mapping_mode(configuration)
    if old == new:
        return metadata.schema
    if old == "none" and new == "name":
        # delta-spark: existing columns keep their names as physical names (their files stay readable).
        schema, updated = assign_column_mapping(_physical_names_as_is(metadata.schema), configuration)  # type: ignore[arg-type]
        configuration.update(updated)
        return schema
    # Other changes are refused, and so is name/id -> none when set_table_properties did not remove mapping
    # (spark.databricks.delta.columnMapping.allowRemoval=false, or a value other than exactly 'none').
    raise remove_cm.mode_change_refused(old, new)


def _physical_names_as_is(dt: DataType) -> DataType:
    if isinstance(dt, StructType):
        return StructType(tuple(
            StructField(f.name, _physical_names_as_is(f.type), f.nullable,
                        {COLUMN_MAPPING_PHYSICAL_NAME_KEY: f.name, **f.metadata})
            for f in dt.fields))
    if isinstance(dt, ArrayType):
        return ArrayType(_physical_names_as_is(dt.element_type), dt.contains_null)
    if isinstance(dt, MapType):
        return MapType(_physical_names_as_is(dt.key_type), _physical_names_as_is(dt.value_type), dt.value_contains_null)
    return dt


def unset_table_properties(spark: SparkSession, path: str, keys: Sequence[str], if_exists: bool = True, *,
                           display: str | None = None) -> int:
    """ALTER TABLE ... UNSET TBLPROPERTIES; returns the committed version."""
    normalized = normalize_keys(keys)
    snapshot = table_snapshot(spark, path)
    metadata = snapshot.metadata
    if not if_exists:
        for key in normalized:
            if key not in metadata.configuration:
                raise DeltaAnalysisError(f"[DELTA_UNSET_NON_EXISTENT_PROPERTY] Attempted to unset non-existent "
                                         f"property '{key}' in table {_display(path, display)}")
    old_mode = column_mapping_mode(metadata.configuration)
    if COLUMN_MAPPING_MODE_KEY in normalized and old_mode != "none":
        if not remove_cm.removal_allowed(spark):
            raise remove_cm.mode_change_refused(old_mode)
        version = remove_cm.remove_column_mapping(spark, path, unset=True)  # rewrites every file, own commit
        if len(normalized) == 1:
            return version
        snapshot = table_snapshot(spark, path)  # the other keys follow in a second commit, as in delta-spark
        metadata = snapshot.metadata
    configuration = {k: v for k, v in metadata.configuration.items() if k not in normalized}
    description = None if "comment" in normalized else metadata.description
    new = replace(metadata, configuration=configuration, description=description)
    return commit_metadata(spark, snapshot, new, Operation.unset_table_properties(normalized, if_exists))


# ---- constraints -------------------------------------------------------------------------------


def unnamed_check_constraint() -> DeltaAnalysisError:
    return DeltaAnalysisError("a CHECK constraint on a Delta table needs a name: "
                              "ALTER TABLE t ADD CONSTRAINT name CHECK (condition)")


def unsupported_constraint(kind: str, display: str) -> DeltaNotImplementedError:
    """PRIMARY KEY / FOREIGN KEY / UNIQUE on a Delta table: not a Delta constraint."""
    return DeltaNotImplementedError(f"{kind} on {display}: Delta tables only support CHECK constraints "
                                    "(PRIMARY KEY, FOREIGN KEY and UNIQUE are not supported)")


def add_constraint(spark: SparkSession, path: str, name: str, expr: str, *, display: str | None = None) -> int:
    """ALTER TABLE ... ADD CONSTRAINT name CHECK (expr): existing rows must satisfy it."""
    from pyspark.sql import functions as F

    if name.upper() == RESERVED_CONSTRAINT_NAME:
        raise DeltaAnalysisError(f"[DELTA_INVALID_CONSTRAINT_NAME] Cannot use {name} as the name of a CHECK "
                                 "constraint. This name is reserved.")
    snapshot = table_snapshot(spark, path)
    metadata = snapshot.metadata
    key = CONSTRAINT_PREFIX + name.lower()
    old = metadata.configuration.get(key)
    if old is not None:
        raise DeltaAnalysisError(f"[DELTA_CONSTRAINT_ALREADY_EXISTS] Constraint '{name}' already exists. Please "
                                 f"delete the old constraint first.\nOld constraint:\n{old}")
    table = _table_dataframe(spark, snapshot)
    _check_constraint_expression(table, name, expr)
    violations = table.where(~F.coalesce(F.expr(expr), F.lit(False))).count()
    if violations:
        raise DeltaAnalysisError(f"[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] {violations} rows in "
                                 f"{_display(path, display)} violate the new CHECK constraint ({expr})")
    new = replace(metadata, configuration={**metadata.configuration, key: expr})
    return commit_metadata(spark, snapshot, new, Operation("ADD CONSTRAINT", {"name": name, "expr": expr}),
                           read_all=True)


def _check_constraint_expression(table: Any, name: str, expr: str) -> None:
    """The expression must resolve against the table, be boolean, deterministic and not aggregate."""
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    try:
        checked = table.select(F.expr(expr).alias("check"))
        data_type = checked.schema["check"].dataType
    except (AnalysisException, ParseException) as e:
        raise DeltaAnalysisError(f"CHECK constraint {name} ({expr}) is not valid for this table: "
                                 f"{str(e).splitlines()[0]}") from None
    aggregate, deterministic = _analyzed_shape(checked)
    if aggregate:
        raise DeltaAnalysisError(f"[DELTA_AGGREGATE_IN_CHECK_CONSTRAINT] Found {expr} in a CHECK constraint. "
                                 "Aggregate expressions are not allowed in CHECK constraints.")
    if not deterministic:
        raise DeltaAnalysisError(f"[DELTA_NON_DETERMINISTIC_EXPRESSION_IN_CHECK_CONSTRAINT] Found {expr} in a "
                                 "CHECK constraint. A CHECK constraint cannot use a nondeterministic expression.")
    if not isinstance(data_type, BooleanType):
        raise DeltaAnalysisError(f"[DELTA_NON_BOOLEAN_CHECK_CONSTRAINT] CHECK constraint '{name}' ({expr}) "
                                 "should be a boolean expression.")


# Spark's nondeterministic SQL functions, for Spark Connect clients (no analyzed plan object).
_NONDETERMINISTIC = re.compile(r"\b(rand|randn|random|uuid|shuffle|monotonically_increasing_id|spark_partition_id|"
                               r"input_file_name|input_file_block_start|input_file_block_length|randstr|uniform)\(",
                               re.IGNORECASE)


def _analyzed_shape(checked: Any) -> tuple[bool, bool]:
    """(is an aggregate, is deterministic) of `SELECT <expr> AS check FROM table`."""
    from pydelta.spark.base import jplan
    from pydelta.spark.base.connect_session import analyzed_plan, is_connect

    if not is_connect(checked.sparkSession):
        analyzed = checked._jdf.queryExecution().analyzed()
        return (analyzed.getClass().getSimpleName() == "Aggregate",
                all(e.deterministic() for e in jplan.seq(analyzed.expressions())))
    plan = analyzed_plan(checked)
    if plan is None:
        raise DeltaAnalysisError("cannot check the CHECK constraint: the Spark Connect server's analyzed plan "
                                 "did not read as expected")
    top = plan[1]
    return top.startswith("Aggregate"), _NONDETERMINISTIC.search(top) is None


def drop_constraint(
    spark: SparkSession, path: str, name: str, if_exists: bool = False, *, display: str | None = None
) -> int:
    """ALTER TABLE ... DROP CONSTRAINT [IF EXISTS] name (a missing one with IF EXISTS still commits)."""
    snapshot = table_snapshot(spark, path)
    metadata = snapshot.metadata
    key = CONSTRAINT_PREFIX + name.lower()
    old = metadata.configuration.get(key)
    if old is None and not if_exists and not _conf_true(spark, ASSUME_DROP_CONSTRAINT_IF_EXISTS):
        raise DeltaAnalysisError(
            f"[DELTA_CONSTRAINT_DOES_NOT_EXIST] Cannot drop nonexistent constraint {name} from table "
            f"{_display(path, display)}. To avoid throwing an error, provide the parameter IF EXISTS or set the "
            f"SQL session configuration {ASSUME_DROP_CONSTRAINT_IF_EXISTS} to true.")
    params: dict[str, object] = {"name": name, "expr": old, "existed": "true"} if old is not None else \
        {"name": name, "existed": "false"}
    new = replace(metadata, configuration={k: v for k, v in metadata.configuration.items() if k != key})
    return commit_metadata(spark, snapshot, new, Operation("DROP CONSTRAINT", params))


# ---- columns -------------------------------------------------------------------------------------


def add_columns(spark: SparkSession, path: str, columns: Sequence[NewColumn], *, display: str | None = None) -> int:
    """ALTER TABLE ... ADD COLUMNS: nullable columns, in statement order."""
    for column in columns:
        if not column.nullable or any(not f.nullable for f in walk_fields(column.data_type)):
            raise DeltaAnalysisError("[DELTA_OPERATION_NOT_ALLOWED] Operation not allowed: `NOT NULL in ALTER TABLE "
                                     "ADD COLUMNS` is not supported for Delta tables")
    snapshot = table_snapshot(spark, path)
    metadata = snapshot.metadata
    case_sensitive = _case_sensitive(spark)
    mode = column_mapping_mode(metadata.configuration)
    schema: StructType = metadata.schema
    logged = []
    for column in columns:
        parent, parent_type = _resolve(schema, column.name[:-1], case_sensitive)
        field = StructField(column.name[-1], column.data_type, True,
                            {"comment": column.comment} if column.comment is not None else {})
        if not isinstance(parent_type, StructType):
            raise DeltaAnalysisError(f"[DELTA_ADD_COLUMN_PARENT_NOT_STRUCT] Cannot add {quote_path(column.name)} "
                                     f"because its parent is not a StructType. Found {parent_type.name}")
        if _find(parent_type, field.name, case_sensitive) is not None:
            raise DeltaAnalysisError(f"[FIELD_ALREADY_EXISTS] Cannot add column, because "
                                     f"{quote_path([*parent, field.name])} already exists in "
                                     f"{_display(path, display)}.")
        if mode == "none":
            _check_name_characters(field)
        position = _resolved_position(parent_type, column.position, parent, case_sensitive)
        schema = _replace_at(schema, parent, partial(_insert, field=field, position=position))
        entry: dict[str, object] = {"column": _field_map(parent, field)}
        if position is not None:
            entry["position"] = str(position)
        logged.append(entry)
    configuration = dict(metadata.configuration)
    if mode != "none":
        schema, configuration = assign_column_mapping(schema, configuration)
    new = replace(metadata, schema_string=schema.to_json(), configuration=configuration)
    return commit_metadata(spark, snapshot, new, Operation("ADD COLUMNS", {"columns": _json(logged)}))


def change_columns(
    spark: SparkSession, path: str, changes: Sequence[ColumnChange], *, display: str | None = None
) -> int:
    """ALTER TABLE ... ALTER/CHANGE COLUMN (one or several specs)."""
    snapshot = table_snapshot(spark, path)
    metadata = snapshot.metadata
    case_sensitive = _case_sensitive(spark)
    schema: StructType = metadata.schema
    widening = type_widening.enabled(metadata.configuration)
    seen: set[tuple[str, ...]] = set()
    not_null_checks: list[list[str]] = []
    logged: list[tuple[list[str], StructField, Position | None]] = []
    for change in changes:
        full, _ = _resolve(schema, change.name, case_sensitive)
        parent, name = full[:-1], full[-1]
        if tuple(full) in seen:
            raise DeltaAnalysisError(
                f"[NOT_SUPPORTED_CHANGE_SAME_COLUMN] ALTER TABLE ALTER/CHANGE COLUMN is not supported for changing "
                f"{_display(path, display)}'s column {quote_path(full)} including its nested fields multiple times "
                "in the same command.")
        seen.add(tuple(full))
        _, parent_type = _resolve(schema, parent, case_sensitive)
        if not isinstance(parent_type, StructType):
            if widening and change.data_type is not None and _only_type(change):
                schema, entry = _widen_inside_collection(schema, full, change.data_type, case_sensitive)
                logged.append(entry)
                continue
            _refuse_collection_change(change, full)
        old = parent_type.field(name)
        if change.default is not None:
            from pydelta.spark.ddl.column_defaults import checked_default

            checked_default(spark, change.default, _type_sql(old.type), quote_path(full), "ALTER TABLE")
        if (change.data_type is not None and not parent
                and without_field_metadata(change.data_type) != without_field_metadata(old.type)):
            from pydelta.spark.ddl.alter_mapping import check_not_referenced

            check_not_referenced(metadata, full)
        new = _changed_field(old, change, full, widening)
        if old.nullable and not new.nullable:
            if _inside_collection(schema, parent):
                raise DeltaAnalysisError(f"[DELTA_NESTED_NOT_NULL_CONSTRAINT] {quote_path(full)} is inside an array "
                                         "or map; Delta does not support NOT NULL constraints nested within arrays "
                                         "or maps.")
            not_null_checks.append(full)
        position = _resolved_position(parent_type, change.position, parent, case_sensitive)
        schema = _replace_at(schema, parent, partial(_move, name=name, field=new, position=position))
        logged.append((parent, new, position))
    if not_null_checks:
        _check_no_nulls(spark, snapshot, not_null_checks, _display(path, display))
    new_md = replace(metadata, schema_string=schema.to_json())
    return commit_metadata(spark, snapshot, new_md, change_operation(logged), read_all=bool(not_null_checks))


def _changed_field(old: StructField, change: ColumnChange, full: Sequence[str], widening: bool) -> StructField:
    if change.data_type is not None and without_field_metadata(change.data_type) != without_field_metadata(old.type):
        if not widening or not isinstance(change.data_type, (PrimitiveType, DecimalType)):
            raise DeltaAnalysisError(
                f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] ALTER TABLE CHANGE COLUMN is not supported for "
                f"changing column {quote_path(full)} from {_type_sql(old.type)} to {_type_sql(change.data_type)}"
                + ("" if widening else " (a widening type change needs delta.enableTypeWidening = true)"))
        old = type_widening.widen_field(old, (), change.data_type)
    metadata = dict(old.metadata)
    if change.comment is not None:
        metadata["comment"] = change.comment
    if change.drop_comment:
        metadata.pop("comment", None)
    if change.drop_default:
        metadata.pop(CURRENT_DEFAULT_KEY, None)
    if change.default is not None:
        metadata[CURRENT_DEFAULT_KEY] = change.default
    nullable = old.nullable if change.nullable is None else change.nullable
    return StructField(old.name, old.type, nullable, metadata)


def _only_type(change: ColumnChange) -> bool:
    return (change.comment is None and not change.drop_comment and change.nullable is None
            and change.position is None and not change.drop_default and change.default is None)


def _widen_inside_collection(schema: StructType, full: Sequence[str], new_type: DataType,
                             case_sensitive: bool) -> tuple[StructType, tuple[list[str], StructField, Position | None]]:
    """ALTER COLUMN c.element / c.key / c.value TYPE t: recorded on the nearest struct field with its fieldPath."""
    k = max(i for i in range(len(full)) if isinstance(_resolve(schema, full[:i], case_sensitive)[1], StructType))
    holder_parent, holder = list(full[:k]), full[k]
    _, struct = _resolve(schema, holder_parent, case_sensitive)
    widened = type_widening.widen_field(struct.field(holder), full[k + 1:], new_type)  # type: ignore[union-attr]
    schema = _replace_at(schema, holder_parent, lambda s: _move(s, holder, widened, None))
    return schema, (holder_parent, widened, None)


def _refuse_collection_change(change: ColumnChange, full: Sequence[str]) -> NoReturn:
    """delta-spark: map keys/values and array elements take no comment, nullability or position change."""
    if change.comment is not None:
        raise DeltaAnalysisError(f"[DELTA_UNSUPPORTED_COMMENT_MAP_ARRAY] Can't add a comment to {quote_path(full)}. "
                                 "Adding a comment to a map key/value or array element is not supported.")
    if change.data_type is not None:
        raise DeltaAnalysisError(f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] ALTER TABLE CHANGE COLUMN is not "
                                 f"supported for changing the type of {quote_path(full)} (a map key/value or array "
                                 "element) unless it is a widening on a table with delta.enableTypeWidening = true")
    raise DeltaAnalysisError(f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] ALTER TABLE CHANGE COLUMN is not "
                             f"supported for changing column {quote_path(full)} (a map key/value or array element)")


def _inside_collection(schema: DataType, parent: Sequence[str]) -> bool:
    """True when the path to `parent` goes through an array or map."""
    dt = schema
    for part in parent:
        if isinstance(dt, (ArrayType, MapType)):
            return True
        dt = dt.field(part).type  # type: ignore[union-attr]
    return isinstance(dt, (ArrayType, MapType))


def _check_no_nulls(spark: SparkSession, snapshot: Snapshot, columns: list[list[str]], display: str) -> None:
    """One Spark job counting, per column made NOT NULL, the rows holding a null there."""
    from pyspark.sql import functions as F

    conditions = []
    for full in columns:
        present = [f"{quote_path(full[:i])} IS NOT NULL" for i in range(1, len(full))]
        conditions.append(" AND ".join([*present, f"{quote_path(full)} IS NULL"]))
    table = _table_dataframe(spark, snapshot)
    counts = table.select(*[F.count_if(F.expr(c)).alias(f"c{i}") for i, c in enumerate(conditions)]).first()
    for i, full in enumerate(columns):
        if counts[i]:
            raise DeltaAnalysisError(f"[DELTA_NEW_NOT_NULL_VIOLATION] {counts[i]} rows in {display} violate the new "
                                     f"NOT NULL constraint on {_attribute_name(full)}")


# ---- schema helpers --------------------------------------------------------------------------------


def _resolved_position(struct: StructType, position: Position | None, parent: Sequence[str],
                       case_sensitive: bool) -> Position | None:
    """`position` with its AFTER column spelled as in the table (it must exist in `struct`)."""
    if position is None or position.after is None:
        return position
    anchor = _find(struct, position.after, case_sensitive)
    if anchor is None:
        raise _not_found([*parent, position.after], struct)
    return Position(anchor.name)


def _insert(struct: StructType, field: StructField, position: Position | None) -> StructType:
    fields = list(struct.fields)
    if position is None:
        index = len(fields)
    elif position.after is None:
        index = 0
    else:
        index = [f.name for f in fields].index(position.after) + 1
    fields.insert(index, field)
    return StructType(tuple(fields))


def _move(struct: StructType, name: str, field: StructField, position: Position | None) -> StructType:
    """`struct` with field `name` replaced by `field`, moved as delta-spark's reorderFieldList does."""
    names = [f.name for f in struct.fields]
    start = names.index(name)
    if position is None:
        fields = list(struct.fields)
        fields[start] = field
        return StructType(tuple(fields))
    others = [f for f in struct.fields if f.name != name]
    if position.after is None:
        index = 0
    elif position.after == name:
        index = start
    else:
        index = [f.name for f in others].index(position.after) + 1
    return StructType((*others[:index], field, *others[index:]))


# ---- logging and committing ------------------------------------------------------------------------


def _table_dataframe(spark: SparkSession, snapshot: Snapshot) -> Any:
    from pydelta.spark.read.scan import read_snapshot

    return read_snapshot(spark, snapshot)

