"""The metadata of a table whose column mapping is removed (SET mode none, UNSET, DROP FEATURE).

Every field loses its column-mapping metadata (ids, physical names, nested ids and Parquet
field ids), the configuration loses `delta.columnMapping.maxColumnId` and takes mode `none`
(or loses the key). Names that only column mapping allows are refused first, as
delta-spark's RemoveColumnMappingCommand does; the data files must then be rewritten with
the logical names, which is the engine's part.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

from pydelta.errors import DeltaAnalysisError
from pydelta.protocol.actions import Metadata
from pydelta.protocol.schema import (
    COLUMN_MAPPING_ID_KEY,
    COLUMN_MAPPING_MODE_KEY,
    COLUMN_MAPPING_NESTED_IDS_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    PARQUET_FIELD_ID_KEY,
    PARQUET_FIELD_NESTED_IDS_KEY,
    ArrayType,
    DataType,
    MapType,
    StructType,
    without_field_metadata,
)

MAX_COLUMN_ID_KEY = "delta.columnMapping.maxColumnId"
MAPPING_FIELD_KEYS = (COLUMN_MAPPING_ID_KEY, COLUMN_MAPPING_PHYSICAL_NAME_KEY, COLUMN_MAPPING_NESTED_IDS_KEY,
                      PARQUET_FIELD_ID_KEY, PARQUET_FIELD_NESTED_IDS_KEY)
_INVALID_CHARS = frozenset(" ,;{}()\n\t=")


def metadata_without_mapping(metadata: Metadata, *, unset: bool) -> Metadata:
    """`metadata` with no column-mapping field metadata, no max column id, and the mode `none`
    (SET) or absent (UNSET); names that need column mapping are refused first."""
    schema = without_field_metadata(metadata.schema, MAPPING_FIELD_KEYS)
    assert isinstance(schema, StructType)
    invalid = [name for name in _nested_names(schema) if _INVALID_CHARS & set(name)]
    if invalid:
        raise DeltaAnalysisError(
            "[DELTA_INVALID_COLUMN_NAMES_WHEN_REMOVING_COLUMN_MAPPING] Found invalid character(s) among "
            "' ,;{}()\\n\\t=' in the column names of your schema. Invalid column names: "
            f"{', '.join(invalid)}. Column mapping cannot be removed when there are invalid characters in the "
            "column names. Please rename the columns to remove the invalid characters and execute this command "
            "again.")
    configuration = {k: v for k, v in metadata.configuration.items() if k != MAX_COLUMN_ID_KEY}
    if unset:
        configuration.pop(COLUMN_MAPPING_MODE_KEY, None)
    else:
        configuration[COLUMN_MAPPING_MODE_KEY] = "none"
    return replace(metadata, schema_string=schema.to_json(), configuration=configuration)


def _nested_names(schema: StructType) -> Iterator[str]:
    """delta-spark's explodeNestedFieldNames: every field's dotted path, parents first
    (`element`/`key`/`value` inside arrays and maps, parts with a dot in backticks)."""
    def paths(dt: DataType, prefix: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        if isinstance(dt, StructType):
            for f in dt.fields:
                yield (*prefix, f.name)
                yield from paths(f.type, (*prefix, f.name))
        elif isinstance(dt, ArrayType):
            yield from paths(dt.element_type, (*prefix, "element"))
        elif isinstance(dt, MapType):
            yield from paths(dt.key_type, (*prefix, "key"))
            yield from paths(dt.value_type, (*prefix, "value"))

    for parts in paths(schema, ()):
        yield ".".join(f"`{p}`" if "." in p else p for p in parts)


def clustering_without_mapping(metadata: Metadata, domains: Mapping[str, str]) -> str | None:
    """The `delta.clustering` domain configuration once the files hold logical names: the
    clustering columns, recorded by physical name under column mapping, by logical name.
    None when the table is not clustered."""
    from pydelta.protocol import clustering

    physical = clustering.columns_of(domains)
    if physical is None:
        return None
    logical = []
    for path in physical:
        parts = clustering.logical_path(metadata.schema, True, path)
        if parts is None:
            raise DeltaAnalysisError(f"the clustering column {'.'.join(path)} is not in the table schema")
        logical.append(parts)
    return clustering.domain_configuration(logical)
