"""Writing data files with Spark and describing them as `add` actions.

Spark writes Parquet into a private staging directory of the table (so we
know exactly which files this write produced, even with concurrent
writers); pydelta then reads each footer for the statistics, moves the files
to their final, non-hidden place and builds the add actions. Nothing is
committed here: an aborted write leaves only orphan files, as in delta-spark.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from pydelta.errors import DeltaNotImplementedError, StorageAccessError
from pydelta.log.vacuum_plan import STAGING_DIR
from pydelta.protocol import iceberg_compat, variant_shredding
from pydelta.protocol.action_types import AddFile, DeletionVectorDict, RemoveFile
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.protocol.partition_values import (
    deserialize_partition_value,
    escape_path_name,
    parse_hive_partition_path,
    serialize_partition_value,
    to_uri_path,
)
from pydelta.protocol.schema import (
    StructType,
    column_mapping_mode,
    physical_name,
    quote_identifier,
    to_physical_schema,
)
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.conf import held_session_conf
from pydelta.spark.base.pyspark_compat import alias
from pydelta.spark.base.spark_errors import io_failure

if TYPE_CHECKING:
    from pydelta.spark.base.hadoop_storage import HadoopDataFiles


def physical_dataframe(df: DataFrame, schema: StructType, mode: str, passthrough: Sequence[str] = (),
                       hidden: Sequence[str] = ()) -> Any:
    """`df` (columns = the table's logical schema) with physical column names and field ids.

    Columns named in `passthrough` are not table columns (CDC's `_change_type`): like
    delta-spark, they keep their name and get no field id under column mapping. `hidden`
    columns of `df` follow the table's, as they are.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType as SparkStructType

    extra = [F.col(quote_identifier(h)) for h in hidden]
    if mode == "none":
        return df.select(*[F.col(quote_identifier(f.name)) for f in schema.fields], *extra)
    mapped = StructType(tuple(f for f in schema.fields if f.name not in passthrough))
    physical = iter(SparkStructType.fromJson(json.loads(to_physical_schema(mapped, mode).to_json())).fields)
    columns = []
    for field in schema.fields:
        col = F.col(quote_identifier(field.name))
        if field.name in passthrough:
            columns.append(col)
            continue
        spark_field = next(physical)
        if spark_field.dataType.typeName() in ("struct", "array", "map"):
            col = col.cast(spark_field.dataType)  # renames nested fields by position
        columns.append(alias(col, spark_field.name, spark_field.metadata, spark_field.dataType))
    return df.select(*columns, *extra)


VARIANT_INFER_SHREDDING = "spark.sql.variant.inferShreddingSchema"
FIELD_ID_WRITE = "spark.sql.parquet.fieldId.write.enabled"
OUTPUT_TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"


def _table_conf_int(metadata: Metadata, key: str, default: int) -> int:
    try:
        return int(metadata.configuration.get(key, default))
    except ValueError:
        return default


def _staged_files(staging: str) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(staging):
        dirnames[:] = [d for d in dirnames if not d.startswith(("_", "."))]
        for name in filenames:
            if name.startswith(("_", ".")) or not name.endswith(".parquet"):
                continue
            out.append(os.path.join(dirpath, name))
    return sorted(out)


def _write_parquet(spark: SparkSession, writer: Any, staging: str, table_root: str) -> None:
    """Spark's Parquet write of the staged files; a job failed by I/O (a full disk, a read-only or
    unreachable store) is a StorageAccessError naming the table and the cause, and commits nothing."""
    try:
        writer.parquet(staging)
    except Exception as e:
        cause = io_failure(e, spark)
        if cause is None:
            raise
        raise StorageAccessError(
            f"[TASK_WRITE_FAILED] writing the data files of {table_root} failed: {cause}") from None


def write_data_files(
    df: DataFrame,
    table_root: str,
    metadata: Metadata,
    *,
    data_change: bool = True,
    max_records_per_file: int | None = None,
    compression: str | None = None,
    session_time_zone: str = "UTC",
    passthrough: Sequence[str] = (),
    hidden: Sequence[str] = (),
    hadoop_options: Mapping[str, str] | None = None,
    protocol: Protocol | None = None,
) -> list[AddFile]:
    """Write `df` (logical table columns, in table order) as data files; return their add actions.

    `protocol` (the table's) decides what the files hold beyond the columns: with the
    materializePartitionColumns feature the partition columns are written into the files too,
    after the data columns, as well as into the directory names and the log; with variant
    shredding enabled Spark may shred variant columns (`variant_shredding.shreds_variants`).

    `hadoop_options`: the table's own Hadoop options (its `hadoopConf`), given to Spark's write
    as the relation's options and to the staging moves: the session's conf stays as it is.

    `passthrough`: columns that are not table columns, see `physical_dataframe`.
    `hidden`: columns of `df` after the table's written as they are and without statistics
    (row tracking's materialized row ID / row commit version columns).
    """
    schema = metadata.schema
    mode = column_mapping_mode(metadata.configuration)
    partition_cols = list(metadata.partition_columns)
    fields = {f.name: f for f in schema.fields}
    phys_of = {f.name: (physical_name(f) if mode != "none" else f.name) for f in schema.fields}
    pdf = physical_dataframe(df, schema, mode, passthrough, hidden)
    # Spark leaves partitionBy's columns out of the files: to keep them in, it partitions by
    # copies of them, whose directory names become the columns' own when the files are moved.
    by = [phys_of[c] for c in partition_cols]
    materialize_partition_columns = materializes_partitions(metadata, protocol)
    compat = iceberg_compat.enabled_version(metadata.configuration)
    if compat is not None and compat >= 2:
        _refuse_collections_under_compat_v2(schema, compat)
    if materialize_partition_columns and partition_cols:
        from pyspark.sql import functions as F

        copies = [f"{_MATERIALIZED_PREFIX}{i}" for i in range(len(by))]
        kept = [F.col(quote_identifier(c)) for c in pdf.columns if c not in by]
        pdf = pdf.select(*kept, *[F.col(quote_identifier(c)) for c in by],
                         *[F.col(quote_identifier(c)).alias(copy) for c, copy in zip(by, copies, strict=True)])
        directory_names = dict(zip(copies, by, strict=True))
        by = copies
    else:
        directory_names = {}

    files = _DataFiles.for_table(df.sparkSession, table_root, hadoop_options)
    staging = f"{table_root.rstrip('/')}/{STAGING_DIR}/{uuid.uuid4().hex}"
    holds = contextlib.ExitStack()
    # INT96 timestamps have no footer statistics; Delta stats need micros.
    holds.enter_context(held_session_conf(df.sparkSession, OUTPUT_TIMESTAMP_TYPE, "TIMESTAMP_MICROS"))
    # Field ids in the files under column mapping (PROTOCOL.md, "Writer Requirements for Column
    # Mapping"; Iceberg readers resolve columns by them), never without: a column can still carry
    # one from an id-mode read (Spark 4.0 keeps it through an alias), which such a table must not get.
    holds.enter_context(held_session_conf(df.sparkSession, FIELD_ID_WRITE, "false" if mode == "none" else "true"))
    try:
        writer = pdf.write.options(**(hadoop_options or {})).option("compression", compression or "snappy")
        # Spark 4.1+ shreds variant columns by default (inferShreddingSchema); a table that does
        # not enable variant shredding must get them unshredded (PROTOCOL.md, "Writer
        # Requirements for Variant Shredding"), so the option follows the table for this write,
        # as delta-spark's TransactionalWrite sets it. Spark 4.0 has no such option (and no
        # shredding): it ignores it and writes unshredded variants, which every table allows.
        shreds = variant_shredding.shreds_variants(metadata, protocol)
        writer = writer.option(VARIANT_INFER_SHREDDING, "true" if shreds else "false")
        if max_records_per_file:
            writer = writer.option("maxRecordsPerFile", int(max_records_per_file))
        if partition_cols:
            writer = writer.partitionBy(*by)
        _write_parquet(df.sparkSession, writer, staging, table_root)
        staged = files.list_staged(staging)
        data_schema = StructType(tuple(f for f in schema.fields if f.name not in partition_cols))
        stats = files.stats(
            staged,
            data_schema,
            column_mapping_mode=mode,
            num_indexed_cols=_table_conf_int(metadata, "delta.dataSkippingNumIndexedCols", 32),
            stats_columns=metadata.configuration.get("delta.dataSkippingStatsColumns"),
            string_prefix_length=_table_conf_int(metadata, "delta.dataSkippingStringPrefixLength", 32),
        )
        adds: list[AddFile] = []
        for path, (num_rows, stats_json) in zip(staged, stats, strict=True):
            if num_rows == 0:
                files.remove(path)
                continue
            rel = _directory_names_renamed(files.relative(path, staging), directory_names)
            raw = parse_hive_partition_path(posixpath.dirname(rel)) if partition_cols else {}
            partition_values = {}
            for col in partition_cols:
                value = raw.get(phys_of[col])
                typed = deserialize_partition_value(value, fields[col].type, timezone=session_time_zone)
                partition_values[phys_of[col]] = serialize_partition_value(typed, fields[col].type)
            size, mtime = files.move(path, f"{table_root.rstrip('/')}/{rel}")
            add: AddFile = {
                "path": to_uri_path(rel),
                "partitionValues": partition_values,
                "size": size,
                "modificationTime": mtime,
                "dataChange": data_change,
                "stats": stats_json,
            }
            if compat is not None and compat >= 2:  # as delta-spark tags the files it writes
                add["tags"] = {iceberg_compat.COMPAT_VERSION_TAG: str(compat)}
            adds.append(add)
        return adds
    finally:
        holds.close()
        files.remove_staging(staging, f"{table_root.rstrip('/')}/{STAGING_DIR}")


_MATERIALIZED_PREFIX = "pydelta-partition-copy-"  # no leading _ or .: listings skip those
MATERIALIZE_FEATURE = "materializePartitionColumns"


def materializes_partitions(metadata: Metadata, protocol: Protocol | None) -> bool:
    """Whether new data files of the table must hold its partition columns too: the
    materializePartitionColumns feature, or an IcebergCompat (Iceberg reads them from the files)."""
    return (protocol is not None and MATERIALIZE_FEATURE in protocol.effective_writer_features) or \
        iceberg_compat.enabled_version(metadata.configuration) is not None


def _refuse_collections_under_compat_v2(schema: StructType, version: int) -> None:
    """IcebergCompatV2 needs Parquet field ids on array elements and map keys/values, which
    Spark's Parquet writer cannot write (delta-spark plugs in its own Java write support)."""
    from pydelta.protocol.data_types import ArrayType, MapType, contains_type

    columns = [f.name for f in schema.fields if contains_type(f.type, lambda t: isinstance(t, (ArrayType, MapType)))]
    if columns:
        raise DeltaNotImplementedError(
            f"writing array or map columns ({', '.join(columns)}) of an IcebergCompatV{version} table is not "
            "implemented by pydelta: their element/key/value field ids cannot be written by Spark's Parquet writer")


def _directory_names_renamed(rel: str, names: Mapping[str, str]) -> str:
    """`rel` (a staged file's path) with each `copy=value` directory named `column=value`."""
    if not names:
        return rel
    parts = rel.split("/")
    for i, part in enumerate(parts[:-1]):
        key, sep, value = part.partition("=")
        if sep and key in names:
            parts[i] = f"{escape_path_name(names[key])}={value}"
    return "/".join(parts)


class _DataFiles:
    """Listing, footers and moves of a write's staged files: the local disk, or the session's
    Hadoop FileSystem for tables at `hdfs://`-like URIs (spark.hadoop_storage.HadoopDataFiles)."""

    @staticmethod
    def for_table(spark: SparkSession, table_root: str, hadoop_options: Mapping[str, str] | None = None) -> Any:
        from urllib.parse import urlparse

        from pydelta.log.storage import OBJECT_STORE_SCHEMES, is_remote_uri
        from pydelta.spark.base.connect_session import is_connect

        if not is_remote_uri(table_root):
            return _LocalFiles()
        if is_connect(spark) and urlparse(table_root).scheme.lower() in OBJECT_STORE_SCHEMES:
            return _ObjectStoreFiles(table_root)
        from pydelta.spark.base.hadoop_storage import HadoopDataFiles

        return _HadoopFiles(HadoopDataFiles(spark, hadoop_options))


class _LocalFiles:
    def list_staged(self, staging: str) -> list[str]:
        return _staged_files(staging)

    def stats(self, paths: list[str], data_schema: StructType, **kw: Any) -> list[tuple[int, str]]:
        from pydelta.protocol.file_stats import collect_stats_for_files

        return collect_stats_for_files(paths, data_schema, **kw)

    def relative(self, path: str, staging: str) -> str:
        return os.path.relpath(path, staging).replace(os.sep, "/")

    def move(self, source: str, dest: str) -> tuple[int, int]:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        os.rename(source, dest)
        st = os.stat(dest)
        return st.st_size, st.st_mtime_ns // 1_000_000

    def remove(self, path: str) -> None:
        os.unlink(path)

    def remove_staging(self, staging: str, staging_root: str) -> None:
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.rmdir(staging_root)


class _HadoopFiles:
    def __init__(self, files: HadoopDataFiles) -> None:
        self.files = files

    def list_staged(self, staging: str) -> list[Any]:
        return self.files.list_staged(staging)  # FileInfo: the footer reads need the sizes

    def stats(self, infos: list[Any], data_schema: StructType, **kw: Any) -> list[tuple[int, str]]:
        return [self.files.footer_stats(info, data_schema, **kw) for info in infos]

    def relative(self, info: Any, staging: str) -> str:
        return self.files.relative(info.path, staging)

    def move(self, info: Any, dest: str) -> tuple[int, int]:
        return self.files.move(info.path, dest)

    def remove(self, info: Any) -> None:
        self.files.remove(info.path)

    def remove_staging(self, staging: str, staging_root: str) -> None:
        self.files.remove(staging, recursive=True)
        # Like rmdir: only when empty (another write may be staging there right now); when not
        # empty the removal fails, and the directory is left for the last writer.
        with contextlib.suppress(Exception):
            self.files.remove(staging_root, recursive=False)


class _ObjectStoreFiles:
    """A write's staged files in an object store, through the log core's client: for a Spark
    Connect client, which has no JVM to reach them with the server's Hadoop FileSystem (its
    data files are the server's to write; listing, footers and moves are the client's)."""

    def __init__(self, table_root: str) -> None:
        from pydelta.log.object_store import ObjectStoreStorage
        from pydelta.log.storage import storage_for

        storage = storage_for(table_root)
        if not isinstance(storage, ObjectStoreStorage):  # a scheme registered to another client
            raise DeltaNotImplementedError(
                f"writing data files of {table_root} over Spark Connect needs pydelta's object-store client "
                f"for its scheme, not {type(storage).__name__}")
        self.storage = storage

    def list_staged(self, staging: str) -> list[Any]:
        from pydelta.spark.base.hadoop_storage import staged_data_files

        return staged_data_files(self.storage.list_recursive(staging), lambda path: _below(path, staging))

    def stats(self, infos: list[Any], data_schema: StructType, **kw: Any) -> list[tuple[int, str]]:
        import pyarrow.parquet as pq

        from pydelta.protocol.file_stats import collect_stats

        out = []
        for info in infos:
            with self.storage.open_input(info.path) as f:  # the footer's ranges only
                metadata = pq.read_metadata(f)
            out.append((metadata.num_rows, collect_stats(metadata, data_schema, **kw)))
        return out

    def relative(self, info: Any, staging: str) -> str:
        return _below(info.path, staging)

    def move(self, info: Any, dest: str) -> tuple[int, int]:
        self.storage.rename(info.path, dest)
        moved = self.storage.file_info(dest)
        return moved.size, moved.modification_time

    def remove(self, info: Any) -> None:
        self.storage.delete(info.path)

    def remove_staging(self, staging: str, staging_root: str) -> None:
        for info in list(self.storage.list_recursive(staging)):  # Spark's markers (_SUCCESS); no directories
            self.storage.delete(info.path)


def _below(path: str, directory: str) -> str:
    """`path` relative to `directory` (both URIs of one store, qualified alike)."""
    return path[len(directory.rstrip("/")) + 1:]


def remove_action(add: Mapping[str, Any], *, data_change: bool = True, timestamp_ms: int | None = None) -> RemoveFile:
    """The remove action that logically deletes file `add` (as delta-spark writes it)."""
    out: RemoveFile = {
        "path": add["path"],
        "deletionTimestamp": timestamp_ms if timestamp_ms is not None else int(time.time() * 1000),
        "dataChange": data_change,
        "extendedFileMetadata": True,
        "partitionValues": add.get("partitionValues") or add.get("partition_values") or {},
        "size": add.get("size"),
    }
    if add.get("tags") is not None:
        out["tags"] = add["tags"]
    dv = add.get("deletionVector") if add.get("deletionVector") is not None else add.get("deletion_vector")
    if dv is not None:
        out["deletionVector"] = dv
    if add.get("stats") is not None:
        out["stats"] = add["stats"]
    return out


def file_rows_to_adds(files: Any) -> list[AddFile]:
    """Snapshot.files() rows back to the add actions they replay from (for removes)."""
    out: list[AddFile] = []
    for row in files.to_pylist():
        pv = row.get("partition_values")
        out.append(
            {
                "path": row["path"],
                "partitionValues": dict(pv) if pv is not None else {},
                "size": row["size"],
                "modificationTime": row.get("modification_time") or 0,
                "dataChange": bool(row.get("data_change", True)),
                "tags": dict(row["tags"]) if row.get("tags") else None,
                "deletionVector": (cast("DeletionVectorDict", {k: v for k, v in row["deletion_vector"].items()
                                                                if v is not None})
                                   if row.get("deletion_vector") else None),
                "stats": row.get("stats"),
            }
        )
    return out
