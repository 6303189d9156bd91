"""A snapshot's files as a DataFrame of their typed partition values: how partition predicates
(replaceWhere, OPTIMIZE ... WHERE, dynamic partition overwrite) are evaluated by Spark."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from pydelta.log.snapshot import Snapshot
from pydelta.protocol.schema import column_mapping_mode, physical_name, quote_identifier
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.read.scan import spark_schema


def partition_rows_dataframe(spark: SparkSession, snapshot: Snapshot, files: pa.Table) -> Any:
    """One row per file: `__pydelta_idx` plus the typed (logical) partition columns."""
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    from pydelta.spark.read.scan import _arrow_df

    schema = snapshot.schema
    mode = column_mapping_mode(snapshot.configuration)
    pv = files.column("partition_values").combine_chunks()
    columns = {"__pydelta_idx": pa.array(range(files.num_rows), pa.int64())}
    for name in snapshot.partition_columns:
        field = schema.field(name)
        key = physical_name(field) if mode != "none" else name
        values = pc.map_lookup(pv, pa.scalar(key), "first") if files.num_rows else pa.array([], pa.string())
        columns[name] = (pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)
                         if files.num_rows else values)
    df = _arrow_df(spark, pa.table(columns))
    logical = spark_schema(schema)
    return df.select("__pydelta_idx", *[F.col(quote_identifier(n)).cast(logical[n].dataType).alias(n)
                                         for n in snapshot.partition_columns])
