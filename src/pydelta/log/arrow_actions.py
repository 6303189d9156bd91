"""Arrow types for file actions, and conversion of log rows to them.

Checkpoints from different writers carry different subsets of fields in
different orders; `conform` reshapes any such column to one fixed type so
the replay code can treat all sources alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

STR_MAP = pa.map_(pa.string(), pa.string())

DV_TYPE = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)

ADD_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", STR_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("tags", STR_MAP),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
        ("clusteringProvider", pa.string()),
    ]
)

REMOVE_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", STR_MAP),
        ("size", pa.int64()),
        ("stats", pa.string()),
        ("tags", STR_MAP),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)


def conform(array: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array:
    """Reshape `array` to `target`: same-named struct children, missing ones null."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if array.type == target:
        return array
    if pa.types.is_struct(target) and pa.types.is_struct(array.type):
        names = {array.type.field(i).name: i for i in range(array.type.num_fields)}
        children = []
        for i in range(target.num_fields):
            f = target.field(i)
            if f.name in names:
                children.append(conform(array.field(names[f.name]), f.type))
            else:
                children.append(pa.nulls(len(array), f.type))
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(target) and pa.types.is_map(array.type):
        return array.cast(target)
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), target)
    return pc.cast(array, target)


def struct_to_table(array: pa.StructArray) -> pa.Table:
    """A struct column as a table of its children."""
    return pa.Table.from_arrays(array.flatten(), names=[f.name for f in array.type])


def rows_to_struct(rows: Sequence[Mapping[str, Any]], target: pa.DataType) -> pa.StructArray:
    """JSON action bodies (dicts) to an array of `target`, ignoring unknown fields."""
    names = [f.name for f in target]
    cleaned = [{n: r.get(n) for n in names} for r in rows]
    return pa.array(cleaned, type=target)


def empty_struct_table(target: pa.DataType) -> pa.Table:
    return struct_to_table(pa.array([], type=target))


def concat(arrays: Iterable[pa.Array], target: pa.DataType) -> pa.Array:
    arrays = [a for a in arrays if len(a)]
    if not arrays:
        return pa.array([], type=target)
    if len(arrays) == 1:
        return arrays[0]
    return pa.concat_arrays(arrays)
