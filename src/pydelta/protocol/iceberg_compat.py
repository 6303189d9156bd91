"""Iceberg compatibility (PROTOCOL.md "Iceberg Compatibility V1" and "V2").

A table with `delta.enableIcebergCompatV1` or `V2` keeps itself convertible to Iceberg: its
writers enforce the rules below, with delta-spark's error classes
(DELTA_ICEBERG_COMPAT_VIOLATION.*). The conversion itself (UniForm) is separate: compat
without UniForm is a valid table.

What the data files must be like (partition columns materialized, field ids, int64
timestamps) is the writer's part (`materializes_partitions`, spark/write/data_files.py); what
the log must be like is checked here, once per commit, on the finished metadata and actions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from pydelta.errors import DeltaNotImplementedError, IcebergCompatViolationError
from pydelta.protocol import properties as P
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.protocol.column_mapping import (
    COLUMN_MAPPING_MODE_KEY,
    COLUMN_MAPPING_NESTED_IDS_KEY,
    column_mapping_mode,
    physical_name,
)
from pydelta.protocol.data_types import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    find_type,
    is_geospatial,
    walk_fields,
)
from pydelta.protocol.schema_evolution import MAX_COLUMN_ID_KEY, assign_column_mapping
from pydelta.protocol.type_widening import TYPE_CHANGES_KEY, type_changes

VERSIONS = (1, 2, 3)
# Set on creation when not given, as delta-spark's OptionalAtomicEligible does.
ATOMIC_CONVERSION_KEY = "delta.universalFormat.iceberg.atomicConversion.supported"
#: The add-file tag delta-spark gives files written under IcebergCompatV2+.
COMPAT_VERSION_TAG = "ICEBERG_COMPAT_VERSION"

_V2_TYPES = frozenset({"byte", "short", "integer", "long", "float", "double", "string", "binary", "boolean",
                       "timestamp", "timestamp_ntz", "date"})


def property_key(version: int) -> str:
    return f"delta.enableIcebergCompatV{version}"


def enabled_versions(configuration: Mapping[str, str]) -> list[int]:
    return [v for v in VERSIONS if P.flag(configuration, property_key(v))]


def enabled_version(configuration: Mapping[str, str]) -> int | None:
    """The IcebergCompat version the table enables (None: none)."""
    versions = enabled_versions(configuration)
    return versions[0] if versions else None


def _violation(sub: str, version: int, message: str) -> IcebergCompatViolationError:
    return IcebergCompatViolationError(
        f"[DELTA_ICEBERG_COMPAT_VIOLATION.{sub}] The validation of IcebergCompatV{version} has failed. {message}",
        error_class=f"DELTA_ICEBERG_COMPAT_VIOLATION.{sub}")


# ---- metadata requirements (applied when the metadata changes) -----------------------------------

ENABLED_FORMATS_KEY = "delta.universalFormat.enabledFormats"


def universal_formats(configuration: Mapping[str, str]) -> list[str]:
    """The formats `delta.universalFormat.enabledFormats` names (lower case)."""
    raw = str(configuration.get(ENABLED_FORMATS_KEY, ""))
    return [f.strip().lower() for f in raw.split(",") if f.strip()]


def uniform_iceberg_enabled(configuration: Mapping[str, str]) -> bool:
    return "iceberg" in universal_formats(configuration)


def _with_universal_format_rule(metadata: Metadata, previous: Metadata | None) -> Metadata:
    """UniForm (Iceberg) needs an IcebergCompat: refused without one, unless the commit turns
    the compat off, which takes `iceberg` out of the enabled formats (delta-spark's
    UniversalFormat.enforceIcebergInvariantsAndDependencies)."""
    conf = metadata.configuration
    if not uniform_iceberg_enabled(conf) or enabled_version(conf) is not None:
        return metadata
    if previous is not None and enabled_version(previous.configuration) is not None:
        kept = [f for f in universal_formats(conf) if f != "iceberg"]
        new_conf = {k: v for k, v in conf.items() if k != ENABLED_FORMATS_KEY}
        if kept:
            new_conf[ENABLED_FORMATS_KEY] = ",".join(kept)
        return replace(metadata, configuration=new_conf)
    raise IcebergCompatViolationError(
        "[DELTA_UNIVERSAL_FORMAT_VIOLATION.ICEBERG_COMPAT_REQUIRED] The validation of Universal Format (iceberg) "
        "has failed: Requires IcebergCompat to be explicitly enabled in order for Universal Format (Iceberg) to "
        "be enabled on an existing table. Supported versions are IcebergCompatV1 and IcebergCompatV2.",
        error_class="DELTA_UNIVERSAL_FORMAT_VIOLATION.ICEBERG_COMPAT_REQUIRED")


def with_requirements(metadata: Metadata, previous: Metadata | None) -> Metadata:
    """`metadata` with what an enabled IcebergCompat needs set automatically, as delta-spark does.

    Creating a table (`previous` None): column mapping `name` and the atomic-conversion flag
    when not given. Every version from 2: ids for array elements and map keys/values
    (`delta.columnMapping.nested.ids`). An existing table must already have column mapping.
    """
    metadata = _with_universal_format_rule(metadata, previous)
    version = enabled_version(metadata.configuration)
    if version is None:
        return metadata
    if version >= 3:
        raise DeltaNotImplementedError(
            "IcebergCompatV3 (delta.enableIcebergCompatV3) is not implemented by pydelta: it needs Iceberg "
            "format version 3 and row tracking in the converted metadata; use delta.enableIcebergCompatV2")
    config = dict(metadata.configuration)
    schema = metadata.schema
    mode = column_mapping_mode(config)
    if mode not in ("name", "id"):
        if COLUMN_MAPPING_MODE_KEY in config or previous is not None:
            raise _violation(
                "WRONG_REQUIRED_TABLE_PROPERTY", version,
                f"IcebergCompatV{version} requires table property '{COLUMN_MAPPING_MODE_KEY}' to be set to 'name'. "
                f"Current value: '{mode}'.")
        config[COLUMN_MAPPING_MODE_KEY] = "name"
        schema, config = assign_column_mapping(schema, config)
    if previous is None and ATOMIC_CONVERSION_KEY not in config:
        config[ATOMIC_CONVERSION_KEY] = "true"
    if version >= 2:
        schema, max_id = with_nested_ids(schema, int(config.get(MAX_COLUMN_ID_KEY, "0")))
        config[MAX_COLUMN_ID_KEY] = str(max_id)
    if config == dict(metadata.configuration) and schema == metadata.schema:
        return metadata
    return replace(metadata, schema_string=schema.to_json(), configuration=config)


def with_nested_ids(schema: StructType, max_id: int) -> tuple[StructType, int]:
    """Ids for the `element` of arrays and the `key`/`value` of maps (IcebergCompatV2).

    Each struct field keeps those inside its type in `delta.columnMapping.nested.ids`, keyed by
    its physical name and the path (`<physical>.element`, `<physical>.key.value`...); every
    struct field gets the key, empty when it has none, and existing ids stay, as delta-spark's
    rewriteFieldIdsForIceberg assigns them (pre-order, from the table's maximum column id).
    """
    counter = [max_id]

    def visit_type(dt: DataType, ids: dict[str, Any], path: str) -> DataType:
        if isinstance(dt, StructType):
            return StructType(tuple(visit_field(f) for f in dt.fields))
        if isinstance(dt, ArrayType):
            element = _assign(ids, f"{path}.element", counter)
            return ArrayType(visit_type(dt.element_type, ids, element), dt.contains_null)
        if isinstance(dt, MapType):
            key = _assign(ids, f"{path}.key", counter)
            key_type = visit_type(dt.key_type, ids, key)
            value = _assign(ids, f"{path}.value", counter)
            return MapType(key_type, visit_type(dt.value_type, ids, value), dt.value_contains_null)
        return dt

    def visit_field(f: StructField) -> StructField:
        existing = f.metadata.get(COLUMN_MAPPING_NESTED_IDS_KEY)
        ids = dict(existing) if isinstance(existing, Mapping) else {}
        new_type = visit_type(f.type, ids, physical_name(f))
        return StructField(f.name, new_type, f.nullable, {**f.metadata, COLUMN_MAPPING_NESTED_IDS_KEY: ids})

    out = visit_type(schema, {}, "")
    assert isinstance(out, StructType)
    return out, counter[0]


def _assign(ids: dict[str, Any], key: str, counter: list[int]) -> str:
    if key not in ids:
        counter[0] += 1
        ids[key] = counter[0]
    return key


# ---- commit checks ---------------------------------------------------------------------------------


def check_commit(metadata: Metadata, protocol: Protocol, previous: Metadata | None,
                 previous_protocol: Protocol | None, adds: Iterable[Mapping[str, Any]]) -> None:
    """Refuse a commit that breaks the enabled IcebergCompat (delta-spark's checks, in its order)."""
    versions = enabled_versions(metadata.configuration)
    if not versions:
        return
    version = versions[0]
    if len(versions) > 1:
        raise _violation("VERSION_MUTUAL_EXCLUSIVE", version,
                         "Only one IcebergCompat version can be enabled, please explicitly disable all other "
                         "IcebergCompat versions that are not needed.")
    for add in adds:
        if _num_records(add.get("stats")) is None:
            raise IcebergCompatViolationError(
                f"IcebergCompatV{version} requires all AddFiles to contain the numRecords statistic. "
                f"AddFile {add.get('path')} is missing this statistic. Stats: {add.get('stats')}")
    schema = metadata.schema
    if version == 1:
        bad = find_type(schema, lambda t: isinstance(t, (ArrayType, MapType)) or _named(t) in ("void", "null"))
        if bad is not None:
            raise _unsupported_type(version, bad, schema)
    else:
        bad = find_type(schema, lambda t: not _v2_allowed(t))
        if bad is not None:
            raise _unsupported_type(version, bad, schema)
        for name in metadata.partition_columns:
            field = next((f for f in schema.fields if f.name == name), None)
            if field is not None and not _v2_primitive(field.type):
                raise _violation(
                    "UNSUPPORTED_PARTITION_DATA_TYPE", version,
                    f"IcebergCompatV{version} does not support the data type {_type_name(field.type)} for "
                    f"partition columns in your schema. Partition column: {name}")
    if previous is not None and previous.partition_columns and \
            tuple(previous.partition_columns) != tuple(metadata.partition_columns):
        raise _violation(
            "REPLACE_TABLE_CHANGE_PARTITION_NAMES", version,
            f"IcebergCompatV{version} doesn't support replacing partitioned tables with a differently-named "
            f"partition spec, because Iceberg-Spark 1.1.0 doesn't. Prev Partition Spec: "
            f"({','.join(previous.partition_columns)}) New Partition Spec: ({','.join(metadata.partition_columns)})")
    if "deletionVectors" in protocol.effective_writer_features and (
            _dvs_writable(protocol, metadata) or
            (previous is not None and previous_protocol is not None and _dvs_writable(previous_protocol, previous))):
        raise _violation(
            "DELETION_VECTORS_SHOULD_BE_DISABLED", version,
            f"IcebergCompatV{version} requires Deletion Vectors to be disabled on the table first. Then run "
            "REORG PURGE command to purge the Deletion Vectors on the table.")
    geo = find_type(schema, is_geospatial)
    if geo is not None:
        raise _unsupported_type(version, geo, schema)
    if {"typeWidening", "typeWidening-preview"} & set(protocol.effective_writer_features):
        for path, from_type, to_type in _type_changes(schema):
            if not _iceberg_widening(from_type, to_type):
                raise _violation(
                    "UNSUPPORTED_TYPE_WIDENING", version,
                    f"IcebergCompatV{version} is incompatible with a type change applied to this table: Field "
                    f"{'.'.join(path)} was changed from {from_type.upper()} to {to_type.upper()}.")


def _num_records(stats: Any) -> int | None:
    if not stats:
        return None
    try:
        value = json.loads(stats).get("numRecords") if isinstance(stats, str) else None
    except ValueError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dvs_writable(protocol: Protocol, metadata: Metadata) -> bool:
    return "deletionVectors" in protocol.effective_writer_features and \
        P.flag(metadata.configuration, "delta.enableDeletionVectors")


def _named(t: DataType) -> str:
    return t.name if isinstance(t, PrimitiveType) else ""


def _v2_primitive(t: DataType) -> bool:
    return isinstance(t, DecimalType) or _named(t) in _V2_TYPES


def _v2_allowed(t: DataType) -> bool:
    return _v2_primitive(t) or isinstance(t, (ArrayType, MapType, StructType))


def _type_name(t: DataType) -> str:
    if isinstance(t, ArrayType):
        return "array"
    if isinstance(t, MapType):
        return "map"
    if isinstance(t, StructType):
        return "struct"
    return t.simple_string() if hasattr(t, "simple_string") else str(getattr(t, "name", t))


def _unsupported_type(version: int, t: DataType, schema: StructType) -> IcebergCompatViolationError:
    return _violation("UNSUPPORTED_DATA_TYPE", version,
                      f"IcebergCompatV{version} does not support the data type {_type_name(t)} in your schema. "
                      f"Your schema: {schema.to_json()}")


def _type_changes(schema: StructType) -> list[tuple[tuple[str, ...], str, str]]:
    """(field path, from type, to type) of every type change the schema records."""
    return [((field.name, *([change["fieldPath"]] if change.get("fieldPath") else [])),
             str(change.get("fromType")), str(change.get("toType")))
            for field in walk_fields(schema) if TYPE_CHANGES_KEY in field.metadata
            for change in type_changes(field)]


_INT_SIZE = {"byte": 1, "short": 2, "integer": 4, "long": 8}


def _iceberg_widening(from_type: str, to_type: str) -> bool:
    """delta-spark's TypeWidening.isTypeChangeSupportedByIceberg (for changes Delta allows)."""
    if from_type == to_type:
        return True
    if from_type in _INT_SIZE and to_type in _INT_SIZE:
        return _INT_SIZE[from_type] <= _INT_SIZE[to_type]
    if (from_type, to_type) == ("float", "double"):
        return True
    if from_type.startswith("decimal") and to_type.startswith("decimal"):
        (p1, s1), (p2, s2) = _precision_scale(from_type), _precision_scale(to_type)
        return s1 == s2 and p1 <= p2
    return False


def _precision_scale(decimal_type: str) -> tuple[int, int]:
    inner = decimal_type[decimal_type.index("(") + 1:decimal_type.index(")")]
    precision, scale = (int(x) for x in inner.split(","))
    return precision, scale
