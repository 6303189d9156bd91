"""VACUUM: delete the files a Delta table no longer needs (delta-spark's VacuumCommand.gc).

The planning (what may be deleted) is pure and lives in `pydelta.log.vacuum_plan`; this
module adds the Spark-facing parts: session confs, the VACUUM START / VACUUM END commits
delta-spark records in the table history, and the DataFrames the API returns.
"""

from __future__ import annotations

import logging
from typing import Any

from pydelta.log.vacuum_plan import VacuumPlan, execute_plan, lite_plan, plan_vacuum
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.conf import conf_bool, conf_value
from pydelta.txn.commit_info import Operation

logger = logging.getLogger(__name__)

RETENTION_CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"
LOGGING_CONF = "spark.databricks.delta.vacuum.logging.enabled"


def _plan(table: Any, retention_hours: float | None, now_ms: int | None, lite: bool = False) -> VacuumPlan:
    snapshot = table.snapshot()
    # delta-spark: deltaLog.protocolWrite(snapshot.protocol). With vacuumProtocolCheck the
    # reader side is part of it; check_writable checks both.
    snapshot.protocol.check_writable()
    check = conf_bool(table._spark, RETENTION_CHECK_CONF, True)
    plan = plan_vacuum(snapshot, retention_hours, now_ms=now_ms, check_enabled=check)
    return lite_plan(snapshot, plan) if lite else plan


def vacuum_dry_run(table: Any, retentionHours: float | None = None, *, now_ms: int | None = None) -> list[str]:
    """Absolute local paths of the files (then empty directories) VACUUM would delete."""
    return _plan(table, retentionHours, now_ms).paths


def _should_log(spark: SparkSession) -> bool:
    # delta-spark logs by default on the file systems it knows, which includes `file`.
    raw = conf_value(spark, LOGGING_CONF)
    return True if raw is None else raw.strip().lower() == "true"


def _commit_empty(table: Any, operation: Operation, metrics: dict[str, int] | None) -> int:
    from pydelta.spark.base.transactions import open_transaction

    txn = open_transaction(table._spark, table.snapshot())
    return txn.commit([], operation, operation_metrics=metrics)


def _log_start(table: Any, plan: VacuumPlan, check_enabled: bool) -> None:
    params: dict[str, object] = {
        "retentionCheckEnabled": check_enabled,
        "defaultRetentionMillis": plan.configured_retention_ms,
    }
    if plan.specified_retention_ms is not None:
        params["specifiedRetentionMillis"] = plan.specified_retention_ms
    _commit_empty(
        table,
        Operation("VACUUM START", params),
        {"numFilesToDelete": len(plan.paths), "sizeOfDataToDelete": plan.size_to_delete},
    )


def _log_end(table: Any, deleted: int | None, dirs: int | None) -> None:
    if deleted is None:
        _commit_empty(table, Operation("VACUUM END", {"status": "FAILED"}), None)
    else:
        _commit_empty(
            table,
            Operation("VACUUM END", {"status": "COMPLETED"}),
            {"numDeletedFiles": deleted, "numVacuumedDirectories": dirs or 0},
        )


def vacuum(
    table: Any,
    retentionHours: float | None = None,
    *,
    dry_run: bool = False,
    now_ms: int | None = None,
    lite: bool = False,
) -> DataFrame:
    """Run VACUUM on `table`.

    Returns what delta-spark's Python `DeltaTable.vacuum` returns: an empty DataFrame. With
    `dry_run=True` nothing is deleted or committed and the DataFrame has one `path` column
    listing (as `file:` URIs, like delta-spark's VACUUM ... DRY RUN) what would be deleted.
    `now_ms` replaces the clock (tests).
    """
    from pyspark.sql.types import StringType, StructField, StructType

    spark: SparkSession = table._spark
    if not dry_run:  # a catalog-managed table: only where its catalog permits it (a dry run deletes nothing)
        from pydelta.txn.commit_checks import require_maintenance_permitted

        require_maintenance_permitted(table.snapshot(), "vacuum")
    plan = _plan(table, retentionHours, now_ms, lite)
    if dry_run:
        rows = [(f"file:{p}",) for p in plan.paths]
        return spark.createDataFrame(rows, StructType([StructField("path", StringType(), True)]))

    log = _should_log(spark)
    check_enabled = conf_bool(spark, RETENTION_CHECK_CONF, True)
    if log:
        _log_start(table, plan, check_enabled)
    try:
        deleted = execute_plan(plan)
    except BaseException:
        if log:
            try:
                _log_end(table, None, None)
            except Exception as e:  # the original error matters more
                logger.warning("could not record VACUUM END (FAILED) for %s: %s", table.path, e)
        raise
    if log:
        _log_end(table, deleted, plan.num_dirs)
    from pydelta.log.last_vacuum_info import write_watermark

    # delta-spark records it after every VACUUM that ran (a full one records none)
    write_watermark(table.snapshot().storage, plan.table_root, plan.lite_watermark if lite else None)
    logger.info(
        "Deleted %d files and directories in a total of %d directories.", deleted, plan.num_dirs
    )
    return spark.createDataFrame([], StructType([]))
