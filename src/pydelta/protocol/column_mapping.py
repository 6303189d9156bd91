"""Column mapping (PROTOCOL.md, "Column Mapping"): the table's mode, a field's physical
name and column id, and the physical schema data files are written and read with."""

from __future__ import annotations

from collections.abc import Mapping

from pydelta.errors import InvalidTableError
from pydelta.protocol.data_types import (
    PARQUET_FIELD_ID_KEY,
    PARQUET_FIELD_NESTED_IDS_KEY,
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
)

COLUMN_MAPPING_MODE_KEY = "delta.columnMapping.mode"
COLUMN_MAPPING_ID_KEY = "delta.columnMapping.id"
COLUMN_MAPPING_PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
COLUMN_MAPPING_NESTED_IDS_KEY = "delta.columnMapping.nested.ids"


def column_mapping_mode(configuration: Mapping[str, str] | None) -> str:
    """'none', 'id' or 'name' from the table configuration (absent means 'none')."""
    raw = (configuration or {}).get(COLUMN_MAPPING_MODE_KEY)
    if raw is None:
        return "none"
    mode = str(raw).strip().lower()
    if mode not in ("none", "id", "name"):
        raise InvalidTableError(f"unsupported column mapping mode {raw!r} (expected none, id or name)")
    return mode


def physical_name(f: StructField) -> str:
    """Name the column has in data files, partition values and stats (column mapping aware)."""
    name = f.metadata.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY)
    return name if isinstance(name, str) and name else f.name


def field_id(f: StructField) -> int | None:
    fid = f.metadata.get(COLUMN_MAPPING_ID_KEY)
    if fid is None or isinstance(fid, bool):
        return None
    try:
        return int(fid)
    except (TypeError, ValueError):
        raise InvalidTableError(f"field {f.name!r} has a non-integer {COLUMN_MAPPING_ID_KEY}: {fid!r}") from None


def to_physical_schema(schema: StructType, mode: str, *, field_ids: bool = True) -> StructType:
    """The schema as data files store it: every field, at any depth, under its physical name.

    Like delta-spark, in 'id' and 'name' mode each field keeps its metadata and gets
    ``parquet.field.id`` (and ``parquet.field.nested.ids`` for IcebergCompatV2 element/key/value
    ids), which `to_arrow_schema` turns into Parquet field ids. In 'none' mode the schema is
    returned as is. Readers of 'name' mode tables pass ``field_ids=False``: files written
    before column mapping was enabled have no ids, and names are what resolve columns there.
    """
    if mode == "none":
        return schema
    if mode not in ("id", "name"):
        raise InvalidTableError(f"unsupported column mapping mode {mode!r}")
    return _physical_struct(schema, mode, field_ids)


def _physical_type(dt: DataType, mode: str, field_ids: bool) -> DataType:
    if isinstance(dt, StructType):
        return _physical_struct(dt, mode, field_ids)
    if isinstance(dt, ArrayType):
        return ArrayType(_physical_type(dt.element_type, mode, field_ids), dt.contains_null)
    if isinstance(dt, MapType):
        return MapType(
            _physical_type(dt.key_type, mode, field_ids),
            _physical_type(dt.value_type, mode, field_ids),
            dt.value_contains_null,
        )
    return dt


def _physical_struct(st: StructType, mode: str, field_ids: bool = True) -> StructType:
    out = []
    for f in st.fields:
        pname = f.metadata.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY)
        fid = field_id(f)
        if not isinstance(pname, str) or not pname:
            raise InvalidTableError(f"column mapping mode {mode!r}: field {f.name!r} has no physical name")
        if fid is None:
            raise InvalidTableError(f"column mapping mode {mode!r}: field {f.name!r} has no column id")
        md = dict(f.metadata)
        if field_ids:
            md[PARQUET_FIELD_ID_KEY] = fid
            nested = f.metadata.get(COLUMN_MAPPING_NESTED_IDS_KEY)
            if isinstance(nested, Mapping) and nested:
                md[PARQUET_FIELD_NESTED_IDS_KEY] = dict(nested)
        out.append(StructField(pname, _physical_type(f.type, mode, field_ids), f.nullable, md))
    return StructType(tuple(out))

