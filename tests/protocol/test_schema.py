"""Tests for pydelta.protocol.schema (no Spark).

Every schemaString in the golden logs must parse and be written back byte for byte, since
a writer that rewrites metadata must not disturb what delta-spark wrote.
"""

from __future__ import annotations

import glob
import json
import os
import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.golden_paths import GOLDEN

from pydelta.errors import DeltaError, DeltaIllegalArgumentError, InvalidTableError, UnsupportedFeatureError
from pydelta.protocol.schema import (
    ARROW_FIELD_ID_KEY,
    BINARY,
    BOOLEAN,
    BYTE,
    DATE,
    DOUBLE,
    FLOAT,
    INTEGER,
    LONG,
    PARQUET_FIELD_ID_KEY,
    PARQUET_FIELD_NESTED_IDS_KEY,
    SHORT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    VARIANT,
    VOID,
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    UnsupportedDataTypeError,
    column_mapping_mode,
    data_type_to_arrow,
    field_id,
    from_arrow_schema,
    is_widening_type_change,
    parse_schema,
    physical_name,
    to_arrow_schema,
    to_physical_schema,
    type_changes,
)


def _golden_metadata() -> list[tuple[str, dict]]:
    """(table, metaData) for every metaData action with a schema in the golden logs."""
    out: dict[str, tuple[str, dict]] = {}
    for f in sorted(glob.glob(str(GOLDEN / "**" / "_delta_log" / "*.json"), recursive=True)):
        table = os.path.relpath(f.split("/_delta_log/")[0], GOLDEN)
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                action = json.loads(line)
                md = action.get("metaData")
                if md and md.get("schemaString"):
                    out.setdefault(md["schemaString"], (table, md))
    return list(out.values())


GOLDEN_METADATA = _golden_metadata()


def test_golden_logs_found():
    assert len(GOLDEN_METADATA) > 50, f"expected golden tables under {GOLDEN}"


@pytest.mark.parametrize(
    "table,metadata", GOLDEN_METADATA, ids=[f"{t}#{i}" for i, (t, _) in enumerate(GOLDEN_METADATA)]
)
def test_golden_schema_round_trip(table: str, metadata: dict):
    s = metadata["schemaString"]
    schema = parse_schema(s)
    out = schema.to_json()
    assert out == s  # byte for byte, as delta-spark wrote it
    assert parse_schema(out) == schema
    assert hash(parse_schema(out)) == hash(schema)
    assert json.loads(out) == json.loads(s)
    arrow = to_arrow_schema(schema)
    assert arrow.names == schema.field_names
    mode = column_mapping_mode(metadata.get("configuration"))
    physical = to_physical_schema(schema, mode)
    to_arrow_schema(physical)
    if mode == "none":
        assert physical is schema


def test_all_golden_types_seen():
    seen: set[str] = set()

    def walk(dt):
        if isinstance(dt, StructType):
            for f in dt:
                walk(f.type)
        elif isinstance(dt, ArrayType):
            walk(dt.element_type)
        elif isinstance(dt, MapType):
            walk(dt.key_type)
            walk(dt.value_type)
        else:
            seen.add(dt.name.split("(")[0])

    for _, md in GOLDEN_METADATA:
        walk(parse_schema(md["schemaString"]))
    assert {"timestamp_ntz", "variant", "decimal", "date", "binary", "byte", "short"} <= seen


# ---- JSON ---------------------------------------------------------------------------------

NESTED = {
    "type": "struct",
    "fields": [
        {"name": "a", "type": "integer", "nullable": False, "metadata": {}},
        {
            "name": "b",
            "type": {"type": "struct", "fields": [{"name": "d", "type": "integer", "nullable": False, "metadata": {}}]},
            "nullable": True,
            "metadata": {},
        },
        {"name": "c", "type": {"type": "array", "elementType": "integer", "containsNull": False}, "nullable": True,
         "metadata": {}},
        {
            "name": "f",
            "type": {"type": "map", "keyType": "string", "valueType": "decimal(38,18)", "valueContainsNull": True},
            "nullable": True,
            "metadata": {},
        },
        {
            "name": "g",
            "type": {
                "type": "array",
                "elementType": {
                    "type": "map",
                    "keyType": "string",
                    "valueType": {"type": "struct",
                                  "fields": [{"name": "t", "type": "timestamp", "nullable": True, "metadata": {}}]},
                    "valueContainsNull": False,
                },
                "containsNull": True,
            },
            "nullable": True,
            "metadata": {},
        },
        {"name": "n", "type": "timestamp_ntz", "nullable": True, "metadata": {}},
        {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
        {"name": "z", "type": "void", "nullable": True, "metadata": {}},
    ],
}


def test_nested_round_trip_and_model():
    s = json.dumps(NESTED, separators=(",", ":"))
    schema = parse_schema(s)
    assert schema.to_json() == s
    assert schema.field("a") == StructField("a", INTEGER, False)
    assert schema["b"].type == StructType((StructField("d", INTEGER, False),))
    assert schema["c"].type == ArrayType(INTEGER, False)
    assert schema["f"].type == MapType(STRING, DecimalType(38, 18), True)
    assert schema["n"].type == TIMESTAMP_NTZ and schema["v"].type == VARIANT and schema["z"].type == VOID
    assert schema.field_names == ["a", "b", "c", "f", "g", "n", "v", "z"]
    assert schema.leaf_paths()[:3] == [("a",), ("b", "d"), ("c",)]
    assert "a" in schema and "A" not in schema
    assert schema.field("A", case_sensitive=False).name == "a"
    with pytest.raises(KeyError):
        schema.field("A")
    assert schema.select(["n", "a"]).field_names == ["n", "a"]
    assert schema.without(["A", "b"]).field_names == ["c", "f", "g", "n", "v", "z"]


def test_field_metadata_preserved_exactly():
    md = {
        "delta.identity.highWaterMark": 9223372036854775807,
        "delta.identity.step": -1,
        "delta.identity.allowExplicitInsert": False,
        "comment": "ünïcödé \"quoted\" \\ back\nslash",
        "delta.typeChanges": [{"fromType": "short", "toType": "integer"}, {"fromType": "integer", "toType": "long"}],
        "delta.columnMapping.nested.ids": {"col-1.element": 5, "col-1.element.key": 6},
        "a.double": 1.5,
        "an.empty.object": {},
        "an.empty.list": [],
        "null.value": None,
    }
    schema = StructType((StructField("col", LONG, True, md),))
    text = schema.to_json()
    assert "ünïcödé" in text  # not \u-escaped, as Jackson writes it
    back = parse_schema(text)
    assert back == schema
    assert dict(back["col"].metadata) == md
    assert json.loads(text)["fields"][0]["metadata"] == md
    # Key order is kept as written.
    assert list(json.loads(text)["fields"][0]["metadata"]) == list(md)
    assert type_changes(back["col"]) == md["delta.typeChanges"]


def test_missing_optional_keys_default():
    schema = parse_schema('{"type":"struct","fields":[{"name":"x","type":"long"}]}')
    assert schema["x"] == StructField("x", LONG, True, {})
    assert schema.to_json() == '{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}}]}'


@pytest.mark.parametrize(
    "text,expected",
    [
        ('"decimal(10, 4)"', DecimalType(10, 4)),
        ('"decimal(38,38)"', DecimalType(38, 38)),
        ('"decimal"', DecimalType(10, 0)),
        ('{"type":"variant"}', VARIANT),
        ('"null"', VOID),
    ],
)
def test_type_spellings(text, expected):
    schema = parse_schema('{"type":"struct","fields":[{"name":"x","type":%s,"nullable":true,"metadata":{}}]}' % text)
    assert schema["x"].type == expected


def test_decimal_serialized_without_space():
    schema = parse_schema(
        '{"type":"struct","fields":[{"name":"x","type":"decimal(10, 4)","nullable":true,"metadata":{}}]}')
    assert '"decimal(10,4)"' in schema.to_json()


@pytest.mark.parametrize("bad_type", ['"interval"', '"char(3)"', '{"type":"udt","class":"x"}', '"decimal(40,2)"'])
def test_unknown_type_is_a_clear_delta_error(bad_type):
    text = '{"type":"struct","fields":[{"name":"x","type":%s,"nullable":true,"metadata":{}}]}' % bad_type
    with pytest.raises(InvalidTableError) as e:
        parse_schema(text)
    assert isinstance(e.value, DeltaError)
    if bad_type != '"decimal(40,2)"':
        assert isinstance(e.value, UnsupportedDataTypeError)
        assert isinstance(e.value, UnsupportedFeatureError)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '"long"',
        '{"type":"struct","fields":[{"type":"long"}]}',
        '{"type":"struct","fields":[{"name":"x","type":"long","nullable":"yes"}]}',
        '{"type":"struct","fields":[{"name":"x","type":{"type":"array"}}]}',
        '{"type":"struct","fields":{}}',
    ],
)
def test_malformed_schema(text):
    with pytest.raises(InvalidTableError):
        parse_schema(text)


def test_immutability_hash_pickle():
    md = {"k": [1, 2]}
    f = StructField("x", LONG, True, md)
    md["k"].append(3)  # the caller's dict is copied
    assert f.metadata == {"k": [1, 2]}
    with pytest.raises(TypeError):
        f.metadata["k"] = 1  # type: ignore[index]
    with pytest.raises(AttributeError):
        f.name = "y"  # type: ignore[misc]
    s = StructType((f, StructField("y", ArrayType(DecimalType(5, 2)))))
    assert pickle.loads(pickle.dumps(s)) == s
    assert {s: 1}[parse_schema(s.to_json())] == 1
    assert f.with_name("z").name == "z" and f.with_name("z").metadata == f.metadata
    with pytest.raises(DeltaIllegalArgumentError):
        PrimitiveType("int")
    with pytest.raises(DeltaIllegalArgumentError):
        DecimalType(39, 0)


# ---- Arrow --------------------------------------------------------------------------------


def test_arrow_conversion_of_all_types():
    schema = parse_schema(json.dumps(NESTED))
    arrow = to_arrow_schema(schema)
    assert arrow.field("a").type == pa.int32() and not arrow.field("a").nullable
    assert arrow.field("b").type == pa.struct([pa.field("d", pa.int32(), nullable=False)])
    assert arrow.field("c").type == pa.list_(pa.field("element", pa.int32(), nullable=False))
    f = arrow.field("f").type
    assert pa.types.is_map(f) and f.key_type == pa.string() and f.item_type == pa.decimal128(38, 18)
    g = arrow.field("g").type
    assert g.value_type.item_type == pa.struct([pa.field("t", pa.timestamp("us", tz="UTC"))])
    assert not g.value_type.item_field.nullable
    assert arrow.field("n").type == pa.timestamp("us")
    assert arrow.field("v").type == pa.struct(
        [pa.field("value", pa.binary(), nullable=False), pa.field("metadata", pa.binary(), nullable=False)]
    )
    assert arrow.field("z").type == pa.null()
    # An empty table of this schema can be built and written.
    pa.Table.from_pylist([], schema=arrow)


@pytest.mark.parametrize(
    "dt,arrow_type",
    [
        (STRING, pa.string()),
        (LONG, pa.int64()),
        (INTEGER, pa.int32()),
        (SHORT, pa.int16()),
        (BYTE, pa.int8()),
        (FLOAT, pa.float32()),
        (DOUBLE, pa.float64()),
        (BOOLEAN, pa.bool_()),
        (BINARY, pa.binary()),
        (DATE, pa.date32()),
        (TIMESTAMP, pa.timestamp("us", tz="UTC")),
        (TIMESTAMP_NTZ, pa.timestamp("us")),
        (DecimalType(4, 2), pa.decimal128(4, 2)),
        (DecimalType(38, 0), pa.decimal128(38, 0)),
    ],
)
def test_primitive_arrow_round_trip(dt, arrow_type):
    assert data_type_to_arrow(dt) == arrow_type
    assert from_arrow_schema(pa.schema([pa.field("x", arrow_type)]))["x"].type == dt


def test_from_arrow_round_trip_nested():
    schema = parse_schema(json.dumps(NESTED))
    without_variant = schema.without(["v"])  # variant is a plain struct in Arrow
    assert from_arrow_schema(to_arrow_schema(without_variant)) == without_variant


def test_from_arrow_widens_and_rejects():
    arrow = pa.schema(
        [
            pa.field("u8", pa.uint8()),
            pa.field("u32", pa.uint32()),
            pa.field("ls", pa.large_string()),
            pa.field("dict", pa.dictionary(pa.int32(), pa.string())),
            pa.field("ts_ms", pa.timestamp("ms", tz="America/Los_Angeles")),
            pa.field("ts_ns", pa.timestamp("ns")),
            pa.field("d64", pa.date64()),
            pa.field("ll", pa.large_list(pa.int64())),
        ]
    )
    s = from_arrow_schema(arrow)
    assert [f.type for f in s] == [SHORT, LONG, STRING, STRING, TIMESTAMP, TIMESTAMP_NTZ, DATE, ArrayType(LONG)]
    for bad in (pa.duration("s"), pa.uint64(), pa.decimal256(50, 2)):
        with pytest.raises(InvalidTableError):
            from_arrow_schema(pa.schema([pa.field("x", bad)]))


# ---- column mapping ----------------------------------------------------------------------


def test_column_mapping_mode():
    assert column_mapping_mode({}) == "none"
    assert column_mapping_mode(None) == "none"
    assert column_mapping_mode({"delta.columnMapping.mode": "Name"}) == "name"
    assert column_mapping_mode({"delta.columnMapping.mode": "id"}) == "id"
    with pytest.raises(InvalidTableError):
        column_mapping_mode({"delta.columnMapping.mode": "bogus"})


def _cm_field(name, dt, fid, phys, **extra):
    return StructField(
        name,
        dt,
        True,
        {"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": phys, **extra},
    )


def test_physical_schema_renames_nested_and_sets_field_ids():
    inner = StructType((_cm_field("leaf", LONG, 3, "col-leaf"),))
    schema = StructType(
        (
            _cm_field("s", inner, 1, "col-s"),
            _cm_field(
                "arr",
                ArrayType(MapType(STRING, inner)),
                2,
                "col-arr",
                **{"delta.columnMapping.nested.ids": {"col-arr.element": 10, "col-arr.element.key": 11,
                                                      "col-arr.element.value": 12}},
            ),
            StructField("plain", LONG),
        )
    )
    assert physical_name(schema["s"]) == "col-s" and field_id(schema["s"]) == 1
    assert physical_name(schema["plain"]) == "plain" and field_id(schema["plain"]) is None
    assert to_physical_schema(schema, "none") is schema
    with pytest.raises(InvalidTableError):
        to_physical_schema(schema, "id")  # "plain" has no physical name / id
    schema = schema.without(["plain"])
    for mode in ("id", "name"):
        phys = to_physical_schema(schema, mode)
        assert phys.field_names == ["col-s", "col-arr"]
        assert phys["col-s"].type.field_names == ["col-leaf"]
        assert phys["col-arr"].type.element_type.value_type.field_names == ["col-leaf"]
        assert phys["col-s"].metadata[PARQUET_FIELD_ID_KEY] == 1
        assert phys["col-s"].metadata["delta.columnMapping.id"] == 1  # the rest is kept
        assert PARQUET_FIELD_NESTED_IDS_KEY in phys["col-arr"].metadata
        arrow = to_arrow_schema(phys)
        assert arrow.field("col-s").metadata[ARROW_FIELD_ID_KEY] == b"1"
        assert arrow.field("col-s").type.field("col-leaf").metadata[ARROW_FIELD_ID_KEY] == b"3"
        lst = arrow.field("col-arr").type
        assert lst.value_field.metadata[ARROW_FIELD_ID_KEY] == b"10"
        assert lst.value_type.key_field.metadata[ARROW_FIELD_ID_KEY] == b"11"
        assert lst.value_type.item_field.metadata[ARROW_FIELD_ID_KEY] == b"12"
        assert lst.value_type.item_type.field("col-leaf").metadata[ARROW_FIELD_ID_KEY] == b"3"


def _first_data_file(table_dir: Path) -> Path:
    files = sorted(p for p in table_dir.rglob("*.parquet") if "_delta_log" not in p.parts)
    assert files, table_dir
    return files[0]


@pytest.mark.parametrize(
    "table",
    ["delta-spark/table-with-columnmapping-mode-id/delta", "delta-spark/table-with-columnmapping-mode-name/delta"],
)
def test_physical_schema_matches_golden_parquet_files(table):
    table_dir = GOLDEN / table
    assert table_dir.is_dir(), f"{table} not in golden set"
    md = None
    for f in sorted((table_dir / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            if line.strip() and "metaData" in json.loads(line):
                md = json.loads(line)["metaData"]
    schema = parse_schema(md["schemaString"])
    mode = column_mapping_mode(md["configuration"])
    phys_arrow = to_arrow_schema(to_physical_schema(schema, mode).without(md["partitionColumns"]))
    file_schema = pq.read_schema(_first_data_file(table_dir))

    def ids_and_names(fields) -> list:
        out = []
        for f in fields:
            fid = (f.metadata or {}).get(ARROW_FIELD_ID_KEY)
            sub = None
            if pa.types.is_struct(f.type):
                sub = ids_and_names([f.type.field(i) for i in range(f.type.num_fields)])
            out.append((f.name, fid, sub))
        return out

    # Same physical names, and the same Parquet field ids delta-spark wrote.
    assert ids_and_names(phys_arrow) == ids_and_names(file_schema)


# ---- type widening ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "a,b,ok",
    [
        ("byte", "short", True),
        ("short", "long", True),
        ("long", "integer", False),
        ("float", "double", True),
        ("integer", "double", True),
        ("long", "double", False),
        ("date", "timestamp_ntz", True),
        ("date", "timestamp", False),
        ("decimal(6,2)", "decimal(10,4)", True),
        ("decimal(6,2)", "decimal(7,4)", False),
        ("integer", "decimal(10,0)", True),
        ("integer", "decimal(9,0)", False),
        ("long", "decimal(22,2)", True),
        ("long", "decimal(21,2)", False),
        ("string", "string", False),
    ],
)
def test_type_widening_rules(a, b, ok):
    assert is_widening_type_change(a, b) is ok


def test_type_changes_metadata_survives_round_trip():
    text = (
        '{"type":"struct","fields":[{"name":"e","type":{"type":"map","keyType":"double","valueType":"integer",'
        '"valueContainsNull":true},"nullable":true,"metadata":{"delta.typeChanges":[{"fromType":"float",'
        '"toType":"double","fieldPath":"key"}]}}]}'
    )
    schema = parse_schema(text)
    assert schema.to_json() == text
    assert type_changes(schema["e"]) == [{"fromType": "float", "toType": "double", "fieldPath": "key"}]
    assert all(is_widening_type_change(c["fromType"], c["toType"]) for c in type_changes(schema["e"]))
