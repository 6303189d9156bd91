"""ALTER TABLE ... REPLACE COLUMNS on Delta tables, as delta-spark's AlterTableReplaceColumnsDeltaCommand.

The new column list replaces the schema in one metadata-only commit. Columns are matched
to the old ones by name (case-insensitively): a matched column keeps its field metadata
(column mapping id and physical name, generation expression, ...), takes the new type,
nullability and order, and its comment only when the statement gives one. What the data
files could not honour is refused: a tighter nullability, a new NOT NULL column, a type
change other than a widening the table allows, dropping columns without column mapping,
and a struct level that both loses and gains columns (a rename in disguise).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydelta.errors import DeltaAnalysisError
from pydelta.protocol import type_widening
from pydelta.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    column_mapping_mode,
    is_widening_type_change,
    without_field_metadata,
)
from pydelta.protocol.schema_evolution import assign_column_mapping
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.engine import table_snapshot
from pydelta.spark.ddl.alter_mapping import check_not_referenced
from pydelta.spark.ddl.schema_edits import (
    NewColumn,
    _check_name_characters,
    _field_map,
    _json,
    _type_sql,
    commit_metadata,
)
from pydelta.txn.commit_info import Operation


def replace_columns(spark: SparkSession, path: str, columns: Sequence[NewColumn], *, display: str | None = None) -> int:
    """ALTER TABLE ... REPLACE COLUMNS (top-level columns, in statement order); returns the version."""
    from dataclasses import replace

    from pydelta.protocol.identity import identity_columns

    snapshot = table_snapshot(spark, path)
    metadata = snapshot.metadata
    old = metadata.schema
    if identity_columns(old):
        raise DeltaAnalysisError("[DELTA_IDENTITY_COLUMNS_REPLACE_COLUMN_NOT_SUPPORTED] ALTER TABLE REPLACE COLUMNS "
                                 "is not supported for table with IDENTITY columns.")
    given = StructType(tuple(StructField(c.name[-1], c.data_type, c.nullable,
                                         {"comment": c.comment} if c.comment is not None else {}) for c in columns))
    mapped = column_mapping_mode(metadata.configuration) != "none"
    widening = type_widening.enabled(metadata.configuration)
    try:
        reason = _change_reason(old, given, [], mapped, widening)
    except DeltaAnalysisError as e:  # the ambiguous change: reported inside the REPLACE COLUMNS error
        reason = str(e)
    else:
        if reason is not None:
            reason = f"[DELTA_CANNOT_CHANGE_DATA_TYPE] Cannot change data type: {reason}"
    if reason is not None:
        raise DeltaAnalysisError(
            f"[DELTA_UNSUPPORTED_ALTER_TABLE_REPLACE_COL_OP] Unsupported ALTER TABLE REPLACE COLUMNS operation. "
            f"Reason: {reason}\n\n Failed to change schema from:\n{_sql(old)}\n to:\n{_sql(given)}")
    schema = _merged(old, given, widening)
    assert isinstance(schema, StructType)
    lowered = [f.name.lower() for f in schema.fields]
    duplicates = sorted({n for n in lowered if lowered.count(n) > 1})
    if duplicates:
        raise DeltaAnalysisError(f"[DELTA_DUPLICATE_COLUMNS_FOUND.REPLACING_COLUMNS] Found duplicate column(s): "
                                 f"{', '.join(duplicates)}. The duplicate was found while replacing columns.")
    kept = {n.lower() for n in lowered}
    for dropped in (f for f in old.fields if f.name.lower() not in kept):
        check_not_referenced(metadata, [dropped.name])  # constraints and generated columns keep their columns
    lost = [c for c in metadata.partition_columns if c.lower() not in kept]
    if lost:
        raise DeltaAnalysisError(f"[DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN] Dropping partition columns "
                                 f"({', '.join(lost)}) is not allowed.")
    configuration = dict(metadata.configuration)
    if mapped:
        schema, configuration = assign_column_mapping(schema, configuration)  # ids for the new columns
    else:
        for field in schema.fields:
            _check_name_characters(field)
    new = replace(metadata, schema_string=schema.to_json(), configuration=configuration)
    operation = Operation("REPLACE COLUMNS", {"columns": _json([_field_map([], f) for f in given.fields])})
    return commit_metadata(spark, snapshot, new, operation)


def _change_reason(old: DataType, new: DataType, path: list[str], mapped: bool, widening: bool) -> str | None:
    """delta-spark's canChangeDataType: why the files could not be read as `new`, or None."""
    if isinstance(old, PrimitiveType) and old.name == "void":
        return None  # a NullType column takes any type
    where = ".".join(path)
    if isinstance(old, StructType) and isinstance(new, StructType):
        old_by = {f.name.lower(): f for f in old.fields}
        new_names = {f.name.lower() for f in new.fields}
        missing = [f.name for f in old.fields if f.name.lower() not in new_names]
        added = [f.name for f in new.fields if f.name.lower() not in old_by]
        if missing and added:
            raise DeltaAnalysisError(
                f"[DELTA_AMBIGUOUS_DATA_TYPE_CHANGE] Cannot change data type of {where or 'the table'} from "
                f"{_sql(old)} to {_sql(new)}. This change contains column removals and additions, therefore "
                "they are ambiguous. Please make these changes individually using ALTER TABLE [ADD | DROP | RENAME] "
                "COLUMN.")
        if missing and not mapped:
            return f"dropping column(s) [{', '.join(missing)}]" + (f" from {where}" if where else "")
        for field in new.fields:
            before = old_by.get(field.name.lower())
            inner = [*path, field.name]
            if before is None:
                if not field.nullable:
                    return f"adding non-nullable column {'.'.join(inner)}"
                continue
            if before.nullable and not field.nullable:
                return f"tightening nullability of {'.'.join(inner)}"
            reason = _change_reason(before.type, field.type, inner, mapped, widening)
            if reason is not None:
                return reason
        return None
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        if old.contains_null and not new.contains_null:
            return f"tightening nullability of {where}.element"
        return _change_reason(old.element_type, new.element_type, [*path, "element"], mapped, widening)
    if isinstance(old, MapType) and isinstance(new, MapType):
        if old.value_contains_null and not new.value_contains_null:
            return f"tightening nullability of {where}.value"
        return (_change_reason(old.key_type, new.key_type, [*path, "key"], mapped, widening)
                or _change_reason(old.value_type, new.value_type, [*path, "value"], mapped, widening))
    if without_field_metadata(old) == without_field_metadata(new):
        return None
    if widening and is_widening_type_change(old, new):
        return None
    return f"changing data type of {where} from {_type_sql(old)} to {_type_sql(new)}"


def _sql(dt: DataType) -> str:
    """A type as Spark prints it (a schema as struct<...> with its column names as they are)."""
    if isinstance(dt, StructType):
        from pydelta.spark.read.scan import spark_schema

        return str(spark_schema(dt).simpleString())
    return _type_sql(dt)


def _merged(old: DataType, new: DataType, widening: bool) -> DataType:
    """delta-spark's changeDataType: `new`'s shape, order and nullability; matched fields keep
    their old name and metadata (the comment only changes when `new` gives one)."""
    if isinstance(old, StructType) and isinstance(new, StructType):
        old_by = {f.name.lower(): f for f in old.fields}
        fields = []
        for field in new.fields:
            before = old_by.get(field.name.lower())
            if before is None:
                fields.append(field)
                continue
            metadata = dict(before.metadata)
            if "comment" in field.metadata:
                metadata["comment"] = field.metadata["comment"]
            merged_type = _merged(before.type, field.type, widening)
            kept = StructField(before.name, before.type, field.nullable, metadata)
            if widening and not isinstance(merged_type, StructType) and merged_type != before.type:
                fields.append(type_widening.record_evolution(kept, merged_type))
            else:
                fields.append(StructField(before.name, merged_type, field.nullable, metadata))
        return StructType(tuple(fields))
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        return ArrayType(_merged(old.element_type, new.element_type, widening), new.contains_null)
    if isinstance(old, MapType) and isinstance(new, MapType):
        return MapType(_merged(old.key_type, new.key_type, widening), _merged(old.value_type, new.value_type, widening),
                       new.value_contains_null)
    return new
