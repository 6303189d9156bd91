"""Tests for pydelta.protocol.stats (no Spark)."""

from __future__ import annotations

import datetime as dt
import glob
import json
import math
import os
import struct
import time
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.golden_paths import GOLDEN

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
    MapType,
    StructField,
    StructType,
    column_mapping_mode,
    parse_schema,
)
from pydelta.protocol.stats import (
    dumps_stats,
    format_stats_value,
    indexed_schema,
    min_max_columns,
    parse_stats,
    parse_stats_columns,
    stats_schema,
    truncate_string_max,
    truncate_string_min,
)

UTC = dt.UTC


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _schema(*fields: StructField) -> StructType:
    return StructType(tuple(fields))


# ---- stats schema ------------------------------------------------------------------------


def test_stats_schema_shape():
    schema = _schema(
        StructField("id", LONG),
        StructField("s", _schema(StructField("x", STRING), StructField("flag", BOOLEAN))),
        StructField("arr", ArrayType(INTEGER)),
        StructField("m", MapType(STRING, STRING)),
        StructField("v", VARIANT),
        StructField("bin", BINARY),
        StructField("dec", DecimalType(10, 2)),
        StructField("ts", TIMESTAMP),
        StructField("ntz", TIMESTAMP_NTZ),
        StructField("d", DATE),
        StructField("f", FLOAT),
    )
    sc = stats_schema(schema)
    assert sc.names == ["numRecords", "minValues", "maxValues", "nullCount", "tightBounds"]
    assert sc.field("numRecords").type == pa.int64() and sc.field("tightBounds").type == pa.bool_()
    mins = sc.field("minValues").type
    assert mins == sc.field("maxValues").type
    assert [mins.field(i).name for i in range(mins.num_fields)] == ["id", "s", "dec", "ts", "ntz", "d", "f"]
    assert mins.field("s").type == pa.struct([("x", pa.string())])  # booleans have no min/max
    assert mins.field("ts").type == pa.timestamp("us", tz="UTC")
    assert mins.field("ntz").type == pa.timestamp("us")
    assert mins.field("dec").type == pa.decimal128(10, 2)
    nulls = sc.field("nullCount").type
    assert [nulls.field(i).name for i in range(nulls.num_fields)] == [
        "id", "s", "arr", "m", "v", "bin", "dec", "ts", "ntz", "d", "f",
    ]
    assert nulls.field("s").type == pa.struct([("x", pa.int64()), ("flag", pa.int64())])
    assert nulls.field("arr").type == pa.int64()


def test_num_indexed_cols_counts_nested_leaves_like_delta_spark():
    schema = _schema(
        StructField("a", LONG),
        StructField("s", _schema(StructField("b", LONG), StructField("c", LONG))),
        StructField("arr", ArrayType(LONG)),
        StructField("d", LONG),
    )
    assert indexed_schema(schema, 2).leaf_paths() == [("a",), ("s", "b")]
    assert indexed_schema(schema, 4).leaf_paths() == [("a",), ("s", "b"), ("s", "c"), ("arr",)]
    assert indexed_schema(schema, -1) == schema
    assert indexed_schema(schema, 0) == StructType(())
    sc = stats_schema(schema, num_indexed_cols=0)
    assert sc.field("minValues").type == pa.struct([]) and sc.field("nullCount").type == pa.struct([])
    assert [c.logical_path for c in min_max_columns(schema, num_indexed_cols=4)] == [("a",), ("s", "b"), ("s", "c")]


def test_stats_columns_and_partition_columns():
    schema = _schema(
        StructField("Part", STRING),
        StructField("a", LONG),
        StructField("a.b", LONG),
        StructField("s", _schema(StructField("X", LONG), StructField("y", LONG))),
        StructField("z", LONG),
    )
    assert parse_stats_columns("a, `a.b`, s.x, `we``ird`") == [("a",), ("a.b",), ("s", "x"), ("we`ird",)]
    cols = indexed_schema(schema, stats_columns="S.x, `a.b`, part", partition_columns=["part"])
    assert cols.leaf_paths() == [("a.b",), ("s", "X")]
    cols = indexed_schema(schema, stats_columns=["s"])
    assert cols.leaf_paths() == [("s", "X"), ("s", "y")]
    # Partition columns never get statistics.
    assert "Part" not in stats_schema(schema, partition_columns=["part"]).field("nullCount").type.names


def test_column_mapping_uses_physical_names():
    md = lambda i, p: {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": p}  # noqa: E731
    schema = _schema(
        StructField("a", LONG, True, md(1, "col-a")),
        StructField("s", _schema(StructField("b", STRING, True, md(3, "col-b"))), True, md(2, "col-s")),
    )
    sc = stats_schema(schema, "name")
    assert sc.field("minValues").type == pa.struct([("col-a", pa.int64()),
                                                    ("col-s", pa.struct([("col-b", pa.string())]))])
    assert stats_schema(schema, "none").field("minValues").type.names == ["a", "s"]
    [a, b] = min_max_columns(schema, "id")
    assert (a.logical_path, a.physical_path) == (("a",), ("col-a",))
    assert (b.logical_path, b.physical_path) == (("s", "b"), ("col-s", "col-b"))


# ---- golden stats ------------------------------------------------------------------------


def _golden_tables() -> list[tuple[str, dict, list[str]]]:
    tables: dict[str, tuple[dict | None, list[str]]] = {}
    for log in sorted(glob.glob(str(GOLDEN / "**" / "_delta_log"), recursive=True)):
        md, stats = None, []
        for f in sorted(glob.glob(os.path.join(log, "*.json"))):
            with open(f, encoding="utf-8") as fh:
                for line in fh:
                    if not line.strip():
                        continue
                    action = json.loads(line)
                    if "metaData" in action and action["metaData"].get("schemaString"):
                        md = action["metaData"]
                    if "add" in action and action["add"].get("stats"):
                        stats.append(action["add"]["stats"])
        if md and stats:
            tables[os.path.relpath(os.path.dirname(log), GOLDEN)] = (md, stats)
    return [(t, md, s) for t, (md, s) in tables.items()]


GOLDEN_TABLES = _golden_tables()


def _expected(value, t: pa.DataType):
    """Independent reference conversion of one JSON stats value."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        if not isinstance(value, dict):
            return None
        return {t.field(i).name: _expected(value.get(t.field(i).name), t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_timestamp(t):
        parsed = dt.datetime.fromisoformat(value)
        return parsed.astimezone(UTC) if t.tz else parsed.replace(tzinfo=None)
    if pa.types.is_date(t):
        return dt.date.fromisoformat(value)
    if pa.types.is_decimal(t):
        return Decimal(value)
    if pa.types.is_float32(t):
        return _f32(value)
    if pa.types.is_floating(t):
        return float(value)
    return value


def _stats_schema_for(md: dict) -> pa.Schema:
    cfg = md.get("configuration") or {}
    return stats_schema(
        parse_schema(md["schemaString"]),
        column_mapping_mode(cfg),
        int(cfg.get("delta.dataSkippingNumIndexedCols", 32)),
        cfg.get("delta.dataSkippingStatsColumns"),
        partition_columns=md.get("partitionColumns", []),
    )


def test_golden_tables_found():
    assert len(GOLDEN_TABLES) > 50


@pytest.mark.parametrize("table,md,stats", GOLDEN_TABLES, ids=[t for t, _, _ in GOLDEN_TABLES])
def test_golden_stats_parse(table, md, stats):
    sc = _stats_schema_for(md)
    parsed = parse_stats(pa.array([*stats, None, ""], pa.string()), sc)
    assert parsed.type == pa.struct(list(sc))
    rows = parsed.to_pylist()
    assert rows[-2:] == [None, None]  # no stats: a null row
    for text, row in zip(stats, rows[:-2], strict=True):
        raw = json.loads(text, parse_float=Decimal)
        expected = _expected(raw, pa.struct(list(sc)))
        for key in ("minValues", "maxValues"):
            # Fields of a column whose stats changed type (e.g. an old table version) may differ.
            if expected[key] is not None and row[key] is not None:
                for name in row[key]:
                    if name in raw.get(key, {}):
                        assert row[key][name] == expected[key][name], (table, key, name)
        assert row["numRecords"] == raw.get("numRecords")
        assert row["nullCount"] == expected["nullCount"]
        assert row["tightBounds"] == raw.get("tightBounds")


def test_golden_timestamps_with_offsets_and_ntz():
    by_name = {t: (md, s) for t, md, s in GOLDEN_TABLES}
    md, stats = by_name["delta-spark/data-skipping-basic-stats-all-types/delta"]
    row = parse_stats(pa.array(stats), _stats_schema_for(md)).to_pylist()[0]
    # "2000-01-01T00:00:00.000-08:00" as written with a Los Angeles session time zone.
    assert row["minValues"]["as_timestamp"] == dt.datetime(2000, 1, 1, 8, tzinfo=UTC)
    assert row["minValues"]["as_date"] == dt.date(2000, 1, 1)
    md, stats = by_name["delta-spark/data-reader-timestamp_ntz/delta"]
    rows = parse_stats(pa.array(stats), _stats_schema_for(md)).to_pylist()
    assert dt.datetime(2021, 11, 18, 2, 30, 0, 123000) in [r["minValues"]["tsNtz"] for r in rows]
    md, stats = by_name["delta-rs/table_with_edge_timestamps"]
    row = parse_stats(pa.array(stats), _stats_schema_for(md)).to_pylist()[0]
    assert row["maxValues"]["BIG_DATE"] == dt.datetime(9999, 12, 31, tzinfo=UTC)


def test_golden_decimals_are_exact():
    by_name = {t: (md, s) for t, md, s in GOLDEN_TABLES}
    md, stats = by_name["delta-spark/decimal-various-scale-precision/delta"]
    row = parse_stats(pa.array(stats), _stats_schema_for(md)).to_pylist()[0]
    assert row["minValues"]["decimal_25_12"] == Decimal("-3.1661E-8")
    assert row["minValues"]["decimal_35_30"] == Decimal("-32805.309")
    assert row["maxValues"]["decimal_38_36"] == Decimal("3.241836E-18")


# ---- robustness --------------------------------------------------------------------------

SIMPLE = _schema(
    StructField("a", LONG),
    StructField("b", BYTE),
    StructField("d", DOUBLE),
    StructField("x", DecimalType(5, 2)),
    StructField("s", _schema(StructField("t", TIMESTAMP))),
)


def test_parse_tolerates_bad_rows_and_values():
    sc = stats_schema(SIMPLE)
    texts = [
        '{"numRecords":1,"minValues":{"a":1,"d":"NaN","x":1.234,"b":1000},"maxValues":{"a":2,"d":"Infinity","x":1.234,'
        '"s":{"t":"2021-01-01T00:00:00.000+01:00"}},"nullCount":{"a":0,"s":{"t":0}},"unknown":{"deep":[1,2]}}',
        None,
        "",
        "not json",
        "[1,2]",
        '{"numRecords":2,\n"minValues":{"a":5}}',
        '{"numRecords":3,"minValues":{"s":7,"a":"seven"}}',
        '{"numRecords":4,"minValues":{"a":9223372036854775807},"tightBounds":false}',
    ]
    rows = parse_stats(pa.array(texts), sc).to_pylist()
    first = rows[0]
    assert first["minValues"]["a"] == 1 and math.isnan(first["minValues"]["d"])
    assert first["minValues"]["b"] is None  # out of range for byte: only this value is lost
    assert first["minValues"]["x"] == Decimal("1.23") and first["maxValues"]["x"] == Decimal("1.24")  # stay bounds
    assert first["maxValues"]["d"] == math.inf
    assert first["maxValues"]["s"]["t"] == dt.datetime(2020, 12, 31, 23, tzinfo=UTC)
    assert first["nullCount"] == {"a": 0, "b": None, "d": None, "x": None, "s": {"t": 0}}
    assert rows[1:5] == [None, None, None, None]
    assert rows[5]["numRecords"] == 2 and rows[5]["minValues"]["a"] == 5
    assert rows[6]["numRecords"] == 3 and rows[6]["minValues"]["s"] is None and rows[6]["minValues"]["a"] is None
    assert rows[7]["minValues"]["a"] == 2**63 - 1 and rows[7]["tightBounds"] is False


def test_parse_empty_and_chunked():
    sc = stats_schema(SIMPLE)
    assert len(parse_stats(pa.array([], pa.string()), sc)) == 0
    chunked = pa.chunked_array([pa.array(['{"numRecords":1}']),
                                pa.array(['{"numRecords":2}'], pa.large_string())[:0].cast(pa.string()),
                                pa.array(['{"numRecords":3}'])])
    assert [r["numRecords"] for r in parse_stats(chunked, sc).to_pylist()] == [1, 3]
    sliced = pa.array(['{"numRecords":1}', '{"numRecords":2}', '{"numRecords":3}'], pa.large_string()).slice(1)
    assert [r["numRecords"] for r in parse_stats(sliced, sc).to_pylist()] == [2, 3]


def test_parse_300k_rows():
    schema = _schema(StructField("id", LONG), StructField("name", STRING), StructField("ts", TIMESTAMP))
    sc = stats_schema(schema)
    one = (
        '{"numRecords":10,"minValues":{"id":%d,"name":"abc","ts":"2021-01-01T00:00:00.000Z"},'
        '"maxValues":{"id":100,"name":"xyz","ts":"2021-01-02T00:00:00.000Z"},'
        '"nullCount":{"id":0,"name":0,"ts":0},"tightBounds":true}'
    )
    texts = pa.array([one % i if i % 1000 else None for i in range(300_000)])
    start = time.perf_counter()
    parsed = parse_stats(texts, sc)
    elapsed = time.perf_counter() - start
    assert len(parsed) == 300_000 and parsed.null_count == 300
    assert parsed[299_999].as_py()["minValues"]["id"] == 299_999
    assert elapsed < 120  # sanity only (well under a second on a quiet machine)


# ---- writing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,dtype,expected",
    [
        (dt.datetime(2021, 7, 30, 18, 11, 48, 919999, tzinfo=UTC), TIMESTAMP, "2021-07-30T18:11:48.919Z"),
        (dt.datetime(2000, 1, 1, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=-8))), TIMESTAMP,
         "2000-01-01T08:00:00.000Z"),
        (dt.datetime(9999, 12, 31), TIMESTAMP, "9999-12-31T00:00:00.000Z"),
        (1_001, TIMESTAMP, "1970-01-01T00:00:00.001Z"),
        (dt.datetime(2021, 11, 18, 2, 30, 0, 123456), TIMESTAMP_NTZ, "2021-11-18T02:30:00.123"),
        (dt.date(2022, 10, 24), DATE, "2022-10-24"),
        (Decimal("-5.678"), DecimalType(10, 5), Decimal("-5.67800")),
        (3, DecimalType(4, 0), Decimal("3")),
        (0.234, FLOAT, 0.234),
        (4.661261177e7, DOUBLE, 46612611.77),
        (math.nan, DOUBLE, "NaN"),
        (-math.inf, FLOAT, "-Infinity"),
        (7, SHORT, 7),
        ("x", STRING, "x"),
        (b"x", BINARY, None),
        (True, BOOLEAN, None),
        (None, LONG, None),
        ([1], ArrayType(LONG), None),
    ],
)
def test_format_stats_value(value, dtype, expected):
    assert format_stats_value(value, dtype) == expected


def test_dumps_stats_keeps_decimals_exact():
    stats = {
        "numRecords": 1,
        "minValues": {"dec": format_stats_value(Decimal("-9999999999.9999999999"), DecimalType(20, 10)), "d": math.nan},
        "maxValues": {"tiny": Decimal("-3.1661E-8"), "s": "é\"\n"},
    }
    text = dumps_stats(stats)
    assert text == (
        '{"numRecords":1,"minValues":{"dec":-9999999999.9999999999,"d":"NaN"},'
        '"maxValues":{"tiny":-3.1661E-8,"s":"é\\"\\n"}}'
    )
    assert json.loads(text, parse_float=Decimal)["minValues"]["dec"] == Decimal("-9999999999.9999999999")


_VALUE_STRATEGIES = {
    LONG: st.integers(-(2**63), 2**63 - 1),
    INTEGER: st.integers(-(2**31), 2**31 - 1),
    SHORT: st.integers(-(2**15), 2**15 - 1),
    BYTE: st.integers(-128, 127),
    DOUBLE: st.floats(allow_nan=False),
    FLOAT: st.floats(width=32, allow_nan=False),
    STRING: st.text(),
    DATE: st.dates(),
    TIMESTAMP: st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30),
                            timezones=st.just(UTC)),
    TIMESTAMP_NTZ: st.datetimes(),
    DecimalType(38, 6): st.decimals(min_value=-(10**31) + 1, max_value=10**31 - 1, places=6),
}


@pytest.mark.parametrize("dtype", list(_VALUE_STRATEGIES), ids=str)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_writer_values_read_back(dtype, data):
    values = data.draw(st.lists(_VALUE_STRATEGIES[dtype], min_size=1, max_size=5))
    schema = _schema(StructField("c", dtype))
    texts = [dumps_stats({"numRecords": 1, "minValues": {"c": format_stats_value(v, dtype)}}) for v in values]
    got = [r["minValues"]["c"] for r in parse_stats(pa.array(texts), stats_schema(schema)).to_pylist()]
    for v, g in zip(values, got, strict=True):
        if dtype in (TIMESTAMP, TIMESTAMP_NTZ):
            v = v.replace(microsecond=v.microsecond // 1000 * 1000)  # millisecond stats
        if dtype == FLOAT:
            v = _f32(v)
        assert g == v


# ---- string truncation ------------------------------------------------------------------


def test_truncation_examples():
    assert truncate_string_min("abc", 5) == "abc"
    assert truncate_string_max("abc", 3) == "abc"
    assert truncate_string_min("abcdef", 3) == "abc"
    assert truncate_string_max("abcdef", 3) == "abc\x7f"
    assert truncate_string_max("abc\x7fef", 3) == "abc\U0010ffff"  # DEL cannot be beaten by DEL
    assert truncate_string_max("abcé", 3) == "abc\U0010ffff"
    assert truncate_string_max("abc\U0010ffffd", 3) == "abc\U0010ffff\x7f"  # U+10FFFF is kept
    assert truncate_string_max("abc\U0010ffff\U0010ffffd", 3) is None  # would exceed 2 * prefix
    assert truncate_string_max("ab" + "\U0010ffff" * 3, 2) is None  # beyond 2 * prefix: no max
    assert truncate_string_max("ab" + "\U0010ffff" * 2, 2) is None  # as delta-spark: past 2 * prefix
    assert truncate_string_max("ab\U0010ffff", 2) == "ab\U0010ffff"  # reached the end: whole string
    # Lengths are UTF-16 units; a surrogate pair is never split.
    assert truncate_string_min("a😀b", 2) == "a😀"
    assert truncate_string_max("a😀bc", 2) == "a😀\x7f"
    assert truncate_string_min("", 0) == "" and truncate_string_min("x", 0) is None
    assert truncate_string_max("xy", 0) is None
    assert truncate_string_min(None) is None and truncate_string_max(None) is None
    long = "x" * 40
    assert truncate_string_min(long) == "x" * 32 and truncate_string_max(long) == "x" * 32 + "\x7f"


@given(st.text(), st.integers(1, 12))
def test_truncation_bounds(s, n):
    lo = truncate_string_min(s, n)
    hi = truncate_string_max(s, n)
    # Python compares code points, which is UTF-8 byte order, as Spark compares strings.
    assert lo <= s and s.startswith(lo)
    assert len(lo.encode("utf-16-le")) // 2 <= n + 1
    if hi is not None:
        assert hi >= s
        assert len(hi.encode("utf-16-le")) // 2 <= 2 * n + 2
    elif len(s.encode("utf-16-le")) // 2 > n:
        assert "\U0010ffff" in s
