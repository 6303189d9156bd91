"""Geometry/geography types and the `geospatial` feature, without Spark.

Expected strings are the ones Spark 4.3's Scala ``DataType.json`` writes (delta-spark stores
``schema.json`` as schemaString) and delta-kernel's DataTypeJsonSerDe.java parses; the
protocol follows delta-spark's TableFeature.scala (``GeoSpatialTableFeature``: reader-writer,
auto-enabled by metadata, not over ``geospatial-dev``) and DeltaGeoSuite.scala.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from pydelta.errors import (
    DeltaAnalysisError,
    InvalidTableError,
    UnsupportedFeatureError,
)
from pydelta.protocol import geospatial
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.protocol.features import (
    SUPPORTED_READER_FEATURES,
    SUPPORTED_WRITER_FEATURES,
)
from pydelta.protocol.schema import (
    ArrayType,
    GeographyType,
    GeometryType,
    MapType,
    StructField,
    StructType,
    contains_geospatial,
    data_type_to_arrow,
    parse_data_type,
    parse_schema,
)
from pydelta.protocol.stats import is_skipping_eligible, stats_schema
from pydelta.txn import protocol_upgrade as pu

# What Spark 4.3 writes for GEOMETRY(4326), GEOMETRY(0), GEOMETRY(3857), GEOGRAPHY(4326)
# (checked against the JVM: DataType.fromJson(...).json()).
SPARK_SCHEMA = (
    '{"type":"struct","fields":['
    '{"name":"id","type":"long","nullable":true,"metadata":{}},'
    '{"name":"g","type":"geometry(OGC:CRS84)","nullable":true,"metadata":{}},'
    '{"name":"g0","type":"geometry(SRID:0)","nullable":true,"metadata":{}},'
    '{"name":"merc","type":"geometry(EPSG:3857)","nullable":true,"metadata":{}},'
    '{"name":"h","type":"geography(OGC:CRS84, SPHERICAL)","nullable":false,"metadata":{}},'
    '{"name":"s","type":{"type":"struct","fields":[{"name":"inner","type":"geometry(OGC:CRS84)",'
    '"nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},'
    '{"name":"xs","type":{"type":"array","elementType":"geography(OGC:CRS84, SPHERICAL)","containsNull":true},'
    '"nullable":true,"metadata":{}},'
    '{"name":"m","type":{"type":"map","keyType":"string","valueType":"geometry(OGC:CRS84)",'
    '"valueContainsNull":true},"nullable":true,"metadata":{}}]}'
)


def test_spark_schema_round_trips_byte_for_byte() -> None:
    schema = parse_schema(SPARK_SCHEMA)
    assert schema.to_json() == SPARK_SCHEMA
    assert schema["g"].type == GeometryType("OGC:CRS84")
    assert schema["g0"].type == GeometryType("SRID:0")
    assert schema["merc"].type == GeometryType("EPSG:3857")
    assert schema["h"].type == GeographyType("OGC:CRS84", "SPHERICAL")
    assert schema["xs"].type == ArrayType(GeographyType(), True)
    assert schema["m"].type == MapType(parse_data_type("string"), GeometryType(), True)


@pytest.mark.parametrize(
    "written,parsed,rewritten",
    [
        # delta-kernel's spellings (GeometryType.ofDefault / GeographyType with lower-case algorithm):
        ("geometry", GeometryType("OGC:CRS84"), "geometry(OGC:CRS84)"),
        ("geography", GeographyType("OGC:CRS84", "SPHERICAL"), "geography(OGC:CRS84, SPHERICAL)"),
        ("geography(OGC:CRS84, spherical)", GeographyType(), "geography(OGC:CRS84, SPHERICAL)"),
        ("geography(OGC:CRS84)", GeographyType(), "geography(OGC:CRS84, SPHERICAL)"),
        ("geography(spherical)", GeographyType(), "geography(OGC:CRS84, SPHERICAL)"),
        ("geography(EPSG:4326,karney)", GeographyType("EPSG:4326", "KARNEY"), "geography(EPSG:4326, KARNEY)"),
        ("geometry( EPSG:3857 )", GeometryType("EPSG:3857"), "geometry(EPSG:3857)"),
    ],
)
def test_other_spellings_parse_and_are_written_as_spark_writes_them(written, parsed, rewritten) -> None:
    """Spark's JVM parser accepts these too and writes back the right-hand form (SPHERICAL upper-cased)."""
    dt = parse_data_type(written)
    assert dt == parsed
    assert dt.name == rewritten


@pytest.mark.parametrize("bad", ["geometry()", "geometry(4326)", "geography(OGC:CRS84, flat)", "geometryx"])
def test_malformed_geo_types_are_refused(bad: str) -> None:
    with pytest.raises((InvalidTableError, UnsupportedFeatureError)):
        parse_data_type(bad)


def test_geo_values_are_wkb_binary_in_arrow_and_have_no_min_max() -> None:
    assert data_type_to_arrow(GeometryType()) == pa.binary()
    assert data_type_to_arrow(GeographyType()) == pa.binary()
    assert not is_skipping_eligible(GeometryType()) and not is_skipping_eligible(GeographyType())
    # delta-spark's stats schema: min/max only for skipping-eligible leaves, nullCount for all.
    schema = parse_schema(SPARK_SCHEMA)
    arrow = stats_schema(schema, "none", 32, None)
    assert arrow.field("minValues").type == pa.struct([pa.field("id", pa.int64())])
    null_counts = arrow.field("nullCount").type
    assert [null_counts.field(i).name for i in range(null_counts.num_fields)] == [
        "id", "g", "g0", "merc", "h", "s", "xs", "m"
    ]


def test_contains_geospatial_looks_through_nested_types() -> None:
    plain = parse_schema('{"type":"struct","fields":[{"name":"a","type":"binary","nullable":true,"metadata":{}}]}')
    assert not contains_geospatial(plain)
    for path in ("s", "xs", "m", "g"):
        assert contains_geospatial(StructType((parse_schema(SPARK_SCHEMA)[path],)))
    assert [p for p, _ in geospatial.geo_column_paths(parse_schema(SPARK_SCHEMA))] == [
        "g", "g0", "merc", "h", "s.inner", "xs.element", "m.value"
    ]


# ---- protocol ---------------------------------------------------------------------------


def _metadata(type_: str, conf: dict | None = None, partitions: tuple[str, ...] = (), **field_md: object) -> Metadata:
    fields = [
        {"name": "id", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "g", "type": type_, "nullable": True, "metadata": field_md},
    ]
    return Metadata("id", json.dumps({"type": "struct", "fields": fields}), partitions, conf or {})


def P(r: int, w: int, readers: list[str] | None = None, writers: list[str] | None = None) -> Protocol:
    return Protocol(r, w, frozenset(readers) if readers is not None else None,
                    frozenset(writers) if writers is not None else None)


GEO_NEW_TABLE = P(3, 7, ["geospatial"], ["geospatial", "appendOnly", "invariants"])


def test_feature_is_reader_writer_and_supported() -> None:
    spec = pu.feature_spec("geospatial")
    assert (spec.min_reader, spec.min_writer, spec.reader_writer, spec.auto_update) == (3, 7, True, True)
    preview = pu.feature_spec("geospatial-dev")
    assert (preview.min_reader, preview.min_writer, preview.reader_writer) == (3, 7, True)
    for name in ("geospatial", "geospatial-dev"):
        assert name in SUPPORTED_READER_FEATURES and name in SUPPORTED_WRITER_FEATURES
    GEO_NEW_TABLE.check_writable()
    P(3, 7, ["geospatial-dev"], ["geospatial-dev"]).check_writable()


@pytest.mark.parametrize("type_", ["geometry(OGC:CRS84)", "geography(OGC:CRS84, SPHERICAL)",
                                   '{"type":"array","elementType":"geometry(SRID:0)","containsNull":true}'])
def test_a_geo_column_enables_the_feature_on_new_tables(type_: str) -> None:
    t = json.loads(type_) if type_.startswith("{") else type_
    assert pu.required_protocol(_metadata(t), None) == GEO_NEW_TABLE
    # delta-spark 4.x's normalization gives the same protocol.
    assert pu.required_protocol(_metadata(t), None, legacy_preferred=False) == GEO_NEW_TABLE


def test_existing_tables_are_upgraded_automatically() -> None:
    """ALTER TABLE ADD COLUMN g GEOGRAPHY(4326) on a (1,2) table (automaticallyUpdateProtocolOfExistingTables)."""
    assert pu.required_protocol(_metadata("geography(OGC:CRS84, SPHERICAL)"), P(1, 2)) == GEO_NEW_TABLE
    assert pu.required_protocol(_metadata("string"), P(1, 2)) == P(1, 2)


def test_preview_feature_keeps_the_stable_one_away() -> None:
    preview = P(3, 7, ["geospatial-dev"], ["geospatial-dev", "appendOnly", "invariants"])
    assert pu.required_protocol(_metadata("geometry(OGC:CRS84)"), preview) == preview


def test_mixed_srid_is_refused() -> None:
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_GEOSPATIAL_SRID_NOT_SUPPORTED.*unsupported srid: -1"):
        pu.required_protocol(_metadata("geometry(SRID:ANY)"), None)
    nested = {"type": "struct", "fields": [{"name": "i", "type": "geography(srid:any, SPHERICAL)",
                                            "nullable": True, "metadata": {}}]}
    with pytest.raises(DeltaAnalysisError, match="DELTA_GEOSPATIAL_SRID_NOT_SUPPORTED"):
        pu.required_protocol(_metadata(nested), None)


def test_geo_partition_columns_are_refused() -> None:
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_INVALID_PARTITION_COLUMN_TYPE.*column g of type geometry"):
        pu.required_protocol(_metadata("geometry(OGC:CRS84)", partitions=("g",)), None)


def test_column_defaults_on_geo_columns_are_refused() -> None:
    md = _metadata("geometry(OGC:CRS84)", {"delta.feature.allowColumnDefaults": "supported"},
                   CURRENT_DEFAULT="NULL", EXISTS_DEFAULT="NULL")
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_OPERATION_NOT_SUPPORTED_FOR_DATATYPES\] COLUMN DEFAULT"):
        pu.required_protocol(md, None)


def test_operations_refused_for_geo_columns_name_them() -> None:
    schema = parse_schema(SPARK_SCHEMA)
    with pytest.raises(DeltaAnalysisError, match=r"CONVERT TO DELTA is not supported for data types: "
                                                 r"\[g: geometry\(OGC:CRS84\), g0: geometry\(SRID:0\)"):
        geospatial.fail_if_geospatial(schema, "CONVERT TO DELTA")
    geospatial.fail_if_geospatial(StructType((StructField("id", parse_data_type("long")),)), "CONVERT TO DELTA")
    with pytest.raises(DeltaAnalysisError, match=r"Recreate the table or drop columns with geometry/geography "
                                                 r"types: g, g0, merc, h, s, xs, m and try again"):
        geospatial.check_droppable(schema)


# ---- data skipping over stats other writers leave ---------------------------------------


def test_skipping_ignores_geo_bounds_and_uses_geo_null_counts() -> None:
    """delta-kernel (DataFileStatistics.java) writes geo min/max as WKT points; delta-spark writes
    none. Neither may prune a geo comparison; nullCount prunes IS [NOT] NULL."""
    from pydelta.log.data_skipping import FileSkipper
    from pydelta.protocol.predicates import Cmp, Col, IsNotNull, IsNull, Lit

    schema = parse_schema(SPARK_SCHEMA)
    files = pa.table({
        "path": ["kernel", "spark", "all-null", "no-stats"],
        "stats": [
            ('{"numRecords":2,"minValues":{"id":1,"g":"POINT (1 2)"},"maxValues":{"id":2,"g":"POINT (3 4)"},'
             '"nullCount":{"id":0,"g":0}}'),
            '{"numRecords":2,"minValues":{"id":10},"maxValues":{"id":20},"nullCount":{"id":0,"g":1}}',
            '{"numRecords":2,"minValues":{"id":30},"maxValues":{"id":40},"nullCount":{"id":0,"g":2}}',
            None,
        ],
    })
    skipper = FileSkipper(files, schema, [], "none")  # one skipper, several predicates (conflict checks)

    def kept(predicate) -> list[str]:
        return skipper.prune(predicate).column("path").to_pylist()

    assert kept(Cmp("=", Col(("id",)), Lit(15))) == ["spark", "no-stats"]
    assert kept(Cmp("=", Col(("g",)), Lit("POINT (9 9)"))) == ["kernel", "spark", "all-null", "no-stats"]
    assert kept(IsNull(Col(("g",)))) == ["spark", "all-null", "no-stats"]
    assert kept(IsNotNull(Col(("g",)))) == ["kernel", "spark", "no-stats"]
