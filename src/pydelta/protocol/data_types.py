"""Delta's data types (the schema model) with their two serialised forms, Delta JSON and Arrow.

The JSON form is Spark SQL's schema JSON, the subset the Delta protocol allows
(PROTOCOL.md, "Schema Serialization Format"). This module parses it and writes it back
byte-for-byte as delta-spark does (compact, fixed key order, field metadata kept
verbatim), and converts to and from Arrow. The model and both forms share a module because
`StructType` offers them as methods (`to_json`, `from_json`, `to_arrow`). Column mapping is
in `column_mapping`, type widening in `type_widening`; `schema` re-exports the lot. No Spark.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import pyarrow as pa

from pydelta.errors import (
    DeltaIllegalArgumentError,
    InvalidTableError,
    UnsupportedDataTypeError,
)

# ---- metadata keys the Arrow conversion reads ----------------------------------------

#: Spark's key for the Parquet field id of a (physical) field; delta-spark puts it there.
PARQUET_FIELD_ID_KEY = "parquet.field.id"
#: Spark's key for the Parquet field ids of array elements / map keys and values.
PARQUET_FIELD_NESTED_IDS_KEY = "parquet.field.nested.ids"
#: The Arrow field-metadata key pyarrow's Parquet writer/reader uses for field ids.
ARROW_FIELD_ID_KEY = b"PARQUET:field_id"
# A column's DEFAULT value (table feature allowColumnDefaults): its SQL text, as Spark stores it.
CURRENT_DEFAULT_KEY = "CURRENT_DEFAULT"


# ---- data types --------------------------------------------------------------------

_PRIMITIVE_NAMES = frozenset(
    {
        "string",
        "long",
        "integer",
        "short",
        "byte",
        "float",
        "double",
        "boolean",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
        "variant",
        "void",
    }
)


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """A type serialized as a bare name (``"long"``, ``"timestamp_ntz"``, ``"variant"``...)."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in _PRIMITIVE_NAMES:
            raise DeltaIllegalArgumentError(f"unknown primitive Delta type {self.name!r}")

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class DecimalType:
    """``decimal(p,s)``; Delta allows precision and scale up to 38."""

    precision: int = 10
    scale: int = 0

    def __post_init__(self) -> None:
        if not (1 <= self.precision <= 38) or not (0 <= self.scale <= self.precision):
            raise DeltaIllegalArgumentError(
                f"invalid decimal({self.precision},{self.scale}): need 1 <= precision <= 38 "
                "and 0 <= scale <= precision"
            )

    @property
    def name(self) -> str:
        return f"decimal({self.precision},{self.scale})"

    def __str__(self) -> str:
        return self.name


#: The default CRS of both geospatial types (Parquet, Delta and Iceberg agree on it).
DEFAULT_GEO_CRS = "OGC:CRS84"
#: The edge interpolation algorithm of a geography, spelled as Spark writes it.
DEFAULT_GEOGRAPHY_ALGORITHM = "SPHERICAL"
#: delta-kernel's (and the Parquet spec's) algorithms; Spark 4.3 only implements SPHERICAL.
GEOGRAPHY_ALGORITHMS = frozenset({"SPHERICAL", "VINCENTY", "THOMAS", "ANDOYER", "KARNEY"})
#: The CRS of Spark's mixed-SRID type (SRID -1), which Delta tables may not store.
MIXED_SRID_CRS = "SRID:ANY"


@dataclass(frozen=True, slots=True)
class GeometryType:
    """``geometry(<crs>)``: WKB values with planar edges (the ``geospatial`` table feature).

    The CRS is kept as written (``OGC:CRS84``, ``SRID:0``, ``EPSG:3857``), as Spark does.
    """

    crs: str = DEFAULT_GEO_CRS

    @property
    def name(self) -> str:
        return f"geometry({self.crs})"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class GeographyType:
    """``geography(<crs>, <algorithm>)``: WKB values with geodesic edges.

    The algorithm is upper-cased like Spark's JSON (delta-kernel writes ``spherical``; Spark
    reads either and writes ``SPHERICAL``, so delta-spark normalizes it on its next commit).
    """

    crs: str = DEFAULT_GEO_CRS
    algorithm: str = DEFAULT_GEOGRAPHY_ALGORITHM

    def __post_init__(self) -> None:
        algorithm = self.algorithm.upper()
        if algorithm not in GEOGRAPHY_ALGORITHMS:
            raise DeltaIllegalArgumentError(
                f"invalid geography edge interpolation algorithm {self.algorithm!r}: expected one of "
                f"{', '.join(sorted(a.lower() for a in GEOGRAPHY_ALGORITHMS))}"
            )
        object.__setattr__(self, "algorithm", algorithm)

    @property
    def name(self) -> str:
        return f"geography({self.crs}, {self.algorithm})"

    def __str__(self) -> str:
        return self.name


def is_geospatial(dt: object) -> bool:
    """Whether `dt` itself is a geometry or geography type."""
    return isinstance(dt, (GeometryType, GeographyType))


@dataclass(frozen=True, slots=True)
class ArrayType:
    element_type: DataType
    contains_null: bool = True

    @property
    def name(self) -> str:
        return "array"


@dataclass(frozen=True, slots=True)
class MapType:
    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True

    @property
    def name(self) -> str:
        return "map"


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


class FrozenMetadata(dict[str, Any]):
    """A read-only dict for field metadata: immutable like the rest of the model, yet still a
    plain dict for ``json.dumps``, equality and pickling."""

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("StructField metadata is read-only; use StructField.with_metadata")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMetadata, (dict(self),))

    # dict declares `__hash__: ClassVar[None]` (unhashable); this frozen one is hashable
    def __hash__(self) -> int:  # type: ignore[override]
        return hash(_canonical_json(self))


def _freeze_metadata(metadata: Mapping[str, Any] | None) -> FrozenMetadata:
    # Deep copy so a caller mutating its dict (or a nested list in it) cannot change us.
    if isinstance(metadata, FrozenMetadata):
        return metadata
    return FrozenMetadata(thaw(metadata or {}))


@dataclass(frozen=True, slots=True)
class StructField:
    """A (possibly nested) column. ``metadata`` is a read-only copy of the JSON object."""

    name: str
    type: DataType
    nullable: bool = True
    metadata: Mapping[str, Any] = dc_field(default_factory=FrozenMetadata)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", _freeze_metadata(self.metadata))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StructField):
            return NotImplemented
        return (
            self.name == other.name
            and self.type == other.type
            and self.nullable == other.nullable
            and self.metadata == other.metadata
        )

    def __hash__(self) -> int:
        return hash((self.name, self.type, self.nullable, _canonical_json(self.metadata)))

    def __repr__(self) -> str:
        md = f", metadata={dict(self.metadata)!r}" if self.metadata else ""
        return f"StructField({self.name!r}, {self.type!r}, nullable={self.nullable}{md})"

    def with_name(self, name: str) -> StructField:
        return StructField(name, self.type, self.nullable, self.metadata)

    def with_type(self, data_type: DataType) -> StructField:
        return StructField(self.name, data_type, self.nullable, self.metadata)

    def with_metadata(self, metadata: Mapping[str, Any]) -> StructField:
        return StructField(self.name, self.type, self.nullable, metadata)


@dataclass(frozen=True, slots=True)
class StructType:
    """A struct: the table schema itself or a nested struct column."""

    fields: tuple[StructField, ...] = ()

    def __post_init__(self) -> None:
        fields = tuple(self.fields)
        for f in fields:
            if not isinstance(f, StructField):
                raise DeltaIllegalArgumentError(f"StructType fields must be StructField, got {f!r}")
        object.__setattr__(self, "fields", fields)

    @property
    def name(self) -> str:
        return "struct"

    # -- container protocol
    def __iter__(self) -> Iterator[StructField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, key: int | str) -> StructField:
        if isinstance(key, str):
            return self.field(key)
        return self.fields[key]

    def __contains__(self, name: object) -> bool:
        return any(f.name == name for f in self.fields)

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str, *, case_sensitive: bool = True) -> StructField:
        """The field called `name`; Delta names are unique ignoring case, so either lookup is safe."""
        for f in self.fields:
            if f.name == name:
                return f
        if not case_sensitive:
            lowered = name.lower()
            for f in self.fields:
                if f.name.lower() == lowered:
                    return f
        raise KeyError(name)

    def get(self, name: str, default: StructField | None = None) -> StructField | None:
        try:
            return self.field(name)
        except KeyError:
            return default

    def select(self, names: Sequence[str]) -> StructType:
        """The sub-struct with these top-level fields, in the given order (e.g. partition columns)."""
        return StructType(tuple(self.field(n) for n in names))

    def without(self, names: Sequence[str]) -> StructType:
        """The struct minus these top-level fields (e.g. the data schema without partition columns)."""
        drop = {n.lower() for n in names}
        return StructType(tuple(f for f in self.fields if f.name.lower() not in drop))

    def leaf_fields(self) -> list[tuple[tuple[str, ...], StructField]]:
        """Every non-struct field with its path, descending into structs only (not arrays/maps)."""
        out: list[tuple[tuple[str, ...], StructField]] = []
        for f in self.fields:
            if isinstance(f.type, StructType):
                out.extend(((f.name, *p), leaf) for p, leaf in f.type.leaf_fields())
            else:
                out.append(((f.name,), f))
        return out

    def leaf_paths(self) -> list[tuple[str, ...]]:
        return [p for p, _ in self.leaf_fields()]

    def to_json_value(self) -> dict[str, Any]:
        return _struct_to_json_value(self)

    def to_json(self) -> str:
        """Compact JSON exactly as delta-spark writes ``schemaString``."""
        return json.dumps(self.to_json_value(), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, schema_string: str) -> StructType:
        return parse_schema(schema_string)

    def to_arrow(self) -> pa.Schema:
        return to_arrow_schema(self)

    def __repr__(self) -> str:
        return f"StructType({list(self.fields)!r})"


DataType = PrimitiveType | DecimalType | GeometryType | GeographyType | ArrayType | MapType | StructType


def find_type(dt: DataType, matches: Callable[[DataType], bool]) -> DataType | None:
    """The first type in `dt` that `matches` (pre-order: itself, then through structs, arrays and maps)."""
    if matches(dt):
        return dt
    children: Sequence[DataType] = ()
    if isinstance(dt, StructType):
        children = [f.type for f in dt.fields]
    elif isinstance(dt, ArrayType):
        children = [dt.element_type]
    elif isinstance(dt, MapType):
        children = [dt.key_type, dt.value_type]
    for child in children:
        found = find_type(child, matches)
        if found is not None:
            return found
    return None


def contains_type(dt: DataType, matches: Callable[[DataType], bool]) -> bool:
    """Whether a type `matches` anywhere in `dt`: itself, or through structs, arrays and maps."""
    return find_type(dt, matches) is not None


def contains_geospatial(dt: DataType) -> bool:
    """Whether a geometry or geography type occurs anywhere in `dt` (delta-spark's
    ``DeltaGeoSpatial.containsGeoColumns``)."""
    return contains_type(dt, is_geospatial)


def contains_variant(dt: DataType) -> bool:
    """Whether a variant type occurs anywhere in `dt`."""
    return contains_type(dt, lambda t: isinstance(t, PrimitiveType) and t.name == "variant")


STRING = PrimitiveType("string")
LONG = PrimitiveType("long")
INTEGER = PrimitiveType("integer")
SHORT = PrimitiveType("short")
BYTE = PrimitiveType("byte")
FLOAT = PrimitiveType("float")
DOUBLE = PrimitiveType("double")
BOOLEAN = PrimitiveType("boolean")
BINARY = PrimitiveType("binary")
DATE = PrimitiveType("date")
TIMESTAMP = PrimitiveType("timestamp")
TIMESTAMP_NTZ = PrimitiveType("timestamp_ntz")
VARIANT = PrimitiveType("variant")
VOID = PrimitiveType("void")


# ---- walking fields ----------------------------------------------------------------


def walk_fields(dt: DataType) -> Iterator[StructField]:
    """Every StructField inside `dt` at any depth (through structs, arrays and maps)."""
    if isinstance(dt, StructType):
        for f in dt.fields:
            yield f
            yield from walk_fields(f.type)
    elif isinstance(dt, ArrayType):
        yield from walk_fields(dt.element_type)
    elif isinstance(dt, MapType):
        yield from walk_fields(dt.key_type)
        yield from walk_fields(dt.value_type)


def without_field_metadata(dt: DataType, keys: Iterable[str] | None = None) -> DataType:
    """`dt` with these metadata keys (all of them when `keys` is None) removed from every
    field, however deeply nested (structs, array elements, map keys and values)."""
    dropped = None if keys is None else frozenset(keys)

    def strip(t: DataType) -> DataType:
        if isinstance(t, StructType):
            return StructType(tuple(
                StructField(f.name, strip(f.type), f.nullable,
                            {} if dropped is None else {k: v for k, v in f.metadata.items() if k not in dropped})
                for f in t.fields))
        if isinstance(t, ArrayType):
            return ArrayType(strip(t.element_type), t.contains_null)
        if isinstance(t, MapType):
            return MapType(strip(t.key_type), strip(t.value_type), t.value_contains_null)
        return t

    return strip(dt)


# ---- JSON parsing ------------------------------------------------------------------

_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
# The spellings Spark's and delta-kernel's JSON parsers accept (DataTypeJsonSerDe.java).
_GEOMETRY_RE = re.compile(r"^geometry\(\s*(\w+:-?\w+)\s*\)$")
_GEOGRAPHY_RE = re.compile(r"^geography\(\s*(\w+:-?\w+)\s*(?:,\s*(\w+)\s*)?\)$")
_GEOGRAPHY_ALG_RE = re.compile(r"^geography\(\s*(\w+)\s*\)$")
# Spark accepts these spellings when reading JSON schemas.
_PRIMITIVE_ALIASES = {"null": "void"}


def parse_schema(schema_string: str) -> StructType:
    """Parse ``metaData.schemaString``; a bad or unknown type raises a clear DeltaError."""
    try:
        value = json.loads(schema_string)
    except (TypeError, ValueError) as e:
        raise InvalidTableError(f"schemaString is not valid JSON: {e}") from None
    dt = parse_data_type(value)
    if not isinstance(dt, StructType):
        raise InvalidTableError(f"schemaString must describe a struct, got {value!r:.200}")
    return dt


def parse_data_type(value: Any) -> DataType:
    """Parse one type from its JSON value (a name string or an object)."""
    if isinstance(value, str):
        return _parse_type_name(value)
    if not isinstance(value, Mapping):
        raise InvalidTableError(f"invalid Delta type in schema: {value!r:.200}")
    kind = value.get("type")
    try:
        if kind == "struct":
            fields_json = value.get("fields", [])
            if not isinstance(fields_json, list):
                raise InvalidTableError(f"struct 'fields' must be a list, got {fields_json!r:.200}")
            return StructType(tuple(_parse_field(f) for f in fields_json))
        if kind == "array":
            return ArrayType(parse_data_type(value["elementType"]), _as_bool(value.get("containsNull", True)))
        if kind == "map":
            return MapType(
                parse_data_type(value["keyType"]),
                parse_data_type(value["valueType"]),
                _as_bool(value.get("valueContainsNull", True)),
            )
    except KeyError as e:
        raise InvalidTableError(f"{kind} type is missing {e.args[0]!r}: {value!r:.200}") from None
    if isinstance(kind, str) and len(value) == 1:
        # The protocol's variant example nests it as {"type": "variant"}.
        return _parse_type_name(kind)
    raise UnsupportedDataTypeError(f"unsupported Delta data type {value!r:.200}")


def _as_bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise InvalidTableError(f"expected a boolean in schema, got {v!r}")
    return v


def _parse_type_name(name: str) -> DataType:
    name = _PRIMITIVE_ALIASES.get(name, name)
    if name in _PRIMITIVE_NAMES:
        return PrimitiveType(name)
    if name == "decimal":  # Spark's default decimal
        return DecimalType(10, 0)
    if name.startswith(("geometry", "geography")):
        geo = _parse_geo_type_name(name)
        if geo is not None:
            return geo
    m = _DECIMAL_RE.match(name)
    if m:
        p, s = int(m.group(1)), int(m.group(2))
        try:
            return DecimalType(p, s)
        except DeltaIllegalArgumentError as e:
            raise InvalidTableError(str(e)) from None
    raise UnsupportedDataTypeError(f"unsupported Delta data type {name!r}")


def _parse_geo_type_name(name: str) -> GeometryType | GeographyType | None:
    """``geometry``, ``geometry(<crs>)``, ``geography``, ``geography(<crs>[, <alg>])`` or
    ``geography(<alg>)``, with the defaults Spark and delta-kernel fill in."""
    try:
        if name == "geometry":
            return GeometryType()
        if name == "geography":
            return GeographyType()
        if m := _GEOMETRY_RE.match(name):
            return GeometryType(m.group(1))
        if m := _GEOGRAPHY_RE.match(name):
            return GeographyType(m.group(1), m.group(2) or DEFAULT_GEOGRAPHY_ALGORITHM)
        if m := _GEOGRAPHY_ALG_RE.match(name):
            return GeographyType(DEFAULT_GEO_CRS, m.group(1))
    except DeltaIllegalArgumentError as e:
        raise InvalidTableError(f"invalid Delta data type {name!r}: {e}") from None
    return None


def _parse_field(value: Any) -> StructField:
    if not isinstance(value, Mapping) or "name" not in value or "type" not in value:
        raise InvalidTableError(f"invalid struct field in schema: {value!r:.200}")
    name = value["name"]
    if not isinstance(name, str):
        raise InvalidTableError(f"field name must be a string, got {name!r}")
    metadata = value.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidTableError(f"field {name!r} metadata must be an object, got {metadata!r:.200}")
    return StructField(name, parse_data_type(value["type"]), _as_bool(value.get("nullable", True)), metadata)


def data_type_to_json_value(dt: DataType) -> Any:
    """The JSON value of a type, keys in delta-spark's order."""
    if isinstance(dt, (PrimitiveType, DecimalType, GeometryType, GeographyType)):
        return dt.name
    if isinstance(dt, StructType):
        return _struct_to_json_value(dt)
    if isinstance(dt, ArrayType):
        return {
            "type": "array",
            "elementType": data_type_to_json_value(dt.element_type),
            "containsNull": dt.contains_null,
        }
    if isinstance(dt, MapType):
        return {
            "type": "map",
            "keyType": data_type_to_json_value(dt.key_type),
            "valueType": data_type_to_json_value(dt.value_type),
            "valueContainsNull": dt.value_contains_null,
        }
    raise DeltaIllegalArgumentError(f"not a Delta data type: {dt!r}")


def _struct_to_json_value(st: StructType) -> dict[str, Any]:
    return {
        "type": "struct",
        "fields": [
            {
                "name": f.name,
                "type": data_type_to_json_value(f.type),
                "nullable": f.nullable,
                "metadata": thaw(f.metadata),
            }
            for f in st.fields
        ],
    }


def thaw(value: Any) -> Any:
    """A deep, plain copy of a JSON value: mappings become dicts, lists new lists."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value


# ---- Arrow -------------------------------------------------------------------------

_PRIMITIVE_TO_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
    # Unshredded variant as the protocol stores it in Parquet.
    "variant": pa.struct(
        [pa.field("value", pa.binary(), nullable=False), pa.field("metadata", pa.binary(), nullable=False)]
    ),
}


def data_type_to_arrow(dt: DataType) -> pa.DataType:
    """Arrow type for a Delta type (timestamps are microseconds; variant is struct<value,metadata>)."""
    return _to_arrow(dt, None, "")


def _field_id_metadata(fid: Any) -> dict[bytes, bytes] | None:
    if fid is None:
        return None
    return {ARROW_FIELD_ID_KEY: str(int(fid)).encode()}


def _to_arrow(dt: DataType, nested_ids: Mapping[str, Any] | None, path: str) -> pa.DataType:
    # `nested_ids`/`path` carry Parquet ids for array elements and map keys/values
    # (IcebergCompatV2), keyed like "<physical name>.element.key".
    if isinstance(dt, PrimitiveType):
        return _PRIMITIVE_TO_ARROW[dt.name]
    if isinstance(dt, DecimalType):
        return pa.decimal128(dt.precision, dt.scale)
    if is_geospatial(dt):
        return pa.binary()  # WKB, in a BYTE_ARRAY column with a GEOMETRY/GEOGRAPHY annotation
    if isinstance(dt, StructType):
        return pa.struct([_field_to_arrow(f) for f in dt.fields])
    if isinstance(dt, ArrayType):
        p = f"{path}.element"
        elem = pa.field(
            "element",
            _to_arrow(dt.element_type, nested_ids, p),
            nullable=dt.contains_null,
            metadata=_field_id_metadata(nested_ids.get(p)) if nested_ids else None,
        )
        return pa.list_(elem)
    if isinstance(dt, MapType):
        kp, vp = f"{path}.key", f"{path}.value"
        key = pa.field(
            "key",
            _to_arrow(dt.key_type, nested_ids, kp),
            nullable=False,
            metadata=_field_id_metadata(nested_ids.get(kp)) if nested_ids else None,
        )
        item = pa.field(
            "value",
            _to_arrow(dt.value_type, nested_ids, vp),
            nullable=dt.value_contains_null,
            metadata=_field_id_metadata(nested_ids.get(vp)) if nested_ids else None,
        )
        return pa.map_(key, item)
    raise DeltaIllegalArgumentError(f"not a Delta data type: {dt!r}")


def _field_to_arrow(f: StructField) -> pa.Field:
    nested = f.metadata.get(PARQUET_FIELD_NESTED_IDS_KEY)
    nested_ids = nested if isinstance(nested, Mapping) else None
    arrow_type = _to_arrow(f.type, nested_ids, f.name)
    return pa.field(f.name, arrow_type, nullable=f.nullable,
                    metadata=_field_id_metadata(f.metadata.get(PARQUET_FIELD_ID_KEY)))


def to_arrow_schema(schema: StructType) -> pa.Schema:
    """Arrow schema for a Delta schema.

    Only a physical schema's ``parquet.field.id`` (see `to_physical_schema`) is carried over,
    as Arrow's ``PARQUET:field_id`` field metadata, so Parquet files can be written and matched
    by field id; other Delta field metadata stays in the Delta schema.
    """
    return pa.schema([_field_to_arrow(f) for f in schema.fields])


def from_arrow_schema(schema: pa.Schema) -> StructType:
    """Delta schema for Arrow data being written (no field metadata is carried over)."""
    return StructType(tuple(_field_from_arrow(f) for f in schema))


def _field_from_arrow(f: pa.Field) -> StructField:
    return StructField(f.name, data_type_from_arrow(f.type, f.name), f.nullable)


def data_type_from_arrow(t: pa.DataType, _where: str = "") -> DataType:
    """Delta type for an Arrow type; types Delta cannot store raise InvalidTableError."""
    if pa.types.is_dictionary(t):
        return data_type_from_arrow(t.value_type, _where)
    if isinstance(t, pa.ExtensionType):
        return data_type_from_arrow(t.storage_type, _where)
    if pa.types.is_boolean(t):
        return BOOLEAN
    if pa.types.is_int8(t):
        return BYTE
    if pa.types.is_int16(t) or pa.types.is_uint8(t):
        return SHORT
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return INTEGER
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return LONG
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return FLOAT
    if pa.types.is_float64(t):
        return DOUBLE
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return STRING
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    ):
        return BINARY
    if pa.types.is_date(t):
        return DATE
    if pa.types.is_timestamp(t):
        return TIMESTAMP if t.tz is not None else TIMESTAMP_NTZ
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise InvalidTableError(f"column {_where!r}: decimal precision {t.precision} exceeds Delta's 38")
        return DecimalType(t.precision, t.scale)
    if pa.types.is_null(t):
        return VOID
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    ):
        return ArrayType(data_type_from_arrow(t.value_type, _where), t.value_field.nullable)
    if pa.types.is_map(t):
        return MapType(
            data_type_from_arrow(t.key_type, _where),
            data_type_from_arrow(t.item_type, _where),
            t.item_field.nullable,
        )
    if pa.types.is_struct(t):
        return StructType(tuple(_field_from_arrow(t.field(i)) for i in range(t.num_fields)))
    raise InvalidTableError(f"column {_where!r}: Arrow type {t} has no Delta equivalent")

