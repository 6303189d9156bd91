"""Translating a Spark filter (Catalyst expression) into pydelta's predicate nodes.

We analyze the filter against the scan's DataFrame in the JVM and walk the
resulting expression tree through py4j; it is small, so this is cheap.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, cast

from pydelta.protocol.predicates import FLIPPED, And, Cmp, Col, In, IsNotNull, IsNull, Lit, Not, Or, Predicate, Unknown
from pydelta.spark.base import jplan
from pydelta.spark.base._typing import SparkSession

_CMP = {
    "EqualTo": "=",
    "EqualNullSafe": "<=>",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
}
_EPOCH = date(1970, 1, 1)
_EPOCH_TS = datetime(1970, 1, 1, tzinfo=UTC)
_NUMERIC = {"tinyint", "smallint", "int", "bigint", "float", "double"}


def _name(expr: Any) -> str:
    return cast(str, expr.getClass().getSimpleName())


def _children(expr: Any) -> list[Any]:
    seq = expr.children()
    return [seq.apply(i) for i in range(seq.size())]


def filter_condition(jdf: Any, condition: Any) -> Any:
    """The analyzed Catalyst condition of `jdf.filter(condition)`."""
    plan = jdf.filter(condition).queryExecution().analyzed()
    while _name(plan) != "Filter":
        kids = _children(plan)
        if len(kids) != 1:
            return None
        plan = kids[0]
    return plan.condition()


def max_to_string_fields(spark: SparkSession) -> int:
    """spark.sql.debug.maxToStringFields, the limit delta-spark passes to simpleString."""
    try:
        return int(spark.conf.get("spark.sql.debug.maxToStringFields", "25") or 25)
    except (ValueError, TypeError):
        return 25


def predicate_text(spark: SparkSession, expr: Any) -> str:
    """How commitInfo records a predicate: delta-spark's text (the analyzed expression's
    simpleString), without the `#<exprId>` suffixes of column references.

    Those ids (`id#72L`) are internal to one Spark session and mean nothing to a reader of
    the history, so `F.col("id") == 2` and `"id = 2"` are both recorded as `(id = 2)`. Only
    the exact tokens of the expression's own references are rewritten, so literals that
    happen to contain `#12` are left alone.
    """
    try:
        text = str(expr.simpleString(max_to_string_fields(spark)))
    except Exception:
        return str(expr.sql())
    refs = expr.references().toSeq()
    tokens = {str(refs.apply(i).toString()): str(refs.apply(i).name()) for i in range(refs.size())}
    for token in sorted(tokens, key=len, reverse=True):
        name = tokens[token]
        text = re.sub(re.escape(token) + r"(?!\d)", lambda _: name, text)  # noqa: B023 - re.sub calls it at once
    return text


def translate(expr: Any) -> Predicate:
    if expr is None:
        return Unknown("no condition")
    try:
        return _translate(expr)
    except Exception as e:  # py4j errors, odd literals: never fail a query over pruning
        return Unknown(str(e))


def _translate(expr: Any) -> Predicate:
    kind = _name(expr)
    if kind == "And":
        a, b = _children(expr)
        return And(_translate(a), _translate(b))
    if kind == "Or":
        a, b = _children(expr)
        return Or(_translate(a), _translate(b))
    if kind == "Not":
        return Not(_translate(_children(expr)[0]))
    if kind in _CMP:
        left, right = _children(expr)
        col, lit = _column(left), _literal(right)
        op = _CMP[kind]
        if col is None or lit is None:
            col, lit = _column(right), _literal(left)
            op = FLIPPED[op]
        if col is None or lit is None:
            return Unknown(kind)
        return Cmp(op, col, lit)
    if kind in ("IsNull", "IsNotNull"):
        col = _column(_children(expr)[0])
        if col is None:
            return Unknown(kind)
        return IsNull(col) if kind == "IsNull" else IsNotNull(col)
    if kind == "StartsWith":  # LIKE 'prefix%' after Spark's optimizer
        col, prefix = _column(_children(expr)[0]), _literal(_children(expr)[1])
        if col is None or prefix is None or not isinstance(prefix.value, str) or not prefix.value:
            return Unknown(kind)
        return _prefix_range(col, prefix.value)
    if kind == "InSet":  # an IN list longer than spark.sql.optimizer.inSetConversionThreshold
        col = _column(expr.child())
        dtype = expr.child().dataType().simpleString()
        values = [_value(v, dtype) for v in jplan.seq(expr.hset().toSeq())]
        if col is None or any(v is None for v in values):
            return Unknown(kind)
        return In(col, tuple(values))  # type: ignore[arg-type]
    if kind == "In":
        kids = _children(expr)
        col = _column(kids[0])
        lits = [_literal(k) for k in kids[1:]]
        if col is None or any(lit is None for lit in lits):
            return Unknown(kind)
        return In(col, tuple(lits))  # type: ignore[arg-type]
    return Unknown(kind)


def _column(expr: Any) -> Col | None:
    kind = _name(expr)
    if kind == "AttributeReference":
        return Col((expr.name(),))
    if kind == "GetStructField":
        parent = _column(_children(expr)[0])
        if parent is None:
            return None
        return Col((*parent.path, expr.extractFieldName()))
    if kind == "Cast":
        child = _children(expr)[0]
        src = child.dataType().simpleString()
        dst = expr.dataType().simpleString()
        # widening cast of a numeric column: comparing the cast value prunes like the column
        # (a date cast to a timestamp is not pruned through)
        if src in _NUMERIC and dst in _NUMERIC:
            return _column(child)
        return None
    return None


def _literal(expr: Any) -> Lit | None:
    """A constant: a Literal, or any foldable expression (e.g. cast(50 as bigint)) evaluated now."""
    if _name(expr) == "Literal":
        value = expr.value()
    elif expr.foldable() and not expr.references().nonEmpty():
        value = expr.eval(None)
    else:
        return None
    return _value(value, expr.dataType().simpleString())


def _value(value: Any, dtype: str) -> Lit | None:
    """A Catalyst internal value of type `dtype` as a pydelta literal (None: not a type we prune on)."""
    if value is None:
        return Lit(None)
    if dtype in ("tinyint", "smallint", "int", "bigint"):
        return Lit(int(value))
    if dtype in ("float", "double"):
        return Lit(float(value))
    if dtype == "boolean":
        return Lit(bool(value))
    if dtype == "string":
        return Lit(str(value.toString()) if not isinstance(value, str) else value)
    if dtype == "date":
        return Lit(_EPOCH + timedelta(days=int(value)))
    if dtype == "timestamp":
        return Lit(_EPOCH_TS + timedelta(microseconds=int(value)))
    if dtype == "timestamp_ntz":
        return Lit((_EPOCH_TS + timedelta(microseconds=int(value))).replace(tzinfo=None))
    if dtype.startswith("decimal"):
        return Lit(Decimal(value.toString()))
    return None


def _prefix_range(col: Col, prefix: str) -> Predicate:
    """`col` starts with `prefix`: prefix <= col < (prefix with its last character incremented)."""
    lower = Cmp(">=", col, Lit(prefix))
    last = ord(prefix[-1])
    if last >= 0x10FFFF:
        return lower
    return And(lower, Cmp("<", col, Lit(prefix[:-1] + chr(last + 1))))

