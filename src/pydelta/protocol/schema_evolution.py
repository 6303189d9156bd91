"""Checking incoming data against a table schema, and merging new columns in.

Rules follow delta-spark's: names match case-insensitively, new columns need
`mergeSchema`, a type may only change to one that holds every old value
(a "safe" upcast the writer can cast to), and column mapping tables give every
new field a fresh id and physical name.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from pydelta.errors import SchemaMismatchError
from pydelta.protocol.schema import (
    COLUMN_MAPPING_ID_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
)
from pydelta.protocol.type_widening import allowed_by_schema_evolution, record_evolution

MAX_COLUMN_ID_KEY = "delta.columnMapping.maxColumnId"
_INT_RANK = {"byte": 0, "short": 1, "integer": 2, "long": 3}


def _type_name(dt: DataType) -> str:
    return getattr(dt, "name", str(dt))


def can_upcast(src: DataType, dst: DataType) -> bool:
    """True when values of `src` can be written into a `dst` column without loss."""
    if src == dst:
        return True
    if isinstance(src, PrimitiveType) and isinstance(dst, PrimitiveType):
        s, d = src.name, dst.name
        if s in _INT_RANK and d in _INT_RANK:
            return _INT_RANK[s] <= _INT_RANK[d]
        if s in ("byte", "short", "integer") and d == "double":
            return True  # not long: a DOUBLE holds 53 bits, larger longs would be rounded
        if s == "float" and d == "double":
            return True
        if s in ("byte", "short") and d == "float":
            return True
        return s == "void"
    if isinstance(src, DecimalType) and isinstance(dst, DecimalType):
        return dst.scale >= src.scale and (dst.precision - dst.scale) >= (src.precision - src.scale)
    if isinstance(src, PrimitiveType) and src.name in _INT_RANK and isinstance(dst, DecimalType):
        digits = {"byte": 3, "short": 5, "integer": 10, "long": 20}[src.name]
        return dst.precision - dst.scale >= digits
    return False


def _lookup(fields: tuple[StructField, ...], name: str) -> StructField | None:
    for f in fields:
        if f.name.lower() == name.lower():
            return f
    return None


def merge_schema(
    table: StructType, incoming: StructType, *, allow_new_columns: bool, path: str = "", widen_types: bool = False
) -> StructType:
    """The table schema after writing `incoming` (unchanged unless new columns are allowed).

    `widen_types` (schema evolution on a table with type widening enabled): a column whose
    data has a wider type takes that type, recorded in `delta.typeChanges`.
    Raises SchemaMismatchError naming every incompatible column.
    """
    problems: list[str] = []
    merged = _merge_struct(table, incoming, allow_new_columns, path, problems, widen_types)
    seen: dict[str, str] = {}
    for f in incoming.fields:
        key = f.name.lower()
        if key in seen:
            problems.append(f"duplicate column {path}{f.name!r} in the data")
        seen[key] = f.name
    if problems:
        raise SchemaMismatchError(
            "A schema mismatch detected when writing to the Delta table: "
            + "; ".join(problems)
            + ". To add new columns use .option('mergeSchema', 'true'); to replace the schema on overwrite use "
            ".option('overwriteSchema', 'true')."
        )
    return merged


def _merge_struct(
    table: StructType, incoming: StructType, allow_new: bool, path: str, problems: list[str], widen: bool = False
) -> StructType:
    out = list(table.fields)
    for f in incoming.fields:
        existing = _lookup(table.fields, f.name)
        if existing is None:
            if allow_new:
                out.append(StructField(f.name, _nullable_type(f.type), True, dict(f.metadata)))
            else:
                problems.append(f"column {path}{f.name!r} is not in the table schema")
            continue
        merged_type = _merge_type(existing.type, f.type, allow_new, f"{path}{existing.name}.", problems, widen)
        if merged_type is not existing.type:
            out[out.index(existing)] = (
                record_evolution(existing, merged_type) if widen
                else StructField(existing.name, merged_type, existing.nullable, dict(existing.metadata))
            )
    return StructType(tuple(out))


def _merge_type(
    table_type: DataType, data_type: DataType, allow_new: bool, path: str, problems: list[str], widen: bool = False
) -> DataType:
    if isinstance(table_type, StructType) and isinstance(data_type, StructType):
        merged = _merge_struct(table_type, data_type, allow_new, path, problems, widen)
        return table_type if merged == table_type else merged
    if isinstance(table_type, ArrayType) and isinstance(data_type, ArrayType):
        elem = _merge_type(table_type.element_type, data_type.element_type, allow_new, path, problems, widen)
        return table_type if elem is table_type.element_type else ArrayType(elem, table_type.contains_null)
    if isinstance(table_type, MapType) and isinstance(data_type, MapType):
        k = _merge_type(table_type.key_type, data_type.key_type, allow_new, path, problems, widen)
        v = _merge_type(table_type.value_type, data_type.value_type, allow_new, path, problems, widen)
        if k is table_type.key_type and v is table_type.value_type:
            return table_type
        return MapType(k, v, table_type.value_contains_null)
    if can_upcast(data_type, table_type):
        return table_type
    if widen and allowed_by_schema_evolution(table_type, data_type):
        return data_type
    problems.append(
        f"column {path.rstrip('.')!r} has type {_type_name(table_type)} in the table but "
        f"{_type_name(data_type)} in the data"
    )
    return table_type


def _nullable_type(dt: DataType) -> DataType:
    if isinstance(dt, StructType):
        return StructType(tuple(StructField(f.name, _nullable_type(f.type), True, dict(f.metadata)) for f in dt.fields))
    if isinstance(dt, ArrayType):
        return ArrayType(_nullable_type(dt.element_type), True)
    if isinstance(dt, MapType):
        return MapType(_nullable_type(dt.key_type), _nullable_type(dt.value_type), True)
    return dt


def as_nullable(schema: StructType) -> StructType:
    """Every field nullable: how delta-spark stores a schema taken from a DataFrame."""
    return _nullable_type(schema)  # type: ignore[return-value]


def assign_column_mapping(schema: StructType, configuration: Mapping[str, str]) -> tuple[StructType, dict[str, str]]:
    """Give fields without an id/physical name fresh ones; returns the schema and updated config."""
    max_id = int(configuration.get(MAX_COLUMN_ID_KEY, "0"))

    def visit_type(dt: DataType) -> DataType:
        if isinstance(dt, StructType):
            return StructType(tuple(visit_field(f) for f in dt.fields))
        if isinstance(dt, ArrayType):
            return ArrayType(visit_type(dt.element_type), dt.contains_null)
        if isinstance(dt, MapType):
            return MapType(visit_type(dt.key_type), visit_type(dt.value_type), dt.value_contains_null)
        return dt

    def visit_field(f: StructField) -> StructField:
        nonlocal max_id
        md = dict(f.metadata)
        if COLUMN_MAPPING_ID_KEY not in md:
            max_id += 1
            md[COLUMN_MAPPING_ID_KEY] = max_id
        else:
            max_id = max(max_id, int(md[COLUMN_MAPPING_ID_KEY]))
        if COLUMN_MAPPING_PHYSICAL_NAME_KEY not in md:
            md[COLUMN_MAPPING_PHYSICAL_NAME_KEY] = f"col-{uuid.uuid4()}"
        return StructField(f.name, visit_type(f.type), f.nullable, md)

    out = visit_type(schema)
    config = dict(configuration)
    config[MAX_COLUMN_ID_KEY] = str(max_id)
    return out, config  # type: ignore[return-value]
