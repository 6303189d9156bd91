"""A Delta table's schema, partitioning and file statistics in Iceberg's terms, as delta-spark's
Iceberg converter maps them: Iceberg field ids are the column-mapping ids (array elements and
map keys/values take theirs from `delta.columnMapping.nested.ids`), names are the logical ones,
each partition column is an identity field (ids from 1000), and a data file's partition values
and min/max/null counts come from its `add` action."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from pyiceberg.conversions import to_bytes
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

from pydelta.errors import InvalidTableError
from pydelta.protocol import data_types as D
from pydelta.protocol.column_mapping import (
    COLUMN_MAPPING_ID_KEY,
    COLUMN_MAPPING_NESTED_IDS_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
)
from pydelta.protocol.partition_values import deserialize_partition_value

FIRST_PARTITION_FIELD_ID = 1000
_EPOCH = _dt.date(1970, 1, 1)
_EPOCH_TS = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)

_PRIMITIVES: dict[str, PrimitiveType] = {
    "string": StringType(), "long": LongType(), "integer": IntegerType(), "short": IntegerType(),
    "byte": IntegerType(), "float": FloatType(), "double": DoubleType(), "boolean": BooleanType(),
    "binary": BinaryType(), "date": DateType(), "timestamp": TimestamptzType(), "timestamp_ntz": TimestampType(),
}


def _field_id(f: D.StructField) -> int:
    fid = f.metadata.get(COLUMN_MAPPING_ID_KEY)
    if fid is None:
        raise InvalidTableError(f"UniForm (Iceberg) needs column mapping ids: field {f.name!r} has none")
    return int(fid)


def _physical(f: D.StructField) -> str:
    return str(f.metadata.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY, f.name))


def _iceberg_type(dt: D.DataType, nested_ids: Mapping[str, Any], path: str) -> IcebergType:
    if isinstance(dt, D.StructType):
        return StructType(*[_nested_field(f) for f in dt.fields])
    if isinstance(dt, D.ArrayType):
        element = f"{path}.element"
        return ListType(element_id=_nested_id(nested_ids, element),
                        element_type=_iceberg_type(dt.element_type, nested_ids, element),
                        element_required=not dt.contains_null)
    if isinstance(dt, D.MapType):
        key, value = f"{path}.key", f"{path}.value"
        return MapType(key_id=_nested_id(nested_ids, key), key_type=_iceberg_type(dt.key_type, nested_ids, key),
                       value_id=_nested_id(nested_ids, value),
                       value_type=_iceberg_type(dt.value_type, nested_ids, value),
                       value_required=not dt.value_contains_null)
    atomic = _atomic_type(dt)
    if atomic is None:
        raise InvalidTableError(f"UniForm (Iceberg) cannot convert the type {dt!r}")
    return atomic


def _atomic_type(dt: D.DataType) -> PrimitiveType | None:
    """Iceberg's type for a Delta atomic type (None: a nested type, or one Iceberg 2 has not)."""
    if isinstance(dt, D.DecimalType):
        return DecimalType(dt.precision, dt.scale)
    return _PRIMITIVES.get(dt.name) if isinstance(dt, D.PrimitiveType) else None


def _nested_id(nested_ids: Mapping[str, Any], key: str) -> int:
    if key not in nested_ids:
        raise InvalidTableError(f"UniForm (Iceberg) needs an id for {key} in {COLUMN_MAPPING_NESTED_IDS_KEY}")
    return int(nested_ids[key])


def _nested_field(f: D.StructField) -> NestedField:
    nested = f.metadata.get(COLUMN_MAPPING_NESTED_IDS_KEY)
    ids = nested if isinstance(nested, Mapping) else {}
    doc = f.metadata.get("comment")
    return NestedField(field_id=_field_id(f), name=f.name, field_type=_iceberg_type(f.type, ids, _physical(f)),
                       required=not f.nullable, doc=doc if isinstance(doc, str) else None)


def iceberg_schema(schema: D.StructType, schema_id: int = 0) -> Schema:
    """The Iceberg schema of a column-mapped Delta schema (logical names, Delta's ids)."""
    return Schema(*[_nested_field(f) for f in schema.fields], schema_id=schema_id)


def partition_spec(schema: D.StructType, partition_columns: tuple[str, ...] | list[str],
                   spec_id: int = 0) -> PartitionSpec:
    """Identity fields on the partition columns, in order, with ids from 1000."""
    by_name = {f.name: f for f in schema.fields}
    fields = [PartitionField(source_id=_field_id(by_name[c]), field_id=FIRST_PARTITION_FIELD_ID + i,
                             transform=IdentityTransform(), name=c) for i, c in enumerate(partition_columns)]
    return PartitionSpec(*fields, spec_id=spec_id)


# ---- per file ----------------------------------------------------------------------------------------


def _internal(value: Any, dt: D.DataType) -> Any:
    """A typed Delta value in pyiceberg's internal form (dates as days, timestamps as micros)."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        delta = value - _EPOCH_TS
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, _dt.date):
        return (value - _EPOCH).days
    if isinstance(dt, D.PrimitiveType) and dt.name == "binary" and isinstance(value, str):
        return value.encode("utf-8")
    return value


def partition_record(schema: D.StructType, partition_columns: tuple[str, ...] | list[str],
                     values: Mapping[str, str | None]) -> Record:
    """The Iceberg partition tuple of a file (`values`: its add's partitionValues, by physical name)."""
    by_name = {f.name: f for f in schema.fields}
    out = []
    for column in partition_columns:
        field = by_name[column]
        raw = values.get(_physical(field))
        typed = deserialize_partition_value(raw, field.type, timezone="UTC")
        out.append(_internal(typed, field.type))
    return Record(*out)


def _leaves(st: D.StructType, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], D.StructField]]:
    """(physical path, field) of every field reachable through structs only (stats are kept there)."""
    for f in st.fields:
        path = (*prefix, _physical(f))
        if isinstance(f.type, D.StructType):
            yield from _leaves(f.type, path)
        else:
            yield path, f


def _at(stats: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(stats, Mapping) or part not in stats:
            return None
        stats = stats[part]
    return stats


_BOUNDED = frozenset({"string", "long", "integer", "short", "byte", "float", "double", "boolean", "date",
                      "timestamp", "timestamp_ntz"})


def _bound(raw: Any, dt: D.DataType, upper: bool) -> Any:
    """A Delta min/max statistic in pyiceberg's internal form, or None where it cannot be one."""
    if raw is None or isinstance(raw, (dict, list)):
        return None
    if isinstance(dt, D.DecimalType):
        return Decimal(str(raw)).quantize(Decimal(1).scaleb(-dt.scale))
    name = dt.name if isinstance(dt, D.PrimitiveType) else ""
    if name not in _BOUNDED:
        return None
    if name in ("float", "double"):
        value = float(raw)
        return None if value != value else value  # NaN bounds say nothing
    if name in ("timestamp", "timestamp_ntz"):
        text = str(raw).replace("Z", "+00:00")
        parsed = _dt.datetime.fromisoformat(text)
        micros = _internal(parsed if name == "timestamp" or parsed.tzinfo else parsed.replace(tzinfo=_dt.UTC), dt)
        # Delta keeps milliseconds: the true maximum may be up to 999 microseconds later.
        return micros + 999 if upper else micros
    if name == "date":
        return _internal(_dt.date.fromisoformat(str(raw)), dt)
    if name == "string":
        return str(raw)
    if name == "boolean":
        return bool(raw)
    return int(raw)


def file_metrics(schema: D.StructType, stats_json: str | None) -> dict[str, Any]:
    """record_count and Iceberg's null counts and bounds (by field id) from a Delta stats JSON."""
    if not stats_json:
        return {}
    try:
        stats = json.loads(stats_json)
    except ValueError:
        return {}
    out: dict[str, Any] = {"null_value_counts": {}, "lower_bounds": {}, "upper_bounds": {}}
    if isinstance(stats.get("numRecords"), int):
        out["record_count"] = stats["numRecords"]
    for path, field in _leaves(schema):
        fid = _field_id(field)
        nulls = _at(stats.get("nullCount"), path)
        if isinstance(nulls, int) and not isinstance(nulls, bool):
            out["null_value_counts"][fid] = nulls
        iceberg_type = _atomic_type(field.type)
        if iceberg_type is None:
            continue
        for key, upper, target in (("minValues", False, "lower_bounds"), ("maxValues", True, "upper_bounds")):
            try:
                value = _bound(_at(stats.get(key), path), field.type, upper)
                if value is not None:
                    out[target][fid] = to_bytes(iceberg_type, value)
            except (ValueError, TypeError, ArithmeticError):
                continue  # a statistic Iceberg cannot hold is left out, as delta-spark does
    return out
