"""DML arguments and conditions: user values as Columns, conditions analyzed against a
DataFrame, split into conjuncts and translated into the log's predicates for file skipping."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydelta.errors import (
    DeltaAnalysisError,
    DeltaNotImplementedError,
    DmlTypeError,
)
from pydelta.protocol.predicates import And, Predicate, Unknown
from pydelta.spark.base._typing import Column, DataFrame, JavaObject, SparkSession
from pydelta.spark.base.predicates import filter_condition, predicate_text, translate

# A predicate that keeps every file: what delta-spark records for an unfiltered read.
READ_ALL = Unknown("true")


# ---- arguments ----------------------------------------------------------------------------


def as_column(value: Any, argname: str = "'condition'") -> Column:
    """A pyspark Column from a SQL string or a Column."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(value, Column):
        return value
    if isinstance(value, str):
        try:
            return F.expr(value)
        except Exception as e:  # ParseException
            raise DeltaAnalysisError(f"cannot parse {argname} {value!r}: {_first_line(e)}") from None
    raise DmlTypeError(
        f"{argname} must be a Spark SQL Column or a string (expression in SQL syntax), found to be of type "
        f"{type(value)}"
    )


def column_mapping(value: Any, argname: str) -> dict[str, Column]:
    """A {column name: Column} dict from delta-spark's `set` / `values` argument."""
    from pyspark.sql import Column

    if value is None:
        raise ValueError(f"{argname} cannot be None")  # delta-spark's _dict_to_jmap
    if not isinstance(value, dict):
        raise DmlTypeError(f"{argname} must be a dict, found to be {type(value)}")
    out = {}
    for key, expr in value.items():
        if not isinstance(key, str):
            raise DmlTypeError(
                f"Keys of dict in {argname} must contain only strings with column names, found '{key}' of type "
                f"'{type(key)}"
            )
        if not isinstance(expr, (str, Column)):
            raise DmlTypeError(
                f"Values of dict in {argname} must contain only Spark SQL Columns or strings (expressions in SQL "
                f"syntax) as values, found '{expr}' of type '{type(expr)}'"
            )
        out[key] = as_column(expr, argname)
    return out


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def analysis_error(what: str, e: BaseException) -> DeltaAnalysisError:
    return DeltaAnalysisError(f"{what}: {_first_line(e)}")


# ---- analyzed conditions --------------------------------------------------------------------


@dataclass
class Condition:
    """A user condition analyzed against a DataFrame.

    On a classic session `expr` is Spark's analyzed Catalyst expression. A Spark Connect
    client has none (`expr` is None): the server checked the condition, and `connect_predicate`
    is what pydelta could translate of it for file skipping.
    """

    column: Column
    expr: JavaObject | None  # the analyzed Catalyst expression (None over Spark Connect)
    sql: str  # how history records it: delta-spark's simpleString without expression ids
    connect_predicate: Predicate | None = None

    @property
    def references(self) -> list[str]:
        if self.expr is None:
            raise DeltaNotImplementedError("the columns of a condition over Spark Connect")
        return expression_references(self.expr)

    @property
    def deterministic(self) -> bool:
        if self.expr is None:
            return False  # unknown over Connect: never taken for a metadata-only condition
        try:
            return bool(self.expr.deterministic())
        except Exception:
            return False

    def predicate(self) -> Predicate:
        if self.expr is None:
            return self.connect_predicate or READ_ALL
        return translate(self.expr)


def _analyze_connect(df: DataFrame, condition: Any, col: Column, what: str) -> Condition:
    """The Connect server resolves and type-checks the condition (one round trip); the
    client translates what it can of it for skipping."""
    from pydelta.protocol.schema import parse_schema
    from pydelta.spark.base.connect_session import analyzed_plan
    from pydelta.spark.read.connect.expressions import translate_column

    try:
        analyzed = _analyzed_condition(analyzed_plan(df.select(col.alias(_CONDITION))), df.columns)
        dtype, text = analyzed if analyzed is not None else (
            df.select(col.alias(_CONDITION)).schema.fields[0].dataType.simpleString(),
            condition if isinstance(condition, str) else repr(col._expr))
    except Exception as e:
        raise analysis_error(f"cannot resolve {what} {_describe(condition)}", e) from None
    if dtype != "boolean":
        raise DeltaAnalysisError(f"{what} {_describe(condition)} must be a boolean expression, not {dtype}")
    predicate = translate_column(col._expr, parse_schema(df.schema.json()))
    return Condition(col, None, text, predicate)


_CONDITION = "_pydelta_condition"


def _analyzed_condition(plan: tuple[str, str] | None, columns: list[str]) -> tuple[str, str] | None:
    """(type, text) of the condition in the server's analyzed plan (schema line, top node) of
    `SELECT <condition> AS _pydelta_condition`: the text history records on classic sessions (the
    analyzed expression with its implicit casts, e.g. `(id < cast(3 as bigint))`), its column ids
    (`id#12L`) dropped. None when the plan does not read as expected."""
    if plan is None:
        return None
    type_line, project = plan
    found = re.fullmatch(rf"Project \[(.*) AS {_CONDITION}#\d+\]", project)
    if not type_line.startswith(f"{_CONDITION}: ") or found is None:
        return None
    text = found.group(1)
    for name in sorted(set(columns), key=len, reverse=True):
        text = re.sub(rf"(?<![\w#`]){re.escape(name)}#\d+L?(?![\w#])",
                      lambda _: name, text)  # noqa: B023 - re.sub calls it at once
    return type_line[len(_CONDITION) + 2:], text


def analyze(df: DataFrame, condition: Any, what: str = "the condition") -> Condition:
    from pydelta.spark.base.connect_session import is_connect

    col = as_column(condition)
    if is_connect(df.sparkSession):
        return _analyze_connect(df, condition, col, what)
    try:
        expr = filter_condition(df._jdf, col._jc)
    except Exception as e:
        raise analysis_error(f"cannot resolve {what} {_describe(condition)}", e) from None
    if expr is None:
        raise DeltaAnalysisError(f"cannot resolve {what} {_describe(condition)}")
    try:
        dtype = expr.dataType().simpleString()
    except Exception:
        dtype = "boolean"
    if dtype != "boolean":
        raise DeltaAnalysisError(f"{what} {_describe(condition)} must be a boolean expression, not {dtype}")
    return Condition(col, expr, predicate_text(df.sparkSession, expr))


def _describe(condition: Any) -> str:
    return repr(condition) if isinstance(condition, str) else str(condition)


def expression_references(expr: JavaObject) -> list[str]:
    seq = expr.references().toSeq()
    return [str(seq.apply(i).name()) for i in range(seq.size())]


def has_subquery(spark: SparkSession, expr: JavaObject) -> bool:
    try:
        jvm = spark.sparkContext._jvm
        if jvm is None:  # a stopped context
            return False
        return bool(jvm.org.apache.spark.sql.catalyst.expressions.SubqueryExpression.hasSubquery(expr))
    except Exception:
        return False


def conjuncts(expr: JavaObject) -> list[JavaObject]:
    """The AND-ed parts of a Catalyst expression."""
    from pydelta.spark.base.predicates import _children, _name

    if _name(expr) == "And":
        out = []
        for child in _children(expr):
            out.extend(conjuncts(child))
        return out
    return [expr]


def is_partition_only(spark: SparkSession, cond: Condition, partition_columns: Iterable[str]) -> bool:
    """delta-spark's isPredicateMetadataOnly: only partition columns, no subquery (and deterministic)."""
    lowered = {c.lower() for c in partition_columns}
    if cond.expr is None or not cond.deterministic or has_subquery(spark, cond.expr):
        return False
    return all(r.lower() in lowered for r in cond.references)


def and_all(predicates: list[Predicate]) -> Predicate:
    if not predicates:
        return READ_ALL
    out = predicates[0]
    for p in predicates[1:]:
        out = And(out, p)
    return out
