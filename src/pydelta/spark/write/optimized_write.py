"""Optimized writes (delta-spark's DeltaOptimizedWriterExec): shuffle the rows by the table's
partition columns before the Parquet write, so each partition value is written by one task
(few, large files instead of one file per input task and partition)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydelta.protocol import properties
from pydelta.spark.base._typing import DataFrame, JavaObject, SparkSession

OPTION = "optimizeWrite"
SESSION_CONF = "spark.databricks.delta.optimizeWrite.enabled"
TABLE_PROPERTY = "delta.autoOptimize.optimizeWrite"
BIN_SIZE_CONF = "spark.databricks.delta.optimizeWrite.binSize"
DEFAULT_BIN_SIZE = 512 * 1024 * 1024  # delta-spark's default: 512 MiB


def enabled(requested: bool | None, configuration: Mapping[str, str]) -> bool:
    """delta-spark's precedence: the writer option (or session conf), else the table property."""
    if requested is not None:
        return requested
    return properties.AUTO_OPTIMIZE_OPTIMIZE_WRITE.get(configuration)


def _bin_size(spark: SparkSession) -> int:
    """The bin size in bytes; delta-spark's conf takes a byte size ("512m", "1g", or bytes)."""
    value = spark.conf.get(BIN_SIZE_CONF, None)
    if value is None:
        return DEFAULT_BIN_SIZE
    jvm: JavaObject = spark._jvm
    return int(jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(str(value)))


def optimized(df: DataFrame, partition_columns: list[str]) -> Any:
    """`df` shuffled for an optimized write, as delta-spark's bins: rows hashed by the partition
    columns (unpartitioned: spread evenly), then Spark's adaptive execution packs the shuffle
    output into tasks of about `optimizeWrite.binSize` bytes. A small partition value is written
    by one task; one larger than a bin is split over several, so no file grows without bound.

    This is Spark's RebalancePartitions with its advisory partition size set to the bin size
    (the DataFrame `rebalance` hint cannot carry a size)."""
    from pyspark.sql import DataFrame

    from pydelta.protocol.schema import quote_identifier

    if str(df.sparkSession.conf.get("spark.sql.adaptive.enabled", "true")).lower() != "true":
        return _without_adaptive_execution(df, partition_columns)
    hinted = df.hint("rebalance", *[quote_identifier(c) for c in partition_columns])
    node = hinted._jdf.queryExecution().analyzed()
    if node.getClass().getSimpleName() != "RebalancePartitions":  # not expected; the plain hint still bins
        return hinted
    jvm: JavaObject = df.sparkSession._jvm
    size = _jvm_long_option(jvm, _bin_size(df.sparkSession))
    keep_num_partitions = getattr(node, "copy$default$3")()  # the third field, whatever its name in this Spark
    sized = node.copy(node.partitionExpressions(), node.child(), keep_num_partitions, size)
    jdf = jvm.org.apache.spark.sql.classic.Dataset.ofRows(df.sparkSession._jsparkSession, sized)
    return DataFrame(jdf, df.sparkSession)


def _without_adaptive_execution(df: DataFrame, partition_columns: list[str]) -> Any:
    """With adaptive execution off nothing packs shuffle output: one task per partition value, or,
    unpartitioned, one per bin of the estimated size."""
    from pyspark.sql import functions as F

    if partition_columns:
        return df.repartition(*[F.col(f"`{c}`") for c in partition_columns])
    estimate = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    bins = max(1, -(-estimate // _bin_size(df.sparkSession)))
    return df.repartition(min(bins, max(1, df.rdd.getNumPartitions())))


def _jvm_long_option(jvm: Any, value: int) -> Any:
    """Scala `Some(value: Long)` made in the JVM: py4j turns every boxed Long it returns into a Python
    int and sends small ints back as Integers, so the Long must never cross to Python."""
    boxed = jvm.java.util.stream.LongStream.range(value, value + 1).boxed().findFirst()  # Optional[Long]
    return jvm.scala.jdk.javaapi.OptionConverters.toScala(boxed)
