"""Tests for pydelta.protocol.partition_values (no Spark)."""

from __future__ import annotations

import datetime as dt
import glob
import json
import math
import os
import time
from decimal import Context, Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.golden_paths import GOLDEN

from pydelta.errors import CorruptedLogError, DeltaIllegalArgumentError, InvalidTableError
from pydelta.protocol.partition_values import (
    HIVE_DEFAULT_PARTITION,
    deserialize_partition_value,
    escape_path_name,
    from_uri_path,
    hive_partition_path,
    java_double_to_string,
    java_float_to_string,
    parse_hive_partition_path,
    partition_values_to_arrow,
    serialize_partition_value,
    to_uri_path,
    unescape_path_name,
)
from pydelta.protocol.schema import (
    BINARY,
    BOOLEAN,
    BYTE,
    DATE,
    DOUBLE,
    FLOAT,
    INTEGER,
    LONG,
    SHORT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    VARIANT,
    ArrayType,
    DecimalType,
    StructField,
    StructType,
    column_mapping_mode,
    parse_schema,
    physical_name,
)

UTC = dt.UTC


# ---- the protocol's table ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text,dtype,expected",
    [
        ("", LONG, None),
        (None, STRING, None),
        ("", STRING, None),
        ("abc", STRING, "abc"),
        ("null", STRING, "null"),
        ("-9223372036854775808", LONG, -(2**63)),
        ("127", BYTE, 127),
        ("-32768", SHORT, -32768),
        ("9", INTEGER, 9),
        ("9.9", DOUBLE, 9.9),
        ("2021.0", DOUBLE, 2021.0),
        ("1.0E10", DOUBLE, 1e10),
        ("Infinity", DOUBLE, math.inf),
        ("-Infinity", FLOAT, -math.inf),
        ("0.1", FLOAT, 0.10000000149011612),  # float32
        ("-2342342.23423", DecimalType(12, 5), Decimal("-2342342.23423")),
        ("0", DecimalType(5, 2), Decimal("0.00")),
        ("true", BOOLEAN, True),
        ("FALSE", BOOLEAN, False),
        ("1970-01-01", DATE, dt.date(1970, 1, 1)),
        ("2021-9-8", DATE, dt.date(2021, 9, 8)),
        ("1970-01-01 00:00:00", TIMESTAMP, dt.datetime(1970, 1, 1, tzinfo=UTC)),
        ("1970-01-01 00:00:00.123456", TIMESTAMP, dt.datetime(1970, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
        ("2020-01-01 08:09:10.001", TIMESTAMP, dt.datetime(2020, 1, 1, 8, 9, 10, 1000, tzinfo=UTC)),
        ("1970-01-01T00:00:00.123456Z", TIMESTAMP, dt.datetime(1970, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
        ("2000-01-01T12:00:00.000000Z", TIMESTAMP, dt.datetime(2000, 1, 1, 12, tzinfo=UTC)),
        ("2000-01-01T12:00:00Z", TIMESTAMP, dt.datetime(2000, 1, 1, 12, tzinfo=UTC)),
        ("2000-01-01T12:00:00.5+01:00", TIMESTAMP, dt.datetime(2000, 1, 1, 11, 0, 0, 500000, tzinfo=UTC)),
        ("1970-01-01 00:00:00.123456789", TIMESTAMP, dt.datetime(1970, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
        ("2013-07-05 17:01:00.123456", TIMESTAMP_NTZ, dt.datetime(2013, 7, 5, 17, 1, 0, 123456)),
        ("2021-09-08 11:11:11", TIMESTAMP_NTZ, dt.datetime(2021, 9, 8, 11, 11, 11)),
        ("\u0001\u0002\u0003", BINARY, b"\x01\x02\x03"),
        ("é", BINARY, "é".encode()),
    ],
)
def test_deserialize_spec_examples(text, dtype, expected):
    got = deserialize_partition_value(text, dtype)
    assert got == expected
    assert type(got) is type(expected)
    if isinstance(got, dt.datetime) and dtype == TIMESTAMP:
        assert got.utcoffset() == dt.timedelta(0)
    if dtype == TIMESTAMP_NTZ:
        assert got.tzinfo is None


def test_legacy_timestamp_uses_writer_time_zone():
    # delta-spark wrote these in the session time zone; golden tables used Los Angeles.
    got = deserialize_partition_value("2020-01-01 08:09:10.001", TIMESTAMP, timezone="America/Los_Angeles")
    assert got == dt.datetime(2020, 1, 1, 16, 9, 10, 1000, tzinfo=UTC)
    # An explicit zone wins over the fallback.
    got = deserialize_partition_value("2020-01-01T08:09:10Z", TIMESTAMP, timezone="America/Los_Angeles")
    assert got == dt.datetime(2020, 1, 1, 8, 9, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    "text,dtype",
    [
        ("abc", LONG),
        ("1.5", INTEGER),
        ("128", BYTE),
        ("1_000", LONG),
        ("yes", BOOLEAN),
        ("2021-13-01", DATE),
        ("yesterday", DATE),
        ("12:00", TIMESTAMP),
        ("1.2.3", DOUBLE),
        ("1e", DecimalType(10, 2)),
        ("123456", DecimalType(5, 2)),
    ],
)
def test_deserialize_rejects_bad_values(text, dtype):
    with pytest.raises(CorruptedLogError):
        deserialize_partition_value(text, dtype)


def test_nested_types_cannot_be_partition_columns():
    with pytest.raises(InvalidTableError):
        deserialize_partition_value("x", ArrayType(STRING))
    with pytest.raises(InvalidTableError):
        serialize_partition_value("x", VARIANT)


@pytest.mark.parametrize(
    "value,dtype,expected",
    [
        (None, LONG, None),
        (5, LONG, "5"),
        (-128, BYTE, "-128"),
        (True, BOOLEAN, "true"),
        (0.0, DOUBLE, "0.0"),
        (1.0, FLOAT, "1.0"),
        (1e10, DOUBLE, "1.0E10"),
        (0.001, DOUBLE, "0.001"),
        (1e-4, DOUBLE, "1.0E-4"),
        (123456.789, FLOAT, "123456.79"),
        (math.nan, DOUBLE, "NaN"),
        (-math.inf, DOUBLE, "-Infinity"),
        (Decimal("1"), DecimalType(10, 2), "1.00"),
        (Decimal("-2342342.23423"), DecimalType(12, 5), "-2342342.23423"),
        (Decimal("1E-7"), DecimalType(10, 8), "0.00000010"),
        (dt.date(2021, 9, 8), DATE, "2021-09-08"),
        (dt.date(1, 1, 1), DATE, "0001-01-01"),
        (dt.datetime(2000, 1, 1, 12, tzinfo=UTC), TIMESTAMP, "2000-01-01T12:00:00.000000Z"),
        (dt.datetime(2000, 1, 1, 4, tzinfo=dt.timezone(dt.timedelta(hours=-8))), TIMESTAMP,
         "2000-01-01T12:00:00.000000Z"),
        (dt.datetime(2000, 1, 1, 12), TIMESTAMP, "2000-01-01T12:00:00.000000Z"),
        (1_000_001, TIMESTAMP, "1970-01-01T00:00:01.000001Z"),
        (dt.datetime(2013, 7, 5, 17, 1, 0, 123456), TIMESTAMP_NTZ, "2013-07-05 17:01:00.123456"),
        (dt.datetime(2020, 1, 1, 8, 9, 10, 1000), TIMESTAMP_NTZ, "2020-01-01 08:09:10.001"),
        (dt.datetime(2021, 9, 8, 11, 11, 11), TIMESTAMP_NTZ, "2021-09-08 11:11:11"),
        (b"\x01\x02\x03", BINARY, "\u0001\u0002\u0003"),
        ("", STRING, ""),
    ],
)
def test_serialize_like_delta_spark(value, dtype, expected):
    assert serialize_partition_value(value, dtype) == expected


@pytest.mark.parametrize(
    "value,dtype",
    [
        (128, BYTE),
        ("5", LONG),
        (1, BOOLEAN),
        (Decimal("123.456"), DecimalType(4, 2)),
        (dt.datetime(2000, 1, 1, tzinfo=UTC), TIMESTAMP_NTZ),
        ("2021-01-01", DATE),
    ],
)
def test_serialize_rejects_wrong_values(value, dtype):
    with pytest.raises(DeltaIllegalArgumentError):
        serialize_partition_value(value, dtype)


# ---- round trips (hypothesis) ----------------------------------------------------------

_INT_BOUNDS = {BYTE: 7, SHORT: 15, INTEGER: 31, LONG: 63}


@pytest.mark.parametrize("dtype", list(_INT_BOUNDS))
@given(data=st.data())
def test_round_trip_integers(dtype, data):
    bits = _INT_BOUNDS[dtype]
    v = data.draw(st.integers(-(2**bits), 2**bits - 1))
    assert deserialize_partition_value(serialize_partition_value(v, dtype), dtype) == v


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_round_trip_double(v):
    back = deserialize_partition_value(serialize_partition_value(v, DOUBLE), DOUBLE)
    assert (math.isnan(v) and math.isnan(back)) or (back == v and math.copysign(1, back) == math.copysign(1, v))


@given(st.floats(width=32, allow_nan=True, allow_infinity=True))
def test_round_trip_float(v):
    text = serialize_partition_value(v, FLOAT)
    back = deserialize_partition_value(text, FLOAT)
    assert (math.isnan(v) and math.isnan(back)) or back == v
    # Float.toString gives the shortest digits that identify the float32.
    assert len(text.replace("-", "").replace(".", "").split("E")[0].lstrip("0")) <= 10


@st.composite
def _decimals(draw):
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    digits = draw(st.integers(-(10**precision) + 1, 10**precision - 1))
    return DecimalType(precision, scale), Decimal(digits).scaleb(-scale, context=Context(prec=80))


@given(_decimals())
def test_round_trip_decimal(pair):
    dtype, v = pair
    text = serialize_partition_value(v, dtype)
    assert "E" not in text
    back = deserialize_partition_value(text, dtype)
    assert back == v and back.as_tuple().exponent == -dtype.scale


@given(st.booleans())
def test_round_trip_boolean(v):
    assert deserialize_partition_value(serialize_partition_value(v, BOOLEAN), BOOLEAN) is v


@given(st.dates())
def test_round_trip_date(v):
    assert deserialize_partition_value(serialize_partition_value(v, DATE), DATE) == v


@given(st.datetimes(timezones=st.sampled_from([UTC, dt.timezone(dt.timedelta(hours=5, minutes=30))])))
def test_round_trip_timestamp(v):
    try:
        text = serialize_partition_value(v, TIMESTAMP)
    except OverflowError:  # out of datetime's range once moved to UTC
        return
    back = deserialize_partition_value(text, TIMESTAMP)
    assert back == v and back.tzinfo is not None and back.utcoffset() == dt.timedelta(0)
    # The legacy form (no zone) read in the writer's zone gives the same instant.
    legacy = v.astimezone(UTC).replace(tzinfo=None)
    assert deserialize_partition_value(legacy.isoformat(sep=" "), TIMESTAMP) == v


@given(st.datetimes())
def test_round_trip_timestamp_ntz(v):
    back = deserialize_partition_value(serialize_partition_value(v, TIMESTAMP_NTZ), TIMESTAMP_NTZ)
    assert back == v and back.tzinfo is None


@given(st.text(min_size=1))
def test_round_trip_string(v):
    assert deserialize_partition_value(serialize_partition_value(v, STRING), STRING) == v


@given(st.text(min_size=1).map(lambda s: s.encode("utf-8")))
def test_round_trip_binary(v):
    assert deserialize_partition_value(serialize_partition_value(v, BINARY), BINARY) == v


def test_java_number_formatting():
    assert java_double_to_string(4.661261177e7) == "4.661261177E7"
    assert java_double_to_string(-0.0) == "-0.0"
    assert java_double_to_string(1e7) == "1.0E7"
    assert java_double_to_string(9999999.0) == "9999999.0"
    assert java_double_to_string(5e-324) == "4.9E-324"  # JDK 19+ picks the closest 2 digits
    assert java_double_to_string(1e23) == "1.0E23"
    assert java_double_to_string(0.1) == "0.1"
    assert java_double_to_string(100.0) == "100.0"
    assert java_double_to_string(-1.5e-7) == "-1.5E-7"
    assert java_float_to_string(0.234) == "0.234"
    assert java_float_to_string(3.4028235e38) == "3.4028235E38"
    assert java_float_to_string(1.4e-45) == "1.4E-45"


# ---- golden logs -------------------------------------------------------------------------


def _golden_partitioned_actions():
    """(table, metaData, add-or-remove) for every partitioned file action in the golden logs."""
    out = []
    for log in sorted(glob.glob(str(GOLDEN / "**" / "_delta_log"), recursive=True)):
        table = os.path.relpath(os.path.dirname(log), GOLDEN)
        md = None
        for f in sorted(glob.glob(os.path.join(log, "*.json"))):
            with open(f, encoding="utf-8") as fh:
                for line in fh:
                    if not line.strip():
                        continue
                    action = json.loads(line)
                    if "metaData" in action and action["metaData"].get("schemaString"):
                        md = action["metaData"]
                    for kind in ("add", "remove"):
                        a = action.get(kind)
                        if a and a.get("partitionValues") and md and md.get("partitionColumns"):
                            out.append((table, md, a))
    return out


GOLDEN_ACTIONS = _golden_partitioned_actions()


def test_golden_partition_values_parse_and_round_trip():
    assert len(GOLDEN_ACTIONS) > 100
    checked = 0
    for table, md, action in GOLDEN_ACTIONS:
        schema = parse_schema(md["schemaString"])
        mode = column_mapping_mode(md.get("configuration"))
        for col in md["partitionColumns"]:
            field = schema.field(col)
            key = physical_name(field) if mode != "none" else col
            if key not in action["partitionValues"]:
                continue
            text = action["partitionValues"][key]
            value = deserialize_partition_value(text, field.type)
            if text in (None, ""):
                assert value is None
                continue
            if field.type != TIMESTAMP:  # timestamps are rewritten in the newer UTC form
                assert deserialize_partition_value(serialize_partition_value(value, field.type), field.type) == value
                if field.type in (STRING, LONG, INTEGER, SHORT, BYTE, DATE, BOOLEAN, TIMESTAMP_NTZ) or isinstance(
                    field.type, DecimalType
                ):
                    assert serialize_partition_value(value, field.type) == text, (table, col, text)
            checked += 1
    assert checked > 100


def test_golden_hive_paths_match_delta_spark():
    checked = 0
    for table, md, action in GOLDEN_ACTIONS:
        if not table.startswith("delta-spark"):
            continue  # other writers escape differently (delta-rs once escaped spaces)
        path = action["path"]
        if "/" not in path or "=" not in path or "://" in path:
            continue  # random-prefix or fake paths
        schema = parse_schema(md["schemaString"])
        mode = column_mapping_mode(md.get("configuration"))
        cols = [physical_name(schema.field(c)) if mode != "none" else c for c in md["partitionColumns"]]
        directory = path.rsplit("/", 1)[0]
        assert to_uri_path(hive_partition_path(action["partitionValues"], cols)) == directory, (table, path)
        expected = {k: (v if v != "" else None) for k, v in action["partitionValues"].items()}
        assert parse_hive_partition_path(from_uri_path(directory)) == expected
        checked += 1
    assert checked > 50


# ---- hive paths --------------------------------------------------------------------------


def test_hive_path_special_characters():
    values = {"a": "1", "b": "x y", "c": None, "d": "", "e=": "+ =%0", "f": "A/A:é\n#?*[]{}^'\"\\\x7f"}
    path = hive_partition_path(values, ["a", "b", "c", "d", "e=", "f"])
    assert path == (
        "a=1/b=x y/c=__HIVE_DEFAULT_PARTITION__/d=__HIVE_DEFAULT_PARTITION__/e%3D=+ %3D%250/"
        "f=A%2FA%3Aé%0A%23%3F%2A%5B%5D%7B}%5E%27%22%5C%7F"  # Spark escapes { but not }
    )
    # add.path is the URI form: the golden hive table stores c2=+%20%253D%25250 for '+ =%0'.
    assert to_uri_path(hive_partition_path({"c2": "+ =%0"}, ["c2"])) == "c2=+%20%253D%25250"
    assert to_uri_path(hive_partition_path({"a": "1", "b": "x y"}, ["a", "b"])) == "a=1/b=x%20y"
    assert to_uri_path(hive_partition_path({"x": "A/A"}, ["x"])) == "x=A%252FA"
    assert parse_hive_partition_path(path) == {
        "a": "1",
        "b": "x y",
        "c": None,
        "d": None,
        "e=": "+ =%0",
        "f": "A/A:é\n#?*[]{}^'\"\\\x7f",
    }
    assert hive_partition_path({}, []) == ""
    with pytest.raises(DeltaIllegalArgumentError):
        hive_partition_path({"a": "1"}, ["a", "b"])
    assert HIVE_DEFAULT_PARTITION == "__HIVE_DEFAULT_PARTITION__"


@given(st.text())
def test_escape_path_name_round_trip(s):
    escaped = escape_path_name(s)
    assert "/" not in escaped and "=" not in escaped and ":" not in escaped
    assert unescape_path_name(escaped) == s
    assert from_uri_path(to_uri_path(escaped)) == escaped


# ---- vectorized ----------------------------------------------------------------------------

MAP = pa.map_(pa.string(), pa.string())


def test_partition_values_to_arrow_types_and_nulls():
    schema = StructType(
        (
            StructField("i", INTEGER),
            StructField("ts", TIMESTAMP),
            StructField("s", STRING),
            StructField("d", DATE),
            StructField("dec", DecimalType(12, 5)),
            StructField("b", BOOLEAN),
            StructField("f", FLOAT),
            StructField("bin", BINARY),
            StructField("ntz", TIMESTAMP_NTZ),
        )
    )
    maps = pa.array(
        [
            [("i", "1"), ("ts", "2020-01-01 00:00:00"), ("s", "x"), ("d", "2021-09-08"), ("dec", "-2342342.23423"),
             ("b", "true"), ("f", "0.1"), ("bin", "\u0001"), ("ntz", "2013-07-05 17:01:00.123456")],
            None,
            [("i", ""), ("s", ""), ("extra", "ignored")],
            [("i", "7"), ("ts", "2021-01-01T00:00:00.000000Z"), ("b", "false"), ("f", "NaN"), ("d", "2021-9-8")],
        ],
        type=MAP,
    )
    out = partition_values_to_arrow(maps, schema)
    assert out.type.names == schema.field_names
    assert out.type.field("ts").type == pa.timestamp("us", tz="UTC")
    assert out.type.field("dec").type == pa.decimal128(12, 5)
    rows = out.to_pylist()
    assert rows[0]["i"] == 1 and rows[0]["s"] == "x" and rows[0]["dec"] == Decimal("-2342342.23423")
    assert rows[0]["ts"] == dt.datetime(2020, 1, 1, tzinfo=UTC)
    assert rows[0]["b"] is True and rows[0]["bin"] == b"\x01"
    assert rows[0]["ntz"] == dt.datetime(2013, 7, 5, 17, 1, 0, 123456)
    assert rows[1] == dict.fromkeys(schema.field_names)
    assert rows[2] == dict.fromkeys(schema.field_names)  # '' is null, missing keys are null
    assert rows[3]["ts"] == dt.datetime(2021, 1, 1, tzinfo=UTC) and math.isnan(rows[3]["f"])
    assert rows[3]["d"] == dt.date(2021, 9, 8)  # unusual spelling, scalar fallback


def test_partition_values_to_arrow_name_map_timezone_and_chunks():
    schema = StructType((StructField("part", TIMESTAMP),))
    maps = pa.chunked_array(
        [pa.array([[("col-1", "2020-01-01 08:09:10.001")]], type=MAP), pa.array([[("col-1", None)]], type=MAP)]
    )
    out = partition_values_to_arrow(maps, schema, {"part": "col-1"}, timezone="America/Los_Angeles")
    assert out.to_pylist() == [{"part": dt.datetime(2020, 1, 1, 16, 9, 10, 1000, tzinfo=UTC)}, {"part": None}]


def test_partition_values_to_arrow_from_list_of_structs_and_empty_schema():
    entries = pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))
    arr = pa.array([[{"key": "a", "value": "1"}], None, []], type=entries)
    out = partition_values_to_arrow(arr, StructType((StructField("a", LONG),)))
    assert out.to_pylist() == [{"a": 1}, {"a": None}, {"a": None}]
    empty = partition_values_to_arrow(arr, StructType(()))
    assert len(empty) == 3 and empty.type == pa.struct([])


def test_partition_values_to_arrow_bad_value_names_column():
    maps = pa.array([[("n", "x1")]], type=MAP)
    with pytest.raises(CorruptedLogError, match="'n'"):
        partition_values_to_arrow(maps, StructType((StructField("n", LONG),)))


def test_partition_values_to_arrow_many_files():
    n = 300_000
    keys = [[("date", f"2020-01-{i % 28 + 1:02d}"), ("ts", f"2020-01-01T00:00:{i % 60:02d}.000000Z"), ("id", str(i))]
            for i in range(n)]
    maps = pa.array(keys, type=MAP)
    schema = StructType((StructField("date", DATE), StructField("ts", TIMESTAMP), StructField("id", LONG)))
    start = time.perf_counter()
    out = partition_values_to_arrow(maps, schema)
    elapsed = time.perf_counter() - start
    assert len(out) == n and out.field("id")[n - 1].as_py() == n - 1
    assert out.field("ts")[61].as_py() == dt.datetime(2020, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert elapsed < 60  # sanity only; it is well under a second on a quiet machine


@settings(max_examples=50)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=30))
def test_partition_values_to_arrow_matches_scalar(values):
    maps = pa.array([None if v is None else [("x", serialize_partition_value(v, LONG))] for v in values], type=MAP)
    out = partition_values_to_arrow(maps, StructType((StructField("x", LONG),)))
    assert out.field("x").to_pylist() == values
