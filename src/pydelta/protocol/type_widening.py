"""Type widening on the write side (seed 002): applying a type change and recording it.

A change is recorded in `delta.typeChanges` of the nearest ancestor StructField, with
`fieldPath` ("element", "key", "value", dotted for nested collections) when the changed
type is inside an array or map of that field. Data files are never rewritten: readers
upcast old files. Which changes are allowed is `schema.is_widening_type_change`;
automatic widening by schema evolution (mergeSchema, MERGE ... WITH SCHEMA EVOLUTION)
takes delta-spark's narrower set.
"""

from __future__ import annotations

from typing import Sequence

from pydelta.errors import DeltaAnalysisError
from pydelta.protocol.schema import (
    TYPE_CHANGES_KEY,
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    is_widening_type_change,
    type_changes,
    without_field_metadata,
)
from pydelta.protocol import properties

ENABLE_KEY = "delta.enableTypeWidening"
_INTEGRAL = ("byte", "short", "integer", "long")


def enabled(configuration: dict[str, str]) -> bool:
    return properties.ENABLE_TYPE_WIDENING.get(configuration)


def type_string(dt: DataType) -> str:
    """The type as the schema JSON names it ("integer", "decimal(10,2)")."""
    return dt.name  # type: ignore[union-attr]


def allowed_by_schema_evolution(from_type: DataType, to_type: DataType) -> bool:
    """delta-spark's automatic widening: integral types, float -> double, date -> timestamp_ntz, decimals."""
    if not is_widening_type_change(from_type, to_type):
        return False
    if isinstance(from_type, DecimalType) and isinstance(to_type, DecimalType):
        return True
    a = from_type.name if isinstance(from_type, PrimitiveType) else None
    b = to_type.name if isinstance(to_type, PrimitiveType) else None
    return (a in _INTEGRAL and b in _INTEGRAL) or (a, b) in (("float", "double"), ("date", "timestamp_ntz"))


def _type_at(dt: DataType, path: Sequence[str]) -> DataType:
    for step in path:
        if step == "element" and isinstance(dt, ArrayType):
            dt = dt.element_type
        elif step == "key" and isinstance(dt, MapType):
            dt = dt.key_type
        elif step == "value" and isinstance(dt, MapType):
            dt = dt.value_type
        else:
            raise DeltaAnalysisError(f"invalid field path {'.'.join(path)!r} inside type {dt!r}")
    return dt


def _with_type_at(dt: DataType, path: Sequence[str], new: DataType) -> DataType:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if head == "element" and isinstance(dt, ArrayType):
        return ArrayType(_with_type_at(dt.element_type, rest, new), dt.contains_null)
    if head == "key" and isinstance(dt, MapType):
        return MapType(_with_type_at(dt.key_type, rest, new), dt.value_type, dt.value_contains_null)
    if head == "value" and isinstance(dt, MapType):
        return MapType(dt.key_type, _with_type_at(dt.value_type, rest, new), dt.value_contains_null)
    raise DeltaAnalysisError(f"invalid field path {'.'.join(path)!r} inside type {dt!r}")


def _record(field: StructField, changes: list[tuple[tuple[str, ...], DataType, DataType]]) -> dict:
    history = type_changes(field)
    for path, old, new in changes:
        entry = {"fromType": type_string(old), "toType": type_string(new)}  # delta-spark's order
        if path:
            entry["fieldPath"] = ".".join(path)
        history.append(entry)
    return {**dict(field.metadata), TYPE_CHANGES_KEY: history}


def widen_field(field: StructField, field_path: Sequence[str], new_type: DataType) -> StructField:
    """`field` with the type at `field_path` (element/key/value steps inside it) changed to `new_type`.

    Raises DeltaAnalysisError (delta-spark's DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP)
    for anything but a supported widening.
    """
    old = _type_at(field.type, field_path)
    if not is_widening_type_change(old, new_type):
        column = ".".join([field.name, *field_path])
        raise DeltaAnalysisError(
            f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] ALTER TABLE CHANGE COLUMN is not supported for changing "
            f"column {column} from {type_string(old).upper()} to {type_string(new_type).upper()}")
    metadata = _record(field, [(tuple(field_path), old, new_type)])
    return StructField(field.name, _with_type_at(field.type, field_path, new_type), field.nullable, metadata)


def _collection_changes(old: DataType, new: DataType, path: tuple[str, ...] = ()) -> list:
    """(fieldPath, from, to) for primitive types that differ outside nested structs (they record their own)."""
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        return _collection_changes(old.element_type, new.element_type, (*path, "element"))
    if isinstance(old, MapType) and isinstance(new, MapType):
        return (_collection_changes(old.key_type, new.key_type, (*path, "key"))
                + _collection_changes(old.value_type, new.value_type, (*path, "value")))
    if isinstance(old, StructType) or old == new:
        return []
    return [(path, old, new)]


def record_evolution(old: StructField, new_type: DataType) -> StructField:
    """`old` with the type schema evolution gave it, and `delta.typeChanges` for what it widened."""
    changes = _collection_changes(old.type, new_type)
    metadata = _record(old, changes) if changes else dict(old.metadata)
    return StructField(old.name, new_type, old.nullable, metadata)


def without_type_changes(dt: DataType) -> DataType:
    """`dt` with every `delta.typeChanges` entry removed (DROP FEATURE typeWidening, once files are rewritten)."""
    return without_field_metadata(dt, (TYPE_CHANGES_KEY,))


def has_type_changes(field: StructField) -> bool:
    """Whether `field` or anything inside it records a type change."""
    if TYPE_CHANGES_KEY in field.metadata:
        return True
    return any(TYPE_CHANGES_KEY in f.metadata for f in _fields_within(field.type))


def _fields_within(dt: DataType) -> list[StructField]:
    if isinstance(dt, StructType):
        return [g for f in dt.fields for g in (f, *_fields_within(f.type))]
    if isinstance(dt, ArrayType):
        return _fields_within(dt.element_type)
    if isinstance(dt, MapType):
        return _fields_within(dt.key_type) + _fields_within(dt.value_type)
    return []
