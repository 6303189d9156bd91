"""Type widening (seed 002): which type changes are widenings, and applying and recording one.

A change is recorded in `delta.typeChanges` of the nearest ancestor StructField, with
`fieldPath` ("element", "key", "value", dotted for nested collections) when the changed
type is inside an array or map of that field. Data files are never rewritten: readers
upcast old files. Which changes are allowed is `is_widening_type_change`;
automatic widening by schema evolution (mergeSchema, MERGE ... WITH SCHEMA EVOLUTION)
takes delta-spark's narrower set.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydelta.errors import DeltaAnalysisError, InvalidTableError
from pydelta.protocol import properties
from pydelta.protocol.data_types import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    parse_data_type,
    thaw,
    without_field_metadata,
)

ENABLE_KEY = "delta.enableTypeWidening"
TYPE_CHANGES_KEY = "delta.typeChanges"
_INTEGRAL = ("byte", "short", "integer", "long")
_INT_RANK = {"byte": 0, "short": 1, "integer": 2, "long": 3}


def type_changes(f: StructField) -> list[dict[str, Any]]:
    """The field's ``delta.typeChanges`` history (kept verbatim in the schema; [] if none)."""
    raw = f.metadata.get(TYPE_CHANGES_KEY)
    if raw is None:
        return []
    if isinstance(raw, str):  # tolerate writers that stored it as a JSON string
        try:
            raw = json.loads(raw)
        except ValueError:
            raise InvalidTableError(f"field {f.name!r}: {TYPE_CHANGES_KEY} is not valid JSON") from None
    if not isinstance(raw, list):
        raise InvalidTableError(f"field {f.name!r}: {TYPE_CHANGES_KEY} must be a list")
    return [thaw(x) for x in raw]


def is_widening_type_change(from_type: DataType | str, to_type: DataType | str) -> bool:
    """Whether the protocol's Type Widening feature allows `from_type` -> `to_type`.

    Readers must refuse tables whose ``delta.typeChanges`` holds anything else.
    """
    a = parse_data_type(from_type) if isinstance(from_type, str) else from_type
    b = parse_data_type(to_type) if isinstance(to_type, str) else to_type
    if a == b:
        return False
    an = a.name if isinstance(a, PrimitiveType) else None
    bn = b.name if isinstance(b, PrimitiveType) else None
    if an in _INT_RANK and bn in _INT_RANK:
        return _INT_RANK[an] < _INT_RANK[bn]
    if an == "float" and bn == "double":
        return True
    if an in ("byte", "short", "integer") and bn == "double":
        return True
    if an == "date" and bn == "timestamp_ntz":
        return True
    if isinstance(b, DecimalType):
        if isinstance(a, DecimalType):
            k1, k2 = b.precision - a.precision, b.scale - a.scale
            return k1 >= k2 >= 0
        base = {"byte": 10, "short": 10, "integer": 10, "long": 20}.get(an or "")
        if base is not None:
            return b.precision - base >= b.scale >= 0
    return False


def enabled(configuration: dict[str, str]) -> bool:
    return properties.ENABLE_TYPE_WIDENING.get(configuration)


def type_string(dt: DataType) -> str:
    """The type as the schema JSON names it ("integer", "decimal(10,2)")."""
    return dt.name


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


_Change = tuple[tuple[str, ...], DataType, DataType]  # (fieldPath, from, to)


def _record(field: StructField, changes: list[_Change]) -> dict[str, Any]:
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


def _collection_changes(old: DataType, new: DataType, path: tuple[str, ...] = ()) -> list[_Change]:
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
