"""CREATE [OR REPLACE] | REPLACE TABLE ... SHALLOW CLONE: delta-spark's CloneTableCommand from SQL.

The clone itself is the log core's (`txn.clone.clone_table`); this module resolves the SQL
statement's source (with time travel) and target (a catalog name or `delta.`/path``), applies
delta-spark's create / replace / IF NOT EXISTS rules, registers a new name in the catalog,
and returns delta-spark's one-row metrics result.
"""

from __future__ import annotations

import os

from pydelta.errors import DeltaAnalysisError, DeltaNotImplementedError, TableAlreadyExistsError
from pydelta.log.history import history
from pydelta.log.snapshot import Snapshot
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.engine import table_snapshot
from pydelta.spark.sql import utility_grammar as g

RESULT_SCHEMA = ("source_table_size LONG, source_num_of_files LONG, num_removed_files LONG, "
                 "num_copied_files LONG, removed_files_size LONG, copied_files_size LONG")
_METRICS = ("sourceTableSize", "sourceNumOfFiles", "numRemovedFiles", "numCopiedFiles",
            "removedFilesSize", "copiedFilesSize")


def run_clone(spark: SparkSession, stmt: g.Clone, source_path: str) -> DataFrame:
    """Clone the Delta table at `source_path` as `stmt` says; returns the metrics row."""
    if stmt.from_parquet:
        raise DeltaNotImplementedError("CLONE of a Parquet directory (parquet.`path`) is not supported in pydelta; "
                                       "CONVERT TO DELTA it, then clone the Delta table")
    source = _source_snapshot(spark, stmt, source_path)
    location, name, existing = _target(spark, stmt)
    if existing:
        if stmt.if_not_exists:
            return spark.createDataFrame([(0, 0, 0, 0, 0, 0)], RESULT_SCHEMA)
        if not stmt.replace:
            raise TableAlreadyExistsError(f"[DELTA_TABLE_ALREADY_EXISTS] Table {stmt.target.display()} already exists.")
    elif not stmt.create:
        raise DeltaAnalysisError(
            f"[DELTA_CANNOT_REPLACE_MISSING_TABLE] Table {stmt.target.display()} cannot be replaced as it does not "
            "exist. Use CREATE OR REPLACE TABLE to create the table.")
    from pydelta.spark.base.catalog import registered_while_created
    from pydelta.spark.base.transactions import engine_info
    from pydelta.spark.read.scan import reader_schema
    from pydelta.txn.clone import clone_table

    with registered_while_created(spark, None if existing else name, location, reader_schema(source.schema)):
        clone = clone_table(source, location, shallow=stmt.shallow, replace_existing=existing,
                            properties=dict(stmt.properties), source_name=stmt.source.display(),
                            engine_info=engine_info(spark))
    metrics = history(clone, 1)[0].commit_info.get("operationMetrics", {})
    return spark.createDataFrame([tuple(int(metrics.get(k, 0)) for k in _METRICS)], RESULT_SCHEMA)


def _source_snapshot(spark: SparkSession, stmt: g.Clone, path: str) -> Snapshot:
    if stmt.timestamp is not None:
        from pydelta.spark.read.time_travel import parse_timestamp

        ms = int(parse_timestamp(spark, stmt.timestamp).timestamp() * 1000)
        return table_snapshot(spark, path, timestamp=ms)
    return table_snapshot(spark, path, version=stmt.version)


def _target(spark: SparkSession, stmt: g.Clone) -> tuple[str, str | None, bool]:
    """(table root, catalog name or None for a path, whether a Delta table is there already)."""
    from pydelta.log.storage import to_local_path

    if stmt.target.path is not None:
        if stmt.location is not None:
            raise DeltaAnalysisError("CLONE into delta.`path` cannot also name a LOCATION")
        root = to_local_path(stmt.target.path)
        return root, None, _has_log(root)
    from pydelta.spark.base.catalog import default_location, delta_table_location

    name = ".".join(stmt.target.parts)
    current = delta_table_location(spark, name)
    if current is not None:
        if stmt.location is not None and os.path.realpath(to_local_path(stmt.location)) != os.path.realpath(current):
            raise DeltaAnalysisError(
                f"[DELTA_CREATE_TABLE_WITH_DIFFERENT_LOCATION] the table {name} exists at {current}; "
                f"the statement names LOCATION {stmt.location}")
        return current, name, True
    root = to_local_path(stmt.location) if stmt.location is not None else default_location(spark, name)
    return root, name, _has_log(root)


def _has_log(root: str) -> bool:
    log = os.path.join(root, "_delta_log")
    return os.path.isdir(log) and any(f.endswith(".json") for f in os.listdir(log))
