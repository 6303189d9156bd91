"""How a specified schema differs from a table's: delta-spark's SchemaUtils.reportDifferences.

CREATE TABLE with columns at a location that already holds a Delta table only names that
table; the columns must then match it exactly, and each difference is reported in delta-spark's
words (DELTA_CREATE_TABLE_SCHEME_MISMATCH lists them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydelta.protocol.schema import ArrayType, DataType, MapType, StructField, StructType

GENERATION_EXPRESSION_KEY = "delta.generationExpression"


def schema_differences(existing: StructType, specified: StructType) -> list[str]:
    """Every difference between `existing` and `specified`; empty when they match."""
    return _struct_differences(existing, specified, "")


def _struct_differences(existing: StructType, specified: StructType, prefix: str) -> list[str]:
    existing_names = existing.field_names
    specified_names = specified.field_names
    out = []
    missing = [prefix + n for n in existing_names if n not in specified_names]
    if missing:
        out.append(f"Specified schema is missing field(s): {', '.join(missing)}")
    extra = [prefix + n for n in specified_names if n not in existing_names]
    if extra:
        out.append(f"Specified schema has additional field(s): {', '.join(extra)}")
    for name in existing_names:
        if name in specified_names:
            out.extend(_field_differences(existing.field(name), specified.field(name), prefix))
    return out


def _field_differences(existing: StructField, specified: StructField, prefix: str) -> list[str]:
    name = prefix + existing.name
    out = []
    if existing.nullable != specified.nullable:
        out.append(f"Field {name} is {_non(specified.nullable)}nullable in specified schema but "
                   f"{_non(existing.nullable)}nullable in existing schema.")
    if dict(existing.metadata) != dict(specified.metadata):
        out.append(_metadata_difference(name, specified.metadata, existing.metadata))
    out.extend(_type_differences(existing.type, specified.type, name))
    return out


def _type_differences(existing: DataType, specified: DataType, field: str) -> list[str]:
    if isinstance(existing, StructType) and isinstance(specified, StructType):
        return _struct_differences(existing, specified, f"{field}.")
    if isinstance(existing, ArrayType) and isinstance(specified, ArrayType):
        out = _type_differences(existing.element_type, specified.element_type, f"{field}[]")
        if existing.contains_null != specified.contains_null:
            out.append(f"Array field {field}[] {_can(specified.contains_null)} contain null in specified schema "
                       f"but {_can(existing.contains_null)} in existing schema")
        return out
    if isinstance(existing, MapType) and isinstance(specified, MapType):
        out = _type_differences(existing.key_type, specified.key_type, f"{field}[key]")
        out.extend(_type_differences(existing.value_type, specified.value_type, f"{field}[value]"))
        if existing.value_contains_null != specified.value_contains_null:
            out.append(f"Map field {field} {_can(specified.value_contains_null)} contain null values in specified "
                       f"schema but {_can(existing.value_contains_null)} in existing schema")
        return out
    if existing != specified:
        return [f"Specified type for {field} is different from existing schema:\n"
                f"Specified: {_type_name(specified)}\nExisting:  {_type_name(existing)}"]
    return []


def _metadata_difference(field: str, specified: Mapping[str, Any], existing: Mapping[str, Any]) -> str:
    parts = []
    specified_expr = specified.get(GENERATION_EXPRESSION_KEY)
    existing_expr = existing.get(GENERATION_EXPRESSION_KEY)
    if specified_expr != existing_expr:
        parts.append(f"Specified generation expression for field {field} is different from existing schema:\n"
                     f"Specified: {specified_expr or ''}\nExisting:  {existing_expr or ''}")
    specified_rest = {k: v for k, v in specified.items() if k != GENERATION_EXPRESSION_KEY}
    existing_rest = {k: v for k, v in existing.items() if k != GENERATION_EXPRESSION_KEY}
    if specified_rest != existing_rest:
        parts.append(f"Specified metadata for field {field} is different from existing schema:\n"
                     f"Specified: {_metadata_json(specified_rest)}\nExisting:  {_metadata_json(existing_rest)}")
    return "\n".join(parts)


def _metadata_json(metadata: Mapping[str, Any]) -> str:
    return json.dumps(dict(metadata), separators=(",", ":"))


def _type_name(data_type: DataType) -> str:
    return str(getattr(data_type, "name", data_type))


def _non(nullable: bool) -> str:
    return "" if nullable else "non-"


def _can(can: bool) -> str:
    return "can" if can else "can not"
