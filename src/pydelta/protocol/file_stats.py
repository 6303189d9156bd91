"""``add.stats`` for a data file, computed from its Parquet footer alone.

Spark writes the data files; the driver then only has to read each file's footer
(row-group column statistics and row counts) to produce the statistics delta-spark's
``StatisticsCollection.statsCollector`` would have computed over the rows:

* ``numRecords``: the sum of the row groups' row counts.
* ``minValues``/``maxValues``: for skipping-eligible leaves of the indexed columns
  (`pydelta.protocol.stats.indexed_schema`), the min/max over all row groups. A bound is
  left out (delta-spark leaves out nulls) whenever the footer cannot prove it: a row group
  with values but no statistics, an all-null column, INT96 timestamps, strings too long
  for the writer to keep statistics, dates/timestamps a Spark reader would rebase, ...
* ``nullCount``: footer null counts for primitive leaves (Parquet counts a leaf as null
  when any enclosing struct is null, like Spark's ``a.b IS NULL``). For arrays and maps
  the footer counts null *and empty* collections (and null elements) alike, so their
  count is only written when it is provably 0 or, for variants, exact.

Values are written as statsCollector writes them: a string min is its first
``string_prefix_length`` code points (Spark's ``substring``), a string max is cut by
``truncateMaxStringAgg`` (UTF-16 units plus a tie-breaker); timestamps are truncated to
milliseconds (readers widen a max by 1 ms); decimals are exact at the column's scale.

Floating point follows Spark's ordering, where NaN is greater than every number:
parquet-mr (Spark's writer) orders NaN the same way, so its footers give Spark's min/max
exactly (max is NaN when the file holds one). Other writers (Arrow, delta-rs) leave NaN
out of their statistics, so there the max is unknown and omitted; the min stays exact.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Context, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.protocol.schema import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    field_id,
    physical_name,
)
from pydelta.protocol.stats import (
    DEFAULT_NUM_INDEXED_COLS,
    DEFAULT_STRING_PREFIX_LENGTH,
    MAX,
    MIN,
    NULL_COUNT,
    NUM_RECORDS,
    TIGHT_BOUNDS,
    dumps_stats,
    format_stats_value,
    indexed_schema,
    is_skipping_eligible,
    truncate_string_max,
)

__all__ = ["collect_stats", "collect_stats_for_file", "collect_stats_for_files"]

# Spark marks files whose dates/timestamps are in the hybrid Julian calendar with this key
# (and files written before Spark 3.0 are always so); a Spark reader rebases values before
# these points, so footer values there are not what Spark would see.
_LEGACY_DATETIME_KEY = b"org.apache.spark.legacyDateTime"
_SPARK_VERSION_KEY = b"org.apache.spark.version"
_LAST_SWITCH_JULIAN_DAY = -141427  # 1582-10-15
_LAST_SWITCH_JULIAN_MICROS = -2208988800 * 1_000_000  # 1900-01-01T00:00:00Z, Spark's bound

_PARQUET_MR_RE = re.compile(r"^parquet-mr version (\d+)\.(\d+)")
_DEC_CTX = Context(prec=100)
_FIELD_ID_KEY = b"PARQUET:field_id"
_INT_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}


# ---- the file's schema tree ----------------------------------------------------------------


@dataclass(eq=False)
class _Node:
    """A field of the Parquet file: its leaf columns, and whether it may be null."""

    name: str
    parent: _Node | None = None
    nullable: bool | None = True  # None: unknown (schema could not be read as Arrow)
    repeated: bool = False  # a list or map: its leaves hold one value per element
    leaf: int | None = None  # the column index of a primitive, non-repeated field
    columns: list[int] = field(default_factory=list)
    children: dict[str, _Node] = field(default_factory=dict)

    def child(self, name: str) -> _Node | None:
        """The child of that name; like Spark, fall back to a unique case-insensitive match."""
        node = self.children.get(name)
        if node is not None:
            return node
        folded = [c for n, c in self.children.items() if n.lower() == name.lower()]
        if len(folded) > 1:
            return _OPAQUE  # ambiguous: a Spark reader would refuse it
        return folded[0] if folded else None


# Stands for a file field nothing can be said about: its shape does not match the table's
# (a struct expected, a primitive or collection found) or its name is ambiguous.
_OPAQUE = _Node("<opaque>", nullable=None)


def _arrow_leaf_count(t: pa.DataType) -> int:
    if isinstance(t, pa.ExtensionType):
        return _arrow_leaf_count(t.storage_type)
    if pa.types.is_struct(t):
        return sum(_arrow_leaf_count(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _arrow_leaf_count(t.value_type)
    if pa.types.is_map(t):
        return _arrow_leaf_count(t.key_type) + _arrow_leaf_count(t.item_type)
    return 1


def _is_collection(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_map(t)
    )


def _tree_from_arrow(md: pq.FileMetaData) -> tuple[_Node, dict[int, _Node]] | None:
    """The file's fields with nullability and Parquet field ids, via its Arrow schema.

    Arrow lists leaves in the same depth-first order as Parquet, which is checked against
    every column's path, so names holding dots stay unambiguous.
    """
    try:
        schema = md.schema.to_arrow_schema()
    except (pa.ArrowException, ValueError, TypeError):
        return None
    root = _Node("", nullable=False)
    by_id: dict[int, _Node] = {}
    next_col = 0

    def add(parent: _Node, f: pa.Field) -> None:
        nonlocal next_col
        t = f.type.storage_type if isinstance(f.type, pa.ExtensionType) else f.type
        node = _Node(f.name, parent, f.nullable)
        parent.children[f.name] = node if f.name not in parent.children else _OPAQUE
        raw_id = (f.metadata or {}).get(_FIELD_ID_KEY)
        if raw_id is not None:
            with contextlib.suppress(ValueError):
                by_id[int(raw_id)] = node
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                add(node, t.field(i))
            node.columns = [c for ch in node.children.values() for c in ch.columns]
        elif _is_collection(t):
            n = _arrow_leaf_count(t)
            node.repeated = True
            node.columns = list(range(next_col, next_col + n))
            next_col += n
        else:
            node.leaf = next_col
            node.columns = [next_col]
            next_col += 1

    for i in range(len(schema)):
        add(root, schema.field(i))
    if next_col != md.num_columns:
        return None

    def check(node: _Node, prefix: str) -> bool:
        for name, ch in node.children.items():
            if ch is _OPAQUE:
                continue
            path = f"{prefix}{name}"
            if ch.leaf is not None and md.schema.column(ch.leaf).path != path:
                return False
            if ch.repeated and not all(md.schema.column(c).path.startswith(path + ".") for c in ch.columns):
                return False
            if not check(ch, path + "."):
                return False
        return True

    return (root, by_id) if check(root, "") else None


def _tree_from_paths(md: pq.FileMetaData) -> _Node:
    """Fallback: the fields from the columns' dotted paths, nullability unknown."""
    root = _Node("", nullable=False)
    for i in range(md.num_columns):
        col = md.schema.column(i)
        node = root
        node.columns.append(i)
        for part in col.path.split("."):
            nxt = node.children.get(part)
            if nxt is None:
                nxt = node.children[part] = _Node(part, node, None)
            nxt.columns.append(i)
            node = nxt
        if col.max_repetition_level == 0 and not node.children:
            node.leaf = i if len(node.columns) == 1 else None  # a repeated path is ambiguous
    return root


# ---- decoding footer statistics ------------------------------------------------------------


@dataclass(frozen=True)
class _ColumnType:
    """How to read a column's raw statistics as a comparable Python value."""

    kind: str  # int | float | decimal | date | timestamp | bytes | other
    width: int = 0  # physical bits, to reinterpret unsigned integers stored as signed
    unsigned: bool = False
    scale: int = 0
    time_unit: str = "microseconds"
    utc: bool = True

    def decode(self, raw: Any) -> Any:
        k = self.kind
        if k == "int":
            v = int(raw)
            return v & ((1 << self.width) - 1) if self.unsigned and v < 0 else v
        if k == "float":
            return float(raw)
        if k == "bytes":
            return raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
        if k == "decimal":
            unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, (bytes, bytearray)) else int(raw)
            return Decimal(unscaled).scaleb(-self.scale, context=_DEC_CTX)
        if k == "date":
            return int(raw)
        if k == "timestamp":
            v = int(raw)
            if self.time_unit == "milliseconds":
                return v * 1000
            if self.time_unit == "nanoseconds":
                return v // 1000  # floor: still <= the value for a min, and Spark truncates too
            return v
        raise AssertionError(k)


def _column_type(col: pq.ColumnSchema) -> _ColumnType:
    phys = col.physical_type
    try:
        logical = json.loads(col.logical_type.to_json())
    except (ValueError, TypeError):
        logical = {}
    lt = logical.get("Type", "None")
    if lt == "Decimal" and phys in ("INT32", "INT64", "FIXED_LEN_BYTE_ARRAY", "BYTE_ARRAY"):
        return _ColumnType("decimal", scale=int(logical.get("scale", col.scale)))
    if phys in ("INT32", "INT64"):
        width = 32 if phys == "INT32" else 64
        if lt == "None":
            return _ColumnType("int", width)
        if lt == "Int":
            return _ColumnType("int", width, unsigned=not logical.get("isSigned", True))
        if lt == "Date" and phys == "INT32":
            return _ColumnType("date")
        unit = logical.get("timeUnit")
        if lt == "Timestamp" and phys == "INT64" and unit in ("milliseconds", "microseconds", "nanoseconds"):
            return _ColumnType("timestamp", time_unit=unit, utc=bool(logical.get("isAdjustedToUTC")))
        return _ColumnType("other")
    if phys in ("FLOAT", "DOUBLE") and lt == "None":
        return _ColumnType("float", 32 if phys == "FLOAT" else 64)
    if phys == "BYTE_ARRAY" and lt in ("None", "String", "Enum", "JSON", "Json"):
        return _ColumnType("bytes")
    return _ColumnType("other")  # INT96, BOOLEAN, FLBA other than decimal, ...


def _writer_orders_nan_last(created_by: str | None) -> bool:
    """parquet-mr >= 1.10 compares floats with ``Float.compare``: NaN is the greatest value,
    so a column chunk holding NaN has max NaN, as Spark's ``max`` would. (Older parquet-mr
    could skip NaN; Arrow, Rust and most other writers leave NaN out of min/max.)"""
    m = _PARQUET_MR_RE.match(created_by or "")
    return m is not None and (int(m.group(1)), int(m.group(2))) >= (1, 10)


@dataclass
class _Footer:
    """The footer facts collect_stats needs, read once per file."""

    md: pq.FileMetaData
    num_rows: int
    nan_last: bool
    rebased_datetimes: bool
    tree: _Node
    by_id: dict[int, _Node]
    row_groups: list[Any] = field(default_factory=list)
    _chunks: dict[int, list[tuple[int, Any]]] = field(default_factory=dict)

    @classmethod
    def read(cls, md: pq.FileMetaData) -> _Footer:
        kv = md.metadata or {}
        m = re.match(rb"\s*(\d+)\.", kv.get(_SPARK_VERSION_KEY) or b"")
        rebased = _LEGACY_DATETIME_KEY in kv or (m is not None and int(m.group(1)) < 3)
        parsed = _tree_from_arrow(md)
        tree, by_id = parsed if parsed is not None else (_tree_from_paths(md), {})
        row_groups = [md.row_group(i) for i in range(md.num_row_groups)]
        num_rows = sum(rg.num_rows for rg in row_groups)
        return cls(md, num_rows, _writer_orders_nan_last(md.created_by), rebased, tree, by_id, row_groups)

    def chunks(self, col: int) -> list[tuple[int, Any]]:
        """(values in the chunk incl. nulls, Statistics or None) of each non-empty row group."""
        out = self._chunks.get(col)
        if out is None:
            out = []
            for rg in self.row_groups:
                if rg.num_rows == 0:
                    continue
                cc = rg.column(col)
                out.append((cc.num_values, cc.statistics if cc.is_stats_set else None))
            self._chunks[col] = out
        return out

    def null_count(self, col: int) -> int | None:
        """Nulls in a column over all row groups, None if any row group does not say."""
        total = 0
        for _, st in self.chunks(col):
            if st is None or not st.has_null_count:
                return None
            total += st.null_count
        return total

    def bounds(self, col: int, ctype: _ColumnType) -> tuple[Any, Any] | None:
        """(min, max) over the row groups, either None when unknown; None if nothing known.

        A row group without min/max is fine only when all its values are null.
        """
        mins: list[Any] = []
        maxs: list[Any] = []
        for num_values, st in self.chunks(col):
            if st is not None and st.has_min_max:
                try:
                    mins.append(ctype.decode(st.min_raw))
                    maxs.append(ctype.decode(st.max_raw))
                except (ValueError, TypeError, OverflowError, InvalidOperation):
                    return None
            elif st is None or not st.has_null_count or st.null_count < num_values:
                return None
        if not mins:
            return None
        if ctype.kind == "float":
            has_nan = any(math.isnan(v) for v in mins + maxs)
            if has_nan and not self.nan_last:
                return None  # a writer that put NaN in its stats without ordering it: no bounds
            key: Callable[[float], tuple[bool, float]] = lambda v: (math.isnan(v), v)  # noqa: E731
            lo, hi = min(mins, key=key), max(maxs, key=key)
            # Writers that leave NaN out may hide one above the max.
            return (lo, hi if self.nan_last else None)
        return (min(mins), max(maxs))


# ---- one leaf -----------------------------------------------------------------------------


def _to_stats_value(v: Any, ctype: _ColumnType, dt: DataType, rebased: bool) -> Any:
    """A decoded footer value as a value of the table's type (None when it is not exactly one).

    Covers the type-widening cases (int -> long/double/decimal, float -> double,
    decimal scale-up, date -> timestamp_ntz) besides the plain ones.
    """
    k = ctype.kind
    if isinstance(dt, DecimalType):
        if k == "int":
            v = Decimal(v)
        elif k != "decimal":
            return None
        q = v.quantize(Decimal(1).scaleb(-dt.scale), context=_DEC_CTX)
        if q != v or (q != 0 and len(q.as_tuple().digits) > dt.precision):
            return None
        return q
    if not isinstance(dt, PrimitiveType):
        return None
    name = dt.name
    if name in _INT_RANGES:
        lo, hi = _INT_RANGES[name]
        return v if k == "int" and lo <= v <= hi else None
    if name == "double":
        if k == "float":
            return v
        if k == "int" and float(v) == v:
            return float(v)
        return None
    if name == "float":
        return v if k == "float" and ctype.width == 32 else None
    if name == "date":
        if k != "date" or (rebased and v < _LAST_SWITCH_JULIAN_DAY):
            return None
        return v
    if name in ("timestamp", "timestamp_ntz"):
        if k == "date" and name == "timestamp_ntz":
            if rebased and v < _LAST_SWITCH_JULIAN_DAY:
                return None
            return v * 86_400_000_000
        if k != "timestamp" or ctype.utc != (name == "timestamp"):
            return None
        if rebased and v < _LAST_SWITCH_JULIAN_MICROS:
            return None
        return v
    if name == "string":
        if k != "bytes":
            return None
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def _format_bound(v: Any, dt: DataType, is_max: bool, prefix_len: int) -> Any:
    """The JSON value of one bound, as delta-spark's statsCollector writes it."""
    if isinstance(dt, PrimitiveType) and dt.name == "string":
        if is_max:
            return truncate_string_max(v, prefix_len)
        # statsCollector's min is Spark's substring(min, 0, n): the first n code points.
        return v[: max(prefix_len, 0)]
    try:
        return format_stats_value(v, dt)
    except (DeltaIllegalArgumentError, OverflowError, ValueError):
        return None


def _ancestors_required(node: _Node) -> bool:
    n: _Node | None = node
    while n is not None and n.parent is not None:
        if n.nullable is not False:
            return False
        n = n.parent
    return True


def _nested_null_count(fs: _Footer, node: _Node, dt: DataType) -> int | None:
    """Null count of an array/map/variant column, only where the footer proves it.

    Parquet counts a leaf under a list or map as null for null *and empty* collections and
    for null elements; so a leaf with no nulls proves no collection is null, a required
    chain of fields proves it too, and a variant's required ``metadata`` leaf is null
    exactly when the variant is.
    """
    if _ancestors_required(node):
        return 0
    if isinstance(dt, PrimitiveType) and dt.name == "variant":
        meta = node.children.get("metadata")
        if meta is not None and meta.leaf is not None and meta.nullable is False:
            return fs.null_count(meta.leaf)
    for col in node.columns:
        if fs.null_count(col) == 0:
            return 0
    return None


# ---- putting it together ------------------------------------------------------------------


def _file_name(f: StructField, mode: str) -> str:
    return f.name if mode == "none" else physical_name(f)


def _lookup(fs: _Footer, parent: _Node | None, f: StructField, mode: str) -> _Node | None:
    """The file's field for a table field: by Parquet field id in 'id' mode (when the file
    has ids), else by (physical) name under the parent's node."""
    if parent is _OPAQUE:
        return _OPAQUE
    fid = field_id(f) if mode == "id" and fs.by_id else None
    if fid is not None:
        return fs.by_id.get(fid)
    return parent.child(_file_name(f, mode)) if parent is not None else None


def _collect(
    fs: _Footer, st: StructType, parent: _Node | None, mode: str, prefix_len: int
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None]:
    """(minValues, maxValues, nullCount) objects for one struct level; None when the level
    has no field of that kind (delta-spark then leaves the struct out)."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    any_minmax = any_null = False
    empty = fs.num_rows == 0
    for f in st.fields:
        key = _file_name(f, mode)
        node = _lookup(fs, parent, f, mode)
        if isinstance(f.type, StructType):
            if node is not None and (node.leaf is not None or node.repeated):
                node = _OPAQUE
            smin, smax, snull = _collect(fs, f.type, node, mode, prefix_len)
            if smin is not None:
                mins[key], maxs[key] = smin, smax
                any_minmax = True
            if snull is not None:
                nulls[key] = snull
                any_null = True
            continue
        any_null = True
        eligible = is_skipping_eligible(f.type)
        any_minmax = any_minmax or eligible
        if empty or node is _OPAQUE:
            continue  # Spark's min/max/sum over no rows are null: nothing is written
        if node is None:
            # Not in the file: every row reads as null (delta-spark counts them too).
            nulls[key] = fs.num_rows
            continue
        nested = isinstance(f.type, (ArrayType, MapType)) or (
            isinstance(f.type, PrimitiveType) and f.type.name == "variant"
        )
        if node.leaf is None or nested:
            if nested and node.leaf is None:
                n = _nested_null_count(fs, node, f.type)
                if n is not None:
                    nulls[key] = n
            continue  # otherwise the file's shape differs from the table's: nothing to say
        n = fs.null_count(node.leaf)
        if n is not None:
            nulls[key] = n
        if not eligible:
            continue
        ctype = _column_type(fs.md.schema.column(node.leaf))
        if ctype.kind == "other":
            continue
        b = fs.bounds(node.leaf, ctype)
        if b is None:
            continue
        for raw, out, is_max in ((b[0], mins, False), (b[1], maxs, True)):
            if raw is None:
                continue
            v = _to_stats_value(raw, ctype, f.type, fs.rebased_datetimes)
            if v is None:
                continue
            j = _format_bound(v, f.type, is_max, prefix_len)
            if j is not None:
                out[key] = j
    return (mins if any_minmax else None, maxs if any_minmax else None, nulls if any_null else None)


def collect_stats(
    metadata: pq.FileMetaData,
    data_schema: StructType,
    *,
    column_mapping_mode: str = "none",
    num_indexed_cols: int = DEFAULT_NUM_INDEXED_COLS,
    stats_columns: str | Sequence[str] | None = None,
    string_prefix_length: int = DEFAULT_STRING_PREFIX_LENGTH,
    tight_bounds: bool = False,
    partition_columns: Sequence[str] = (),
) -> str:
    """The ``add.stats`` JSON of a Parquet data file, from its footer only.

    `data_schema` is the table's logical schema without partition columns; the file's
    columns are matched by physical name (and by Parquet field id in 'id' column mapping
    mode). `num_indexed_cols`, `stats_columns` and `string_prefix_length` are the table's
    ``delta.dataSkippingNumIndexedCols``, ``delta.dataSkippingStatsColumns`` and
    ``delta.dataSkippingStringPrefixLength``. Pass ``tight_bounds=True`` for tables that
    support deletion vectors: delta-spark then writes ``"tightBounds":true`` for new files.
    `partition_columns`, if given, are dropped from `data_schema` (they are not in the file,
    and a column missing from the file would otherwise count as all null).
    Keys are physical names, nested structs nested, fields in schema order, exactly as
    delta-spark's ``to_json(statsCollector)`` would; values the footer cannot prove are
    left out.
    """
    mode = (column_mapping_mode or "none").lower()
    if mode not in ("none", "name", "id"):
        raise DeltaIllegalArgumentError(f"unsupported column mapping mode {column_mapping_mode!r}")
    fs = _Footer.read(metadata)
    st = indexed_schema(data_schema, num_indexed_cols, stats_columns, partition_columns)
    mins, maxs, nulls = _collect(fs, st, fs.tree, mode, string_prefix_length)
    stats: dict[str, Any] = {NUM_RECORDS: fs.num_rows}
    if mins is not None:
        stats[MIN] = mins
        stats[MAX] = maxs
    if nulls is not None:
        stats[NULL_COUNT] = nulls
    if tight_bounds:
        stats[TIGHT_BOUNDS] = True
    return dumps_stats(stats)


def collect_stats_for_file(
    path: str,
    data_schema: StructType,
    *,
    filesystem: Any = None,
    **kw: Any,
) -> tuple[int, str]:
    """(numRecords, stats JSON) of one Parquet file, reading only its footer."""
    md = pq.read_metadata(path, filesystem=filesystem)
    stats = collect_stats(md, data_schema, **kw)
    return sum(md.row_group(i).num_rows for i in range(md.num_row_groups)), stats


def collect_stats_for_files(
    paths: Sequence[str],
    data_schema: StructType,
    *,
    max_workers: int = 8,
    **kw: Any,
) -> list[tuple[int, str]]:
    """`collect_stats_for_file` for many files; footers are fetched on threads (reading
    them is I/O bound, e.g. on object stores) and results keep the order of `paths`."""
    if len(paths) <= 1 or max_workers <= 1:
        return [collect_stats_for_file(p, data_schema, **kw) for p in paths]
    with ThreadPoolExecutor(max_workers=min(max_workers, len(paths))) as pool:
        return list(pool.map(lambda p: collect_stats_for_file(p, data_schema, **kw), paths))
