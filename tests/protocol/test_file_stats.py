"""Tests for pydelta.protocol.file_stats: ``add.stats`` from Parquet footers (no Spark).

The footer-derived statistics are checked against statistics computed directly from the
data read back (pyarrow.compute), against what the `deltalake` package writes for the same
file, and against the stats delta-spark wrote for the golden tables' parquet-mr files.
"""

from __future__ import annotations

import datetime as dt
import glob
import json
import math
import os
import random
import re
import struct
import urllib.parse
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.protocol.file_stats import collect_stats, collect_stats_for_file, collect_stats_for_files
from pydelta.protocol.schema import (
    DOUBLE,
    INTEGER,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    VARIANT,
    ArrayType,
    DecimalType,
    StructField,
    StructType,
    column_mapping_mode,
    from_arrow_schema,
    parse_schema,
    to_arrow_schema,
    to_physical_schema,
)
from pydelta.protocol.stats import truncate_string_max

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1)


# ---- helpers ------------------------------------------------------------------------------


def _write(path: Path, table: pa.Table, **kw: Any) -> str:
    pq.write_table(table, str(path), **kw)
    return str(path)


def _stats(path: str, schema: StructType | None = None, **kw: Any) -> dict[str, Any]:
    md = pq.read_metadata(path)
    if schema is None:
        schema = from_arrow_schema(pq.read_schema(path))
    return json.loads(collect_stats(md, schema, **kw), parse_float=Decimal)


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _fmt_ms(micros: int, utc: bool) -> str:
    """Independent formatter: floor to the millisecond, ISO-8601 as delta-spark writes it."""
    ms = micros // 1000
    t = EPOCH + dt.timedelta(milliseconds=ms)
    s = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{ms % 1000:03d}"
    return s + "Z" if utc else s


def _micros(v: dt.datetime) -> int:
    naive = v.astimezone(UTC).replace(tzinfo=None) if v.tzinfo else v
    d = naive - EPOCH
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _dec(unscaled: int, scale: int) -> Decimal:
    return Decimal(unscaled).scaleb(-scale, context=Context(prec=100))


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def _leaves(table: pa.Table) -> dict[tuple[str, ...], pa.Array]:
    """Every non-struct column, struct parents' nulls merged in (as Spark sees ``a.b``)."""
    out: dict[tuple[str, ...], pa.Array] = {}

    def walk(arr: pa.Array, path: tuple[str, ...]) -> None:
        if pa.types.is_struct(arr.type):
            for f, child in zip(arr.type, arr.flatten(), strict=True):
                walk(child, (*path, f.name))
        else:
            out[path] = arr

    for name in table.column_names:
        walk(table.column(name).combine_chunks(), (name,))
    return out


def _get(d: dict[str, Any], path: tuple[str, ...]) -> Any:
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def _has(d: dict[str, Any], path: tuple[str, ...]) -> bool:
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return False
        d = d[p]
    return True


def _check_against_data(
    stats: dict[str, Any],
    table: pa.Table,
    *,
    key_of: dict[tuple[str, ...], tuple[str, ...]] | None = None,
    float_max: bool = False,
    skip: set[tuple[str, ...]] = frozenset(),  # type: ignore[assignment]
) -> int:
    """Compare footer stats with stats computed from the data; returns #values checked."""
    checked = 0
    assert stats["numRecords"] == table.num_rows
    for path, arr in _leaves(table).items():
        if path in skip:
            continue
        key = key_of[path] if key_of else path
        t = arr.type
        nested = pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t)
        if not nested:
            assert _get(stats["nullCount"], key) == arr.null_count, key
            checked += 1
        eligible = not (
            nested or pa.types.is_boolean(t) or pa.types.is_binary(t) or pa.types.is_null(t)
        )
        mn, mx = _get(stats.get("minValues", {}), key), _get(stats.get("maxValues", {}), key)
        if not eligible:
            assert not _has(stats.get("minValues", {}), key) and not _has(stats.get("maxValues", {}), key), key
            continue
        values = [v for v in arr.to_pylist() if v is not None]
        if pa.types.is_floating(t):
            values = [v for v in values if not math.isnan(v)]
        if not values:
            assert mn is None and mx is None, key
            continue
        tmm = pc.min_max(arr).as_py()  # Arrow's min_max skips nulls and NaN, like Spark's min
        tmin, tmax = tmm["min"], tmm["max"]
        assert tmin == min(values) and tmax == max(values)
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            assert mn == tmin[:32], key  # Spark's substring(min, 0, 32): code points
            assert all(mn <= v for v in values) and all(mx >= v for v in values), key
            assert mx == truncate_string_max(tmax, 32), key
            if _utf16_len(tmax) <= 32:
                assert mx == tmax, key
        elif pa.types.is_floating(t):
            want = tmin if pa.types.is_float64(t) else _f32(tmin)
            got = float(mn) if not isinstance(mn, str) else {"-Infinity": -math.inf, "Infinity": math.inf}[mn]
            assert (got if pa.types.is_float64(t) else _f32(got)) == want, key
            if float_max:
                assert mx is not None, key
            else:
                assert mx is None, key  # a non-parquet-mr writer may hide NaN above the max
        elif pa.types.is_decimal(t):
            assert mn == tmin and mx == tmax, key
            assert -mn.as_tuple().exponent == t.scale and -mx.as_tuple().exponent == t.scale, key
        elif pa.types.is_timestamp(t):
            utc = t.tz is not None
            assert mn == _fmt_ms(_micros(tmin), utc) and mx == _fmt_ms(_micros(tmax), utc), key
            # truncated to millis: max + 1 ms (the reader's widening) covers every value
            assert _micros(tmax) < (_micros(tmax) // 1000 + 1) * 1000
        elif pa.types.is_date(t):
            assert mn == tmin.isoformat() and mx == tmax.isoformat(), key
        else:
            assert mn == tmin and mx == tmax, key
            assert not isinstance(mn, bool)
        checked += 1
    return checked


# ---- a table with every type, many row groups ---------------------------------------------


def _random_string(rng: random.Random) -> str:
    alphabet = "abcxyzAZ09 éßΩ漢字😀\U0010fffd\u007f~"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))


def _big_table(n: int = 400, seed: int = 7) -> pa.Table:
    rng = random.Random(seed)

    def maybe(v: Any, p: float = 0.15) -> Any:
        return None if rng.random() < p else v

    dec_max = Decimal("99999999999999999999.999999999999999999")
    decs: list[Any] = [dec_max, Decimal("-99999999999999999999.999999999999999999"), Decimal("1E-18"), Decimal(0)]
    decs += [maybe(_dec(rng.randint(-(10**38) + 1, 10**38 - 1), 18)) for _ in range(n - len(decs))]
    ts = [maybe(rng.randint(_micros(dt.datetime(1, 1, 1)), _micros(dt.datetime(9999, 12, 31)))) for _ in range(n)]
    ts[5] = -1  # 1969-12-31T23:59:59.999999: floors to .999
    ts[6] = 1_234_567  # sub-millisecond part
    floats = [maybe(rng.uniform(-1e6, 1e6)) for _ in range(n)]
    floats[10], floats[11], floats[12] = math.nan, math.inf, -math.inf
    floats32 = [maybe(rng.uniform(-1e3, 1e3)) for _ in range(n)]
    floats32[40] = math.nan
    strings = [maybe(_random_string(rng)) for _ in range(n)]
    strings[3] = "\U0010fffd" * 50  # the max, longer than 32: a prefix + U+10FFFF
    strings[4] = "\U0010fffd" * 31 + "😀"  # 33 UTF-16 units: truncated too
    struct_rows = []
    for _ in range(n):
        if rng.random() < 0.1:
            struct_rows.append(None)
            continue
        inner = None if rng.random() < 0.1 else {
            "x": maybe(rng.uniform(-5, 5)),
            "d": maybe(dt.date(2000, 1, 1) + dt.timedelta(days=rng.randint(-9000, 9000))),
        }
        struct_rows.append({"a": maybe(rng.randint(-(2**63), 2**63 - 1)), "b": maybe(_random_string(rng)),
                            "inner": inner})
    rg_null = [None if i < 60 else rng.randint(-1000, 1000) for i in range(n)]
    nan_rg = [math.nan if i < 23 else rng.uniform(0, 1) for i in range(n)]
    return pa.table(
        {
            "i8": pa.array([maybe(rng.randint(-128, 127)) for _ in range(n)], pa.int8()),
            "i16": pa.array([maybe(rng.randint(-(2**15), 2**15 - 1)) for _ in range(n)], pa.int16()),
            "i32": pa.array([maybe(rng.randint(-(2**31), 2**31 - 1)) for _ in range(n)], pa.int32()),
            "i64": pa.array([-(2**63), 2**63 - 1] + [maybe(rng.randint(-(2**63), 2**63 - 1)) for _ in range(n - 2)],
                            pa.int64()),
            "f64": pa.array(floats, pa.float64()),
            "f32": pa.array(floats32, pa.float32()),
            "dec38": pa.array(decs, pa.decimal128(38, 18)),
            "dec9": pa.array([maybe(_dec(rng.randint(-(10**9) + 1, 10**9 - 1), 2)) for _ in range(n)],
                             pa.decimal128(9, 2)),
            "d": pa.array(
                [dt.date(1, 1, 1), dt.date(9999, 12, 31)]
                + [maybe(dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-700000, 700000))) for _ in range(n - 2)],
                pa.date32(),
            ),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "ntz": pa.array([maybe(v) for v in ts[::-1]], pa.timestamp("us")),
            "s": pa.array(strings, pa.string()),
            "short_s": pa.array([maybe(rng.choice(["a", "b", "été", "z"])) for _ in range(n)], pa.string()),
            "bo": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
            "bin": pa.array([maybe(bytes([rng.randint(0, 255)] * 3)) for _ in range(n)], pa.binary()),
            "st": pa.array(
                struct_rows,
                pa.struct([("a", pa.int64()), ("b", pa.string()),
                           ("inner", pa.struct([("x", pa.float64()), ("d", pa.date32())]))]),
            ),
            "rg_null": pa.array(rg_null, pa.int32()),
            "all_null": pa.array([None] * n, pa.string()),
            "nan_rg": pa.array(nan_rg, pa.float64()),
            "arr_full": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int32())),
            "arr_nulls": pa.array([None if i % 50 == 3 else [i] for i in range(n)], pa.list_(pa.int32())),
            "arr_empty": pa.array([[] if i % 50 == 4 else [i] for i in range(n)], pa.list_(pa.int32())),
            "m_full": pa.array([[(str(i), i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
            "m_nulls": pa.array([None if i % 40 == 0 else [(str(i), None)] for i in range(n)],
                                pa.map_(pa.string(), pa.int64())),
        }
    )


def test_all_types_match_the_data(tmp_path):
    table = _big_table()
    path = _write(tmp_path / "f.parquet", table, row_group_size=23)
    md = pq.read_metadata(path)
    assert md.num_row_groups > 10
    stats = _stats(path, num_indexed_cols=-1)
    back = pq.read_table(path)
    # NaN-only first row group: Arrow writes no min/max there, so nothing is provable.
    checked = _check_against_data(stats, back, skip={("nan_rg",)})
    assert checked > 35
    assert "nan_rg" not in stats["minValues"] and "nan_rg" not in stats["maxValues"]
    assert stats["nullCount"]["nan_rg"] == 0
    # a row group with no values at all does not hide the other row groups' bounds
    assert stats["minValues"]["rg_null"] == min(v for v in back.column("rg_null").to_pylist() if v is not None)
    # arrays/maps: only provable null counts
    assert stats["nullCount"]["arr_full"] == 0 and stats["nullCount"]["m_full"] == 0
    for name in ("arr_nulls", "arr_empty", "m_nulls"):
        assert name not in stats["nullCount"]
    # the JSON mirrors the schema: keys in schema order, nested structs nested
    assert list(stats["nullCount"]) == [n for n in table.column_names if n not in ("arr_nulls", "arr_empty", "m_nulls")]
    assert list(stats["minValues"]["st"]) == ["a", "b", "inner"]
    assert list(stats) == ["numRecords", "minValues", "maxValues", "nullCount"]
    assert stats["maxValues"]["s"] == "\U0010fffd" * 16 + "\U0010ffff"  # 32 UTF-16 units, as the JVM counts


def test_default_32_indexed_columns_and_exact_json(tmp_path):
    table = pa.table(
        {
            "id": pa.array([3, 1, None, 2], pa.int64()),
            "name": pa.array(["b", None, "a", "c"]),
            "s": pa.array([{"x": 1.5, "flag": True}, None, {"x": None, "flag": False}, {"x": -0.5, "flag": None}],
                          pa.struct([("x", pa.float32()), ("flag", pa.bool_())])),
            "amount": pa.array([Decimal("1.10"), Decimal("-2.00"), None, Decimal("0.01")], pa.decimal128(10, 2)),
            "ts": pa.array([1_600_000_000_123_456, None, 0, -1], pa.timestamp("us", tz="UTC")),
            "ntz": pa.array([1_600_000_000_123_456, None, 0, -1], pa.timestamp("us")),
            "day": pa.array([dt.date(2020, 2, 29), None, dt.date(1, 1, 1), dt.date(1970, 1, 1)]),
            "tiny": pa.array([Decimal("1E-18"), Decimal(0), None, None], pa.decimal128(38, 18)),
        }
    )
    path = _write(tmp_path / "f.parquet", table, row_group_size=2)
    got = collect_stats(pq.read_metadata(path), from_arrow_schema(table.schema))
    assert got == (
        '{"numRecords":4,'
        '"minValues":{"id":1,"name":"a","s":{"x":-0.5},"amount":-2.00,"ts":"1969-12-31T23:59:59.999Z",'
        '"ntz":"1969-12-31T23:59:59.999","day":"0001-01-01","tiny":0E-18},'
        '"maxValues":{"id":3,"name":"c","s":{},"amount":1.10,"ts":"2020-09-13T12:26:40.123Z",'
        '"ntz":"2020-09-13T12:26:40.123","day":"2020-02-29","tiny":1E-18},'
        '"nullCount":{"id":1,"name":1,"s":{"x":2,"flag":2},"amount":1,"ts":1,"ntz":1,"day":1,"tiny":2}}'
    )
    with_tight = collect_stats(pq.read_metadata(path), from_arrow_schema(table.schema), tight_bounds=True)
    assert with_tight == got[:-1] + ',"tightBounds":true}'


def test_strings_truncated_like_delta_spark(tmp_path):
    long_min = "a😀" + "é" * 40
    long_max = "zz" + "漢" * 40
    table = pa.table({"s": [long_min, long_max, "m" * 32, None]})
    path = _write(tmp_path / "f.parquet", table)
    stats = _stats(path)
    assert stats["minValues"]["s"] == long_min[:32]  # 32 code points (Spark's substring)
    assert stats["maxValues"]["s"] == "zz" + "漢" * 30 + "\U0010ffff"
    assert stats["maxValues"]["s"] > long_max
    short = _stats(path, string_prefix_length=3)
    assert short["minValues"]["s"] == "a😀é"
    assert short["maxValues"]["s"] == truncate_string_max(long_max, 3) == "zz漢\U0010ffff"
    # a max made of U+10FFFF beyond twice the prefix length cannot be bounded: left out
    table = pa.table({"s": ["\U0010ffff" * 70, "a"]})
    stats = _stats(_write(tmp_path / "g.parquet", table))
    assert stats["minValues"]["s"] == "a" and "s" not in stats["maxValues"]


def test_very_long_strings_are_safe(tmp_path):
    table = pa.table({"s": ["b" * 10_000, "a" * 5000 + "z", None]})
    stats = _stats(_write(tmp_path / "f.parquet", table))
    assert stats["nullCount"]["s"] == 1
    mn, mx = stats["minValues"].get("s"), stats["maxValues"].get("s")
    # Arrow keeps no statistics this large: then there are no bounds; if it ever does, they bound.
    assert mn is None or all(mn <= v for v in ("b" * 10_000, "a" * 5000 + "z"))
    assert mx is None or mx >= "b" * 10_000


def test_floats_from_a_non_parquet_mr_writer_keep_min_only(tmp_path):
    table = pa.table({"d": [1.0, math.nan, -2.5, None], "f": pa.array([0.1, 3.5, math.nan, None], pa.float32())})
    stats = _stats(_write(tmp_path / "f.parquet", table))
    assert stats["minValues"] == {"d": Decimal("-2.5"), "f": Decimal("0.1")}
    assert stats["maxValues"] == {}
    assert stats["nullCount"] == {"d": 1, "f": 1}


def _patch_footer(path: str, replacements: list[tuple[bytes, bytes]]) -> None:
    data = bytearray(Path(path).read_bytes())
    n = struct.unpack("<i", data[-8:-4])[0]
    start, end = len(data) - 8 - n, len(data) - 8
    footer = bytes(data[start:end])
    for old, new in replacements:
        assert len(old) == len(new) and old in footer
        footer = footer.replace(old, new)
    data[start:end] = footer
    Path(path).write_bytes(bytes(data))


def _as_parquet_mr(md: pq.FileMetaData) -> tuple[bytes, bytes]:
    old = md.created_by.encode()
    base = b"parquet-mr version 1.13.1 "
    assert len(old) >= len(base)
    return old, base + b"x" * (len(old) - len(base))


@pytest.mark.parametrize("writer", ["parquet-mr", "other"])
@pytest.mark.parametrize("nan", [True, False])
def test_floats_follow_spark_nan_ordering(tmp_path, writer, nan):
    """parquet-mr (Spark's writer) orders NaN last, like Spark: its footers give Spark's
    max, NaN included. Footers are patched to look like parquet-mr's."""
    path = _write(tmp_path / "f.parquet",
                  pa.table({"d": [1.0, 2.5, None, 0.5], "f": pa.array([1.0, 3.5, None, 0.5], pa.float32())}))
    md = pq.read_metadata(path)
    patches = [_as_parquet_mr(md)] if writer == "parquet-mr" else []
    if nan:
        patches += [(struct.pack("<d", 2.5), struct.pack("<d", math.nan)),
                    (struct.pack("<f", 3.5), struct.pack("<f", math.nan))]
    _patch_footer(path, patches)
    md = pq.read_metadata(path)
    stats = json.loads(collect_stats(md, from_arrow_schema(pq.read_schema(path))))
    if writer == "parquet-mr":
        assert md.created_by.startswith("parquet-mr version 1.13.1")
        assert stats["minValues"] == {"d": 0.5, "f": 0.5}
        assert stats["maxValues"] == ({"d": "NaN", "f": "NaN"} if nan else {"d": 2.5, "f": 3.5})
    elif nan:
        # NaN in the stats of a writer that does not order it: no bounds at all
        assert stats["minValues"] == {} and stats["maxValues"] == {}
    else:
        assert stats["minValues"] == {"d": 0.5, "f": 0.5} and stats["maxValues"] == {}
    assert stats["nullCount"] == {"d": 1, "f": 1}


def test_nested_null_counts_only_when_provable(tmp_path):
    n = 30
    table = pa.table(
        {
            "arr_ok": pa.array([[i] for i in range(n)], pa.list_(pa.int64())),
            "arr_null_elem": pa.array([[None] if i == 5 else [i] for i in range(n)], pa.list_(pa.int64())),
            "arr_req": pa.array([[] if i % 2 else [i] for i in range(n)], pa.list_(pa.int64())),
            "m_ok": pa.array([[("k", "v")] for _ in range(n)], pa.map_(pa.string(), pa.string())),
            "m_empty": pa.array([[] for _ in range(n)], pa.map_(pa.string(), pa.string())),
            "st": pa.array([{"inner": [1]} if i else None for i in range(n)],
                           pa.struct([("inner", pa.list_(pa.int64()))])),
            "st2": pa.array([{"inner": [1]} for i in range(n)], pa.struct([("inner", pa.list_(pa.int64()))])),
        }
    )
    schema = table.schema.set(2, pa.field("arr_req", pa.list_(pa.int64()), nullable=False))
    table = table.cast(schema)
    path = _write(tmp_path / "f.parquet", table, row_group_size=7)
    stats = _stats(path)
    assert stats["nullCount"] == {"arr_ok": 0, "arr_req": 0, "m_ok": 0, "st": {}, "st2": {"inner": 0}}
    assert "minValues" not in stats  # nothing skipping-eligible


def test_variant_null_count_from_its_metadata_leaf(tmp_path):
    vtype = pa.struct([pa.field("metadata", pa.binary(), nullable=False),
                       pa.field("value", pa.binary(), nullable=False)])
    rows = [None if i % 3 == 0 else {"metadata": b"\x01\x00\x00", "value": b"\x0c\x01"} for i in range(10)]
    table = pa.table({"v": pa.array(rows, vtype), "id": pa.array(range(10), pa.int64())})
    path = _write(tmp_path / "f.parquet", table, row_group_size=4)
    schema = StructType((StructField("v", VARIANT), StructField("id", LONG)))
    stats = _stats(path, schema)
    assert stats["nullCount"] == {"v": 4, "id": 0}
    assert stats["minValues"] == {"id": 0} and stats["maxValues"] == {"id": 9}


def test_num_indexed_cols_and_stats_columns(tmp_path):
    table = pa.table(
        {
            "a": pa.array([1, 2], pa.int64()),
            "s": pa.array([{"b": "x", "c": 1.0}, {"b": "y", "c": None}],
                          pa.struct([("b", pa.string()), ("c", pa.float64())])),
            "arr": pa.array([[1], [2]], pa.list_(pa.int64())),
            "e": pa.array(["p", None]),
        }
    )
    path = _write(tmp_path / "f.parquet", table)
    two = _stats(path, num_indexed_cols=2)
    assert two == {"numRecords": 2, "minValues": {"a": 1, "s": {"b": "x"}}, "maxValues": {"a": 2, "s": {"b": "y"}},
                   "nullCount": {"a": 0, "s": {"b": 0}}}
    four = _stats(path, num_indexed_cols=4)
    assert four["nullCount"] == {"a": 0, "s": {"b": 0, "c": 1}, "arr": 0}
    assert four["maxValues"] == {"a": 2, "s": {"b": "y"}}  # Arrow footers may hide NaN above a float max
    zero = _stats(path, num_indexed_cols=0)
    assert zero == {"numRecords": 2}
    cols = _stats(path, stats_columns="S.c, e")
    assert cols == {"numRecords": 2, "minValues": {"s": {"c": Decimal("1.0")}, "e": "p"},
                    "maxValues": {"s": {}, "e": "p"}, "nullCount": {"s": {"c": 1}, "e": 1}}
    # stats_columns wins over num_indexed_cols; a named struct keeps all its children
    struct_only = _stats(path, stats_columns=["s"], num_indexed_cols=1)
    assert struct_only["nullCount"] == {"s": {"b": 0, "c": 1}}


def _mapped_schema() -> StructType:
    def md(i: int) -> dict[str, Any]:
        return {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f"col-{i}-phys"}

    return StructType(
        (
            StructField("id", LONG, True, md(1)),
            StructField("info", StructType((StructField("name", STRING, True, md(3)),
                                            StructField("when", TIMESTAMP, True, md(4)))), True, md(2)),
            StructField("tags", ArrayType(STRING), True, md(5)),
            StructField("price", DecimalType(38, 18), True, md(6)),
        )
    )


def _mapped_table(schema: StructType, mode: str, rename: bool = False) -> pa.Table:
    arrow_schema = to_arrow_schema(to_physical_schema(schema, mode))
    data = {
        "id": pa.array([5, None, -7], pa.int64()),
        "info": pa.array(
            [{"col-3-phys": "bob", "col-4-phys": 10**15 + 7}, None, {"col-3-phys": None, "col-4-phys": -(10**12)}],
            arrow_schema.field(1).type,
        ),
        "tags": pa.array([["a"], ["b"], ["c", "d"]], pa.list_(pa.string())),
        "price": pa.array([Decimal("3.141592653589793238"), Decimal("-1"), None], pa.decimal128(38, 18)),
    }
    table = pa.Table.from_arrays([data[f.name].cast(a.type) for f, a in zip(schema.fields, arrow_schema, strict=True)],
                                 schema=arrow_schema)
    if rename:  # same field ids, other names: only 'id' mode can match these
        renamed = pa.schema([f.with_name(f"other{i}") for i, f in enumerate(arrow_schema)])
        table = pa.Table.from_arrays(table.columns, schema=renamed)
    return table


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_uses_physical_names(tmp_path, mode):
    schema = _mapped_schema()
    table = _mapped_table(schema, mode)
    path = _write(tmp_path / "f.parquet", table, row_group_size=2)
    assert pq.read_schema(path).names == ["col-1-phys", "col-2-phys", "col-5-phys", "col-6-phys"]
    stats = _stats(path, schema, column_mapping_mode=mode)
    key_of = {
        ("col-1-phys",): ("col-1-phys",),
        ("col-2-phys", "col-3-phys"): ("col-2-phys", "col-3-phys"),
        ("col-2-phys", "col-4-phys"): ("col-2-phys", "col-4-phys"),
        ("col-6-phys",): ("col-6-phys",),
    }
    _check_against_data(stats, pq.read_table(path).drop_columns(["col-5-phys"]), key_of=key_of)
    assert stats["nullCount"]["col-5-phys"] == 0
    assert stats["minValues"] == {
        "col-1-phys": -7,
        "col-2-phys": {"col-3-phys": "bob", "col-4-phys": "1969-12-20T10:13:20.000Z"},
        "col-6-phys": Decimal("-1.000000000000000000"),
    }


def test_id_mode_matches_by_field_id(tmp_path):
    schema = _mapped_schema()
    path = _write(tmp_path / "f.parquet", _mapped_table(schema, "id", rename=True))
    by_id = _stats(path, schema, column_mapping_mode="id")
    assert by_id["minValues"]["col-1-phys"] == -7
    assert by_id["nullCount"] == {"col-1-phys": 1, "col-2-phys": {"col-3-phys": 2, "col-4-phys": 1}, "col-5-phys": 0,
                                  "col-6-phys": 1}
    # by name nothing matches: every column reads as null, which is what the counts say
    by_name = _stats(path, schema, column_mapping_mode="name")
    assert by_name["nullCount"] == {"col-1-phys": 3, "col-2-phys": {"col-3-phys": 3, "col-4-phys": 3}, "col-5-phys": 3,
                                    "col-6-phys": 3}
    assert by_name["minValues"] == {"col-2-phys": {}}
    with pytest.raises(DeltaIllegalArgumentError):
        collect_stats(pq.read_metadata(path), schema, column_mapping_mode="bogus")


def test_columns_missing_from_the_file_are_all_null(tmp_path):
    path = _write(tmp_path / "f.parquet", pa.table({"a": pa.array([1, 2, 3], pa.int32())}))
    schema = StructType((StructField("a", INTEGER), StructField("added", STRING),
                         StructField("s", StructType((StructField("x", LONG),)))))
    assert _stats(path, schema) == {
        "numRecords": 3,
        "minValues": {"a": 1, "s": {}},
        "maxValues": {"a": 3, "s": {}},
        "nullCount": {"a": 0, "added": 3, "s": {"x": 3}},
    }
    # partition columns are never in the file and never have statistics
    with_part = StructType((StructField("part", STRING), StructField("a", INTEGER)))
    assert _stats(path, with_part, partition_columns=["PART"])["nullCount"] == {"a": 0}
    # names are matched case-insensitively when unambiguous, like Spark's reader
    upper = StructType((StructField("A", INTEGER),))
    assert _stats(path, upper)["maxValues"] == {"A": 3}


def test_missing_statistics_leave_values_out(tmp_path):
    table = pa.table({"a": pa.array([1, 2, None], pa.int64()), "b": pa.array(["x", "y", None])})
    path = _write(tmp_path / "f.parquet", table, write_statistics=["a"])
    assert _stats(path) == {"numRecords": 3, "minValues": {"a": 1}, "maxValues": {"a": 2}, "nullCount": {"a": 1}}


def test_int96_timestamps_have_no_bounds(tmp_path):
    table = pa.table({"ts": pa.array([1_000_000, None], pa.timestamp("us", tz="UTC"))})
    path = _write(tmp_path / "f.parquet", table, use_deprecated_int96_timestamps=True)
    assert pq.read_metadata(path).schema.column(0).physical_type == "INT96"
    stats = _stats(path)
    assert stats["minValues"] == {} and stats["maxValues"] == {}
    assert stats["nullCount"].get("ts") in (None, 1)  # Arrow keeps no INT96 statistics, parquet-mr a null count


def test_timestamp_units_and_ntz_mismatch(tmp_path):
    ns = [1_600_000_000_123_456_789, -1, None]
    table = pa.table({
        "ms": pa.array([1_600_000_000_123, -1, None], pa.timestamp("ms", tz="UTC")),
        "ns": pa.array(ns, pa.timestamp("ns", tz="UTC")),
    })
    path = _write(tmp_path / "f.parquet", table, coerce_timestamps=None, version="2.6")
    stats = _stats(path)
    assert stats["minValues"] == {"ms": "1969-12-31T23:59:59.999Z", "ns": "1969-12-31T23:59:59.999Z"}
    assert stats["maxValues"] == {"ms": "2020-09-13T12:26:40.123Z", "ns": "2020-09-13T12:26:40.123Z"}
    # a UTC-adjusted column read as timestamp_ntz (or the reverse) is not what Spark would see
    ntz = StructType((StructField("ms", TIMESTAMP_NTZ), StructField("ns", TIMESTAMP_NTZ)))
    assert _stats(path, ntz)["minValues"] == {}


def test_type_widening_reads_old_files_in_the_new_type(tmp_path):
    table = pa.table({
        "i": pa.array([1, -5, None], pa.int32()),
        "f": pa.array([1.5, -0.25, None], pa.float32()),
        "dec": pa.array([Decimal("1.25"), Decimal("-3.50"), None], pa.decimal128(10, 2)),
        "d": pa.array([dt.date(2020, 1, 2), dt.date(1960, 5, 6), None]),
        "sh": pa.array([3, -2, None], pa.int16()),
    })
    path = _write(tmp_path / "f.parquet", table)
    widened = StructType((
        StructField("i", LONG), StructField("f", DOUBLE), StructField("dec", DecimalType(12, 4)),
        StructField("d", TIMESTAMP_NTZ), StructField("sh", DecimalType(10, 0)),
    ))
    got = collect_stats(pq.read_metadata(path), widened)
    assert got == (
        '{"numRecords":3,"minValues":{"i":-5,"f":-0.25,"dec":-3.5000,"d":"1960-05-06T00:00:00.000","sh":-2},'
        '"maxValues":{"i":1,"dec":1.2500,"d":"2020-01-02T00:00:00.000","sh":3},'
        '"nullCount":{"i":1,"f":1,"dec":1,"d":1,"sh":1}}'
    )


def test_unsigned_integers(tmp_path):
    table = pa.table({
        "u8": pa.array([0, 255, None], pa.uint8()),
        "u16": pa.array([1, 65535, None], pa.uint16()),
        "u32": pa.array([1, 2**32 - 1, None], pa.uint32()),
    })
    path = _write(tmp_path / "f.parquet", table)
    stats = _stats(path)
    assert stats["minValues"] == {"u8": 0, "u16": 1, "u32": 1}
    assert stats["maxValues"] == {"u8": 255, "u16": 65535, "u32": 2**32 - 1}


def test_legacy_calendar_files_keep_no_ancient_bounds(tmp_path):
    table = pa.table({
        "old": pa.array([dt.date(1500, 1, 1), dt.date(2000, 1, 1)]),
        "new": pa.array([dt.date(1600, 1, 1), dt.date(2000, 1, 1)]),
        "ts_old": pa.array([_micros(dt.datetime(1899, 12, 31)), 0], pa.timestamp("us", tz="UTC")),
        "ts_new": pa.array([_micros(dt.datetime(1900, 1, 1)), 0], pa.timestamp("us", tz="UTC")),
    })
    plain = _stats(_write(tmp_path / "plain.parquet", table))
    assert set(plain["minValues"]) == {"old", "new", "ts_old", "ts_new"}
    legacy = table.replace_schema_metadata({b"org.apache.spark.legacyDateTime": b""})
    stats = _stats(_write(tmp_path / "legacy.parquet", legacy))
    assert stats["minValues"] == {"new": "1600-01-01", "ts_new": "1900-01-01T00:00:00.000Z"}
    # rebasing moves ancient values by days at most: a modern max is still exact
    assert stats["maxValues"] == plain["maxValues"]
    spark2 = table.replace_schema_metadata({b"org.apache.spark.version": b"2.4.8"})
    assert _stats(_write(tmp_path / "spark2.parquet", spark2))["minValues"] == stats["minValues"]


def test_empty_file(tmp_path):
    table = pa.table({"a": pa.array([], pa.int64()), "s": pa.array([], pa.struct([("b", pa.string())])),
                      "bin": pa.array([], pa.binary())})
    path = _write(tmp_path / "f.parquet", table)
    assert collect_stats_for_file(path, from_arrow_schema(table.schema)) == (
        0, '{"numRecords":0,"minValues":{"s":{}},"maxValues":{"s":{}},"nullCount":{"s":{}}}',
    )


def test_collect_stats_for_files_keeps_order(tmp_path):
    schema = StructType((StructField("x", LONG),))
    paths = []
    for i in range(12):
        paths.append(_write(tmp_path / f"f{i}.parquet", pa.table({"x": pa.array(range(i, 2 * i + 1), pa.int64())})))
    got = collect_stats_for_files(paths, schema, max_workers=4)
    assert [n for n, _ in got] == [i + 1 for i in range(12)]
    assert [json.loads(s)["minValues"]["x"] for _, s in got] == list(range(12))
    assert collect_stats_for_files(paths[:3], schema, max_workers=1) == got[:3]
    assert collect_stats_for_files([], schema) == []


# ---- against the `deltalake` package -------------------------------------------------------


def _parse_ts(s: str) -> dt.datetime:
    s = s.replace(" ", "T")
    v = dt.datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith("Z") else s)
    return v.astimezone(UTC) if v.tzinfo else v.replace(tzinfo=UTC)


def _floor_ms(v: dt.datetime) -> dt.datetime:
    return v.replace(microsecond=v.microsecond // 1000 * 1000)


def test_same_stats_as_deltalake(tmp_path):
    import deltalake
    n = 200
    rng = random.Random(3)
    table = pa.table({
        "i": pa.array([None if i % 9 == 0 else rng.randint(-(2**31), 2**31 - 1) for i in range(n)], pa.int32()),
        "l": pa.array([None if i % 7 == 0 else rng.randint(-(2**62), 2**62) for i in range(n)], pa.int64()),
        "d": pa.array([None if i % 5 == 0 else rng.uniform(-1e9, 1e9) for i in range(n)], pa.float64()),
        "f": pa.array([None if i % 6 == 0 else rng.uniform(-100, 100) for i in range(n)], pa.float32()),
        "s": pa.array([None if i % 4 == 0 else "".join(rng.choice("abcéΩ") for _ in range(rng.randint(0, 20)))
                       for i in range(n)]),
        "ts": pa.array([None if i % 8 == 0 else rng.randint(-(10**16), 10**16) for i in range(n)],
                       pa.timestamp("us", tz="UTC")),
        "ntz": pa.array([None if i % 8 == 1 else rng.randint(-(10**16), 10**16) for i in range(n)], pa.timestamp("us")),
        "day": pa.array([None if i % 10 == 0 else dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-30000, 30000))
                         for i in range(n)]),
        "dec": pa.array([None if i % 11 == 0 else _dec(rng.randint(-(10**9), 10**9), 2) for i in range(n)],
                        pa.decimal128(10, 2)),
        "st": pa.array([None if i % 13 == 0 else {"x": rng.randint(0, 1000), "y": None if i % 3 else "q" + str(i)}
                        for i in range(n)],
                       pa.struct([("x", pa.int64()), ("y", pa.string())])),
        "b": pa.array([None if i % 3 == 0 else i % 2 == 0 for i in range(n)]),
    })
    deltalake.write_deltalake(str(tmp_path / "t"), table)
    adds = []
    for log in sorted(glob.glob(str(tmp_path / "t" / "_delta_log" / "*.json"))):
        for line in Path(log).read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds.append(action["add"])
            if "metaData" in action:
                schema = parse_schema(action["metaData"]["schemaString"])
    assert adds
    for add in adds:
        num, ours_json = collect_stats_for_file(str(tmp_path / "t" / urllib.parse.unquote(add["path"])), schema)
        ours = json.loads(ours_json)
        theirs = json.loads(add["stats"])
        assert num == ours["numRecords"] == theirs["numRecords"]
        assert ours["nullCount"] == theirs["nullCount"]
        for kind in ("minValues", "maxValues"):
            o, t = ours[kind], theirs[kind]
            only_theirs = {k for k in t if k not in o}
            # delta-spark keeps no boolean bounds; a max from a non-parquet-mr float column may hide NaN
            assert only_theirs == ({"b"} if kind == "minValues" else {"b", "d", "f"})
            assert set(o) <= set(t)
            for k, v in o.items():
                tv = t[k]
                if k in ("ts", "ntz"):
                    assert _parse_ts(v) == _floor_ms(_parse_ts(tv)), k
                elif k == "dec":
                    assert float(v) == tv and len(str(v).split(".")[1]) == 2
                elif k == "f":
                    assert _f32(v) == _f32(tv)
                else:
                    assert v == tv, k


# ---- against delta-spark: the golden tables --------------------------------------------------

_TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$")


def _norm(v: Any) -> Any:
    if isinstance(v, str) and _TS_RE.match(v):
        return _parse_ts(v)
    return v


def _flatten(d: dict[str, Any], pre: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    out: dict[tuple[str, ...], Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, (*pre, k)))
        else:
            out[(*pre, k)] = v
    return out


# stats in this table were written by hand, not by delta-spark
_HAND_WRITTEN = {"delta-0.8.0"}


def test_matches_delta_spark_stats_on_golden_tables(golden):
    compared = values = 0
    for table_dir in sorted(glob.glob(str(golden / "*" / "*"))):
        if os.path.basename(table_dir) in _HAND_WRITTEN:
            continue
        root = table_dir + "/delta" if os.path.isdir(table_dir + "/delta/_delta_log") else table_dir
        if not os.path.isdir(root + "/_delta_log"):
            continue
        meta = None
        for log in sorted(glob.glob(root + "/_delta_log/*.json")):
            for line in Path(log).read_text().splitlines():
                if not line.strip():
                    continue
                action = json.loads(line)
                meta = action.get("metaData", meta)
                add = action.get("add")
                if not add or not add.get("stats") or meta is None:
                    continue
                path = os.path.join(root, urllib.parse.unquote(add["path"]))
                if not os.path.exists(path):
                    continue
                md = pq.read_metadata(path)
                if not (md.created_by or "").startswith("parquet-mr version"):
                    continue  # Photon and parquet-rs footers: not delta-spark's writer
                conf = meta.get("configuration") or {}
                schema = parse_schema(meta["schemaString"]).without(meta.get("partitionColumns") or [])
                ours = json.loads(
                    collect_stats(
                        md, schema, column_mapping_mode=column_mapping_mode(conf),
                        num_indexed_cols=int(conf.get("delta.dataSkippingNumIndexedCols", 32)),
                        stats_columns=conf.get("delta.dataSkippingStatsColumns"),
                        string_prefix_length=int(conf.get("delta.dataSkippingStringPrefixLength", 32)),
                    ),
                    parse_float=Decimal,
                )
                theirs = json.loads(add["stats"], parse_float=Decimal)
                fo, ft = _flatten(ours), _flatten(theirs)
                int96 = {md.schema.column(i).path for i in range(md.num_columns)
                         if md.schema.column(i).physical_type == "INT96"}
                for key, v in fo.items():
                    if key not in ft and key[0] == "nullCount":
                        assert v == ours["numRecords"], (path, key)  # a column the file lacks
                        continue
                    assert _norm(v) == _norm(ft[key]), (path, key, v, ft[key])
                    values += 1
                for key, v in ft.items():
                    if key in fo or key == ("tightBounds",) or v is None:
                        continue
                    if key[0] in ("minValues", "maxValues"):
                        assert ".".join(key[1:]) in int96, (path, key)  # no footer stats for INT96
                    else:  # only array/map null counts, which the footer cannot prove, may be missing
                        assert key[0] == "nullCount", (path, key)
                        leaves = {md.schema.column(i).path for i in range(md.num_columns)}
                        assert ".".join(key[1:]) not in leaves, (path, key)
                compared += 1
    assert compared >= 100 and values >= 1000


def test_dotted_names_and_mismatched_shapes(tmp_path):
    """Parquet paths are dotted strings: a column named "a.b" and a struct a with a field b
    both have path "a.b"; the file's schema tree keeps them apart."""
    table = pa.table({
        "a.b": pa.array([10, 20], pa.int64()),
        "a": pa.array([{"b": 1}, {"b": None}], pa.struct([("b", pa.int64())])),
        "p": pa.array([1, None], pa.int64()),
        "q": pa.array([{"x": 1}, None], pa.struct([("x", pa.int64())])),
    })
    path = _write(tmp_path / "f.parquet", table)
    stats = _stats(path)
    assert stats["minValues"] == {"a.b": 10, "a": {"b": 1}, "p": 1, "q": {"x": 1}}
    assert stats["nullCount"] == {"a.b": 0, "a": {"b": 1}, "p": 1, "q": {"x": 1}}
    # the table says struct where the file has a number, and the reverse: nothing is claimed
    swapped = StructType((StructField("p", StructType((StructField("x", LONG),))), StructField("q", LONG)))
    assert _stats(path, swapped) == {"numRecords": 2, "minValues": {"p": {}}, "maxValues": {"p": {}},
                                     "nullCount": {"p": {}}}
