"""Reading the data files of one streaming micro-batch partition with pyarrow.

The Python streaming source API hands each partition to `read()` in a Python worker and
expects Arrow record batches in exactly the schema Spark planned (names, types and
nullability as `spark_to_arrow_schema(schema)` gives them). So this module does
by hand what pydelta's batch read lets Spark's Parquet scan do: map physical column names
(column mapping) back to logical ones at every depth, fill partition values from the log,
add columns missing from older files as nulls, drop rows the file's deletion vector
deletes (or keep only `only_rows` for a deletion-vector diff of the change feed), add the
change-feed columns, and cast to the planned types. Nothing here imports pydelta's Spark
modules, so workers stay cheap to start.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pydelta.log.storage import Storage
from pydelta.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    field_id,
    is_geospatial,
    parse_schema,
    physical_name,
)

CDF_CHANGE_TYPE = "_change_type"
CDF_COMMIT_VERSION = "_commit_version"
CDF_COMMIT_TIMESTAMP = "_commit_timestamp"
_FIELD_ID_KEY = b"PARQUET:field_id"
BATCH_ROWS = 1 << 16


@dataclass(frozen=True)
class FileToRead:
    """One data (or change data) file of a batch and what its rows mean; picklable."""

    path: str  # local absolute path, or the file's URI in an object store
    partition_values: dict[str, str | None]  # keys as in the log (physical names under column mapping)
    size: int
    commit_version: int
    commit_timestamp: int  # ms since epoch
    change_type: str | None = None  # change feed: "insert"/"delete"; None: a cdc file carrying the column
    deletion_vector: Mapping[str, Any] | None = None
    only_rows: tuple[int, ...] | None = None  # keep exactly these row indexes (DV diff)


@dataclass(frozen=True)
class ReadSpec:
    """What every partition of a stream needs to turn files into the planned rows; picklable."""

    table_root: str
    schema_json: str  # the stream's Delta schema (logical names, column mapping metadata)
    output_schema_json: str  # Spark schema JSON of the stream's rows (with the CDF columns if any)
    partition_columns: tuple[str, ...]
    mapping_mode: str  # none / id / name
    change_feed: bool
    # The object-store options of the table's bucket (source_storage): workers have no Spark session.
    storage_options: tuple[tuple[str, str], ...] = ()


def read_files(spec: ReadSpec, files: Sequence[FileToRead]) -> Iterator[pa.RecordBatch]:
    """The rows of `files`, one or more record batches per Parquet row group."""
    from pyspark.sql.types import StructType as SparkStructType

    from pydelta.log.storage import is_remote_uri, storage_for
    from pydelta.spark.base.pyspark_compat import spark_to_arrow_schema

    # The table's store, opened with the options the driver derived (a worker has no session).
    storage = storage_for(spec.table_root, dict(spec.storage_options) or None) \
        if is_remote_uri(spec.table_root) else None
    target = spark_to_arrow_schema(SparkStructType.fromJson(json.loads(spec.output_schema_json)))
    schema = parse_schema(spec.schema_json)
    for f in files:
        yield from _read_file(spec, schema, target, f, storage)


def _open(path: str, table_root: str, table_storage: Storage | None) -> Any:
    """A local path as it is; a remote URI (s3a://...) as a file reading ranges from its store:
    the table's for its own bucket, the one the URI selects for another (a shallow clone's source)."""
    from pydelta.log.storage import is_remote_uri, storage_for

    if not is_remote_uri(path):
        return path
    same_store = urlparse(path)[:2] == urlparse(table_root)[:2]
    storage = table_storage if table_storage is not None and same_store else storage_for(path)
    opener = getattr(storage, "open_input", None)
    if opener is None:
        import io

        return io.BytesIO(storage.read(path))
    return opener(path)


def _row_filter(spec: ReadSpec, f: FileToRead, storage: Storage | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    deleted = None
    if f.deletion_vector:
        from pydelta.log.deletion_vector_files import read_deleted_rows
        from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor

        deleted = read_deleted_rows(DeletionVectorDescriptor.from_dict(f.deletion_vector), spec.table_root, storage)
        deleted = deleted.astype(np.int64)
    only = np.asarray(f.only_rows, dtype=np.int64) if f.only_rows is not None else None
    return deleted, only


def _read_file(spec: ReadSpec, schema: StructType, target: pa.Schema, f: FileToRead,
               storage: Storage | None) -> Iterator[pa.RecordBatch]:
    from pydelta.errors import MissingDataFileError

    try:
        pf = pq.ParquetFile(_open(f.path, spec.table_root, storage))
    except FileNotFoundError:
        raise MissingDataFileError(
            f"[DELTA_FILE_NOT_FOUND_DETAILED] File {f.path} referenced in the transaction log cannot be found. "
            "This occurs when data has been manually deleted from the file system rather than using the table "
            "`DELETE` statement."
        ) from None
    deleted, only = _row_filter(spec, f, storage)
    file_fields = list(pf.schema_arrow)
    wanted = sorted({i for fld in schema.fields if (i := _find(file_fields, fld, spec.mapping_mode)) is not None})
    if spec.change_feed and f.change_type is None:
        wanted.append(pf.schema_arrow.get_field_index(CDF_CHANGE_TYPE))
    names = [file_fields[i].name for i in wanted if i >= 0]
    offset = 0
    for rg in range(pf.num_row_groups):
        n = pf.metadata.row_group(rg).num_rows
        table = pf.read_row_group(rg, columns=names)
        if not names:  # only partition columns: keep the row count
            table = pa.table({"__rows": pa.nulls(n)})
        rows = np.arange(offset, offset + n, dtype=np.int64)
        offset += n
        keep = None
        if deleted is not None and len(deleted):
            keep = ~np.isin(rows, deleted)
        if only is not None:
            inside = np.isin(rows, only)
            keep = inside if keep is None else keep & inside
        if keep is not None:
            table = table.filter(pa.array(keep))
        if table.num_rows:
            batch = _to_batch(spec, schema, target, f, table)
            # Slices (zero-copy) let the JVM convert one while Python serializes the next.
            for start in range(0, batch.num_rows, BATCH_ROWS):
                yield batch.slice(start, BATCH_ROWS)


def _to_batch(spec: ReadSpec, schema: StructType, target: pa.Schema, f: FileToRead, table: pa.Table) -> pa.RecordBatch:
    n = table.num_rows
    file_fields = list(table.schema)
    partition = set(spec.partition_columns)
    arrays: list[pa.Array] = []
    for fld in schema.fields:
        tgt = target.field(fld.name).type
        if fld.name in partition:
            raw = f.partition_values.get(physical_name(fld), f.partition_values.get(fld.name))
            arrays.append(_partition_array(raw, fld, tgt, n))
            continue
        i = _find(file_fields, fld, spec.mapping_mode)
        column = table.column(i).combine_chunks() if i is not None else None
        arrays.append(_conform(column, fld.type, tgt, spec.mapping_mode, n))
    if spec.change_feed:
        if f.change_type is None:
            arrays.append(table.column(CDF_CHANGE_TYPE).combine_chunks().cast(pa.string()))
        else:
            arrays.append(pa.array([f.change_type] * n, pa.string()))
        arrays.append(pa.array(np.full(n, f.commit_version, dtype=np.int64)))
        stamp = np.full(n, f.commit_timestamp * 1000, dtype=np.int64)
        arrays.append(pa.array(stamp, pa.timestamp("us", tz="UTC")))
    arrays = [a if a.type == target.field(i).type else a.cast(target.field(i).type) for i, a in enumerate(arrays)]
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _partition_array(raw: str | None, fld: StructField, target: pa.DataType, n: int) -> pa.Array:
    from pydelta.protocol.partition_values import deserialize_partition_value

    value = deserialize_partition_value(raw, fld.type, timezone="UTC")
    if value is None:
        return pa.nulls(n, target)
    return pa.array([value], type=target).take(pa.array(np.zeros(n, dtype=np.int64)))


def _find(fields: Sequence[pa.Field], fld: StructField, mode: str) -> int | None:
    """Index of the file field holding Delta field `fld`: by field id in id mode, else by physical name."""
    if mode == "id":
        fid = field_id(fld)
        if fid is not None:
            for i, candidate in enumerate(fields):
                meta = candidate.metadata or {}
                if meta.get(_FIELD_ID_KEY) == str(fid).encode():
                    return i
    name = physical_name(fld) if mode != "none" else fld.name
    for i, candidate in enumerate(fields):
        if candidate.name == name:
            return i
    lowered = name.lower()
    for i, candidate in enumerate(fields):
        if candidate.name.lower() == lowered:
            return i
    return None


def _cast(arr: pa.Array, target: pa.DataType) -> pa.Array:
    if arr.type == target:
        return arr
    try:
        return pc.cast(arr, target)
    except pa.ArrowInvalid:
        if pa.types.is_timestamp(target):  # INT96 nanoseconds -> microseconds
            return pc.cast(arr, target, safe=False)
        raise


def _conform(arr: pa.Array | None, dt: DataType, target: pa.DataType, mode: str, n: int) -> pa.Array:
    """`arr` (physical names, file types) as the logical Arrow type `target`; None -> nulls."""
    if arr is None or pa.types.is_null(arr.type):
        return pa.nulls(n, target)
    mask = arr.is_null() if arr.null_count else None
    if isinstance(dt, StructType) and pa.types.is_struct(arr.type):
        file_fields = [arr.type.field(i) for i in range(arr.type.num_fields)]
        children = []
        for k, fld in enumerate(dt.fields):
            j = _find(file_fields, fld, mode)
            child = arr.field(j) if j is not None else None
            children.append(_conform(child, fld.type, target.field(k).type, mode, len(arr)))
        return pa.StructArray.from_arrays(children, fields=[target.field(k) for k in range(target.num_fields)],
                                          mask=mask)
    if isinstance(dt, ArrayType) and (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        values = _conform(arr.values, dt.element_type, target.value_type, mode, len(arr.values))
        return pa.ListArray.from_arrays(arr.offsets.cast(pa.int32()), values, type=target, mask=mask)
    if isinstance(dt, MapType) and pa.types.is_map(arr.type):
        keys = _conform(arr.keys, dt.key_type, target.key_type, mode, len(arr.keys))
        items = _conform(arr.items, dt.value_type, target.item_type, mode, len(arr.items))
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=mask)
    if is_geospatial(dt) and pa.types.is_struct(target):
        return _spark_geo(arr, target, mask)
    return _cast(arr, target)


def _spark_geo(wkb: pa.Array, target: pa.StructType, mask: pa.Array | None) -> pa.StructArray:
    """File WKB as PySpark's Arrow form of GEOMETRY/GEOGRAPHY: struct<srid, wkb>, the SRID
    being the column type's (PySpark puts it in the wkb field's metadata)."""
    srid_field, wkb_field = target.field("srid"), target.field("wkb")
    srid = int((wkb_field.metadata or {}).get(b"srid", b"0"))
    values = pc.fill_null(_cast(wkb, wkb_field.type), b"")  # the children are non-nullable
    srids = pa.array(np.full(len(wkb), srid, dtype=np.int32), srid_field.type)
    return pa.StructArray.from_arrays([srids, values], fields=[srid_field, wkb_field], mask=mask)
