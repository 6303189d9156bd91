"""Reading a snapshot with Spark's native Parquet scan.

Spark reads the data files (keeping column pruning and Parquet predicate
pushdown); pydelta chooses the files, renames physical columns, supplies
partition values from the log and drops rows deleted by deletion vectors.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from pydelta.log.data_skipping import FileSkipper
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.internal_metadata import remove_internal_metadata
from pydelta.protocol.partition_values import file_uri
from pydelta.protocol.schema import (
    DecimalType,
    StructField,
    StructType,
    column_mapping_mode,
    physical_name,
    quote_identifier,
    to_physical_schema,
)
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.connect_session import is_connect
from pydelta.spark.base.parquet_files import read_parquet_files
from pydelta.spark.base.predicates import filter_condition, translate
from pydelta.spark.base.pyspark_compat import alias, refuse_geospatial_before_4_2, refuse_shredded_variants_before_4_1
from pydelta.spark.read import plan_pruning
from pydelta.spark.read.hidden_metadata import METADATA_COLUMN, METADATA_MARKER, hide_last_column, metadata_struct

if TYPE_CHECKING:
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
    from pyspark.sql.types import StructType as SparkStructType

FILE_COL = "__pydelta_file_path"
ROW_COL = "__pydelta_row_index"
_DV_KEY = "__pydelta_deleted_row_key"
_FILE_SIZE_COL = "__pydelta_file_size"
_FILE_MTIME_COL = "__pydelta_file_mtime"
_DV_KEY_MTIME = "__pydelta_deleted_row_mtime"
ROW_ID_COL = "__pydelta_row_id"  # stable row ID (row tracking)
ROW_VERSION_COL = "__pydelta_row_commit_version"  # stable row commit version (row tracking)
_PART_PREFIX = "__pydelta_part_"

def spark_file_uri(path: str) -> str:
    """The `_metadata.file_path` Spark reports for a local absolute `path` (java.net.URI quoting)."""
    return file_uri(path)


def spark_schema(schema: StructType) -> SparkStructType:
    """The Spark form of a Delta schema (geospatial columns need Spark 4.2: a clear error before)."""
    from pyspark.sql.types import StructType as SparkStructType

    refuse_geospatial_before_4_2(schema)
    return SparkStructType.fromJson(json.loads(schema.to_json()))


def reader_schema(schema: StructType) -> Any:
    """The Spark schema readers see: field metadata as delta-spark exposes it (comments,
    defaults), without Delta's internal keys (`remove_internal_metadata`)."""
    return spark_schema(remove_internal_metadata(schema))


def build_dataframe(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, *, with_file: bool = False,
    extra_fields: tuple[StructField, ...] = (), row_ids: bool = False, row_tracking_metadata: bool = False,
    read_options: Mapping[str, str] | None = None,
) -> DataFrame:
    """A DataFrame of exactly the rows of `files` (a subset of `snapshot.files()`).

    With `with_file`, each row also carries its file's URI (FILE_COL) and its row
    index in that file (ROW_COL), which DML uses to find the files it touches.
    `extra_fields` (pydelta StructFields) are columns the files hold beyond the table's
    (`_change_type` in change data files); they follow the table's columns.
    `row_ids` (a table with row tracking): each row also carries its stable row ID and row
    commit version (ROW_ID_COL, ROW_VERSION_COL): the materialized columns where a file has
    them, else the file's baseRowId + row index and defaultRowCommitVersion.
    `row_tracking_metadata` (user reads): on tables with row tracking enabled, the hidden
    `_metadata` column also holds `row_id`, `base_row_id`, `row_commit_version` and
    `default_row_commit_version`, as delta-spark's.
    `read_options`: options of Spark's Parquet scans beyond the table's own Hadoop options
    (its `hadoopConf`), which its snapshot's storage carries to every scan built here.
    The table's columns carry the field metadata delta-spark shows readers (comments, defaults),
    not Delta's internal keys (`remove_internal_metadata`): pydelta's own writers take the
    metadata they need from the log.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField

    from pydelta.spark.base.hadoop_storage import require_connector, table_hadoop_options

    require_connector(spark, snapshot.table_root)
    read_options = {**table_hadoop_options(snapshot.storage), **(read_options or {})}
    user_read = not (with_file or row_ids or extra_fields)
    hidden_metadata = row_tracking_metadata and user_read and files.num_rows > 0 and _tracks_rows(snapshot)
    row_ids = row_ids or hidden_metadata
    schema = snapshot.schema
    if extra_fields:
        schema = StructType(tuple(schema.fields) + tuple(extra_fields))
    logical = reader_schema(schema)
    if files.num_rows == 0:
        if with_file:
            logical = logical.add(StructField(FILE_COL, StringType())).add(StructField(ROW_COL, LongType()))
        if row_ids:
            logical = logical.add(StructField(ROW_ID_COL, LongType())).add(StructField(ROW_VERSION_COL, LongType()))
        if not user_read:
            return spark.createDataFrame([], logical)
        return _empty_read(spark, snapshot, logical, row_tracking_metadata)
    mode = column_mapping_mode(snapshot.configuration)
    partition_cols = snapshot.partition_columns
    data_schema = StructType(tuple(f for f in snapshot.schema.fields if f.name not in partition_cols))
    refuse_shredded_variants_before_4_1(snapshot.protocol, data_schema)
    # Without column mapping the scan's columns are the output's, so they get the exposed metadata.
    physical = remove_internal_metadata(data_schema) if mode == "none" else to_physical_schema(
        data_schema, mode, field_ids=mode == "id")
    read_schema = spark_schema(physical)
    for f in extra_fields:
        read_schema = read_schema.add(spark_schema(StructType((f,)))[f.name])
    materialized = _materialized_columns(snapshot) if row_ids else []
    for name in materialized:
        read_schema = read_schema.add(StructField(name, LongType()))
    paths = [snapshot.absolute_path(p) for p in files.column("path").to_pylist()]
    dvs = files.column("deletion_vector")
    has_dv = dvs.null_count < files.num_rows
    hive = bool(partition_cols) and mode == "none" and not extra_fields and _hive_layout(snapshot, files, paths)
    if hive:
        # Partition values from the directories (they equal the log's): Spark then prunes
        # partitions wherever the scan sits in a plan, dynamic partition pruning included.
        for name in partition_cols:
            read_schema = read_schema.add(logical[name])
    with_row = has_dv or with_file or row_ids
    scan = functools.partial(
        _scan_files, spark, snapshot, read_schema, base_path=snapshot.table_root if hive else None,
        read_options=read_options, with_path=bool(partition_cols and not hive) or with_row, with_row=with_row,
    )
    # Files without a deletion vector need no row filter: on a classic session they get a scan of
    # their own, so only the rows of files with one pay for the anti join (delta-spark filters in
    # its Parquet reader instead). A user read then carries Spark's `_metadata` as a hidden column,
    # since a union hides its children's.
    split = has_dv and dvs.null_count > 0 and not is_connect(spark)
    file_metadata = split and user_read
    if split:
        clean = dvs.is_null()
        is_clean = clean.to_pylist()
        clean_paths = [p for p, c in zip(paths, is_clean, strict=True) if c]
        dv_paths = [p for p, c in zip(paths, is_clean, strict=True) if not c]
        df = scan(files.filter(clean), clean_paths, file_metadata=file_metadata).union(
            scan(files.filter(pc.invert(clean)), dv_paths, file_metadata=file_metadata, dv=True))
    else:
        df = scan(files, paths, dv=has_dv)
    if partition_cols and not hive:
        df = _join_on_file(df, F.broadcast(_partition_map(spark, snapshot, files, paths, mode)), "inner")
    if row_ids:
        df = _join_on_file(df, F.broadcast(_row_tracking_map(spark, files, paths)), "inner")
        fresh_id = F.col(_BASE_ROW_ID) + F.col(ROW_COL)
        stable_id = F.coalesce(F.col(quote_identifier(materialized[0])), fresh_id) if materialized else fresh_id
        version = F.col(_DEFAULT_VERSION)
        stable_version = F.coalesce(F.col(quote_identifier(materialized[1])), version) if materialized else version
        df = df.withColumn(ROW_ID_COL, stable_id).withColumn(ROW_VERSION_COL, stable_version)
    if mode == "none" and not partition_cols and not has_dv and not with_file and not row_ids:
        return df  # already the logical columns, in order: no projection needed
    columns = []
    for field in schema.fields:
        spark_type = logical[field.name].dataType
        exposed = logical[field.name].metadata  # set explicitly: a cast or physical column has other metadata
        if field.name in partition_cols and hive:
            columns.append(alias(F.col(quote_identifier(field.name)), field.name, exposed, spark_type))
        elif field.name in partition_cols:
            # Like delta-spark: zone-less timestamp partition values are in the session time zone.
            part = F.col(f"{_PART_PREFIX}{partition_cols.index(field.name)}")
            columns.append(alias(part.cast(spark_type), field.name, exposed, spark_type))
        else:
            is_extra = field in extra_fields
            phys = physical_name(field) if mode != "none" and not is_extra else field.name
            col = F.col(quote_identifier(phys))
            if mode != "none" and not _is_primitive(spark_type):
                col = col.cast(spark_type)  # nested physical names -> logical (by position)
            columns.append(alias(col, field.name, exposed, spark_type))
    if with_file:
        columns += [F.col(FILE_COL), F.col(ROW_COL)]
    if file_metadata and not hidden_metadata:
        columns.append(F.col(METADATA_COLUMN).alias(METADATA_COLUMN, metadata=METADATA_MARKER))
        return hide_last_column(df.select(*columns))
    if hidden_metadata:
        columns.append(metadata_struct({  # delta-spark's field order, all four non-nullable
            "row_id": _not_null(ROW_ID_COL), "base_row_id": _not_null(_BASE_ROW_ID),
            "default_row_commit_version": _not_null(_DEFAULT_VERSION),
            "row_commit_version": _not_null(ROW_VERSION_COL),
        }))
        return hide_last_column(df.select(*columns))
    if row_ids:
        columns += [F.col(ROW_ID_COL), F.col(ROW_VERSION_COL)]
    return df.select(*columns)


def _empty_read(spark: SparkSession, snapshot: Snapshot, logical: Any, row_tracking_metadata: bool) -> DataFrame:
    """A user read of a version without files: no rows, the table's columns as declared (NOT NULL
    kept, as delta-spark shows them), and the hidden `_metadata` column selectable as on any read
    (delta-spark returns no rows with those columns), with row tracking's fields where the table
    tracks rows. Over Connect (no JVM to hide a column with) it is Spark's Parquet source over no
    file, whose own `_metadata` resolves; that source makes every column nullable, so a table with
    a NOT NULL column keeps its declared schema there instead, without `_metadata`."""
    if is_connect(spark):
        if all(field.nullable for field in logical.fields):
            return read_parquet_files(spark, logical, [])
        return spark.createDataFrame([], logical)
    import datetime

    from pyspark.sql import functions as F

    never_long = F.lit(0).cast("long")  # no row ever reaches these: literals, non-null as Spark's fields
    fields = {name: F.lit("") for name in ("file_path", "file_name")}
    fields.update({name: never_long for name in ("file_size", "file_block_start", "file_block_length")})
    fields["file_modification_time"] = F.lit(datetime.datetime(1970, 1, 1))
    fields["row_index"] = never_long
    if row_tracking_metadata and _tracks_rows(snapshot):
        fields.update({name: never_long for name in (
            "row_id", "base_row_id", "default_row_commit_version", "row_commit_version")})
    metadata = F.struct(*[column.alias(name) for name, column in fields.items()])
    df = spark.createDataFrame([], logical)
    columns = [F.col(quote_identifier(name)) for name in logical.fieldNames()]
    return hide_last_column(df.select(*columns, metadata.alias(METADATA_COLUMN, metadata=METADATA_MARKER)))


def _tracks_rows(snapshot: Snapshot) -> bool:
    """Row tracking enabled (delta-spark's rule for exposing `_metadata.row_id`)."""
    from pydelta.txn.protocol_upgrade import all_features
    from pydelta.txn.row_tracking import enabled

    return "rowTracking" in all_features(snapshot.protocol) and enabled(snapshot.metadata)


_BASE_ROW_ID = "__pydelta_base_row_id"
_DEFAULT_VERSION = "__pydelta_default_row_commit_version"


def _not_null(name: str) -> Any:
    """Column `name` typed non-nullable, as delta-spark types `_metadata.row_id` and friends.

    A row-tracking table gives every file a baseRowId, so the value is never null; if it
    were, the read fails rather than yield a null row ID. Coalesce is non-nullable when
    its last argument is, and evaluates its arguments in order: `raise_error` runs (and
    throws) before the literal is ever reached.
    """
    from pyspark.sql import functions as F

    return F.coalesce(F.col(name), F.raise_error(F.lit(f"row tracking: no {name} for a row")).cast("long"),
                      F.lit(0).cast("long"))


def _materialized_columns(snapshot: Snapshot) -> list[str]:
    """The materialized row ID and row commit version column names, or [] when not set."""
    from pydelta.txn.row_tracking import COMMIT_VERSION_COLUMN_KEY, ROW_ID_COLUMN_KEY

    conf = snapshot.configuration
    names = [conf.get(ROW_ID_COLUMN_KEY), conf.get(COMMIT_VERSION_COLUMN_KEY)]
    return [n for n in names if n] if all(names) else []


def _row_tracking_map(spark: SparkSession, files: pa.Table, paths: list[str]) -> Any:
    """FILE_COL -> the file's baseRowId and defaultRowCommitVersion."""
    return _arrow_df(spark, pa.table({
        FILE_COL: pa.array([spark_file_uri(p) for p in paths], pa.string()),
        _BASE_ROW_ID: files.column("base_row_id").cast(pa.int64()),
        _DEFAULT_VERSION: files.column("default_row_commit_version").cast(pa.int64()),
    }))


# Partition column types Spark's file sources parse from directory names exactly as a cast of the string.
_HIVE_TYPES = ("string", "long", "integer", "short", "byte", "boolean", "date", "timestamp", "timestamp_ntz",
               "float", "double")


def _hive_layout(snapshot: Snapshot, files: pa.Table, paths: list[str]) -> bool:
    """Whether every file lies in `col=value/...` directories holding exactly its logged partition values.

    Then Spark can take the values from the paths (and prune on them); otherwise (column
    mapping's random prefixes, files moved by hand, odd types) the values come from the log.
    """
    from pydelta.protocol.partition_values import HIVE_DEFAULT_PARTITION, unescape_path_name

    cols = snapshot.partition_columns
    types = {f.name: f.type for f in snapshot.schema.fields}
    for c in cols:
        if not (isinstance(types[c], DecimalType) or getattr(types[c], "name", None) in _HIVE_TYPES):
            return False
    prefix = snapshot.table_root.rstrip("/") + "/"
    for path, values in zip(paths, files.column("partition_values").to_pylist(), strict=True):
        if not path.startswith(prefix):
            return False
        dirs = path[len(prefix):].split("/")[:-1]
        if len(dirs) != len(cols):
            return False
        logged = dict(values or [])
        for seg, col in zip(dirs, cols, strict=True):
            key, sep, raw = seg.partition("=")
            if not sep or unescape_path_name(key) != col:
                return False
            value = None if raw == HIVE_DEFAULT_PARTITION else unescape_path_name(raw)
            if value != (logged.get(col) or None):
                return False
    return True


def _scan_files(
    spark: SparkSession, snapshot: Snapshot, read_schema: Any, files: pa.Table, paths: list[str], *,
    base_path: str | None, read_options: Mapping[str, str] | None, with_path: bool, with_row: bool,
    dv: bool = False, file_metadata: bool = False,
) -> DataFrame:
    """Spark's Parquet scan of `files` (registered for skipping), with the per-row columns asked for:
    FILE_COL, ROW_COL, Spark's `_metadata` struct as an ordinary last column, and with `dv` the rows
    the files' deletion vectors delete dropped."""
    from pyspark.sql import functions as F

    df = read_parquet_files(spark, read_schema, paths, base_path=base_path, options=read_options)
    plan_pruning.register(df, snapshot, files, read_schema, base_path, read_options)
    extra = []
    if with_path:
        extra.append(F.col("_metadata.file_path").alias(FILE_COL))
    if with_row:
        extra.append(F.col("_metadata.row_index").alias(ROW_COL))
    if dv:
        extra.append(F.col("_metadata.file_size").alias(_FILE_SIZE_COL))
        extra.append(F.col("_metadata.file_modification_time").alias(_FILE_MTIME_COL))
    if file_metadata:
        extra.append(metadata_struct({}))
    if not extra:
        return df
    df = df.select("*", *extra)
    if dv:
        df = _drop_deleted_rows(spark, snapshot, files, paths, df).drop(_FILE_SIZE_COL, _FILE_MTIME_COL)
    return df


def _is_primitive(spark_type: Any) -> bool:
    from pyspark.sql.types import ArrayType, MapType
    from pyspark.sql.types import StructType as SparkStructType

    return not isinstance(spark_type, (ArrayType, MapType, SparkStructType))


def _partition_map(spark: SparkSession, snapshot: Snapshot, files: pa.Table, paths: list[str], mode: str) -> Any:
    schema = snapshot.schema
    pv = files.column("partition_values").combine_chunks()
    columns = {FILE_COL: pa.array([spark_file_uri(p) for p in paths], pa.string())}
    for i, name in enumerate(snapshot.partition_columns):
        field = next(f for f in schema.fields if f.name == name)
        key = physical_name(field) if mode != "none" else name
        values = pc.map_lookup(pv, pa.scalar(key), "first")
        if values.null_count == len(values) and mode != "none":
            values = pc.map_lookup(pv, pa.scalar(name), "first")
        values = pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)
        columns[f"{_PART_PREFIX}{i}"] = values
    return _arrow_df(spark, pa.table(columns))


def _arrow_df(spark: SparkSession, table: pa.Table) -> Any:
    """A small DataFrame from an Arrow table, with all-null string columns kept as strings."""
    from pyspark.sql.types import LongType, StringType, StructField
    from pyspark.sql.types import StructType as SparkStructType

    fields = [
        StructField(f.name, LongType() if pa.types.is_integer(f.type) else StringType(), True) for f in table.schema
    ]
    return spark.createDataFrame(table, schema=SparkStructType(fields))


def row_key_shift(files: pa.Table) -> int | None:
    """The bit shift that makes `file_size + (row_index << shift)` injective over `files`' rows:
    every file smaller than 2**shift, every row index below 2**(63 - shift); None if impossible."""
    sizes, records = files.column("size"), files.column("num_records")
    if files.num_rows == 0 or records.null_count:
        return None
    shift = max(1, int(pc.max(sizes).as_py() or 0).bit_length())
    if shift >= 63 or int(pc.max(records).as_py() or 0) >= 1 << (63 - shift):
        return None
    return shift


def _shared_sizes(files: pa.Table) -> set[int]:
    """Sizes of files with a deletion vector that another file read has too."""
    counts = {v["values"]: v["counts"] for v in pc.value_counts(files.column("size")).to_pylist()}
    dv_sizes = pc.filter(files.column("size"), files.column("deletion_vector").is_valid()).to_pylist()
    return {size for size in dv_sizes if counts[size] > 1}


def _local_mtimes_us(paths: list[str]) -> list[int] | None:
    """Modification times (microseconds, as Spark's `_metadata.file_modification_time`) of local files."""
    import os

    try:
        return [os.stat(p).st_mtime_ns // 1_000_000 * 1000 for p in paths]
    except (OSError, ValueError):
        return None


def _drop_deleted_rows(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, paths: list[str], df: DataFrame
) -> DataFrame:
    """`df` without the rows the files' deletion vectors delete.

    A broadcast anti join on one long per row, file size + (row index << shift), which Spark
    hashes far faster than (file path, row index). Files of equal size are told apart by
    modification time (local files whose times differ), else the join is on the file path.
    """
    from pyspark.sql import functions as F

    from pydelta.log.deletion_vector_files import read_deleted_rows
    from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor

    shift = row_key_shift(files)
    mtime_of: dict[str, int] = {}
    if shift is not None and (shared := _shared_sizes(files)):
        twins = [(path, size) for path, size in zip(paths, files.column("size").to_pylist(), strict=True)
                 if size in shared]
        mtimes = _local_mtimes_us([p for p, _ in twins])
        if mtimes is None or len(set(zip((s for _, s in twins), mtimes, strict=True))) < len(twins):
            shift = None
        else:
            mtime_of = {p: m for (p, _), m in zip(twins, mtimes, strict=True)}
    uris, rows, keys, key_mtimes = [], [], [], []
    for path, size, dv in zip(paths, files.column("size").to_pylist(), files.column("deletion_vector").to_pylist(),
                              strict=True):
        if not dv:
            continue
        deleted = read_deleted_rows(DeletionVectorDescriptor.from_dict(dv), snapshot.table_root,
                                    snapshot.storage).astype("int64")
        if shift is not None:
            keys.append(pa.array((deleted << shift) + size, pa.int64()))
            key_mtimes.append(pa.nulls(len(deleted), pa.int64()) if path not in mtime_of
                              else pa.array([mtime_of[path]] * len(deleted), pa.int64()))
        else:
            uris.append(pa.array([spark_file_uri(path)] * len(deleted), pa.string()))
            rows.append(pa.array(deleted, pa.int64()))
    if shift is not None:
        if not keys:
            return df
        table = {_DV_KEY: pa.concat_arrays(keys)}
        if mtime_of:
            table[_DV_KEY_MTIME] = pa.concat_arrays(key_mtimes)
        build = _arrow_df(spark, pa.table(table))
        if len(table[_DV_KEY]) <= 20_000_000:
            build = F.broadcast(build)
        condition = (F.shiftleft(F.col(ROW_COL), shift) + F.col(_FILE_SIZE_COL)) == build[_DV_KEY]
        if mtime_of:
            condition = condition & (build[_DV_KEY_MTIME].isNull()
                                     | (F.unix_micros(F.col(_FILE_MTIME_COL)) == build[_DV_KEY_MTIME]))
        return plan_pruning.unpruned(df, "join", build, condition, "left_anti")
    if not rows:
        return df
    deleted_df = _arrow_df(
        spark, pa.table({FILE_COL: pa.concat_arrays(uris), ROW_COL: pa.concat_arrays(rows)})
    )
    total = sum(len(r) for r in rows)
    if total <= 2_000_000:
        deleted_df = F.broadcast(deleted_df)
    return _join_on_file(df, deleted_df, "left_anti", with_row=True)


def _join_on_file(df: DataFrame, small: Any, how: str, with_row: bool = False) -> DataFrame:
    """`df` joined with a small per-file (or per-row) frame keyed by FILE_COL (and ROW_COL).

    An explicit condition, not a USING join: the Project a USING join adds hides the scan's
    metadata columns, and `_metadata.file_path` / `row_index` must stay selectable on Delta reads.
    """
    from pyspark.sql import functions as F

    keys = [FILE_COL, ROW_COL] if with_row else [FILE_COL]
    renamed = small.select(*[F.col(c).alias(f"__r{c}" if c in keys else c) for c in small.columns])
    condition = None
    for k in keys:
        part = df[k] == renamed[f"__r{k}"]
        condition = part if condition is None else condition & part
    out = plan_pruning.unpruned(df, "join", renamed, condition, how)
    return out.drop(*[f"__r{k}" for k in keys]) if how != "left_anti" else out


# ---- a DataFrame that prunes files when filtered ------------------------------------


def _dataframe_class() -> type:
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    class DeltaScanDataFrame(ClassicDataFrame):
        """The DataFrame of a Delta read. `filter`/`where` on it also skip files.

        Filters are translated to pydelta predicates and evaluated over the
        log's partition values and min/max/nullCount stats; the scan is then
        rebuilt on the files that may match, and the filter applied as usual.
        """

        _pydelta_snapshot: Snapshot
        _pydelta_files: pa.Table

        def filter(self, condition: Any) -> Any:  # noqa: A003
            from pyspark.sql import Column

            out = super().filter(condition)
            jcond = (condition if isinstance(condition, str)
                     else condition._jc if isinstance(condition, Column) else None)
            if jcond is None:
                return out
            snapshot, files = self._pydelta_snapshot, self._pydelta_files
            predicate = translate(filter_condition(self._jdf, jcond))
            pruned = FileSkipper.for_metadata(files, snapshot.metadata).prune(predicate)
            if pruned.num_rows < files.num_rows:
                # Same plan and attributes (so `df.col` references stay valid), fewer files.
                out = plan_pruning.restrict(out, snapshot, pruned)
            return wrap(out, snapshot, pruned)

        def toArrow(self) -> pa.Table:  # noqa: N802 (PySpark's name)
            return to_arrow(self)

    return DeltaScanDataFrame


def to_arrow(df: ClassicDataFrame) -> pa.Table:
    """`df.toArrow()`, also for tables with null variants (e.g. `array<variant>` with null elements).

    PySpark's toArrow casts the collected batches to its Arrow schema even where the types
    already match; pyarrow then "views" the data and refuses the null children Spark writes
    under a null variant (a struct of non-nullable `value`/`metadata`): ArrowInvalid "nulls
    in input cannot be viewed as non-nullable" (apache/arrow GH-37072). Here only columns
    whose type differs are cast.
    """
    from pydelta.spark.base.pyspark_compat import collect_arrow_batches, spark_to_arrow_schema

    large = str(df.sparkSession.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")).lower() == "true"
    schema = spark_to_arrow_schema(df.schema, duplicated_field_names_error=True, large_types=large)
    batches = collect_arrow_batches(df, large)
    table = pa.Table.from_batches(batches)
    columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(table.columns, schema, strict=True)]
    return pa.Table.from_arrays(columns, schema=schema)


_CLASS: type | None = None


def wrap(df: DataFrame, snapshot: Snapshot, files: pa.Table) -> DataFrame:
    global _CLASS
    if _CLASS is None:
        _CLASS = _dataframe_class()
    out = _CLASS(df._jdf, df.sparkSession)
    out._pydelta_snapshot = snapshot
    out._pydelta_files = files
    return cast("DataFrame", out)  # a DeltaScanDataFrame, a class made at run time


def _user_read(spark: SparkSession, snapshot: Snapshot, files: pa.Table,
               read_options: Mapping[str, str] | None = None) -> DataFrame:
    return build_dataframe(spark, snapshot, files, row_tracking_metadata=True, read_options=read_options)


def read_snapshot(spark: SparkSession, snapshot: Snapshot, read_options: Mapping[str, str] | None = None) -> DataFrame:
    """The DataFrame of a snapshot: what `spark.read.format("delta").load()` returns.

    `read_options` go to every Parquet scan of it, skipping's rebuilt scans included.
    """
    snapshot.protocol.check_readable()
    files = snapshot.files()
    df = _user_read(spark, snapshot, files, read_options)
    if is_connect(spark):
        from pydelta.spark.read.connect.scan import wrap_scan

        return wrap_scan(df, snapshot, files, functools.partial(_user_read, read_options=read_options))
    return wrap(df, snapshot, files)
