"""INSERT INTO / INSERT OVERWRITE into a Delta table, once the statement's parts are known.

Both SQL fronts use it: the classic one reads the parts from Spark's parsed plan
(`sql/dml.py`), the Spark Connect one from pydelta's own grammar (`sql/connect_grammar.py`).
The rows are cast to the table's columns by Spark's store-assignment rules, as delta-spark does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydelta.errors import DeltaAnalysisError
from pydelta.log.snapshot import Snapshot
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.jplan import string_literal
from pydelta.spark.sql.targets import DeltaTarget, quote_parts


def field_lookup(schema: Any, target: DeltaTarget) -> Callable[[str], Any]:
    """The table's field of a (case-insensitive) column name; unknown names are an analysis error."""

    def field_of(name: str) -> Any:
        for f in schema.fields:
            if f.name.lower() == name.lower():
                return f
        raise DeltaAnalysisError(f"[UNRESOLVED_COLUMN] column {name!r} is not in table {target.display()}")

    return field_of


def positional_columns(schema: Any, user_cols: list[str], static: dict[str, str | None]) -> list[str]:
    """The columns a by-position INSERT fills: the listed ones, or the table's minus static partitions."""
    given = {k.lower() for k, v in static.items() if v is not None}
    return user_cols or [f.name for f in schema.fields if f.name.lower() not in given]


def insert_into(spark: SparkSession, target: DeltaTarget, snapshot: Snapshot, data: DataFrame, *, by_name: bool,
                user_cols: list[str], static: dict[str, str | None], overwrite: bool, replace_where: str | None,
                evolve: bool) -> None:
    """Write `data` (the INSERT's query) into the table as the statement says.

    `static` is the PARTITION clause (value None for a dynamic partition column);
    `replace_where` the text of INSERT ... REPLACE WHERE; `evolve` WITH SCHEMA EVOLUTION."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    from pydelta.spark.ddl.column_defaults import default_value
    from pydelta.spark.read.scan import spark_schema
    from pydelta.spark.write.dataframe import write_dataframe
    from pydelta.spark.write.store_assignment import inserted, nullable_type, widens_on_insert

    schema = spark_schema(snapshot.schema)
    field_of = field_lookup(schema, target)
    static_given = {k: v for k, v in static.items() if v is not None}
    columns = list(data.columns) if by_name else positional_columns(schema, user_cols, static)
    options: dict[str, Any] = {"mergeSchema": "true"} if evolve else {}
    extra = _evolved_columns(spark, data, columns, options) if not by_name and not user_cols else []
    columns = columns + extra
    if not by_name and len(data.columns) != len(columns):
        raise DeltaAnalysisError(
            f"[INSERT_COLUMN_ARITY_MISMATCH] cannot write to {target.display()}: the data has {len(data.columns)} "
            f"columns, the target {len(columns)} ({', '.join(columns)})"
        )
    widen = widens_on_insert(spark, snapshot.configuration, options)
    exprs = []
    if not by_name:  # positional: the query's own names may repeat (CAST(id AS STRING) is named `id` too)
        data = data.toDF(*[f"__pydelta_insert_{i}" for i in range(len(data.columns))])
    for source, name in zip(data.schema.fields, columns, strict=True):
        if name in extra:  # a new column: schema evolution adds it with the source's type
            exprs.append(F.col(quote_parts([source.name])).alias(name))
            continue
        exprs.append(inserted(F.col(quote_parts([source.name])), source.dataType, field_of(name), widen))
    for name, value in static_given.items():
        exprs.append(inserted(F.lit(value), StringType(), field_of(name), widen=False))
    data = data.select(*exprs)
    present = {c.lower() for c in data.columns}
    generated = {f.name for f in snapshot.schema.fields
                 if "delta.generationExpression" in (f.metadata or {}) or "delta.identity.start" in (f.metadata or {})}
    for field in schema.fields:  # columns not given are NULL (generated and identity ones are computed on write)
        if field.name.lower() not in present and field.name not in generated:
            default = default_value(field)
            filler = default if default is not None else F.lit(None)
            data = data.withColumn(field.name, filler.cast(nullable_type(field.dataType)))
    mode = "overwrite" if overwrite else "append"
    if replace_where is not None:
        options["replaceWhere"] = replace_where
        mode = "overwrite"
    elif overwrite and static_given:
        options["replaceWhere"] = " AND ".join(
            f"`{field_of(k).name}` <=> CAST({string_literal(v)} AS {field_of(k).dataType.simpleString()})"
            for k, v in static_given.items())
    elif overwrite and static and len(static_given) < len(static):
        options["partitionOverwriteMode"] = "dynamic"
    write_dataframe(data, target.path, mode, None, options)


def _evolved_columns(spark: SparkSession, data: Any, columns: list[str], options: dict[str, Any]) -> list[str]:
    """Names of the query's trailing columns beyond the table's, when schema evolution is on:
    delta-spark's by-position INSERT adds them to the table (without evolution: an arity error)."""
    from pydelta.spark.write.options import merge_schema_requested, session_conf

    if len(data.columns) <= len(columns) or not merge_schema_requested(options, session_conf(spark)):
        return []
    taken = {c.lower() for c in columns}
    extra = list(data.columns[len(columns):])
    if any(c.lower() in taken for c in extra):
        return []  # a clash: the arity error below says what is wrong
    return extra
