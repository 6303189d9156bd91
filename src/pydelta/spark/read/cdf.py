"""Batch change data feed reads: `option("readChangeFeed", "true")` and `table_changes`.

pydelta.log.changes decides which files hold the changes and what their rows mean;
here Spark's native Parquet scan reads them (through `read.build_dataframe`, so
column mapping, partition values and deletion vectors are handled as in plain reads)
and each row gets `_change_type`, `_commit_version` and `_commit_timestamp` from a
small broadcast map keyed by file. Output columns: the table's (schema of the snapshot
read; on column-mapped tables the end version's, refusing a range with a rename or drop, as
delta-spark's defaults), then the three CDF columns.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pyarrow as pa

from pydelta.log.changes import (
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    ChangeFile,
    plan_changes,
    resolve_range,
)
from pydelta.log.snapshot import Snapshot, files_table, load_snapshot
from pydelta.protocol.schema import STRING, StructField, StructType, column_mapping_mode, quote_identifier
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.read.scan import FILE_COL, ROW_COL, _arrow_df, build_dataframe, reader_schema, spark_file_uri

_VERSION = "__pydelta_cdf_version"
_TS = "__pydelta_cdf_ts"
_TYPE = "__pydelta_cdf_type"
_CHANGE_TYPE_FIELD = StructField(CHANGE_TYPE, STRING, True)


def cdf_schema(schema: StructType) -> Any:
    """The Spark schema of a change feed: the table's columns, then the three CDF columns."""
    from pyspark.sql.types import LongType, StringType, TimestampType

    out = reader_schema(schema)  # as reads show it (read.build_dataframe)
    return out.add(CHANGE_TYPE, StringType()).add(COMMIT_VERSION, LongType()).add(COMMIT_TIMESTAMP, TimestampType())


def read_change_feed(spark: SparkSession, snapshot: Snapshot, options: dict[str, Any]) -> DataFrame:
    """The changes of the versions `options` name (startingVersion/Timestamp, endingVersion/Timestamp)."""
    snapshot.protocol.check_readable()
    allow_out_of_range = (
        str(spark.conf.get("spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled", "false")).lower()
        == "true"
    )
    change_range = resolve_range(snapshot, _session_timestamps(spark, options), allow_out_of_range=allow_out_of_range)
    read_snapshot = snapshot
    if (column_mapping_mode(snapshot.configuration) != "none"
            and change_range.start <= change_range.end < snapshot.version):
        # delta-spark's default for column-mapped tables: the schema of the end version.
        read_snapshot = load_snapshot(snapshot.table_root, version=change_range.end, storage=snapshot.storage)
    check = None if _unsafe_schema_reads(spark) else (read_snapshot.metadata, read_snapshot.version)
    return changes_dataframe(spark, read_snapshot, plan_changes(snapshot, change_range, check))


def _session_timestamps(spark: SparkSession, options: dict[str, Any]) -> dict[str, Any]:
    """`options` with startingTimestamp/endingTimestamp as epoch ms, a zone-less one read in the
    session time zone (as delta-spark reads them), not the Python process's."""
    from pydelta.spark.read.time_travel import timestamp_ms

    return {key: timestamp_ms(spark, value) if key.lower() in ("startingtimestamp", "endingtimestamp")
            and value is not None else value for key, value in options.items()}


def _unsafe_schema_reads(spark: SparkSession) -> bool:
    key = "spark.databricks.delta.changeDataFeed.unsafeBatchReadOnIncompatibleSchemaChanges.enabled"
    return str(spark.conf.get(key, "false")).lower() == "true"


def changes_dataframe(spark: SparkSession, snapshot: Snapshot, files: list[ChangeFile]) -> DataFrame:
    """A DataFrame of the rows of `files`, with the CDF columns, read with the schema of `snapshot`."""
    schema = snapshot.schema
    frames = [_read_round(spark, snapshot, group) for group in _rounds(files)]
    if not frames:
        return spark.createDataFrame([], cdf_schema(schema))
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def _rounds(files: list[ChangeFile]) -> list[list[ChangeFile]]:
    """Groups to scan together: one kind of file each (change files / whole data files / selected
    rows), and each path at most once per group, so a path-keyed map tells every row its version."""
    groups: dict[tuple[str, int], list[ChangeFile]] = defaultdict(list)
    seen: dict[tuple[str, str], int] = defaultdict(int)
    for f in files:
        kind = "cdc" if f.change_type is None else ("rows" if f.only_rows is not None else "data")
        n = seen[(kind, f.path)]
        seen[(kind, f.path)] += 1
        groups[(kind, n)].append(f)
    return [groups[k] for k in sorted(groups)]


def _action(f: ChangeFile) -> dict[str, Any]:
    """The file's action fields the read path uses (size unknown: None, not 0)."""
    return {"path": f.path, "partitionValues": f.partition_values, "size": f.size or None,
            "deletionVector": f.deletion_vector, "stats": f.stats}


def _selected_rows(f: ChangeFile) -> np.ndarray:
    """The row indexes a file of a selected-rows round keeps (`_rounds` puts only such files in one)."""
    if f.only_rows is None:
        raise AssertionError(f"change file {f.path} has no selected rows but was grouped with files that do")
    return f.only_rows


def _read_round(spark: SparkSession, snapshot: Snapshot, files: list[ChangeFile]) -> DataFrame:
    from pyspark.sql import functions as F

    is_cdc = files[0].change_type is None
    table = files_table([_action(f) for f in files])
    extra = (_CHANGE_TYPE_FIELD,) if is_cdc else ()
    df = build_dataframe(spark, snapshot, table, with_file=True, extra_fields=extra)
    uris = [spark_file_uri(snapshot.absolute_path(f.path)) for f in files]
    file_map = pa.table(
        {
            FILE_COL: pa.array(uris, pa.string()),
            _VERSION: pa.array([f.version for f in files], pa.int64()),
            _TS: pa.array([f.timestamp for f in files], pa.int64()),
            _TYPE: pa.array([f.change_type for f in files], pa.string()),
        }
    )
    df = df.join(F.broadcast(_arrow_df(spark, file_map)), FILE_COL, "inner")
    if files[0].only_rows is not None:
        only_rows = [_selected_rows(f) for f in files]
        selected = pa.table(
            {
                FILE_COL: pa.concat_arrays(
                    [pa.array([u] * len(rows), pa.string()) for u, rows in zip(uris, only_rows, strict=True)]),
                ROW_COL: pa.concat_arrays([pa.array(rows, pa.int64()) for rows in only_rows]),
            }
        )
        df = df.join(F.broadcast(_arrow_df(spark, selected)), [FILE_COL, ROW_COL], "inner")
    columns = [F.col(quote_identifier(f.name)) for f in snapshot.schema.fields]
    change_type = F.col(CHANGE_TYPE) if is_cdc else F.col(_TYPE)
    columns += [
        change_type.alias(CHANGE_TYPE),
        F.col(_VERSION).alias(COMMIT_VERSION),
        F.timestamp_millis(F.col(_TS)).alias(COMMIT_TIMESTAMP),
    ]
    return df.select(*columns)
