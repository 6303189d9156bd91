"""Geometry and geography columns: the ``geospatial`` table feature, as delta-spark 4.2+ has it.

delta-spark (DeltaGeoSpatial.scala, TableFeature.scala ``GeoSpatialTableFeature``,
shims/spark-4.1-4.2/GeoTypesShim.scala) on Spark 4.1+:

* ``geospatial`` is a reader-writer feature (3, 7), enabled automatically (also on existing
  tables) when a geometry/geography type occurs anywhere in the schema, unless the preview
  feature ``geospatial-dev`` is already supported (`pydelta.txn.protocol_upgrade`).
* Values are WKB in Parquet BYTE_ARRAY columns annotated GEOMETRY/GEOGRAPHY; Spark writes
  and reads them itself.
* The types are not ``SkippingEligibleDataType``: files get no minValues/maxValues for them,
  only nullCount (`pydelta.protocol.stats.is_skipping_eligible`).
* Refused: the mixed-SRID type (``SRID:ANY``), geo partition columns, column defaults on
  geo columns, Z-ORDER BY and CONVERT TO DELTA of geo columns, dropping the feature while
  geo columns remain.

delta-spark also gates all of this behind the internal session conf
``spark.databricks.delta.geo.preview.enabled`` (default false); pydelta does not.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pydelta.errors import DeltaAnalysisError
from pydelta.protocol.column_names import quote_if_needed
from pydelta.protocol.schema import (
    MIXED_SRID_CRS,
    ArrayType,
    DataType,
    MapType,
    StructType,
    contains_geospatial,
    is_geospatial,
)

__all__ = [
    "FEATURE",
    "PREVIEW_FEATURE",
    "check_droppable",
    "check_metadata",
    "fail_if_geospatial",
    "fail_if_geospatial_column",
    "geo_column_paths",
]

FEATURE = "geospatial"
PREVIEW_FEATURE = "geospatial-dev"
MIXED_SRID = -1  # Spark's SRID of GEOMETRY(ANY) / GEOGRAPHY(ANY)
# Spark's column-default metadata keys (ResolveDefaultColumns).
_DEFAULT_KEYS = ("CURRENT_DEFAULT", "EXISTS_DEFAULT")


def _paths(dt: DataType, prefix: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], DataType]]:
    if is_geospatial(dt):
        yield prefix, dt
    elif isinstance(dt, StructType):
        for f in dt.fields:
            yield from _paths(f.type, (*prefix, f.name))
    elif isinstance(dt, ArrayType):
        yield from _paths(dt.element_type, (*prefix, "element"))
    elif isinstance(dt, MapType):
        yield from _paths(dt.key_type, (*prefix, "key"))
        yield from _paths(dt.value_type, (*prefix, "value"))


def geo_column_paths(schema: StructType) -> list[tuple[str, DataType]]:
    """(column path, type) of every geo type in the schema, as delta-spark's
    ``SchemaUtils.findColumnPaths`` names them (``s.inner``, ``xs.element``, ``m.value``)."""
    return [(".".join(quote_if_needed(p) for p in path), dt) for path, dt in _paths(schema, ())]


def _srid_of(crs: str) -> int | None:
    """The SRID Delta refuses for this CRS (only the mixed SRID can be negative), else None."""
    return MIXED_SRID if crs.lower() == MIXED_SRID_CRS.lower() else None


def check_metadata(schema: StructType, partition_columns: Sequence[str]) -> None:
    """delta-spark's commit-time checks of a schema with geo types.

    ``DeltaGeoSpatial.assertSridSupported`` (mixed SRID), ``validatePartitionColumn``
    (geo types are not orderable) and ``checkColumnDefaults`` (no DEFAULT on a column
    holding a geo type).
    """
    if not contains_geospatial(schema):
        return
    for _, dt in geo_column_paths(schema):
        srid = _srid_of(dt.crs)  # type: ignore[union-attr]  # only geo types are listed
        if srid is not None:
            raise DeltaAnalysisError(
                f"[DELTA_GEOSPATIAL_SRID_NOT_SUPPORTED] Geospatial type has an unsupported srid: {srid}. "
                "Delta tables only support non-negative srid values."
            )
    partitions = {c.lower() for c in partition_columns}
    for f in schema.fields:
        if f.name.lower() in partitions and is_geospatial(f.type):
            raise DeltaAnalysisError(
                f"[DELTA_INVALID_PARTITION_COLUMN_TYPE] Using column {f.name} of type {f.type.name} as a "
                "partition column is not supported."
            )
    with_defaults = [
        (f.name, f.type)
        for f in schema.fields
        if contains_geospatial(f.type) and any(k in f.metadata for k in _DEFAULT_KEYS)
    ]
    if with_defaults:
        raise _not_supported("COLUMN DEFAULT", with_defaults)


def _not_supported(operation: str, columns: Sequence[tuple[str, DataType]]) -> DeltaAnalysisError:
    listed = ", ".join(f"{path}: {dt.name}" for path, dt in columns)
    return DeltaAnalysisError(
        f"[DELTA_OPERATION_NOT_SUPPORTED_FOR_DATATYPES] {operation} is not supported for data types: [{listed}]."
    )


def fail_if_geospatial(schema: StructType, operation: str) -> None:
    """delta-spark's ``failIfSchemaHasGeoColumn``: DELTA_OPERATION_NOT_SUPPORTED_FOR_DATATYPES."""
    found = geo_column_paths(schema)
    if found:
        raise _not_supported(operation, found)


def fail_if_geospatial_column(column: str, dt: DataType, operation: str) -> None:
    """The same error for one named column whose type holds a geo type (Z-ORDER BY)."""
    if contains_geospatial(dt):
        raise _not_supported(operation, [(column, dt)])


def check_droppable(schema: StructType) -> None:
    """``GeospatialPreDowngradeCommand``: the feature goes only once no column holds a geo type."""
    columns = [f.name for f in schema.fields if contains_geospatial(f.type)]
    if columns:
        raise DeltaAnalysisError(
            "[DELTA_CANNOT_DROP_GEOSPATIAL_FEATURE] Cannot drop the geospatial table feature. Recreate the table "
            f"or drop columns with geometry/geography types: {', '.join(columns)} and try again."
        )
