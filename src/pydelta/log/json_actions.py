"""Vectorized parsing of JSON commit files with pyarrow's JSON reader.

`parse_commit` returns the same `CommitActions` as `commits.parse_actions`, but
with add/remove actions as Arrow chunked arrays (`add_array`/`remove_array`,
conformed to `ADD_TYPE`/`REMOVE_TYPE`) instead of Python dicts. Every other
action (commitInfo, metaData, protocol, txn, ...) is a handful of lines: those
lines are found by row number and parsed with `json.loads` as before, so their
content is exactly what the row-by-row parser gives. If inference fails on such
a line (say a commitInfo array of mixed types), only the add/remove lines go to
the reader.

The reader is given types only for the fields the first add and remove lines
hold and infers the rest (`_sampled_schema`); an inferred field whose kind differs
from the action's type (a date-like string read as a timestamp) sends the file to
the row-by-row parser. partitionValues and tags are maps, which the reader cannot
produce: they are read as structs of strings and turned into maps; a row with a
null in such a struct (a null value, or a key other rows have and this one lacks)
is re-read from its line, so maps hold exactly the row-by-row parser's entries (in
the key order of the first row that has them). Small files, lines holding
more than one action, rows that do not line up with lines, non-string map
values, and anything pyarrow refuses (invalid JSON, huge ints, wrong types) go
through `parse_actions` instead, which raises the same errors as before.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.json as pajson

from pydelta.log.arrow_actions import ADD_TYPE, REMOVE_TYPE, STR_MAP, conform
from pydelta.log.commits import CommitActions, _add_action, parse_actions

# Below this many lines the row-by-row parser beats the Arrow reader's fixed cost (~1 ms):
# measured ~5-10 us per action row by row, crossing over at 200-500 actions.
SMALL_COMMIT_LINES = 300
_LARGE_COMMIT_BYTES = 4 << 20  # always the Arrow reader from this size on
_BLOCK_SIZE = 4 << 20  # ~10k actions: blocks parsed in parallel (measured faster than 1 or 16 MB)

_MAP_FIELDS = ("partitionValues", "tags")
# The first add and remove lines are looked for this far into a file, to type their fields.
_SAMPLE_BYTES = 1 << 20

_EMPTY = pa.schema([("add", ADD_TYPE), ("remove", REMOVE_TYPE)])


#: A commit file's content: bytes, or a read-only map of a large local file (`LocalStorage.read_mapped`),
#: which has `find`/`rfind` and slicing but not the other bytes methods.
CommitBytes = bytes | mmap.mmap


class _Fallback(Exception):
    """The Arrow path cannot give the exact answer: use the row-by-row parser."""


def parse_commit(data: CommitBytes, version: int, source: str) -> CommitActions:
    """Actions of one commit file; adds/removes as Arrow arrays when the file is large."""
    if len(data) < _LARGE_COMMIT_BYTES and bytes(data).count(b"\n") < SMALL_COMMIT_LINES:
        return parse_actions(bytes(data), version, source)
    try:
        return _parse_arrow(data, version, source)
    except (_Fallback, pa.ArrowException):
        return parse_actions(bytes(data), version, source)


def _read(data: CommitBytes) -> pa.Table:
    if not data:
        return _EMPTY.empty_table()
    buf = pa.py_buffer(data)
    parse = pajson.ParseOptions(explicit_schema=_sampled_schema(data), unexpected_field_behavior="infer")
    try:
        return pajson.read_json(pa.BufferReader(buf), read_options=pajson.ReadOptions(block_size=_BLOCK_SIZE),
                                parse_options=parse)
    except pa.ArrowException:
        if len(data) < _BLOCK_SIZE:
            raise
        # Inference can disagree between blocks (a field null in the first one): one block.
        return pajson.read_json(pa.BufferReader(buf), read_options=pajson.ReadOptions(block_size=len(data) + 1),
                                parse_options=parse)


def _sampled_schema(data: CommitBytes) -> pa.Schema:
    """Types for the fields that the first add and remove lines hold; the reader infers the rest.

    Every field given a type costs the reader a builder per row, even when no row has it
    (the full add and remove types made it 1.5x slower on a 300k-add commit). Typing what the
    first lines hold keeps strings strings (inference makes "2024-01-01" a timestamp), and
    partitionValues/tags (maps, which the reader cannot build) structs of string values.
    """
    fields = []
    for name, target in (("add", ADD_TYPE), ("remove", REMOVE_TYPE)):
        body = _first_body(data, name)
        if body is not None:
            fields.append(pa.field(name, pa.struct(_typed_fields(body, target))))
    return pa.schema(fields)


def _first_body(data: CommitBytes, kind: str) -> dict[str, Any] | None:
    """The body of the first `{"<kind>":` line within `_SAMPLE_BYTES`, if it parses as an object."""
    prefix = b'{"' + kind.encode() + b'":'
    if data[:len(prefix)] == prefix:
        start = 0
    else:
        start = data.find(b"\n" + prefix, 0, _SAMPLE_BYTES) + 1
        if start == 0:
            return None
    end = data.find(b"\n", start)
    try:
        body = json.loads(data[start:end if end >= 0 else len(data)])[kind]
    except (ValueError, KeyError, TypeError):
        return None
    return body if isinstance(body, dict) else None


def _typed_fields(body: dict[str, Any], target: pa.DataType) -> list[pa.Field]:
    fields = []
    for field in target:
        if field.name not in body:
            continue
        if field.name in _MAP_FIELDS:
            value = body[field.name]
            if isinstance(value, dict):
                fields.append(pa.field(field.name, pa.struct([(key, pa.string()) for key in value])))
            continue
        fields.append(field)
    return fields


def _parse_arrow(data: CommitBytes, version: int, source: str) -> CommitActions:
    try:
        table, other_lines, line_of = _whole(data)
    except (pa.ArrowException, _Fallback):
        # Inference failed on some other action (say commitInfo with a mixed-type array), or
        # rows and lines disagree: parse only the add/remove lines with Arrow.
        table, other_lines, line_of = _split(data)
    out = CommitActions(version)
    for _, line, expected in other_lines:
        try:
            action = json.loads(line)
        except ValueError:
            raise _Fallback from None  # the row-by-row parser reports it with its line number
        if not isinstance(action, dict) or (expected is not None and expected not in action):
            raise _Fallback  # rows and lines disagree (blank lines, objects over several lines)
        try:
            _add_action(out, action)
        except (KeyError, TypeError, ValueError):
            raise _Fallback from None
    if out.adds or out.removes:
        raise _Fallback
    valid = _valid(table)
    if set(valid) - {"add", "remove"}:
        raise _Fallback
    out.add_array = _files(table, "add", valid, ADD_TYPE, line_of)
    out.remove_array = _files(table, "remove", valid, REMOVE_TYPE, line_of)
    return out


def _valid(table: pa.Table) -> dict[str, np.ndarray]:
    """Validity of each top-level column holding any value; one action per row at most."""
    valid = {}
    for name in table.column_names:
        col = table.column(name)
        if col.null_count == len(col):
            continue
        valid[name] = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if len(valid) > 1:
        counts = np.sum(np.vstack(list(valid.values())).astype(np.int8), axis=0)
        if counts.max() > 1:
            raise _Fallback  # a line with several actions: keep the row-by-row semantics
    return valid


#: Rows of the reader's table -> their line texts (None when the rows cannot be located).
LineOf = Callable[[list[int]], list[bytes]]
#: A line for json.loads: (1-based line number, text, the action it should hold or None).
OtherLine = tuple[int, bytes, str | None]


def _line_index(data: CommitBytes) -> LineOf:
    """row -> line text, for a file whose row i is line i (offsets computed on first use)."""
    cache: list[np.ndarray] = []

    def line_of(rows: list[int]) -> list[bytes]:
        if not cache:
            ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
            cache.append(np.concatenate([[0], ends + 1]))
            cache.append(np.concatenate([ends, [len(data)]]))
        starts, ends = cache
        return [data[starts[r]:ends[r]] for r in rows]

    return line_of


def _newlines(data: CommitBytes) -> int:
    """`data.count(b"\n")`, in cache-sized slices with numpy: about twice as fast on a large commit."""
    view = np.frombuffer(data, dtype=np.uint8)
    step = 4 << 20
    return sum(int(np.count_nonzero(view[i:i + step] == 10)) for i in range(0, len(view), step))


def _whole(data: CommitBytes) -> tuple[pa.Table, list[OtherLine], LineOf | None]:
    """The whole file through the reader; the (few) rows of other actions located by line number."""
    n_lines = _newlines(data) + (0 if data[-1:] == b"\n" else 1)
    table = _read(data)
    if table.num_rows != n_lines:
        raise _Fallback
    valid = _valid(table)
    names = [n for n in valid if n not in ("add", "remove")]
    if not names:
        return table, [], _line_index(data)
    rows = np.zeros(table.num_rows, dtype=bool)
    for name in names:
        rows |= valid[name]
    which = np.flatnonzero(rows).tolist()
    expected = [next(n for n in names if valid[n][r]) for r in which]
    lines: list[OtherLine] = [
        (lineno, line, name) for (lineno, line), name in zip(_lines(data, which, n_lines), expected, strict=True)
    ]
    keep = [n for n in table.column_names if n in ("add", "remove")]
    return table.select(keep), lines, _line_index(data)


def _split(data: CommitBytes) -> tuple[pa.Table, list[OtherLine], LineOf | None]:
    """add/remove lines (by prefix) through the reader, the other lines for json.loads."""
    lines = bytes(data).split(b"\n")
    prefixes = (b'{"add":', b'{"remove":')
    files = [line for line in lines if line.startswith(prefixes)]
    others: list[OtherLine] = [
        (i + 1, line, None) for i, line in enumerate(lines) if line.strip() and not line.startswith(prefixes)
    ]
    if not files:
        return _read(b""), others, None
    table = _read(b"\n".join(files))
    if table.num_rows != len(files):
        raise _Fallback
    return table, others, lambda rows: [files[r] for r in rows]


def _lines(data: CommitBytes, rows: list[int], n_lines: int) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, text) of the given 0-based rows (sorted); near rows are cheap."""
    forward = [r for r in rows if r < n_lines - r]
    backward = [r for r in rows if r >= n_lines - r]
    pos, cur = 0, 0
    for r in forward:
        while cur < r:
            pos = data.find(b"\n", pos) + 1
            cur += 1
        end = data.find(b"\n", pos)
        yield r + 1, data[pos:end if end >= 0 else len(data)]
    found: list[tuple[int, bytes]] = []
    end = len(data) - 1 if data[-1:] == b"\n" else len(data)  # end of the last line
    cur = n_lines - 1
    for r in reversed(backward):
        while cur > r:
            end = data.rfind(b"\n", 0, end)
            cur -= 1
        start = data.rfind(b"\n", 0, end) + 1
        found.append((r + 1, data[start:end]))
    yield from reversed(found)


def _files(
    table: pa.Table, kind: str, valid: dict[str, np.ndarray], target: pa.DataType, line_of: LineOf | None
) -> pa.ChunkedArray | None:
    """The `kind` column's non-null rows, conformed to `target`, still in the reader's chunks (no copy)."""
    if kind not in valid:
        return None
    col = table.column(kind)
    rows = np.flatnonzero(valid[kind])
    if rows[-1] - rows[0] + 1 == len(rows):
        col = col.slice(int(rows[0]), len(rows))  # the usual case: other actions first/last
    else:
        col = col.filter(pa.array(valid[kind]))
    chunks = []
    start = 0
    for chunk in col.chunks:
        if len(chunk):
            chunks.append(_conform_chunk(chunk, kind, target, rows[start:start + len(chunk)], line_of))
        start += len(chunk)
    return pa.chunked_array(chunks, type=target)


def _conform_chunk(
    arr: pa.StructArray, kind: str, target: pa.DataType, rows: np.ndarray, line_of: LineOf | None
) -> pa.StructArray:
    children = []
    fields = []
    for i, f in enumerate(arr.type):
        child = arr.field(i)
        if f.name in _MAP_FIELDS:
            child = _exact_map(child, kind, f.name, rows, line_of, arr.field("path"))
        children.append(child)
        fields.append(pa.field(f.name, child.type))
    struct = pa.StructArray.from_arrays(children, fields=fields)
    if not _same_kinds(struct.type, target):
        raise _Fallback  # an inferred field the row-by-row parser would read differently
    return conform(struct, target)


def _same_kinds(inferred: pa.DataType, target: pa.DataType) -> bool:
    """Whether an inferred type converts to `target` without changing any value's meaning.

    The reader infers JSON strings that look like dates as timestamps, and numbers as int64 or
    double: only null, same-kind and int-to-int (checked when cast) are taken as they are.
    """
    if pa.types.is_null(inferred):
        return True
    if pa.types.is_struct(target):
        if not pa.types.is_struct(inferred):
            return False
        wanted = {f.name: f.type for f in target}
        return all(_same_kinds(f.type, wanted[f.name]) for f in inferred if f.name in wanted)
    for kind in (pa.types.is_string, pa.types.is_integer, pa.types.is_boolean):
        if kind(target):
            return bool(kind(inferred))
    return bool(inferred == target)


def _exact_map(
    arr: pa.Array, kind: str, name: str, rows: np.ndarray, line_of: LineOf | None, paths: pa.Array
) -> pa.Array:
    """`_struct_to_map`, with rows whose object may lack some keys re-read from their lines.

    The reader gives a key absent from one object but present in others as null; the
    row-by-row parser leaves it out. Only rows with a null value are ambiguous.
    """
    out = _struct_to_map(arr)
    if not pa.types.is_struct(arr.type) or arr.type.num_fields == 0:
        return out
    ambiguous = np.zeros(len(arr), dtype=bool)
    for i in range(arr.type.num_fields):
        child = arr.field(i)
        if child.null_count:
            ambiguous |= np.asarray(child.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if arr.null_count:
        ambiguous &= np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if not ambiguous.any():
        return out
    if line_of is None:
        raise _Fallback
    which = np.flatnonzero(ambiguous)
    exact = []
    for line, path in zip(line_of(rows[which].tolist()), paths.take(pa.array(which)).to_pylist(), strict=True):
        try:
            body = json.loads(line).get(kind)
        except (ValueError, AttributeError):
            raise _Fallback from None
        if not isinstance(body, dict) or body.get("path") != path:
            raise _Fallback  # not the line of this row
        exact.append(body.get(name))
    fixed = pa.array(exact, STR_MAP)
    index = np.arange(len(arr), dtype=np.int64)
    index[which] = len(arr) + np.arange(len(which), dtype=np.int64)
    return pa.concat_arrays([out, fixed]).take(pa.array(index))


def _struct_to_map(arr: pa.Array) -> pa.Array:
    """A JSON object inferred as a struct, back to map<string, string> (null objects stay null)."""
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), STR_MAP)
    if not pa.types.is_struct(arr.type):
        raise _Fallback
    n = len(arr)
    k = arr.type.num_fields
    ok = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    rows = np.flatnonzero(ok)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(ok.astype(np.int32) * k, out=offsets[1:])
    values = []
    for i in range(k):
        child = arr.field(i)
        if pa.types.is_null(child.type):
            child = pa.nulls(n, pa.string())
        elif not pa.types.is_string(child.type):
            raise _Fallback  # a non-string value: let the row-by-row parser decide
        values.append(child)
    if k:
        idx = (rows[:, None] + np.arange(k, dtype=np.int64)[None, :] * n).ravel()
        items = pa.concat_arrays(values).take(pa.array(idx))
        keys = pa.array(np.tile(np.array(arr.type.names, dtype=object), len(rows)), pa.string())
    else:
        items = pa.array([], pa.string())
        keys = pa.array([], pa.string())
    mask = None if ok.all() else pa.array(~ok)
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items, type=STR_MAP, mask=mask)

