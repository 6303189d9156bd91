"""Per-file statistics (``add.stats``): their schema, fast parsing, and writer helpers.

PROTOCOL.md ("Per-file Statistics"): ``numRecords``, ``tightBounds`` and, mirroring the
data schema under physical names, ``minValues``/``maxValues`` (for skipping-eligible leaf
types only) and ``nullCount`` (one long per leaf, arrays/maps/variants included).
Which columns have statistics follows delta-spark: the first ``delta.dataSkippingNumIndexedCols``
(default 32) leaf columns of the data schema, or the columns listed in
``delta.dataSkippingStatsColumns``.

Parsing is vectorized: all stats strings are handed to Arrow's JSON reader in one go,
with an explicit schema; only rows Arrow refuses (NaN spelled as a string, a decimal with
too many digits, a type changed by schema evolution...) are looked at in Python.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.protocol.partition_values import _TS_RE, _parse_timestamp, format_date, java_float_to_string
from pydelta.protocol.schema import (
    DataType,
    DecimalType,
    PrimitiveType,
    StructField,
    StructType,
    data_type_to_arrow,
    physical_name,
    split_identifier,
)

__all__ = [
    "DEFAULT_NUM_INDEXED_COLS",
    "DEFAULT_STRING_PREFIX_LENGTH",
    "MAX",
    "MIN",
    "NULL_COUNT",
    "NUM_RECORDS",
    "TIGHT_BOUNDS",
    "StatsColumn",
    "dumps_stats",
    "format_stats_value",
    "indexed_schema",
    "is_skipping_eligible",
    "min_max_columns",
    "parse_stats",
    "parse_stats_columns",
    "stats_schema",
    "truncate_string_max",
    "truncate_string_min",
]

NUM_RECORDS = "numRecords"
MIN = "minValues"
MAX = "maxValues"
NULL_COUNT = "nullCount"
TIGHT_BOUNDS = "tightBounds"
DEFAULT_NUM_INDEXED_COLS = 32
DEFAULT_STRING_PREFIX_LENGTH = 32

_MIN_MAX_PRIMITIVES = frozenset(
    {"byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz", "string"}
)


def is_skipping_eligible(dt: DataType) -> bool:
    """Whether min/max statistics are kept for a leaf of this type (delta-spark's
    SkippingEligibleDataType: numbers, decimals, dates, timestamps, strings; variant
    min/max need shredding and are not parsed here)."""
    return isinstance(dt, DecimalType) or (isinstance(dt, PrimitiveType) and dt.name in _MIN_MAX_PRIMITIVES)


# ---- which columns have statistics ------------------------------------------------------


def parse_stats_columns(spec: str | Sequence[str]) -> list[tuple[str, ...]]:
    """Column paths from ``delta.dataSkippingStatsColumns`` (``a, b.c, `x.y`.z``), lower-cased
    as delta-spark matches them."""
    items = _split_top_level_commas(spec) if isinstance(spec, str) else list(spec)
    out = []
    for item in items:
        item = item.strip()
        if item:
            out.append(tuple(p.lower() for p in split_identifier(item)))
    return out


def _split_top_level_commas(s: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    quoted = False
    for c in s:
        if c == "`":
            quoted = not quoted
        if c == "," and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def _truncate_schema(schema: StructType, limit: int) -> tuple[StructType, int]:
    # delta-spark's truncateSchema: count leaves (arrays/maps count as one) depth first.
    count, fields = 0, []
    for f in schema.fields:
        if count >= limit:
            break
        if isinstance(f.type, StructType):
            sub, n = _truncate_schema(f.type, limit - count)
            count += n
            fields.append(f.with_type(sub))
        else:
            count += 1
            fields.append(f)
    return StructType(tuple(fields)), count


def _filter_schema(schema: StructType, paths: list[tuple[str, ...]]) -> StructType:
    # delta-spark's filterSchema: a named struct keeps all its children.
    by_head: dict[str, list[tuple[str, ...]]] = {}
    for p in paths:
        if p:
            by_head.setdefault(p[0], []).append(p[1:])
    fields = []
    for f in schema.fields:
        rests = by_head.get(f.name.lower())
        if rests is None:
            continue
        if any(len(r) == 0 for r in rests):
            fields.append(f)
        elif isinstance(f.type, StructType):
            fields.append(f.with_type(_filter_schema(f.type, rests)))
    return StructType(tuple(fields))


def indexed_schema(
    schema: StructType,
    num_indexed_cols: int = DEFAULT_NUM_INDEXED_COLS,
    stats_columns: str | Sequence[str] | None = None,
    partition_columns: Sequence[str] = (),
) -> StructType:
    """The (logical) part of the data schema that statistics are collected for.

    `stats_columns` (``delta.dataSkippingStatsColumns``) wins over `num_indexed_cols`
    (``delta.dataSkippingNumIndexedCols``; negative means all). Partition columns never
    have statistics.
    """
    data = schema.without(partition_columns) if partition_columns else schema
    if stats_columns is not None:
        return _filter_schema(data, parse_stats_columns(stats_columns))
    if num_indexed_cols < 0:
        return data
    return _truncate_schema(data, num_indexed_cols)[0]


@dataclass(frozen=True)
class StatsColumn:
    """A leaf with min/max statistics: where it is in the table and where in the stats JSON."""

    logical_path: tuple[str, ...]
    physical_path: tuple[str, ...]
    data_type: DataType


def _stats_name(f: StructField, mode: str) -> str:
    return f.name if mode == "none" else physical_name(f)


def min_max_columns(
    schema: StructType,
    column_mapping_mode: str = "none",
    num_indexed_cols: int = DEFAULT_NUM_INDEXED_COLS,
    stats_columns: str | Sequence[str] | None = None,
    partition_columns: Sequence[str] = (),
) -> list[StatsColumn]:
    """Leaves that have ``minValues``/``maxValues``, with their logical and stats paths."""
    out: list[StatsColumn] = []

    def walk(st: StructType, lp: tuple[str, ...], pp: tuple[str, ...]) -> None:
        for f in st.fields:
            lpath, ppath = (*lp, f.name), (*pp, _stats_name(f, column_mapping_mode))
            if isinstance(f.type, StructType):
                walk(f.type, lpath, ppath)
            elif is_skipping_eligible(f.type):
                out.append(StatsColumn(lpath, ppath, f.type))

    walk(indexed_schema(schema, num_indexed_cols, stats_columns, partition_columns), (), ())
    return out


def _min_max_arrow(st: StructType, mode: str) -> pa.StructType | None:
    fields = []
    for f in st.fields:
        if isinstance(f.type, StructType):
            sub = _min_max_arrow(f.type, mode)
            if sub is not None:
                fields.append(pa.field(_stats_name(f, mode), sub))
        elif is_skipping_eligible(f.type):
            fields.append(pa.field(_stats_name(f, mode), data_type_to_arrow(f.type)))
    return pa.struct(fields) if fields else None


def _null_count_arrow(st: StructType, mode: str) -> pa.StructType | None:
    fields = []
    for f in st.fields:
        if isinstance(f.type, StructType):
            sub = _null_count_arrow(f.type, mode)
            if sub is not None:
                fields.append(pa.field(_stats_name(f, mode), sub))
        else:
            fields.append(pa.field(_stats_name(f, mode), pa.int64()))
    return pa.struct(fields) if fields else None


def stats_schema(
    schema: StructType,
    column_mapping_mode: str = "none",
    num_indexed_cols: int = DEFAULT_NUM_INDEXED_COLS,
    stats_columns: str | Sequence[str] | None = None,
    *,
    partition_columns: Sequence[str] = (),
) -> pa.Schema:
    """Arrow schema of a parsed stats JSON (the shape `parse_stats` returns).

    ``numRecords: int64``, ``minValues``/``maxValues``: structs of the eligible leaves,
    ``nullCount``: a struct of int64 per leaf, ``tightBounds: bool``. Names are physical
    names under column mapping. The min/max/nullCount structs are empty (``struct<>``) when
    no column qualifies, so callers can always look the fields up.
    """
    st = indexed_schema(schema, num_indexed_cols, stats_columns, partition_columns)
    mode = column_mapping_mode
    min_max = _min_max_arrow(st, mode) or pa.struct([])
    nulls = _null_count_arrow(st, mode) or pa.struct([])
    return pa.schema(
        [
            pa.field(NUM_RECORDS, pa.int64()),
            pa.field(MIN, min_max),
            pa.field(MAX, min_max),
            pa.field(NULL_COUNT, nulls),
            pa.field(TIGHT_BOUNDS, pa.bool_()),
        ]
    )


# ---- parsing ----------------------------------------------------------------------------

_RETRY_CHUNK = 4096
# Decimal(38, s) needs more than the default 28 digits of context precision.
_DEC_CTX = Context(prec=80)


def parse_stats(
    stats_json: pa.Array | pa.ChunkedArray,
    stats_arrow_schema: pa.Schema,
) -> pa.StructArray:
    """Parse many ``add.stats`` strings at once into a struct array of `stats_arrow_schema`.

    Null, empty or malformed strings give a row of nulls (stats are optional, as in
    delta-spark's ``from_json``); fields not in the schema are ignored; a single value
    that does not fit its type becomes null without losing the rest of the row.
    Timestamps in any ISO-8601 offset become ``timestamp[us, UTC]``.
    """
    struct_type = pa.struct(list(stats_arrow_schema))
    if isinstance(stats_json, pa.ChunkedArray):
        stats_json = stats_json.combine_chunks() if stats_json.num_chunks != 1 else stats_json.chunk(0)
    if len(stats_json) == 0:
        return pa.array([], type=struct_type)
    if not (pa.types.is_string(stats_json.type) or pa.types.is_large_string(stats_json.type)):
        stats_json = pc.cast(stats_json, pa.large_string())
    # One object per line: null/'' -> '{}', and raw newlines (only legal as whitespace
    # between JSON tokens) -> spaces so rows and lines stay aligned.
    s = pc.fill_null(stats_json, "{}") if stats_json.null_count else stats_json
    empty = pc.equal(s, "")
    missing = pc.or_(empty, pc.is_null(stats_json)) if stats_json.null_count else empty
    if pc.any(empty).as_py():
        s = pc.if_else(empty, "{}", s)
    values = s.buffers()[2]
    if values is not None:
        raw = values.to_pybytes()
        if b"\n" in raw or b"\r" in raw:
            s = pc.replace_substring_regex(s, "[\r\n]", " ")
        del raw
    parsed = _parse_fast(s, stats_arrow_schema)
    if parsed is None:
        pieces = []
        for start in range(0, len(s), _RETRY_CHUNK):
            chunk = s.slice(start, _RETRY_CHUNK)
            part = _parse_fast(chunk, stats_arrow_schema)
            pieces.append(part if part is not None else _parse_slow(chunk, struct_type))
        parsed = pa.concat_arrays(pieces)
    if pc.any(missing).as_py():
        # A file without stats is a null row, not a row of null fields.
        mask = pc.or_(missing, parsed.is_null())
        parsed = pa.StructArray.from_arrays(
            [parsed.field(i) for i in range(struct_type.num_fields)], fields=list(struct_type), mask=mask
        )
    return parsed


def _read_type(t: pa.DataType) -> pa.DataType:
    # Arrow's JSON reader takes dates only as day numbers; read them as timestamps instead.
    if pa.types.is_date(t):
        return pa.timestamp("s")
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_read_type(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _parse_fast(lines: pa.Array, schema: pa.Schema) -> pa.StructArray | None:
    n = len(lines)
    read_schema = pa.schema([f.with_type(_read_type(f.type)) for f in schema])
    joined = pc.binary_join_element_wise(lines, pa.scalar("\n", lines.type), pa.scalar("", lines.type))
    # The lines are contiguous in the value buffer: hand that buffer to the reader as is.
    offset_type = pa.int64() if pa.types.is_large_string(joined.type) else pa.int32()
    offs = pa.Array.from_buffers(offset_type, n + 1, [None, joined.buffers()[1]], offset=joined.offset)
    start, end = offs[0].as_py(), offs[n].as_py()
    data = joined.buffers()[2].slice(start, end - start)
    longest = pc.max(pc.binary_length(joined)).as_py() or 1
    threads = os.cpu_count() or 1
    # Blocks must hold whole lines; a few per thread keeps the reader parallel.
    block = max(1 << 20, 2 * longest, min(64 << 20, data.size // (2 * threads) + 1))
    try:
        table = pa_json.read_json(
            pa.BufferReader(data),
            read_options=pa_json.ReadOptions(block_size=block),
            parse_options=pa_json.ParseOptions(explicit_schema=read_schema, unexpected_field_behavior="ignore"),
        )
        if table.num_rows != n:
            return None
        table = table.select([f.name for f in schema]).cast(schema, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    out = table.to_struct_array()
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def _json_constant(name: str) -> float:
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[name]


def _parse_slow(lines: pa.Array, struct_type: pa.StructType) -> pa.StructArray:
    rows = []
    for text in lines.to_pylist():
        try:
            obj = json.loads(text, parse_float=Decimal, parse_constant=_json_constant)
        except (ValueError, RecursionError):
            obj = None
        rows.append(_coerce_struct(obj, struct_type, None) if isinstance(obj, dict) else None)
    return pa.array(rows, type=struct_type)


def _coerce_struct(obj: Any, t: pa.StructType, rounding: str | None) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    out = {}
    for i in range(t.num_fields):
        f = t.field(i)
        r = rounding
        if rounding is None and f.name in (MIN, MAX):  # only the top-level stats names
            r = ROUND_FLOOR if f.name == MIN else ROUND_CEILING
        out[f.name] = _coerce(obj.get(f.name), f.type, r)
    return out


_FLOAT_STRINGS = {"nan": math.nan, "infinity": math.inf, "-infinity": -math.inf, "inf": math.inf, "-inf": -math.inf}


def _coerce(v: Any, t: pa.DataType, rounding: str | None) -> Any:
    """One stats value as Arrow can take it, or None when it does not fit the type."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return _coerce_struct(v, t, rounding or ROUND_HALF_EVEN)
    if pa.types.is_integer(t):
        if isinstance(v, bool):
            return None
        if isinstance(v, Decimal):
            if v != v.to_integral_value():
                return None
            v = int(v)
        if not isinstance(v, int):
            return None
        bits = t.bit_width - 1
        return v if -(2**bits) <= v < 2**bits else None
    if pa.types.is_floating(t):
        if isinstance(v, bool):
            return None
        if isinstance(v, (int, float, Decimal)):
            return float(v)
        if isinstance(v, str):
            return _FLOAT_STRINGS.get(v.strip().lower())
        return None
    if pa.types.is_decimal(t):
        if isinstance(v, bool) or not isinstance(v, (int, Decimal)):
            return None
        try:
            d = Decimal(v).quantize(
                Decimal(1).scaleb(-t.scale), rounding=rounding or ROUND_HALF_EVEN, context=_DEC_CTX
            )
        except InvalidOperation:
            return None
        return d if len(d.as_tuple().digits) <= t.precision or d == 0 else None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return v if isinstance(v, str) else None
    if pa.types.is_boolean(t):
        return v if isinstance(v, bool) else None
    if pa.types.is_date(t):
        if not isinstance(v, str):
            return None
        try:
            return _dt.date.fromisoformat(v.strip()[:10]) if len(v.strip()) == 10 else None
        except ValueError:
            return None
    if pa.types.is_timestamp(t):
        if not isinstance(v, str) or not _TS_RE.match(v):
            return None
        try:
            return _parse_timestamp(v, None, t.tz is None, None)  # type: ignore[arg-type]
        except Exception:
            return None
    return None


# ---- writing ----------------------------------------------------------------------------

_UTC = _dt.UTC
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH = _dt.datetime(1970, 1, 1)


def _fmt_ts(t: _dt.datetime) -> str:
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
        f".{t.microsecond // 1000:03d}"
    )


def _float_json(x: float) -> Any:
    # JSON has no NaN/Infinity; Jackson (delta-spark) quotes them.
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def format_stats_value(value: Any, dt: DataType) -> Any:
    """A min/max value as the stats JSON holds it (a writer then uses `dumps_stats`).

    Timestamps are truncated to milliseconds, as the protocol says, and written
    ``YYYY-MM-DDTHH:MM:SS.mmmZ`` in UTC (timestamp_ntz without the ``Z``): a truncated max
    is below the true max, so readers widen timestamp maxima by 1 ms when skipping. Dates
    are ``YYYY-MM-DD``; decimals are `Decimal` at the column's scale (numbers in JSON);
    floats keep float32's shortest digits; NaN/Infinity are strings. Types without min/max
    statistics (binary, boolean, nested, variant) give None.
    """
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if value is None:
        return None
    if isinstance(dt, DecimalType):
        try:
            return Decimal(value if not isinstance(value, float) else repr(value)).quantize(
                Decimal(1).scaleb(-dt.scale), rounding=ROUND_HALF_EVEN, context=_DEC_CTX
            )
        except (InvalidOperation, TypeError, ValueError):
            raise DeltaIllegalArgumentError(f"{value!r} is not a valid {dt.name}") from None
    if not isinstance(dt, PrimitiveType):
        return None
    name = dt.name
    if name in ("byte", "short", "integer", "long"):
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise DeltaIllegalArgumentError(f"not an integer: {value!r}")
        return int(value)
    if name == "double":
        return _float_json(float(value))
    if name == "float":
        x = float(value)
        if math.isnan(x) or math.isinf(x):
            return _float_json(x)
        return float(java_float_to_string(x))
    if name == "string":
        if not isinstance(value, str):
            raise DeltaIllegalArgumentError(f"not a string: {value!r}")
        return value
    if name == "date":
        return format_date(value)
    if name == "timestamp":
        if isinstance(value, int) and not isinstance(value, bool):
            value = _EPOCH_UTC + _dt.timedelta(microseconds=value)
        if not isinstance(value, _dt.datetime):
            raise DeltaIllegalArgumentError(f"not a timestamp: {value!r}")
        value = value.replace(tzinfo=_UTC) if value.tzinfo is None else value.astimezone(_UTC)
        return _fmt_ts(value) + "Z"
    if name == "timestamp_ntz":
        if isinstance(value, int) and not isinstance(value, bool):
            value = _EPOCH + _dt.timedelta(microseconds=value)
        if not isinstance(value, _dt.datetime) or value.tzinfo is not None:
            raise DeltaIllegalArgumentError(f"timestamp_ntz needs a naive datetime, got {value!r}")
        return _fmt_ts(value)
    return None


_DEC_MARK = "\x00pydelta-decimal\x00"
_DEC_TOKEN_RE = re.compile(r'"\\u0000pydelta-decimal\\u0000([^"]*)"')


def _prepare(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _prepare(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_prepare(v) for v in obj]
    if isinstance(obj, Decimal):
        if not obj.is_finite():
            return None
        return _DEC_MARK + str(obj)  # Java BigDecimal.toString and Python agree on the layout
    if isinstance(obj, float):
        return _float_json(obj)
    return obj


def dumps_stats(stats: Mapping[str, Any]) -> str:
    """Compact stats JSON; Decimals become exact JSON numbers, NaN/Infinity strings."""
    text = json.dumps(_prepare(stats), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return _DEC_TOKEN_RE.sub(lambda m: m.group(1), text)


# ---- string truncation (delta-spark's StatisticsCollection) ------------------------------
#
# Lengths are in UTF-16 code units, as the JVM counts them, so a prefix never ends inside
# a surrogate pair and our prefixes equal delta-spark's.

_ASCII_MAX = "\x7f"
_UTF8_MAX = "\U0010ffff"


def _units(s: str) -> bytes:
    return s.encode("utf-16-le", "surrogatepass")


def _prefix(units: bytes, n: int) -> str:
    return units[: 2 * n].decode("utf-16-le", "surrogatepass")


def _unit(units: bytes, i: int) -> int:
    return units[2 * i] | (units[2 * i + 1] << 8)


def _min_prefix_len(units: bytes, prefix_len: int) -> int:
    if 0xD800 <= _unit(units, prefix_len - 1) <= 0xDBFF and 0xDC00 <= _unit(units, prefix_len) <= 0xDFFF:
        return prefix_len + 1
    return prefix_len


def truncate_string_min(s: str | None, prefix_len: int = DEFAULT_STRING_PREFIX_LENGTH) -> str | None:
    """A prefix of the min string: still <= every value (None if prefix_len <= 0)."""
    if s is None:
        return None
    units = _units(s)
    n = len(units) // 2
    if n <= prefix_len:
        return s
    if prefix_len <= 0:
        return None
    return _prefix(units, _min_prefix_len(units, prefix_len))


def truncate_string_max(s: str | None, prefix_len: int = DEFAULT_STRING_PREFIX_LENGTH) -> str | None:
    """A short string still >= every value: a prefix plus a tie-breaker character.

    The tie-breaker is U+007F when the first dropped character is below it, else U+10FFFF
    (the largest in UTF-8 byte order); dropped U+10FFFF characters cannot be beaten and are
    kept, up to 2 * prefix_len units, beyond which there is no max (None).
    """
    if s is None:
        return None
    units = _units(s)
    n = len(units) // 2
    if n <= prefix_len:
        return s
    if prefix_len <= 0:
        return None
    cur = _min_prefix_len(units, prefix_len)
    limit = 2 * prefix_len
    while cur <= limit:
        if cur >= n:
            return s
        if cur + 1 < n and _unit(units, cur) == 0xDBFF and _unit(units, cur + 1) == 0xDFFF:
            cur += 2
        elif _unit(units, cur) < 0x7F:
            return _prefix(units, cur) + _ASCII_MAX
        else:
            return _prefix(units, cur) + _UTF8_MAX
    return None
