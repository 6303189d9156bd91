"""Choosing the files a filtered scan must read: partition pruning and
min/max/nullCount data skipping over the snapshot's file list.

Conservative by construction: any doubt (missing stats, odd types, a
predicate we cannot reason about) keeps the file.
"""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from pydelta.protocol.predicates import And, Cmp, Col, In, IsNotNull, IsNull, Lit, Or, Predicate, push_not

_STAT_TYPES: dict[str, pa.DataType] = {
    "byte": pa.int64(),
    "short": pa.int64(),
    "integer": pa.int64(),
    "long": pa.int64(),
    "float": pa.float64(),
    "double": pa.float64(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "date": pa.string(),
    "timestamp": pa.string(),
    "timestamp_ntz": pa.string(),
}


def _null_count_only(type_name: str) -> bool:
    """Geometry/geography leaves: nullCount but never min/max (not SkippingEligibleDataType),
    so only IS [NOT] NULL can skip on them, as in delta-spark."""
    return type_name.startswith(("geometry(", "geography("))


class _Resolved:
    """A predicate column resolved against the table schema."""

    def __init__(self, logical: tuple[str, ...], physical: tuple[str, ...], type_name: str, is_partition: bool):
        self.logical = logical
        self.physical = physical
        self.type_name = type_name
        self.is_partition = is_partition


def _type_name(dt: Any) -> str:
    return getattr(dt, "name", None) or str(dt)


def _resolve(schema: Any, path: tuple[str, ...], partition_columns: list[str], mapping_mode: str) -> _Resolved | None:
    from pydelta.protocol.schema import StructType, physical_name

    fields = schema
    logical, physical = [], []
    dt = None
    for part in path:
        if not isinstance(fields, StructType):
            return None
        match = [f for f in fields.fields if f.name.lower() == part.lower()]
        if len(match) != 1:
            return None
        field = match[0]
        logical.append(field.name)
        physical.append(physical_name(field) if mapping_mode != "none" else field.name)
        dt = field.type
        fields = dt
    is_partition = len(path) == 1 and logical[0] in partition_columns
    if isinstance(dt, StructType):
        return None
    return _Resolved(tuple(logical), tuple(physical), _type_name(dt), is_partition)


class FileSkipper:
    """Evaluates a predicate over a snapshot's files table to a keep-mask."""

    @classmethod
    def for_metadata(cls, files: pa.Table, metadata: Any) -> FileSkipper:
        """A skipper over `files` of a table with this `Metadata` (schema, partitioning, mapping mode)."""
        from pydelta.protocol.schema import column_mapping_mode

        return cls(files, metadata.schema, list(metadata.partition_columns),
                   column_mapping_mode(metadata.configuration))

    def __init__(self, files: pa.Table, schema: Any, partition_columns: list[str], mapping_mode: str) -> None:
        self.files = files
        self.schema = schema
        self.partition_columns = list(partition_columns)
        self.mapping_mode = mapping_mode
        self._stats: pa.Table | None = None
        self._stats_columns: list[_Resolved] = []
        self.n = files.num_rows

    # ---- public -------------------------------------------------------------
    def keep_mask(self, predicate: Predicate) -> pa.BooleanArray:
        predicate = push_not(predicate)
        columns = [r for r in self._leaves(predicate) if r is not None and not r.is_partition]
        if [r.physical for r in columns] != [r.physical for r in self._stats_columns]:
            self._stats = None  # parsed for another predicate's columns
        self._stats_columns = columns
        mask = self._eval(predicate)
        return pc.fill_null(mask, True)

    def prune(self, predicate: Predicate) -> pa.Table:
        if self.n == 0:
            return self.files
        return self.files.filter(self.keep_mask(predicate))

    # ---- helpers ------------------------------------------------------------
    def _all(self, value: bool) -> pa.BooleanArray:
        return pa.array([value] * self.n, pa.bool_())

    def _leaves(self, p: Predicate) -> list[_Resolved | None]:
        if isinstance(p, (And, Or)):
            return self._leaves(p.left) + self._leaves(p.right)
        if isinstance(p, (Cmp, IsNull, IsNotNull, In)):
            return [self._col(p.col)]
        return []

    def _col(self, col: Col) -> _Resolved | None:
        return _resolve(self.schema, col.path, self.partition_columns, self.mapping_mode)

    def _eval(self, p: Predicate) -> pa.BooleanArray:
        try:
            if isinstance(p, And):
                return pc.and_(pc.fill_null(self._eval(p.left), True), pc.fill_null(self._eval(p.right), True))
            if isinstance(p, Or):
                return pc.or_(pc.fill_null(self._eval(p.left), True), pc.fill_null(self._eval(p.right), True))
            if isinstance(p, In):
                masks = [self._eval(Cmp("=", p.col, v)) for v in p.values]
                if not masks:
                    return self._all(False)
                out = masks[0]
                for m in masks[1:]:
                    out = pc.or_(out, m)
                return out
            if isinstance(p, (Cmp, IsNull, IsNotNull)):
                col = self._col(p.col)
                if col is None:
                    return self._all(True)
                if col.is_partition:
                    return self._partition_leaf(p, col)
                return self._stats_leaf(p, col)
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            pass
        return self._all(True)

    # ---- partitions: exact values -------------------------------------------
    def _partition_values(self, col: _Resolved) -> pa.Array:
        key = col.physical[0]
        pv = self.files.column("partition_values").combine_chunks()
        values = pc.map_lookup(pv, pa.scalar(key), "first")
        values = pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)
        return _cast_strings(values, col.type_name)

    def _partition_leaf(self, p: Predicate, col: _Resolved) -> pa.BooleanArray:
        values = self._partition_values(col)
        if isinstance(p, IsNull):
            return pc.is_null(values)
        if isinstance(p, IsNotNull):
            return pc.is_valid(values)
        assert isinstance(p, Cmp)
        if p.lit.value is None:
            return pc.is_null(values) if p.op == "<=>" else self._all(False)
        lit = _literal(p.lit, values.type)
        op = "=" if p.op == "<=>" else p.op
        return pc.fill_null(_compare(values, op, lit), False)

    # ---- data columns: min/max/nullCount ------------------------------------
    def _stats_table(self) -> pa.Table:
        if self._stats is None:
            fields: dict[str, Any] = {}
            for r in self._stats_columns:
                st = _STAT_TYPES.get(r.type_name)
                if st is None and not _null_count_only(r.type_name):
                    continue
                groups = (("minValues", st), ("maxValues", st)) if st is not None else ()
                for group, typ in (*groups, ("nullCount", pa.int64())):
                    node = fields.setdefault(group, {})
                    for part in r.physical[:-1]:
                        node = node.setdefault(part, {})
                    node[r.physical[-1]] = typ
            schema = pa.schema([("numRecords", pa.int64())] + [(k, _struct(v)) for k, v in fields.items()])
            stats = self.files.column("stats").combine_chunks()
            stats = pc.fill_null(stats, "{}")
            stats = pc.if_else(pc.equal(pc.utf8_length(stats), 0), "{}", stats)
            text = "\n".join(stats.to_pylist()) if self.n else ""
            self._stats = pajson.read_json(
                io.BytesIO(text.encode("utf-8")),
                parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
                read_options=pajson.ReadOptions(block_size=max(1 << 20, len(text) + 1)),
            )
        return self._stats

    def _stat(self, group: str, col: _Resolved) -> pa.Array | None:
        table = self._stats_table()
        if group not in table.column_names:
            return None
        arr = table.column(group).combine_chunks()
        for part in col.physical:
            if not isinstance(arr.type, pa.StructType) or arr.type.get_field_index(part) < 0:
                return None
            arr = pc.struct_field(arr, part)
        return arr

    def _stats_leaf(self, p: Predicate, col: _Resolved) -> pa.BooleanArray:
        if col.type_name not in _STAT_TYPES and not (
                _null_count_only(col.type_name) and isinstance(p, (IsNull, IsNotNull))):
            return self._all(True)
        if isinstance(p, (IsNull, IsNotNull)):
            nulls = self._stat("nullCount", col)
            if nulls is None:
                return self._all(True)
            if isinstance(p, IsNull):
                return pc.fill_null(pc.greater(nulls, 0), True)
            records = self._stats_table().column("numRecords").combine_chunks()
            return pc.fill_null(pc.less(nulls, records), True)
        assert isinstance(p, Cmp)
        if p.lit.value is None:
            return self._all(p.op == "<=>")
        mins, maxs = self._stat("minValues", col), self._stat("maxValues", col)
        if mins is None or maxs is None:
            return self._all(True)
        mins = _cast_strings(mins, col.type_name, stats=True)
        maxs = _cast_strings(maxs, col.type_name, stats=True, upper=True)
        lit = _literal(p.lit, mins.type)
        op = "=" if p.op == "<=>" else p.op
        if op == "=":
            keep = pc.and_(pc.less_equal(mins, lit), pc.greater_equal(maxs, lit))
        elif op == "!=":
            keep = pc.invert(pc.and_(pc.equal(mins, lit), pc.equal(maxs, lit)))
        elif op in ("<", "<="):
            keep = _compare(mins, op, lit)
        elif op in (">", ">="):
            keep = _compare(maxs, op, lit)
        else:
            return self._all(True)
        return pc.fill_null(keep, True)


def _struct(node: dict[str, Any]) -> pa.DataType:
    return pa.struct([(k, _struct(v) if isinstance(v, dict) else v) for k, v in node.items()])


def _compare(values: pa.Array, op: str, lit: pa.Scalar) -> pa.Array:
    fn = {
        "=": pc.equal,
        "!=": pc.not_equal,
        "<": pc.less,
        "<=": pc.less_equal,
        ">": pc.greater,
        ">=": pc.greater_equal,
    }[op]
    return fn(values, lit)


def _parse_ts(text: str | None, ntz: bool) -> datetime | None:
    if text is None:
        return None
    t = text.strip().replace("Z", "+00:00")
    if " " in t and "T" not in t:
        t = t.replace(" ", "T", 1)
    dt = datetime.fromisoformat(t)
    if ntz:
        return dt.replace(tzinfo=None) if dt.tzinfo is None else dt.astimezone(UTC).replace(tzinfo=None)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def _cast_strings(values: pa.Array, type_name: str, stats: bool = False, upper: bool = False) -> pa.Array:
    """Partition strings / stats values to comparable Arrow values."""
    if type_name in ("timestamp", "timestamp_ntz"):
        ntz = type_name == "timestamp_ntz"
        parsed = [_parse_ts(v, ntz) for v in values.to_pylist()]
        if stats and upper:  # stats are truncated to milliseconds: widen the upper bound
            parsed = [v + timedelta(microseconds=999) if v is not None else None for v in parsed]
        return pa.array(parsed, pa.timestamp("us") if ntz else pa.timestamp("us", tz="UTC"))
    if type_name == "date":
        return pa.array([date.fromisoformat(v[:10]) if v else None for v in values.to_pylist()], pa.date32())
    target = _STAT_TYPES.get(type_name)  # dates and timestamps were handled above
    if target is None:
        raise ValueError(f"no pruning for type {type_name}")
    if values.type == target:
        return values
    if target == pa.bool_() and pa.types.is_string(values.type):
        return pc.equal(pc.utf8_lower(values), "true")
    return pc.cast(values, target)


def _literal(lit: Lit, arrow_type: pa.DataType) -> pa.Scalar:
    value = lit.value
    if pa.types.is_timestamp(arrow_type) and isinstance(value, datetime):
        if arrow_type.tz is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        if arrow_type.tz is None and value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
    if pa.types.is_floating(arrow_type) and isinstance(value, (int, float)):
        return pa.scalar(float(value), arrow_type)
    if pa.types.is_integer(arrow_type) and isinstance(value, float):
        raise ValueError("float literal on an integer column")
    if isinstance(value, bool) and not pa.types.is_boolean(arrow_type):
        raise ValueError("boolean literal on a non-boolean column")
    return pa.scalar(value, arrow_type)

