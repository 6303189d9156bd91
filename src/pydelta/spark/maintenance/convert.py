"""CONVERT TO DELTA for a directory of Parquet files (delta-spark's ConvertToDeltaCommand).

The Parquet files under the directory (recursively; hidden `_`/`.` names skipped, except
partition directories `col=value`) become the add actions of version 0. The schema comes
from the files' footers (Spark's own schema when the file carries it, else the Parquet
schema), merged over all files, made nullable, followed by the partition columns of
`partitionSchema`. Each file gets statistics from its footer. Partition values are taken
from the directory names, checked against their declared types.

A Parquet table of Spark's catalog (`db.tbl`) converts its location the same way, with
the partition columns and properties of its catalog entry; the entry then says provider
delta (`convert_catalog_table`).
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pydelta.errors import DeltaAnalysisError, DeltaIllegalArgumentError, DeltaNotImplementedError, SchemaMismatchError
from pydelta.log.storage import to_local_path
from pydelta.protocol import geospatial
from pydelta.protocol.action_types import Action, AddFile
from pydelta.protocol.partition_values import (
    HIVE_DEFAULT_PARTITION,
    deserialize_partition_value,
    to_uri_path,
    unescape_path_name,
)
from pydelta.protocol.schema import StructField, StructType, from_arrow_schema, parse_schema
from pydelta.protocol.schema_evolution import as_nullable, merge_schema
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.conf import conf_bool, session_time_zone
from pydelta.spark.base.engine import table_snapshot, try_table_snapshot
from pydelta.spark.base.jvm import jvm
from pydelta.txn.commit_info import Operation

SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"
STATS_COLLECT_CONF = "spark.databricks.delta.stats.collect"
IGNORE_CAST_FAILURE_CONF = "spark.databricks.delta.convert.partitionValues.ignoreCastFailure"
_IDENTIFIER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*`((?:[^`]|``)*)`\s*$")


def parse_identifier(identifier: str) -> tuple[str | None, str]:
    """(format, path) of "parquet.`/path`", "delta.`/path`" or a plain path; (None, name) for a table name."""
    if not isinstance(identifier, str) or not identifier.strip():
        raise DeltaIllegalArgumentError(f"invalid table identifier {identifier!r}")
    m = _IDENTIFIER.match(identifier)
    if m:
        return m.group(1).lower(), m.group(2).replace("``", "`")
    text = identifier.strip()
    if text.startswith(("/", "file:", ".")) or os.sep in text or os.path.exists(text):
        return "parquet", text
    return None, text


def parse_partition_schema(partition_schema: Any) -> StructType | None:
    """A DDL string ("a INT, b STRING"), a pyspark StructType or a pydelta StructType."""
    if partition_schema is None:
        return None
    if isinstance(partition_schema, StructType):
        return partition_schema
    from pyspark.sql.types import StructType as SparkStruct
    from pyspark.sql.types import _parse_datatype_string

    if isinstance(partition_schema, str):
        try:
            partition_schema = _parse_datatype_string(partition_schema)
        except Exception as e:
            raise DeltaIllegalArgumentError(f"invalid partition schema {partition_schema!r}: {e}") from None
        if not isinstance(partition_schema, SparkStruct):
            raise DeltaIllegalArgumentError("the partition schema must be a list of columns (a struct)")
    if isinstance(partition_schema, SparkStruct):
        return parse_schema(partition_schema.json())
    raise DeltaIllegalArgumentError(f"partitionSchema must be a DDL string or a StructType, got {partition_schema!r}")


def _hidden_dir(name: str) -> bool:
    return name.startswith(("_", ".")) and "=" not in name


def _hidden_file(name: str) -> bool:
    return name.startswith(("_", "."))


def list_data_files(root: str) -> list[str]:
    """Every non-hidden file under `root`, sorted (the files CONVERT adds)."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _hidden_dir(d))
        out.extend(os.path.join(dirpath, f) for f in filenames if not _hidden_file(f))
    return sorted(out)


def _partition_parts(rel_dir: str) -> list[tuple[str, str | None]]:
    parts = []
    for seg in [s for s in rel_dir.split(os.sep) if s]:
        if "=" not in seg:
            continue
        k, v = seg.split("=", 1)
        parts.append((unescape_path_name(k), None if v == HIVE_DEFAULT_PARTITION else unescape_path_name(v)))
    return parts


def _fmt_cols(names: list[str]) -> str:
    return "[" + ", ".join(f"`{n}`" for n in names) + "]"


def partition_values_of(
    rel_path: str, partition_schema: StructType | None, *, timezone: str, ignore_cast_failure: bool
) -> dict[str, str | None]:
    """The partition values of one file from its directory names (raw strings, validated)."""
    parts = _partition_parts(os.path.dirname(rel_path))
    expected = list(partition_schema.fields) if partition_schema is not None else []
    if len(parts) != len(expected):
        raise DeltaAnalysisError(
            f"Expecting {len(expected)} partition column(s): {_fmt_cols([f.name for f in expected])}, but found "
            f"{len(parts)} partition column(s): {_fmt_cols([k for k, _ in parts])} from parsing the file name: "
            f"{rel_path}"
        )
    out: dict[str, str | None] = {}
    for (name, raw), f in zip(parts, expected, strict=True):
        if name.lower() != f.name.lower():
            raise DeltaAnalysisError(
                f"Expecting partition column `{f.name}`, but found partition column `{name}` from parsing the "
                f"file name: {rel_path}"
            )
        value = raw
        if raw is not None:
            try:
                deserialize_partition_value(raw, f.type, timezone=timezone)
            except Exception:
                if not ignore_cast_failure:
                    raise DeltaAnalysisError(
                        f"Failed to cast value `{raw}` to `{getattr(f.type, 'name', f.type)}` for partition column "
                        f"`{f.name}`"
                    ) from None
                value = None
        out[f.name] = value
    return out


def _fix_int96(schema: pa.Schema, md: pq.FileMetaData) -> pa.Schema:
    """INT96 columns are Spark timestamps (Arrow reads them as zone-less nanoseconds)."""
    int96 = {md.schema.column(i).path for i in range(md.num_columns) if md.schema.column(i).physical_type == "INT96"}
    if not int96:
        return schema
    fields = [
        pa.field(f.name, pa.timestamp("us", tz="UTC"), f.nullable) if f.name in int96 else f
        for f in schema
    ]
    return pa.schema(fields)


def file_schema(path: str) -> StructType:
    """A Parquet file's schema as Spark would read it."""
    md = pq.read_metadata(path)
    kv = md.metadata or {}
    raw = kv.get(SPARK_SCHEMA_KEY)
    if raw:
        try:
            return parse_schema(raw.decode("utf-8"))
        except Exception:
            pass
    arrow = md.schema.to_arrow_schema()
    return from_arrow_schema(_fix_int96(arrow, md))


def merge_file_schemas(schemas: list[StructType]) -> StructType:
    merged: StructType | None = None
    for s in schemas:
        if merged is None:
            merged = s
            continue
        try:
            merged = merge_schema(merged, s, allow_new_columns=True)
        except SchemaMismatchError:
            try:
                merged = merge_schema(s, merged, allow_new_columns=True)
            except SchemaMismatchError as e:
                raise DeltaAnalysisError(f"Failed to merge the schemas of the Parquet files: {e}") from None
    return merged if merged is not None else StructType(())


@dataclass(frozen=True)
class Converted:
    """The table CONVERT TO DELTA made (or found already converted): its location, and its catalog
    name when it was named by one and was already a Delta table."""

    path: str
    name: str | None = None


def convert_to_delta(spark: SparkSession, identifier: str, partitionSchema: Any = None, *,
                     collect_stats: bool = True) -> Any:
    """CONVERT TO DELTA parquet.`path` | db.tbl [PARTITIONED BY (...)]; returns the converted table.

    `collect_stats` False is SQL's NO STATISTICS: the add actions carry no statistics (as
    with spark.databricks.delta.stats.collect=false), so no footer is read for them.
    """
    fmt, raw_path = parse_identifier(identifier)
    if fmt is None:
        return convert_catalog_table(spark, raw_path, partitionSchema, collect_stats=collect_stats)
    root = to_local_path(raw_path).rstrip("/") or "/"
    if fmt == "delta":
        return Converted(root)
    if fmt != "parquet":
        raise DeltaAnalysisError(f"CONVERT TO DELTA only supports parquet tables, but you are trying to convert a "
                                 f"{fmt} source: {identifier}")
    if not os.path.isdir(root):
        raise DeltaAnalysisError(f"Path does not exist: {raw_path}")
    if try_table_snapshot(spark, root) is None:
        part_schema = parse_partition_schema(partitionSchema)
        part_names = [f.name for f in part_schema.fields] if part_schema is not None else []
        _convert_directory(spark, root, raw_path, part_schema, {}, collect_stats=collect_stats,
                           operation_partitions=part_names, catalog_table=None)
    return Converted(root)  # an existing Delta table is left as it is


def _convert_directory(spark: SparkSession, root: str, display: str, part_schema: StructType | None,
                       configuration: dict[str, str], *, collect_stats: bool, operation_partitions: list[str],
                       catalog_table: str | None) -> None:
    """Commit version 0 of a Delta log over the Parquet files under `root`.

    `operation_partitions` is what commitInfo records as partitionedBy: the user's
    PARTITIONED BY columns, which for a catalog table differ from `part_schema`.
    """
    from pydelta.protocol.file_stats import collect_stats_for_files
    from pydelta.protocol.schema import column_mapping_mode
    from pydelta.spark.base.transactions import open_transaction
    from pydelta.spark.write.dataframe import new_table_metadata
    from pydelta.spark.write.options import session_conf, with_table_defaults

    configuration = with_table_defaults(configuration, session_conf(spark))  # a new table: session defaults
    if column_mapping_mode(configuration) != "none":  # the files have neither field ids nor physical names
        raise DeltaAnalysisError(
            "[DELTA_CONVERSION_UNSUPPORTED_COLUMN_MAPPING] CONVERT TO DELTA cannot convert to a table with column "
            f"mapping mode {column_mapping_mode(configuration)}; remove delta.columnMapping.mode from the table "
            "properties"
        )
    timezone = session_time_zone(spark)
    ignore_cast = conf_bool(spark, IGNORE_CAST_FAILURE_CONF, False)

    paths = list_data_files(root)
    if not paths:
        raise DeltaAnalysisError(f"[DELTA_EMPTY_DIRECTORY] No file found in the directory: {display} "
                                 "(CONVERT TO DELTA found no Parquet files to infer the schema from)")
    rels = [os.path.relpath(p, root) for p in paths]
    values = [partition_values_of(r, part_schema, timezone=timezone, ignore_cast_failure=ignore_cast) for r in rels]

    workers = min(8, len(paths))
    try:
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                schemas = list(pool.map(file_schema, paths))
        else:
            schemas = [file_schema(p) for p in paths]
    except (OSError, pa.ArrowException) as e:
        raise DeltaAnalysisError(f"CONVERT TO DELTA: cannot read a Parquet footer: {e}") from None
    data_schema = as_nullable(merge_file_schemas(schemas))
    geospatial.fail_if_geospatial(data_schema, "CONVERT TO DELTA")
    partition_fields: list[StructField] = list(part_schema.fields) if part_schema is not None else []
    part_lower = {f.name.lower() for f in partition_fields}
    data_fields = tuple(f for f in data_schema.fields if f.name.lower() not in part_lower)
    data_schema = StructType(data_fields)
    full_schema = as_nullable(StructType(data_fields + tuple(partition_fields)))
    metadata = new_table_metadata(full_schema, [f.name for f in partition_fields], configuration)

    collect = collect_stats and conf_bool(spark, STATS_COLLECT_CONF, True)
    if not collect and _wants_row_tracking(configuration):  # row IDs are assigned from numRecords
        raise DeltaAnalysisError(
            "[DELTA_CONVERT_TO_DELTA_ROW_TRACKING_WITHOUT_STATS] Cannot enable row tracking without collecting "
            "statistics. Convert with statistics (drop NO STATISTICS, or set spark.databricks.delta.stats.collect "
            "to true), or do not enable row tracking (delta.enableRowTracking / "
            "spark.databricks.delta.properties.defaults.enableRowTracking).")
    stats: list[tuple[int, str] | None] = (
        list(collect_stats_for_files(paths, data_schema)) if collect else [None] * len(paths))

    adds: list[Action] = []
    for path, rel, pv, st in zip(paths, rels, values, stats, strict=True):
        info = os.stat(path)
        add: AddFile = {
            "path": to_uri_path(rel.replace(os.sep, "/")),
            "partitionValues": pv,
            "size": info.st_size,
            "modificationTime": info.st_mtime_ns // 1_000_000,
            "dataChange": True,
        }
        if st is not None:
            add["stats"] = st[1]
        adds.append({"add": add})

    txn = open_transaction(spark, None, root)
    txn.update_metadata(metadata)
    operation = Operation.convert(len(adds), operation_partitions, collect, catalog_table=catalog_table,
                                  source_format="parquet")
    txn.commit(adds, operation, operation_metrics={"numConvertedFiles": len(adds)})


def _wants_row_tracking(configuration: dict[str, str]) -> bool:
    lowered = {k.lower(): str(v).strip().lower() for k, v in configuration.items()}
    return lowered.get("delta.enablerowtracking") == "true" or lowered.get("delta.feature.rowtracking") in (
        "supported", "enabled")


# ---- catalog tables ------------------------------------------------------------------

PARQUET_HIVE_SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
METADATA_CHECK_CONF = "spark.databricks.delta.convert.metadataCheck.enabled"


def _not_a_view(name: str) -> DeltaAnalysisError:
    return DeltaAnalysisError(
        "[DELTA_OPERATION_NOT_ALLOWED_DETAIL] Operation not allowed: `Converting a view to a Delta table` is not "
        f"supported for Delta tables: {name}"
    )


def _catalog_table(spark: SparkSession, name: str) -> Any:
    """Spark's CatalogTable of `name` (a py4j object), or None when the catalog has no such table."""
    from pydelta.spark.base.catalog import is_temp_view, table_metadata

    if is_temp_view(spark, name):
        raise _not_a_view(name)
    return table_metadata(spark, name)


def _fmt_schema(schema: StructType) -> str:
    return ", ".join(f"{f.name} {getattr(f.type, 'name', f.type)}" for f in schema.fields) or "(none)"


def _check_user_partitions(display: str, catalog_parts: StructType, user_parts: StructType | None) -> None:
    """delta-spark refuses a PARTITIONED BY that differs from the catalog's partition columns."""
    if user_parts is None:
        return

    def key(s: StructType) -> list[tuple[str, Any]]:
        return [(f.name.lower(), f.type) for f in s.fields]

    if key(user_parts) != key(catalog_parts):
        raise DeltaAnalysisError(
            "[DELTA_UNEXPECTED_PARTITION_SCHEMA_FROM_USER] CONVERT TO DELTA was called with a partition schema "
            f"different from the partition schema of the catalog table {display}; leave PARTITIONED BY out so that "
            f"the catalog's is used. Catalog partition schema: {_fmt_schema(catalog_parts)}; provided partition "
            f"schema: {_fmt_schema(user_parts)}"
        )


def convert_catalog_table(
    spark: SparkSession, name: str, partitionSchema: Any = None, *, collect_stats: bool = True
) -> Any:
    """CONVERT TO DELTA of a Parquet table in Spark's catalog (delta-spark's ConvertToDeltaCommand on a V1Table).

    The table's location gets a Delta log whose partition columns come from the catalog and
    whose configuration is the catalog's table properties (minus Hive's
    transient_lastDdlTime). Only after that commit does the catalog entry say provider
    delta, so a failed conversion leaves the entry as it was; a log left without its
    catalog change (e.g. the metastore failed) is completed by converting again.
    """
    from pydelta.spark.base.catalog import delta_location

    meta = _catalog_table(spark, name)
    if meta is None:
        location = delta_location(spark, name, None)  # a Delta directory at the default location, unregistered
        if location is not None:
            return Converted(location)
        from pydelta.errors import DeltaTableNotFoundError

        raise DeltaTableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] The table or view {name} cannot be found.")
    display = meta.identifier().toString()  # `spark_catalog`.`db`.`tbl`, as delta-spark's commitInfo says
    if meta.tableType().name() == "VIEW":
        raise _not_a_view(display)
    provider = (meta.provider().get() if meta.provider().isDefined() else "").lower()
    if provider == "delta":
        # a no-op, as in delta-spark
        return Converted(to_local_path(meta.location().toString()).rstrip("/") or "/", name)
    serde = meta.storage().serde().get() if meta.storage().serde().isDefined() else None
    if provider != "parquet" and not (provider == "hive" and serde == PARQUET_HIVE_SERDE):
        raise DeltaAnalysisError(f"[DELTA_CONVERT_NON_PARQUET_TABLE] CONVERT TO DELTA only supports parquet tables, "
                                 f"but you are trying to convert a {provider or 'unknown'} source: {display}")
    catalog_parts = parse_schema(meta.partitionSchema().json())
    user_parts = parse_partition_schema(partitionSchema)
    _check_user_partitions(display, catalog_parts, user_parts)
    root = to_local_path(meta.location().toString()).rstrip("/") or "/"
    props = _scala_props(meta.properties())
    props.pop("transient_lastDdlTime", None)  # Hive's, not the table's
    user_names = [f.name for f in user_parts.fields] if user_parts is not None else []

    snapshot = try_table_snapshot(spark, root)
    if snapshot is None:
        if not os.path.isdir(root):
            raise DeltaAnalysisError(f"Path does not exist: {root} (the location of {display})")
        _convert_directory(spark, root, root, catalog_parts if catalog_parts.fields else None, props,
                           collect_stats=collect_stats, operation_partitions=user_names, catalog_table=display)
    else:
        _merge_catalog_properties(spark, snapshot, props, user_names, display)

    _mark_as_delta(spark, meta, table_snapshot(spark, root).metadata.schema_string)
    return Converted(root)


def _scala_props(scala_map: Any) -> dict[str, str]:
    from pydelta.spark.base.jplan import scala_map as to_dict

    return {str(k): str(v) for k, v in to_dict(scala_map).items()}


def _merge_catalog_properties(spark: SparkSession, snapshot: Any, props: dict[str, str], user_names: list[str],
                              display: str) -> None:
    """delta-spark's handleExistingTransactionLog: the catalog's properties join the log's configuration.

    A log whose configuration the catalog would change is refused while
    spark.databricks.delta.convert.metadataCheck.enabled is on (the default).
    """
    from dataclasses import replace

    from pydelta.spark.base.transactions import open_transaction

    config = dict(snapshot.metadata.configuration)
    merged = {**config, **props}
    if merged == config:
        return
    if config and conf_bool(spark, METADATA_CHECK_CONF, True):
        raise DeltaAnalysisError(
            "[DELTA_CONVERT_METASTORE_METADATA_MISMATCH] You are trying to convert a table which already has a delta "
            "log where the table properties in the catalog don't match the configuration in the delta log. Table "
            f"properties in catalog: {props} Delta configuration: {config} If you would like to merge the "
            f"configurations (update existing fields and insert new ones), set the SQL configuration "
            f"`{METADATA_CHECK_CONF}` to false."
        )
    txn = open_transaction(spark, snapshot)
    txn.update_metadata(replace(snapshot.metadata, configuration=merged))
    txn.commit([], Operation.convert(0, user_names, False, catalog_table=display, source_format="parquet"))


def _case_copy(obj: Any, **changes: Any) -> Any:
    """`obj.copy(field=value, ...)` of a Scala case class, through py4j (which has no named arguments)."""
    names = [obj.productElementName(i) for i in range(obj.productArity())]
    unknown = set(changes) - set(names)
    if unknown:
        raise DeltaNotImplementedError(
            f"this Spark's {obj.getClass().getSimpleName()} has no field(s) {sorted(unknown)}")
    args = [changes[n] if n in changes else obj.productElement(i) for i, n in enumerate(names)]
    return obj.copy(*args)


def _mark_as_delta(spark: SparkSession, meta: Any, schema_json: str) -> None:
    """Rewrite the catalog entry as a Delta table's (delta-spark's convertMetadata).

    One alterTable keeps the location, the table type and the files: DROP TABLE +
    CREATE would delete a MANAGED table's data, or turn it into an external one. The
    entry keeps no partition columns, properties or serde of its own, since the log now
    holds them; the schema is the Delta table's, informational as for pydelta's other
    Delta entries (the Hive metastore keeps its old copy anyway).
    """
    from pydelta.spark.base.catalog import alter_table_metadata

    jv = jvm(spark)
    none = jv.scala.Option.empty()
    storage = _case_copy(meta.storage(), inputFormat=none, outputFormat=none, serde=none)
    new_meta = _case_copy(
        meta,
        provider=jv.scala.Some("delta"),
        schema=spark._jsparkSession.parseDataType(schema_json),
        partitionColumnNames=jv.PythonUtils.toSeq(jv.java.util.ArrayList()),
        properties=jv.PythonUtils.toScalaMap(jv.java.util.HashMap()),
        storage=storage,
    )
    alter_table_metadata(spark, new_meta)
