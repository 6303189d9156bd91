"""Column DEFAULT values (table feature `allowColumnDefaults`).

Stored as Spark stores them: the SQL text in the field's `CURRENT_DEFAULT` metadata. A
default must be a constant expression castable to the column's type (checked with Spark
when it is set). INSERT uses it for the columns the statement does not give and for the
DEFAULT keyword in VALUES; DataFrame writes leave missing columns NULL, as in delta-spark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydelta.errors import DeltaAnalysisError
from pydelta.protocol.schema import CURRENT_DEFAULT_KEY as CURRENT_DEFAULT_KEY  # re-exported for the SQL fronts
from pydelta.spark.base import jplan
from pydelta.spark.base._typing import DataFrame, SparkSession


def checked_default(spark: SparkSession, sql: str, type_sql: str, column: str, command: str) -> str:
    """`sql` when it is a constant castable to `type_sql`; DeltaAnalysisError otherwise."""
    try:
        _ = spark.sql(f"SELECT CAST(({sql}) AS {type_sql})").schema  # the schema: Spark analyses the expression
    except Exception:  # noqa: BLE001 - Spark's analysis error names the problem; ours names the column
        raise DeltaAnalysisError(
            f"[INVALID_DEFAULT_VALUE.UNRESOLVED_EXPRESSION] Failed to execute {command} command because the "
            f"destination column {column} has a DEFAULT value {sql}, which fails to resolve as a valid "
            f"constant expression of type {type_sql}.") from None
    return sql


def default_value(field: Any) -> Any | None:
    """The DEFAULT of a pyspark StructField as a Column of its type, or None."""
    from pyspark.sql import functions as F

    sql = (field.metadata or {}).get(CURRENT_DEFAULT_KEY)
    return None if sql is None else F.expr(sql).cast(field.dataType)


def is_default_keyword(expr: Any) -> bool:
    return jplan.kind(expr) == "UnresolvedAttribute" and str(expr.name()).lower() == "default"


def values_with_defaults(
    spark: SparkSession, node: Any, columns: Sequence[str], field_of: Callable[[str], Any]
) -> Any | None:
    """INSERT ... VALUES with the DEFAULT keyword (Spark's parsed plan): a DataFrame with each
    DEFAULT replaced by the column's default; None when `node` is not such a VALUES list."""
    if jplan.kind(node) != "UnresolvedInlineTable":
        return None
    rows = [[None if is_default_keyword(e) else str(e.sql()) for e in jplan.seq(r)] for r in jplan.seq(node.rows())]
    if not any(cell is None for row in rows for cell in row):
        return None
    return values_frame(spark, rows, columns, field_of)


def values_frame(spark: SparkSession, rows: Sequence[Sequence[str | None]], columns: Sequence[str],
                 field_of: Callable[[str], Any]) -> DataFrame:
    """A VALUES list as a DataFrame: each cell SQL text, None for the DEFAULT keyword, which
    becomes the column's default (NULL without one), cast to the column's type."""
    texts = []
    for row in rows:
        if len(row) != len(columns):
            raise DeltaAnalysisError(f"[INSERT_COLUMN_ARITY_MISMATCH] the VALUES row has {len(row)} columns, the "
                                     f"target {len(columns)} ({', '.join(columns)})")
        cells = []
        for name, cell in zip(columns, row, strict=True):
            if cell is None:
                field = field_of(name)
                sql = (field.metadata or {}).get(CURRENT_DEFAULT_KEY, "NULL")
                cells.append(f"CAST(({sql}) AS {field.dataType.simpleString()})")
            else:
                cells.append(cell)
        texts.append("(" + ", ".join(cells) + ")")
    names = ", ".join(f"`col{i + 1}`" for i in range(len(columns)))
    return spark.sql(f"SELECT * FROM VALUES {', '.join(texts)} AS v({names})")
