"""The table's files in a DML command: candidates by skipping, scans that know their file,
copy-on-write rewrites, and change data files (delta.enableChangeDataFeed)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pydelta.errors import (
    DeltaError,
)
from pydelta.log.data_skipping import FileSkipper
from pydelta.log.snapshot import Snapshot
from pydelta.protocol import properties as P
from pydelta.protocol.action_types import Action, as_add
from pydelta.protocol.actions import Metadata
from pydelta.protocol.predicates import Predicate
from pydelta.protocol.schema import StructType, quote_identifier
from pydelta.spark.base._typing import Column, DataFrame, SparkSession
from pydelta.spark.base.conf import session_time_zone
from pydelta.spark.base.hadoop_storage import table_hadoop_options
from pydelta.spark.read.scan import FILE_COL, ROW_ID_COL, ROW_VERSION_COL, build_dataframe, spark_file_uri
from pydelta.spark.write.conform import conform
from pydelta.spark.write.constraints import constraint_checks, violations_as_errors, with_checks
from pydelta.spark.write.data_files import file_rows_to_adds, remove_action, write_data_files
from pydelta.txn.row_tracking import (
    materialized_names,
)
from pydelta.txn.transaction import OptimisticTransaction

# ---- the table's files ------------------------------------------------------------------------


def file_uris(snapshot: Snapshot, files: pa.Table) -> list[str]:
    """What Spark reports as `_metadata.file_path` for each file of `files`."""
    return [spark_file_uri(snapshot.absolute_path(p)) for p in files.column("path").to_pylist()]


def select_files(snapshot: Snapshot, files: pa.Table, uris: Iterable[str]) -> pa.Table:
    """The rows of `files` whose Spark file URI is in `uris`."""
    wanted = set(uris)
    mask = [u in wanted for u in file_uris(snapshot, files)]
    found = sum(mask)
    if found != len(wanted):
        missing = sorted(wanted - set(file_uris(snapshot, files)))[:3]
        raise DeltaError(f"internal error: Spark reported files that are not in the snapshot: {missing}")
    return files.filter(pa.array(mask, pa.bool_()))


def candidate_files(snapshot: Snapshot, files: pa.Table, txn: OptimisticTransaction, predicate: Predicate) -> pa.Table:
    """The files that may hold rows matching `predicate` (by stats), recorded as read by `txn`."""
    candidates = FileSkipper.for_metadata(files, snapshot.metadata).prune(predicate)
    txn.read_predicate(predicate)
    txn.read_files(candidates.column("path").to_pylist())
    return candidates


def files_with_matches(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, txn: OptimisticTransaction, predicate: Predicate,
    condition: Any, alias: str | None,
) -> tuple[pa.Table, dict[str, int]]:
    """Candidate files (pruned by stats, recorded as read) and, per file URI, its rows matching `condition`.

    Only file URIs and counts come back to the driver, never rows.
    """
    candidates = candidate_files(snapshot, files, txn, predicate)
    counts: dict[str, int] = {}
    if candidates.num_rows:
        df = scan(spark, snapshot, candidates, with_file=True)
        if alias:
            df = df.alias(alias)
        rows = df.filter(condition).groupBy(FILE_COL).count().collect()
        counts = {r[0]: int(r[1]) for r in rows}
    return candidates, counts


def scan(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, *, with_file: bool = False, row_ids: bool = False
) -> DataFrame:
    """The rows of `files` (logical columns), plus FILE_COL / ROW_COL when `with_file`, plus the
    stable row ID / commit version (ROW_ID_COL / ROW_VERSION_COL) with `row_ids`."""
    return build_dataframe(spark, snapshot, files, with_file=with_file, row_ids=row_ids)


def logical_record_count(files: pa.Table) -> int | None:
    """Rows in `files` per their stats (minus DV-deleted rows), or None when a file has no stats."""
    if files.num_rows == 0:
        return 0
    counts = files.column("num_records")
    if counts.null_count:
        return None
    total = pc.sum(counts).as_py() or 0
    dvs = files.column("deletion_vector")
    if dvs.null_count < files.num_rows:
        for dv in dvs.to_pylist():
            if dv:
                total -= int(dv.get("cardinality") or 0)
    return int(total)


def total_bytes(files: pa.Table) -> int:
    if files.num_rows == 0:
        return 0
    return int(pc.sum(files.column("size")).as_py() or 0)


def count_dvs(files: pa.Table) -> int:
    if files.num_rows == 0:
        return 0
    return int(files.num_rows - files.column("deletion_vector").null_count)


def add_rows(adds: Iterable[Mapping[str, Any]]) -> int:
    total = 0
    for a in adds:
        stats = a.get("stats")
        if stats:
            total += int(json.loads(stats).get("numRecords", 0))
    return total


def remove_actions(files: pa.Table) -> list[Action]:
    now = int(time.time() * 1000)
    return [{"remove": remove_action(a, data_change=True, timestamp_ms=now)} for a in file_rows_to_adds(files)]


# ---- writing ---------------------------------------------------------------------------------------


def write_rows(spark: SparkSession, df: DataFrame, snapshot: Snapshot, metadata: Metadata, *,
               repartition: bool = False, row_ids: bool = False) -> list[Action]:
    """Write `df` (columns by the table's logical names) as new data files of `snapshot`'s table,
    constraints checked inline.

    `row_ids`: `df` also has ROW_ID_COL / ROW_VERSION_COL (see `materializes_row_ids`), written
    into the table's materialized row-tracking columns so rows keep their stable IDs.
    """
    from pyspark.sql import functions as F

    hidden: list[str] = []
    if row_ids:
        hidden = materialized_names(metadata)
        df = df.withColumnRenamed(ROW_ID_COL, hidden[0]).withColumnRenamed(ROW_VERSION_COL, hidden[1])
    data = conform(df, metadata.schema, keep=hidden)
    data = with_checks(data, constraint_checks(metadata.schema, metadata.configuration))
    if repartition and metadata.partition_columns:
        data = data.repartition(*[F.col(quote_identifier(c)) for c in metadata.partition_columns])
    with violations_as_errors():
        adds = write_data_files(
            data, snapshot.table_root, metadata, data_change=True,
            session_time_zone=session_time_zone(spark), hidden=hidden,
            hadoop_options=table_hadoop_options(snapshot.storage),
            protocol=snapshot.protocol,
        )
    return [as_add(a) for a in adds]


# ---- change data files ------------------------------------------------------------------------------

CDF_KEY = "delta.enableChangeDataFeed"
CHANGE_TYPE = "_change_type"


def cdf_enabled(metadata: Metadata) -> bool:
    """Whether writers must produce change data files (delta.enableChangeDataFeed)."""
    return P.ENABLE_CHANGE_DATA_FEED.get(metadata.configuration)


def cdc_schema(schema: StructType) -> StructType:
    from pydelta.protocol.schema import STRING, StructField

    return StructType((*schema.fields, StructField(CHANGE_TYPE, STRING, True)))


def with_change_type(df: DataFrame, schema: StructType, change_type: str | Column) -> DataFrame:
    """`df` shaped to the table schema (generated columns computed), plus `_change_type`.

    `change_type` is a string or a Column evaluated on `df` (e.g. from an action column).
    """
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    value = change_type if isinstance(change_type, Column) else F.lit(change_type)
    return conform(df.withColumn(CHANGE_TYPE, value), cdc_schema(schema))


def write_cdc(spark: SparkSession, df: DataFrame, snapshot: Snapshot, metadata: Metadata) -> list[Action]:
    """Write change rows (table columns + `_change_type`) under `_change_data/`; returns `cdc` actions.

    Files are partitioned like the table (PROTOCOL.md: `_change_data/part=value/...`),
    with physical column names under column mapping, as delta-spark writes them.
    """
    import os
    from dataclasses import replace

    from pyspark.sql import functions as F

    full = cdc_schema(metadata.schema)
    cdc_metadata = replace(metadata, schema_string=full.to_json())
    data = df.select(*[F.col(quote_identifier(f.name)) for f in full.fields])
    written = write_data_files(
        data, os.path.join(snapshot.table_root, "_change_data"), cdc_metadata, data_change=False,
        session_time_zone=session_time_zone(spark), passthrough=(CHANGE_TYPE,),
        hadoop_options=table_hadoop_options(snapshot.storage),
    )
    return [
        {"cdc": {"path": "_change_data/" + a["path"], "partitionValues": a["partitionValues"], "size": a["size"],
                 "dataChange": False}}
        for a in written
    ]
