"""Running Delta's own statements (DESCRIBE HISTORY, RESTORE, VACUUM, OPTIMIZE, ...): one runner each."""

from __future__ import annotations

from pydelta.errors import DeltaNotImplementedError, DeltaTableNotFoundError
from pydelta.spark.base import jplan
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.table_handle import TableHandle
from pydelta.spark.sql import utility_grammar as g
from pydelta.spark.sql.targets import DeltaTarget, resolve


def _target(spark: SparkSession, ref: g.TableRef) -> DeltaTarget:
    if ref.path is not None:
        from pydelta.log.storage import to_local_path

        return DeltaTarget(to_local_path(ref.path))
    target = resolve(spark, ref.parts)
    if target is None:
        raise DeltaTableNotFoundError(f"{ref.display()} is not a Delta table (or does not exist)")
    return target


def _table(spark: SparkSession, ref: g.TableRef) -> TableHandle:
    return TableHandle(spark, _target(spark, ref).path)


# ---- one runner per statement (spark/sql/statements.py pairs them with their parsers);
# each returns delta-spark's result DataFrame for the statement.

def run_describe_history(spark: SparkSession, stmt: g.DescribeHistory) -> DataFrame:
    from pydelta.spark.read.table_info import history_dataframe

    return history_dataframe(spark, _table(spark, stmt.table).snapshot(), stmt.limit)


def run_restore(spark: SparkSession, stmt: g.Restore) -> DataFrame:
    from pydelta.spark.maintenance.restore import restore

    table = _table(spark, stmt.table)
    if stmt.version is not None:
        return restore(table, version=stmt.version)
    return restore(table, timestamp=stmt.timestamp)


def run_optimize(spark: SparkSession, stmt: g.Optimize) -> DataFrame:
    from pydelta.spark.maintenance.optimize import DeltaOptimizeBuilder, optimize

    if stmt.full:
        return optimize(_table(spark, stmt.table), [stmt.where] if stmt.where else [], full=True)
    builder = DeltaOptimizeBuilder(_table(spark, stmt.table))
    if stmt.where:
        builder = builder.where(stmt.where)
    return builder.executeZOrderBy(*stmt.zorder_by) if stmt.zorder_by else builder.executeCompaction()


def run_reorg(spark: SparkSession, stmt: g.Reorg) -> DataFrame:
    from pydelta.spark.maintenance.optimize import DeltaOptimizeBuilder

    builder = DeltaOptimizeBuilder(_table(spark, stmt.table))
    return (builder.where(stmt.where) if stmt.where else builder).executePurge()


def run_cluster_by(spark: SparkSession, stmt: g.ClusterBy) -> DataFrame:
    from pydelta.spark.maintenance.clustering import alter_cluster_by

    alter_cluster_by(_table(spark, stmt.table), list(stmt.columns))
    return jplan.empty_result(spark)


def run_drop_feature(spark: SparkSession, stmt: g.DropFeature) -> DataFrame:
    from pydelta.spark.maintenance.drop_feature import drop_feature_support

    drop_feature_support(_table(spark, stmt.table), stmt.feature, stmt.truncate_history)
    return jplan.empty_result(spark)


def run_add_check_constraint(spark: SparkSession, stmt: g.AddCheckConstraint) -> DataFrame:
    from pydelta.spark.ddl.alter import add_constraint, unnamed_check_constraint

    target = _target(spark, stmt.table)
    if stmt.name is None:
        raise unnamed_check_constraint()
    add_constraint(spark, target.path, stmt.name, stmt.condition, display=target.display())
    return jplan.empty_result(spark)


def run_add_other_constraint(spark: SparkSession, stmt: g.AddOtherConstraint) -> DataFrame:
    from pydelta.spark.ddl.alter import unsupported_constraint

    raise unsupported_constraint(stmt.kind, _target(spark, stmt.table).display())


def run_drop_constraint(spark: SparkSession, stmt: g.DropConstraint) -> DataFrame:
    from pydelta.spark.ddl.alter import drop_constraint

    target = _target(spark, stmt.table)
    drop_constraint(spark, target.path, stmt.name, stmt.if_exists, display=target.display())
    return jplan.empty_result(spark)


def run_sync_identity(spark: SparkSession, stmt: g.SyncIdentity) -> DataFrame:
    from pydelta.spark.ddl.sync_identity import sync_identity

    target = _target(spark, stmt.table)
    sync_identity(spark, target.path, stmt.column, display=target.display())
    return jplan.empty_result(spark)


def run_generate(spark: SparkSession, stmt: g.Generate) -> DataFrame:
    from pydelta.spark.maintenance.manifest import generate

    generate(_table(spark, stmt.table), stmt.mode)
    return jplan.empty_result(spark)


def run_clone_statement(spark: SparkSession, stmt: g.Clone) -> DataFrame:
    from pydelta.spark.sql.clone import run_clone

    return run_clone(spark, stmt, "" if stmt.from_parquet else _target(spark, stmt.source).path)


def run_unsupported(spark: SparkSession, stmt: g.Unsupported) -> DataFrame:
    if stmt.table is not None:
        _target(spark, stmt.table)  # an unknown table is reported as such first
    raise DeltaNotImplementedError(f"{stmt.statement} is not implemented in pydelta yet")


def run_describe_detail(spark: SparkSession, stmt: g.DescribeDetail) -> DataFrame:
    from pyspark.sql import functions as F

    target = _target(spark, stmt.table)
    from pydelta.spark.read.table_info import detail_dataframe

    df = detail_dataframe(spark, _table(spark, stmt.table).snapshot())
    if target.name is not None:
        from pydelta.spark.base.catalog import lookup
        from pydelta.spark.base.unity_catalogs import unity_catalog_of

        entry = lookup(spark, target.name) if unity_catalog_of(spark, target.name) is None else None
        df = df.withColumn("name", F.lit(entry.name if entry else target.name))
    return df


def run_vacuum(spark: SparkSession, stmt: g.Vacuum) -> DataFrame:
    from pydelta.spark.maintenance.vacuum import vacuum

    table = _table(spark, stmt.table)
    if stmt.dry_run:
        return vacuum(table, stmt.retain_hours, dry_run=True, lite=stmt.lite)
    vacuum(table, stmt.retain_hours, lite=stmt.lite)
    return spark.createDataFrame([(f"file:{table.path}",)], "path STRING")


def run_convert(spark: SparkSession, stmt: g.ConvertToDelta) -> DataFrame:
    """CONVERT TO DELTA parquet.`/path` or a catalog table name [NO STATISTICS] [PARTITIONED BY (...)]."""
    from pydelta.spark.maintenance.convert import convert_catalog_table, convert_to_delta

    collect = not stmt.no_statistics
    if stmt.table.path is None:
        convert_catalog_table(spark, stmt.table.display(), stmt.partition_schema, collect_stats=collect)
        return jplan.empty_result(spark)
    if stmt.source_format not in (None, "parquet"):
        raise DeltaNotImplementedError(f"CONVERT TO DELTA from {stmt.source_format} is not supported; only parquet")
    convert_to_delta(spark, f"parquet.`{stmt.table.path}`", stmt.partition_schema, collect_stats=collect)
    return jplan.empty_result(spark)
