"""Delta's JSON table schema (``metaData.schemaString``) as a small immutable model.

The JSON form is Spark SQL's schema JSON, the subset the Delta protocol allows
(PROTOCOL.md, "Schema Serialization Format"). This module is the one place to import the
schema API from; it lives in four modules by concern:

- `data_types`: the types, fields and structs, parsed from and written back to JSON
  byte-for-byte as delta-spark does, and converted to and from Arrow;
- `column_mapping`: the column-mapping mode, physical names, ids and the physical schema;
- `type_widening`: which type changes are widenings, and their ``delta.typeChanges`` record;
- `column_names`: quoting and splitting column names as Spark SQL spells them.

No Spark anywhere.
"""

from __future__ import annotations

from pydelta.errors import UnsupportedDataTypeError
from pydelta.protocol.column_mapping import (
    COLUMN_MAPPING_ID_KEY,
    COLUMN_MAPPING_MODE_KEY,
    COLUMN_MAPPING_NESTED_IDS_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    column_mapping_mode,
    field_id,
    physical_name,
    to_physical_schema,
)
from pydelta.protocol.column_names import quote_identifier, quote_path, split_identifier
from pydelta.protocol.data_types import (
    ARROW_FIELD_ID_KEY,
    BINARY,
    BOOLEAN,
    BYTE,
    CURRENT_DEFAULT_KEY,
    DATE,
    DEFAULT_GEO_CRS,
    DEFAULT_GEOGRAPHY_ALGORITHM,
    DOUBLE,
    FLOAT,
    GEOGRAPHY_ALGORITHMS,
    INTEGER,
    LONG,
    MIXED_SRID_CRS,
    PARQUET_FIELD_ID_KEY,
    PARQUET_FIELD_NESTED_IDS_KEY,
    SHORT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    VARIANT,
    VOID,
    ArrayType,
    DataType,
    DecimalType,
    FrozenMetadata,
    GeographyType,
    GeometryType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    contains_geospatial,
    contains_variant,
    data_type_from_arrow,
    data_type_to_arrow,
    data_type_to_json_value,
    from_arrow_schema,
    is_geospatial,
    parse_data_type,
    parse_schema,
    to_arrow_schema,
    walk_fields,
    without_field_metadata,
)
from pydelta.protocol.type_widening import TYPE_CHANGES_KEY, is_widening_type_change, type_changes

__all__ = [
    "ARROW_FIELD_ID_KEY",
    "BINARY",
    "BOOLEAN",
    "BYTE",
    "COLUMN_MAPPING_ID_KEY",
    "COLUMN_MAPPING_MODE_KEY",
    "COLUMN_MAPPING_NESTED_IDS_KEY",
    "COLUMN_MAPPING_PHYSICAL_NAME_KEY",
    "CURRENT_DEFAULT_KEY",
    "DATE",
    "DEFAULT_GEOGRAPHY_ALGORITHM",
    "DEFAULT_GEO_CRS",
    "DOUBLE",
    "FLOAT",
    "GEOGRAPHY_ALGORITHMS",
    "INTEGER",
    "LONG",
    "MIXED_SRID_CRS",
    "PARQUET_FIELD_ID_KEY",
    "PARQUET_FIELD_NESTED_IDS_KEY",
    "SHORT",
    "STRING",
    "TIMESTAMP",
    "TIMESTAMP_NTZ",
    "TYPE_CHANGES_KEY",
    "VARIANT",
    "VOID",
    "ArrayType",
    "DataType",
    "DecimalType",
    "FrozenMetadata",
    "GeographyType",
    "GeometryType",
    "MapType",
    "PrimitiveType",
    "StructField",
    "StructType",
    "UnsupportedDataTypeError",
    "column_mapping_mode",
    "contains_geospatial",
    "contains_variant",
    "data_type_from_arrow",
    "data_type_to_arrow",
    "data_type_to_json_value",
    "field_id",
    "from_arrow_schema",
    "is_geospatial",
    "is_widening_type_change",
    "parse_data_type",
    "parse_schema",
    "physical_name",
    "quote_identifier",
    "quote_path",
    "split_identifier",
    "to_arrow_schema",
    "to_physical_schema",
    "type_changes",
    "walk_fields",
    "without_field_metadata",
]
