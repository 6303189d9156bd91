"""A DataFrame shaped to a table schema: column order and names, types cast (nested too),
nullability relaxed as Spark's writer needs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydelta.protocol.schema import StructType, quote_identifier
from pydelta.spark.base._typing import DataFrame
from pydelta.spark.read.scan import spark_schema
from pydelta.spark.write.store_assignment import nullable_type, store_cast


def conform(df: DataFrame, schema: StructType, keep: Sequence[str] = ()) -> DataFrame:
    """`df` shaped to `schema`: table column names/order, safe casts, nulls for missing columns.

    `keep`: columns of `df` that are not table columns to carry along after them unchanged.
    """
    from pyspark.sql import functions as F

    spark_types = spark_schema(schema)
    by_lower = {c.lower(): c for c in df.columns}
    columns = []
    for field, spark_field in zip(schema.fields, spark_types.fields, strict=True):
        source = by_lower.get(field.name.lower())
        if source is None:
            generated = field.metadata.get("delta.generationExpression")
            value = F.expr(generated) if generated else F.lit(None)
            columns.append(value.cast(spark_field.dataType).alias(field.name))
            continue
        col = F.col(quote_identifier(source))
        if df.schema[source].dataType != spark_field.dataType:
            col = _conform_nested(df.schema[source].dataType, spark_field.dataType, col, field.name)
        columns.append(col.alias(field.name))
    columns += [F.col(quote_identifier(k)) for k in keep]
    return df.select(*columns)


def _conform_nested(src: Any, dst: Any, col: Any, name: str = "") -> Any:
    """`col` (of Spark type `src`) as `dst`: struct fields matched by name (missing ones NULL),
    values cast by `store_cast` (a value that would change fails the write)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType as SparkStructType

    dst = nullable_type(dst)

    if isinstance(src, SparkStructType) and isinstance(dst, SparkStructType) and len(src.fields) != len(dst.fields):
        names = {f.name.lower(): f for f in src.fields}
        parts = []
        for f in dst.fields:
            s = names.get(f.name.lower())
            if s is None:
                parts.append(F.lit(None).cast(f.dataType).alias(f.name))
            else:
                sub = col.getField(s.name)
                if s.dataType != f.dataType:
                    sub = _conform_nested(s.dataType, f.dataType, sub, f"{name}.{f.name}")
                parts.append(sub.alias(f.name))
        return F.when(col.isNull(), F.lit(None).cast(dst)).otherwise(F.struct(*parts))
    return store_cast(col, src, dst, name)


# ---- which files an overwrite replaces ---------------------------------------------------
