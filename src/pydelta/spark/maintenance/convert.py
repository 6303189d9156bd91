"""CONVERT TO DELTA for a directory of Parquet files (delta-spark's ConvertToDeltaCommand).

The Parquet files under the directory (recursively; hidden `_`/`.` names skipped, except
partition directories `col=value`) become the add actions of version 0. The schema comes
from the files' footers (Spark's own schema when the file carries it, else the Parquet
schema), merged over all files, made nullable, followed by the partition columns of
`partitionSchema`. Each file gets statistics from its footer. Partition values are taken
from the directory names, checked against their declared types.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pydelta.errors import DeltaAnalysisError, DeltaIllegalArgumentError, DeltaNotImplementedError, SchemaMismatchError
from pydelta.log.storage import to_local_path
from pydelta.protocol.partition_values import (
    HIVE_DEFAULT_PARTITION,
    deserialize_partition_value,
    to_uri_path,
    unescape_path_name,
)
from pydelta.protocol.schema import StructField, StructType, from_arrow_schema, parse_schema
from pydelta.protocol.schema_evolution import as_nullable, merge_schema
from pydelta.spark.maintenance._conf import conf_bool
from pydelta.txn.commit_info import Operation

SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"
STATS_COLLECT_CONF = "spark.databricks.delta.stats.collect"
IGNORE_CAST_FAILURE_CONF = "spark.databricks.delta.convert.partitionValues.ignoreCastFailure"
_IDENTIFIER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*`((?:[^`]|``)*)`\s*$")


def parse_identifier(identifier: str) -> tuple[str, str]:
    """(format, path) of "parquet.`/path`", "delta.`/path`" or a plain path."""
    if not isinstance(identifier, str) or not identifier.strip():
        raise DeltaIllegalArgumentError(f"invalid table identifier {identifier!r}")
    m = _IDENTIFIER.match(identifier)
    if m:
        return m.group(1).lower(), m.group(2).replace("``", "`")
    text = identifier.strip()
    if text.startswith(("/", "file:", ".")) or os.sep in text or os.path.exists(text):
        return "parquet", text
    raise DeltaNotImplementedError(
        f"converting the catalog table {identifier} is not implemented in pydelta; "
        "pass parquet.`/path/to/table` or the directory path"
    )


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
    out = []
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
            f"{len(parts)} partition column(s): {_fmt_cols([k for k, _ in parts])} from parsing the file name: {rel_path}"
        )
    out: dict[str, str | None] = {}
    for (name, raw), f in zip(parts, expected):
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


def convert_to_delta(spark: Any, identifier: str, partitionSchema: Any = None, *,
                     collect_stats: bool = True) -> Any:
    """CONVERT TO DELTA parquet.`path` [PARTITIONED BY (...)]; returns the DeltaTable.

    `collect_stats` False is SQL's NO STATISTICS: the add actions carry no statistics (as
    with spark.databricks.delta.stats.collect=false), so no footer is read for them.
    """
    from pydelta.log.snapshot import load_snapshot
    from pydelta.protocol.file_stats import collect_stats_for_files
    from pydelta.spark.session import enable
    from pydelta.spark.write import engine_info, new_table_metadata
    from pydelta.tables import DeltaTable
    from pydelta.txn.transaction import OptimisticTransaction

    enable(spark)
    fmt, raw_path = parse_identifier(identifier)
    root = to_local_path(raw_path).rstrip("/") or "/"
    if fmt == "delta":
        return DeltaTable.forPath(spark, root)
    if fmt != "parquet":
        raise DeltaAnalysisError(f"CONVERT TO DELTA only supports parquet tables, but you are trying to convert a {fmt} source: {identifier}")
    if not os.path.isdir(root):
        raise DeltaAnalysisError(f"Path does not exist: {raw_path}")
    if os.path.isdir(os.path.join(root, "_delta_log")):
        from pydelta.errors import DeltaTableNotFoundError

        try:
            load_snapshot(root)
            return DeltaTable.forPath(spark, root)  # already a Delta table: nothing to do
        except DeltaTableNotFoundError:
            pass
    part_schema = parse_partition_schema(partitionSchema)
    timezone = spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC"
    ignore_cast = conf_bool(spark, IGNORE_CAST_FAILURE_CONF, False)

    paths = list_data_files(root)
    if not paths:
        raise DeltaAnalysisError(f"Unable to infer schema for CONVERT TO DELTA: no Parquet files found in {raw_path}")
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
    partition_fields: list[StructField] = list(part_schema.fields) if part_schema is not None else []
    part_lower = {f.name.lower() for f in partition_fields}
    data_fields = tuple(f for f in data_schema.fields if f.name.lower() not in part_lower)
    data_schema = StructType(data_fields)
    full_schema = as_nullable(StructType(data_fields + tuple(partition_fields)))
    metadata = new_table_metadata(full_schema, [f.name for f in partition_fields], {})

    collect = collect_stats and conf_bool(spark, STATS_COLLECT_CONF, True)
    stats: list[tuple[int, str] | None]
    if collect:
        stats = list(collect_stats_for_files(paths, data_schema))
    else:
        stats = [None] * len(paths)

    adds = []
    for path, rel, pv, st in zip(paths, rels, values, stats):
        info = os.stat(path)
        add: dict[str, Any] = {
            "path": to_uri_path(rel.replace(os.sep, "/")),
            "partitionValues": pv,
            "size": info.st_size,
            "modificationTime": int(info.st_mtime * 1000),
            "dataChange": True,
        }
        if st is not None:
            add["stats"] = st[1]
        adds.append({"add": add})

    txn = OptimisticTransaction(root, None, engine_info=engine_info(spark))
    txn.update_metadata(metadata)
    operation = Operation.convert(len(adds), [f.name for f in partition_fields], collect, source_format="parquet")
    txn.commit(adds, operation, operation_metrics={"numConvertedFiles": len(adds)})
    return DeltaTable.forPath(spark, root)
