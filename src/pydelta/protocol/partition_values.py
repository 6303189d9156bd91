"""Partition values: the strings in ``add.partitionValues`` and the Hive-style directories.

PROTOCOL.md ("Partition Value Serialization") stores every partition value as a string;
an empty string (or JSON null) is a null value. This module converts those strings to
typed Python values and back in the format delta-spark writes, converts the
``partitionValues`` maps of many files to typed Arrow columns at once, and builds the
``col=value`` directories Spark writes data files into.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import struct
import unicodedata
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any
from urllib.parse import unquote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa
import pyarrow.compute as pc

from pydelta.errors import CorruptedLogError, DeltaIllegalArgumentError, InvalidTableError
from pydelta.protocol.schema import (
    DataType,
    DecimalType,
    PrimitiveType,
    StructType,
    data_type_to_arrow,
)

__all__ = [
    "HIVE_DEFAULT_PARTITION",
    "deserialize_partition_value",
    "escape_path_name",
    "file_uri",
    "from_uri_path",
    "hive_partition_path",
    "java_double_to_string",
    "java_float_to_string",
    "parse_hive_partition_path",
    "partition_values_to_arrow",
    "serialize_partition_value",
    "to_uri_path",
    "unescape_path_name",
]

#: Directory value Spark (and Hive) use for a null partition value.
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_UTC = _dt.UTC
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_DATE = _dt.date(1970, 1, 1)

_INT_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
# Decimal(38, s) needs more than the default 28 digits of context precision.
_DEC_CTX = Context(prec=80)
_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^\s*[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[fFdD]?\s*$")
_DECIMAL_RE = re.compile(r"^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$")
_DATE_RE = re.compile(r"^\s*([+-]?\d{4,6})-(\d{1,2})-(\d{1,2})(?:[T ].*)?\s*$")
_TS_RE = re.compile(
    r"^\s*([+-]?\d{4,6})-(\d{1,2})-(\d{1,2})"
    r"(?:(?:T|\s+)(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:[.,](\d{1,9})\d*)?)?)?"
    r"\s*(Z|z|UTC|GMT|[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?)?\s*$"
)


def _bad(value: str, dt: DataType, why: str = "") -> CorruptedLogError:
    extra = f": {why}" if why else ""
    return CorruptedLogError(f"invalid partition value {value!r} for type {_type_name(dt)}{extra}")


def _type_name(dt: DataType) -> str:
    return getattr(dt, "name", repr(dt))


def _tzinfo(timezone: str | _dt.tzinfo | None) -> _dt.tzinfo:
    if timezone is None:
        return _UTC
    if isinstance(timezone, _dt.tzinfo):
        return timezone
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise DeltaIllegalArgumentError(f"unknown time zone {timezone!r}") from None


def _f32(x: float) -> float:
    """Round a Python float to the nearest float32, as a Delta 'float' holds it."""
    try:
        rounded: float = struct.unpack("<f", struct.pack("<f", x))[0]
        return rounded
    except OverflowError:
        return math.copysign(math.inf, x)


# ---- scalar deserialization ----------------------------------------------------------


_OFFSET_RE = re.compile(r"^([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$")


def _parse_offset(tz: str) -> _dt.tzinfo:
    if tz in ("Z", "z", "UTC", "GMT"):
        return _UTC
    m = _OFFSET_RE.match(tz)
    if not m:
        raise DeltaIllegalArgumentError(f"invalid zone offset {tz!r}")
    sign = -1 if m.group(1) == "-" else 1
    delta = _dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0), seconds=int(m.group(4) or 0))
    return _dt.timezone(sign * delta)


def _parse_timestamp(value: str, dt: DataType, ntz: bool, timezone: str | _dt.tzinfo | None) -> _dt.datetime:
    m = _TS_RE.match(value)
    if not m:
        raise _bad(value, dt)
    year, month, day, hh, mi, ss, frac, tz = m.groups()
    micro = int((frac or "")[:6].ljust(6, "0"))
    try:
        naive = _dt.datetime(int(year), int(month), int(day), int(hh or 0), int(mi or 0), int(ss or 0), micro)
    except ValueError as e:
        raise _bad(value, dt, str(e)) from None
    if ntz:
        # A wall-clock value; an explicit offset (unusual) moves it to UTC wall-clock.
        if tz is not None:
            return naive.replace(tzinfo=_parse_offset(tz)).astimezone(_UTC).replace(tzinfo=None)
        return naive
    if tz is not None:
        return naive.replace(tzinfo=_parse_offset(tz)).astimezone(_UTC)
    # Legacy form without zone: written in the writer's session time zone (PROTOCOL.md).
    return naive.replace(tzinfo=_tzinfo(timezone)).astimezone(_UTC)


def deserialize_partition_value(
    value: str | None,
    dt: DataType,
    *,
    timezone: str | _dt.tzinfo | None = None,
) -> Any:
    """Typed Python value of one serialized partition value ('' and None are null).

    Returns int, float, bool, str, bytes, ``decimal.Decimal`` (at the column's scale),
    ``datetime.date``, an aware UTC ``datetime`` for ``timestamp`` and a naive ``datetime``
    for ``timestamp_ntz``. A ``timestamp`` written without a zone (the legacy
    ``1970-01-01 00:00:00[.ffffff]`` form) is read in `timezone` (default UTC), the
    protocol's "time zone of the system which wrote to the table".
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise DeltaIllegalArgumentError(f"partition values are strings, got {value!r}")
    if isinstance(dt, DecimalType):
        if not _DECIMAL_RE.match(value):
            raise _bad(value, dt)
        try:
            d = Decimal(value.strip()).quantize(
                Decimal(1).scaleb(-dt.scale), rounding=ROUND_HALF_UP, context=_DEC_CTX
            )
        except InvalidOperation:
            raise _bad(value, dt, "does not fit") from None
        if len(d.as_tuple().digits) > dt.precision and d != 0:
            raise _bad(value, dt, "does not fit the precision")
        return d
    if not isinstance(dt, PrimitiveType):
        raise InvalidTableError(f"type {_type_name(dt)} cannot be a partition column")
    name = dt.name
    if name == "string":
        return value
    if name in _INT_RANGES:
        if not _INT_RE.match(value):
            raise _bad(value, dt)
        n = int(value)
        lo, hi = _INT_RANGES[name]
        if not lo <= n <= hi:
            raise _bad(value, dt, "out of range")
        return n
    if name in ("float", "double"):
        if not _FLOAT_RE.match(value):
            raise _bad(value, dt)
        x = float(value.strip().rstrip("fFdD"))
        return _f32(x) if name == "float" else x
    if name == "boolean":
        low = value.strip().lower()
        if low == "true":
            return True
        if low == "false":
            return False
        raise _bad(value, dt)
    if name == "date":
        m = _DATE_RE.match(value)
        if not m:
            raise _bad(value, dt)
        try:
            return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError as e:
            raise _bad(value, dt, str(e)) from None
    if name == "timestamp":
        return _parse_timestamp(value, dt, False, timezone)
    if name == "timestamp_ntz":
        return _parse_timestamp(value, dt, True, timezone)
    if name == "binary":
        return value.encode("utf-8", errors="surrogatepass")
    if name == "void":
        return None
    raise InvalidTableError(f"type {name} cannot be a partition column")


# ---- scalar serialization --------------------------------------------------------------


def _java_decimal_digits(digits: tuple[int, ...], exp: int, sign: int, plain: bool) -> str:
    """Format shortest digits the way Java's Double/Float.toString lays them out."""
    ds = list(digits)
    while len(ds) > 1 and ds[-1] == 0:
        ds.pop()
        exp += 1
    sci_exp = len(ds) + exp - 1
    s = "-" if sign else ""
    if plain:
        text = format(Decimal((0, tuple(ds), exp)), "f")
        if "." not in text:
            text += ".0"
        return s + text
    mant = str(ds[0]) + "." + ("".join(map(str, ds[1:])) or "0")
    return f"{s}{mant}E{sci_exp}"


def _java_digits(x: float, n: int, reads_back: Any) -> Decimal:
    """JDK 19+ Double/Float.toString choice: among the decimals with the fewest digits that
    read back as x (at least 2 digits, so MIN_VALUE is 4.9E-324), the one closest to x."""
    n = max(n, 2)
    base = Decimal(f"{x:.{n - 1}e}")
    unit = Decimal(1).scaleb(base.adjusted() - (n - 1))
    exact = Decimal(x)
    candidates = [c for c in (base, base - unit, base + unit) if reads_back(c)]
    return min(candidates, key=lambda c: abs(c - exact)) if candidates else Decimal(repr(x))


def java_double_to_string(x: float) -> str:
    """``Double.toString`` (what Spark writes for a double): shortest digits, Java layout."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    shortest = Decimal(repr(x)).normalize().as_tuple()
    t = _java_digits(x, len(shortest.digits), lambda c: float(c) == x).as_tuple()
    return _java_decimal_digits(t.digits, int(t.exponent), t.sign, 1e-3 <= abs(x) < 1e7)


def java_float_to_string(x: float) -> str:
    """``Float.toString``: the shortest decimal that reads back as the same float32."""
    x = _f32(x)
    if math.isnan(x) or math.isinf(x) or x == 0:
        return java_double_to_string(x)
    digits = 9  # 9 significant digits always identify a float32
    for n in range(1, 10):
        if _f32(float(f"{x:.{n - 1}e}")) == x:
            digits = n
            break
    t = _java_digits(x, digits, lambda c: _f32(float(c)) == x).as_tuple()
    return _java_decimal_digits(t.digits, int(t.exponent), t.sign, 1e-3 <= abs(x) < 1e7)


def _to_utc(value: Any) -> _dt.datetime:
    if isinstance(value, _dt.datetime):
        return value.replace(tzinfo=_UTC) if value.tzinfo is None else value.astimezone(_UTC)
    if isinstance(value, int) and not isinstance(value, bool):
        return _EPOCH_UTC + _dt.timedelta(microseconds=value)
    raise DeltaIllegalArgumentError(f"not a timestamp: {value!r}")


def _fmt_date(d: _dt.date) -> str:
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def format_date(value: Any) -> str:
    """'YYYY-MM-DD' of a date, a datetime (its date) or days since the epoch."""
    if isinstance(value, _dt.datetime):
        value = value.date()
    elif isinstance(value, int) and not isinstance(value, bool):
        value = _EPOCH_DATE + _dt.timedelta(days=value)
    if not isinstance(value, _dt.date):
        raise DeltaIllegalArgumentError(f"not a date: {value!r}")
    return _fmt_date(value)


def _fmt_time(t: _dt.datetime) -> str:
    return f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"


def serialize_partition_value(value: Any, dt: DataType) -> str | None:
    """The string delta-spark writes for a partition value (None for null).

    Timestamps use the ISO-8601 UTC form newer delta-spark writes
    (``2000-01-01T12:00:00.000000Z``; naive datetimes are taken as UTC, ints as microseconds
    since the epoch); timestamp_ntz uses Spark's cast-to-string form
    (``2000-01-01 12:00:00[.ffffff]``, trailing zeros dropped); floats use Java's
    ``toString``; decimals are plain (no exponent) at the column's scale; binary is its UTF-8
    text.
    """
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if value is None:
        return None
    if isinstance(dt, DecimalType):
        try:
            d = Decimal(value) if not isinstance(value, float) else Decimal(repr(value))
            d = d.quantize(Decimal(1).scaleb(-dt.scale), rounding=ROUND_HALF_UP, context=_DEC_CTX)
        except (InvalidOperation, TypeError, ValueError):
            raise DeltaIllegalArgumentError(f"{value!r} is not a valid {dt.name}") from None
        if not d.is_finite() or (len(d.as_tuple().digits) > dt.precision and d != 0):
            raise DeltaIllegalArgumentError(f"{value!r} does not fit {dt.name}")
        return format(d, "f")
    if not isinstance(dt, PrimitiveType):
        raise InvalidTableError(f"type {_type_name(dt)} cannot be a partition column")
    name = dt.name
    if name == "string":
        if not isinstance(value, str):
            raise DeltaIllegalArgumentError(f"not a string: {value!r}")
        return value
    if name in _INT_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            if hasattr(value, "__index__"):
                value = value.__index__()
            else:
                raise DeltaIllegalArgumentError(f"not an integer: {value!r}")
        lo, hi = _INT_RANGES[name]
        if not lo <= value <= hi:
            raise DeltaIllegalArgumentError(f"{value} is out of range for {name}")
        return str(int(value))
    if name == "double":
        return java_double_to_string(float(value))
    if name == "float":
        return java_float_to_string(float(value))
    if name == "boolean":
        if not isinstance(value, bool):
            raise DeltaIllegalArgumentError(f"not a boolean: {value!r}")
        return "true" if value else "false"
    if name == "date":
        return format_date(value)
    if name == "timestamp":
        t = _to_utc(value)
        return f"{_fmt_date(t)}T{_fmt_time(t)}.{t.microsecond:06d}Z"
    if name == "timestamp_ntz":
        if isinstance(value, int) and not isinstance(value, bool):
            value = _EPOCH + _dt.timedelta(microseconds=value)
        if not isinstance(value, _dt.datetime):
            raise DeltaIllegalArgumentError(f"not a timestamp_ntz: {value!r}")
        if value.tzinfo is not None:
            raise DeltaIllegalArgumentError(f"timestamp_ntz needs a naive datetime, got {value!r}")
        frac = f".{value.microsecond:06d}".rstrip("0") if value.microsecond else ""
        return f"{_fmt_date(value)} {_fmt_time(value)}{frac}"
    if name == "binary":
        if isinstance(value, str):
            return value
        # Spark casts binary to string as UTF-8 (invalid bytes become U+FFFD).
        return bytes(value).decode("utf-8", errors="replace")
    if name == "void":
        return None
    raise InvalidTableError(f"type {name} cannot be a partition column")


# ---- vectorized ------------------------------------------------------------------------

# Arrow's string casts for these accept only spellings our scalar parser reads the same way
# (timestamps: with a zone for 'timestamp', without for 'timestamp_ntz'); anything else
# falls back to the scalar parser.
_FAST_CAST = frozenset({"long", "integer", "short", "byte", "float", "double", "date", "timestamp", "timestamp_ntz"})


def _as_map_array(arr: pa.Array) -> pa.MapArray:
    if isinstance(arr, pa.MapArray):
        return arr
    t = arr.type
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_struct(t.value_type):
        # list<struct<key, value>>, e.g. a JSON-decoded partitionValues column.
        values = arr.values
        keys, items = values.field(0), values.field(1)
        return pa.MapArray.from_arrays(
            arr.offsets,
            pc.cast(keys, pa.string()),
            pc.cast(items, pa.string()),
            mask=arr.is_null() if arr.null_count else None,
        )
    raise DeltaIllegalArgumentError(f"partition values must be a map<string,string> array, got {t}")


def _strings_to_typed(raw: pa.Array, dt: DataType, timezone: str | _dt.tzinfo | None) -> pa.Array:
    arrow_type = data_type_to_arrow(dt)
    if not isinstance(dt, (PrimitiveType, DecimalType)) or (
        isinstance(dt, PrimitiveType) and dt.name == "variant"
    ):
        raise InvalidTableError(f"type {_type_name(dt)} cannot be a partition column")
    if isinstance(dt, PrimitiveType) and dt.name == "void":
        return pa.nulls(len(raw))
    if not pa.types.is_string(raw.type):
        raw = pc.cast(raw, pa.string())
    # '' means null (PROTOCOL.md).
    raw = pc.if_else(pc.equal(raw, ""), pa.scalar(None, pa.string()), raw)
    if isinstance(dt, PrimitiveType):
        if dt.name == "string":
            return raw
        if dt.name == "binary":
            return pc.cast(raw, pa.binary())
    if isinstance(dt, DecimalType) or dt.name in _FAST_CAST:
        try:
            return pc.cast(raw, arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # unusual spellings: the scalar parser decides (or names the bad value)
    # Few distinct values per column: parse each distinct string once.
    enc = pc.dictionary_encode(raw)
    uniq = enc.dictionary.to_pylist()
    typed = pa.array([deserialize_partition_value(u, dt, timezone=timezone) for u in uniq], type=arrow_type)
    return typed.take(enc.indices)


def partition_values_to_arrow(
    partition_values: pa.Array | pa.ChunkedArray,
    partition_schema: StructType,
    name_map: Mapping[str, str] | None = None,
    *,
    timezone: str | _dt.tzinfo | None = None,
) -> pa.StructArray:
    """Typed partition columns for many files at once.

    `partition_values` holds one ``map<string,string>`` per file (``add.partitionValues``).
    The result has one child per field of `partition_schema`, named by the field's (logical)
    name; missing keys and empty strings are null. With column mapping the log keys are
    physical names: pass `name_map` (logical name -> key in the map), e.g.
    ``{f.name: physical_name(f) for f in partition_schema}``.
    """
    if isinstance(partition_values, pa.ChunkedArray):
        chunks = partition_values.chunks
        partition_values = (
            chunks[0] if len(chunks) == 1
            else pa.concat_arrays(chunks) if chunks
            else pa.array([], partition_values.type)
        )
    n = len(partition_values)
    if not partition_schema.fields:
        return pa.StructArray.from_buffers(pa.struct([]), n, [None])
    maps = _as_map_array(partition_values)
    children: list[pa.Array] = []
    fields: list[pa.Field] = []
    for f in partition_schema.fields:
        key = (name_map or {}).get(f.name, f.name)
        raw = pc.map_lookup(maps, pa.scalar(key, pa.string()), "first")
        try:
            children.append(_strings_to_typed(raw, f.type, timezone))
        except CorruptedLogError as e:
            raise CorruptedLogError(f"partition column {f.name!r}: {e}") from None
        fields.append(pa.field(f.name, data_type_to_arrow(f.type), nullable=True))
    return pa.StructArray.from_arrays(children, fields=fields)


# ---- paths -------------------------------------------------------------------------------

# Spark's ExternalCatalogUtils.escapePathName set (Hive's FileUtils), off-Windows: control
# characters and the characters that are special in paths or in `col=value`.
_CHARS_TO_ESCAPE = frozenset(
    [chr(c) for c in range(0x01, 0x20)] + list("\"#%'*/:=?\\\x7f{[]^")
)


def escape_path_name(s: str) -> str:
    """Spark's escapePathName: listed ASCII characters become ``%XX``; spaces etc. stay."""
    return "".join(f"%{ord(c):02X}" if c in _CHARS_TO_ESCAPE else c for c in s)


_UNESCAPE_RE = re.compile(r"%([0-9A-Fa-f]{2})")


def unescape_path_name(s: str) -> str:
    """Inverse of `escape_path_name` (Spark's unescapePathName)."""
    return _UNESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), s)


def hive_partition_path(values: Mapping[str, str | None], partition_columns: Sequence[str]) -> str:
    """Relative directory ``a=1/b=x y`` for serialized partition values, as Spark names it.

    Column names and values are escaped with Spark's escapePathName; null or '' becomes
    ``__HIVE_DEFAULT_PARTITION__``. This is the name on the file system: a space stays a
    space (Spark escapes it only on Windows). The ``add.path`` in the log is the URI form
    of the relative path, see `to_uri_path` (``b=x%20y``).
    """
    parts = []
    for col in partition_columns:
        if col not in values:
            raise DeltaIllegalArgumentError(f"no partition value for partition column {col!r}")
        v = values[col]
        ev = HIVE_DEFAULT_PARTITION if v is None or v == "" else escape_path_name(v)
        parts.append(f"{escape_path_name(col)}={ev}")
    return "/".join(parts)


def parse_hive_partition_path(path: str) -> dict[str, str | None]:
    """``{'a': '1', 'b': None}`` from a (file system, not URI) path's ``col=value`` segments."""
    out: dict[str, str | None] = {}
    for seg in path.strip("/").split("/"):
        if "=" not in seg:
            continue
        k, v = seg.split("=", 1)
        out[unescape_path_name(k)] = None if v == HIVE_DEFAULT_PARTITION else unescape_path_name(v)
    return out


# java.net.URI path quoting (as Hadoop Path.toUri applies it): unreserved, punct, '/', '@'
# stay; other ASCII is %XX (UTF-8); non-ASCII stays unless it is a space or control char.
_URI_PATH_SAFE = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" "-_.!~*'()" ",;:$&+=" "/@"
)


def to_uri_path(path: str) -> str:
    """Percent-encode a relative path the way delta-spark stores ``add.path`` (``x y`` -> ``x%20y``)."""
    out = []
    for c in path:
        if c in _URI_PATH_SAFE:
            out.append(c)
        elif ord(c) < 0x80 or unicodedata.category(c) in ("Zs", "Zl", "Zp", "Cc"):
            out.append("".join(f"%{b:02X}" for b in c.encode("utf-8", errors="surrogatepass")))
        else:
            out.append(c)
    return "".join(out)


def _has_scheme(path: str) -> bool:
    """Whether a decoded path is a remote URI (`s3a://b/k`), not a local path."""
    scheme, sep, _ = path.partition("://")
    # RFC 3986 scheme characters: s3a://, abfss://, o3fs:// have digits (one letter is a drive).
    return bool(sep) and len(scheme) > 1 and scheme[0].isalpha() and all(c.isalnum() or c in "+-." for c in scheme)


def file_uri(local_path: str) -> str:
    """The URI Spark reports (`_metadata.file_path`) for an absolute local path (a `file:` URI)
    or for a decoded remote URI (`hdfs://nn/t/a b.parquet` -> `hdfs://nn/t/a%20b.parquet`)."""
    if _has_scheme(local_path):
        scheme, _, rest = local_path.partition("://")
        authority, slash, path = rest.partition("/")
        return f"{scheme}://{authority}" + (to_uri_path("/" + path) if slash else "")
    return "file:" + to_uri_path(local_path)


def hadoop_path(local_path: str) -> str:
    """The string Spark's readers take for a decoded absolute path (local or remote).

    Spark turns each path it is given into a Hadoop ``Path(String)``, which takes the string as
    the file's *name* (it escapes `%`, `#`, `?` and spaces itself) and resolves a path without a
    scheme against the default file system. So this is the decoded path, never a URI (a `%20`
    in it would name a file called `%20`), with `file:` before a local path so that a cluster
    whose default file system is HDFS still reads the local table. Data files and the base path
    of one scan must both be in this form, or Spark finds the files outside the base path.
    """
    return local_path if _has_scheme(local_path) or local_path.startswith("file:") else "file:" + local_path


def from_uri_path(path: str) -> str:
    """Decode an ``add.path`` back to the file system name."""
    return unquote(path, errors="surrogatepass")

