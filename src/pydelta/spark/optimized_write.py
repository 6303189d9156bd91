"""Optimized writes (delta-spark's DeltaOptimizedWriterExec): shuffle the rows by the table's
partition columns before the Parquet write, so each partition value is written by one task
(few, large files instead of one file per input task and partition)."""

from __future__ import annotations

import math
from typing import Any, Mapping

OPTION = "optimizeWrite"
SESSION_CONF = "spark.databricks.delta.optimizeWrite.enabled"
TABLE_PROPERTY = "delta.autoOptimize.optimizeWrite"
BIN_SIZE_CONF = "spark.databricks.delta.optimizeWrite.binSize"
DEFAULT_BIN_SIZE = 512 * 1024 * 1024  # delta-spark's default: 512 MiB


def enabled(requested: bool | None, configuration: Mapping[str, str]) -> bool:
    """delta-spark's precedence: the writer option (or session conf), else the table property."""
    if requested is not None:
        return requested
    return str(configuration.get(TABLE_PROPERTY, "false")).strip().lower() == "true"


def _bin_size(spark: Any) -> int:
    """The bin size in bytes; delta-spark's conf takes a byte size ("512m", "1g", or bytes)."""
    value = spark.conf.get(BIN_SIZE_CONF, None)
    if value is None:
        return DEFAULT_BIN_SIZE
    return int(spark._jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(str(value)))


def optimized(df: Any, partition_columns: list[str]) -> Any:
    """`df` shuffled for an optimized write: by the partition columns (one writer task per
    partition value), or, unpartitioned, into as many tasks as bins of the estimated size."""
    from pyspark.sql import functions as F

    if partition_columns:
        return df.repartition(*[F.col(f"`{c}`") for c in partition_columns])
    estimate = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    bins = max(1, math.ceil(estimate / _bin_size(df.sparkSession)))
    return df.repartition(min(bins, max(1, df.rdd.getNumPartitions())))
