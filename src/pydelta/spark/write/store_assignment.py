"""Storing a value in a column of another type without changing it silently.

A plain Spark `cast` may change a value: with `spark.sql.ansi.enabled=false` integers
wrap and bad text becomes NULL, and even in ANSI mode a DOUBLE too large for FLOAT
becomes infinity. Writes that cast to the table's types (INSERT, insertInto, UPDATE
and MERGE assignments, schema-conformed writes) use `store_cast`, which rounds as ANSI
SQL allows but fails the write job on anything else, whatever the session's ANSI
setting: the value is stored, or nothing is committed (`constraints.violations_as_errors`
turns the failure into DeltaCastError).

`written_type` is delta-spark's INSERT schema evolution with type widening: with schema
evolution on a table with `delta.enableTypeWidening`, a column whose data has a type the
table may widen to automatically is written in that type (the write's schema merge then
widens the column and records `delta.typeChanges`), instead of being cast down.
"""

from __future__ import annotations

from typing import Any

from pydelta.spark.base._typing import DataFrame, SparkSession

CAST_MARKER = "PYDELTA_CAST_FAILURE"

_INTEGRAL_RANK = {"byte": 0, "short": 1, "integer": 2, "long": 3}
_INTEGRAL_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 20}


def _exact(src: Any, dst: Any) -> bool:
    """Every value of Spark type `src` converts to `dst` unchanged (no check needed)."""
    from pyspark.sql import types as T

    if src == dst or isinstance(src, T.NullType) or isinstance(dst, T.StringType):
        return True
    if isinstance(src, T.StructType) and isinstance(dst, T.StructType):
        return len(src.fields) == len(dst.fields) and all(
            _exact(a.dataType, b.dataType) for a, b in zip(src.fields, dst.fields, strict=True))
    if isinstance(src, T.ArrayType) and isinstance(dst, T.ArrayType):
        return _exact(src.elementType, dst.elementType)
    if isinstance(src, T.MapType) and isinstance(dst, T.MapType):
        return _exact(src.keyType, dst.keyType) and _exact(src.valueType, dst.valueType)
    s, d = src.typeName(), dst.typeName()
    if s in _INTEGRAL_RANK and d in _INTEGRAL_RANK:
        return _INTEGRAL_RANK[s] <= _INTEGRAL_RANK[d]
    if isinstance(dst, T.DecimalType):
        if isinstance(src, T.DecimalType):
            return dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale
        return s in _INTEGRAL_DIGITS and dst.precision - dst.scale >= _INTEGRAL_DIGITS[s]
    return (s, d) in {("byte", "float"), ("short", "float"), ("byte", "double"), ("short", "double"),
                      ("integer", "double"), ("float", "double"), ("date", "timestamp"), ("date", "timestamp_ntz")}


def _message(src: Any, dst: Any, name: str) -> str:
    """Spark's message for the failure (no quotes: `violation_from` cuts messages at quotes)."""
    from pyspark.sql import types as T

    s, d = src.simpleString().upper(), dst.simpleString().upper()
    if isinstance(src, T.StringType):
        return (f"{CAST_MARKER}: [CAST_INVALID_INPUT] A value of the type {s} cannot be stored in the {d} "
                f"column `{name}` because it is malformed.")
    return (f"{CAST_MARKER}: [CAST_OVERFLOW_IN_TABLE_INSERT] Fail to assign a value of {s} type to the {d} type "
            f"column `{name}` due to an overflow. Use `try_cast` on the input value to tolerate overflow and "
            f"return NULL instead.")


def _checked_leaf(col: Any, src: Any, dst: Any, name: str) -> Any:
    """`col` cast to `dst`, or a job failure where the cast would give NULL or a new infinity."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    value = col.try_cast(dst)
    lost = col.isNotNull() & value.isNull()
    if isinstance(dst, T.FloatType):  # DOUBLE -> FLOAT: too large becomes infinity, even in ANSI mode
        source = col if isinstance(src, (T.DoubleType, T.FloatType)) else col.try_cast(T.DoubleType())
        infinite = F.lit(float("inf"))
        lost = lost | ((F.abs(value) == infinite) & (F.abs(source) != infinite))
    return F.when(lost, F.raise_error(F.lit(_message(src, dst, name)))).otherwise(value)


def store_cast(col: Any, src: Any, dst: Any, name: str) -> Any:
    """`col` (of Spark type `src`) stored as `dst`: rounded as ANSI SQL allows, else a job failure.

    Nested types are cast field by field, element by element, only where a value could change.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if _exact(src, dst):
        return col if src == dst else col.cast(dst)
    if isinstance(src, T.StructType) and isinstance(dst, T.StructType) and len(src.fields) == len(dst.fields):
        parts = [store_cast(col.getField(s.name), s.dataType, d.dataType, f"{name}.{d.name}").alias(d.name)
                 for s, d in zip(src.fields, dst.fields, strict=True)]
        return F.when(col.isNull(), F.lit(None).cast(dst)).otherwise(F.struct(*parts))
    if isinstance(src, T.ArrayType) and isinstance(dst, T.ArrayType):
        return F.transform(col, lambda e: store_cast(e, src.elementType, dst.elementType, f"{name}.element")).cast(dst)
    if isinstance(src, T.MapType) and isinstance(dst, T.MapType):
        keys = F.transform_keys(col, lambda k, _: store_cast(k, src.keyType, dst.keyType, f"{name}.key"))
        both = F.transform_values(keys, lambda _, v: store_cast(v, src.valueType, dst.valueType, f"{name}.value"))
        return both.cast(dst)
    return _checked_leaf(col, src, dst, name)


def written_type(table_type: Any, data_type: Any, widen: bool) -> Any:
    """The Spark type an INSERT writes a column in: the table's (`table_type`, Spark), or with
    `widen` (schema evolution on a type-widening table) the data's where delta-spark widens the
    column automatically (`type_widening.allowed_by_schema_evolution`, nested types included)."""
    if not widen or table_type == data_type:
        return table_type
    from pyspark.sql.types import StructField as SparkField
    from pyspark.sql.types import StructType as SparkStruct

    from pydelta.errors import SchemaMismatchError
    from pydelta.protocol.schema import parse_schema
    from pydelta.protocol.schema_evolution import merge_schema
    from pydelta.spark.read.scan import spark_schema

    def one(dt: Any) -> Any:
        return parse_schema(SparkStruct([SparkField("c", dt, True)]).json())

    try:
        merged = merge_schema(one(table_type), one(data_type), allow_new_columns=False, widen_types=True)
    except SchemaMismatchError:
        return table_type  # not a widening: cast to the table's type (checked)
    return spark_schema(merged)["c"].dataType


def widens_on_insert(spark: SparkSession, configuration: dict[str, str], options: dict[str, Any]) -> bool:
    """Whether an INSERT into a table with `configuration` keeps wider source types: schema
    evolution (mergeSchema option, else autoMerge) on a table with type widening enabled."""
    from pydelta.protocol import type_widening
    from pydelta.spark.write.options import merge_schema_requested, session_conf

    return type_widening.enabled(configuration) and merge_schema_requested(options, session_conf(spark))


def inserted(col: Any, source_type: Any, field: Any, widen: bool) -> Any:
    """`col` (of Spark type `source_type`) as an INSERT stores it in the column `field` (a Spark
    StructField), named as the column: in the type `written_type` says, cast by `store_cast`."""
    target = nullable_type(written_type(field.dataType, source_type, widen))
    return store_cast(col, source_type, target, field.name).alias(field.name)


def cast_for_insert(df: DataFrame, table: Any, widen: bool) -> Any:
    """`df`, whose columns are named as the columns of `table` (a Spark StructType), as an INSERT
    stores it (`inserted`)."""
    from pyspark.sql import functions as F

    from pydelta.protocol.schema import quote_identifier

    return df.select(*[inserted(F.col(quote_identifier(f.name)), f.dataType, t, widen)
                       for f, t in zip(df.schema.fields, table.fields, strict=True)])


def nullable_type(dtype: Any) -> Any:
    """`dtype` with every nested field, element and value nullable.

    Casts go to this type: Spark cannot cast to a non-nullable nested field, and the
    NOT NULL constraint checks reject bad rows with a clear error instead.
    """
    from pyspark.sql.types import ArrayType, MapType, StructField
    from pyspark.sql.types import StructType as SparkStructType

    if isinstance(dtype, SparkStructType):
        return SparkStructType([StructField(f.name, nullable_type(f.dataType), True, f.metadata) for f in dtype.fields])
    if isinstance(dtype, ArrayType):
        return ArrayType(nullable_type(dtype.elementType), True)
    if isinstance(dtype, MapType):
        return MapType(nullable_type(dtype.keyType), nullable_type(dtype.valueType), True)
    return dtype
