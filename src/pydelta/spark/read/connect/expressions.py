"""Filters on a Spark Connect Delta read as pydelta predicates, for data skipping.

A classic session lets pydelta read Spark's analyzed plan through py4j; a Connect client
has only the unresolved expression it is about to send (`Column._expr`), or the SQL text of
`df.filter("...")`. Both are translated here against the table's own schema, conservatively:
a comparison prunes only where the column's type and the literal's agree without Spark's
implicit casts changing the answer (numbers with numbers, strings with strings, dates with
dates, booleans with booleans). Anything else is `Unknown`, which never skips a file, so a
filter pydelta does not understand costs speed, never rows.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.protocol.column_names import split_identifier
from pydelta.protocol.predicates import FLIPPED, And, Cmp, Col, In, IsNotNull, IsNull, Lit, Not, Or, Predicate, Unknown
from pydelta.protocol.schema import DecimalType, PrimitiveType, StructType
from pydelta.spark.base.tokens import TokenStream

_NUMERIC = ("byte", "short", "integer", "long", "float", "double")
_OPS = {"==": "=", "=": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "<=>": "<=>"}


def _kind(type_name: str) -> str:
    """The comparison family of a Delta primitive type name."""
    if type_name in _NUMERIC or type_name.startswith("decimal"):
        return "number"
    return {"string": "string", "date": "date", "boolean": "boolean"}.get(type_name, "other")


def _lit_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, Decimal)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return "date"
    return "other"


class _Columns:
    """Column names resolved against the table's schema as Spark resolves them (case-insensitively).

    A name may be qualified by the table's alias. Beside another relation (MERGE's source),
    only names that are surely the table's resolve: qualified by the table's alias, or
    unqualified and not one of the other relation's columns.
    """

    def __init__(self, schema: StructType, alias: str | None = None, others: frozenset[str] | None = None,
                 plan_ids: tuple[frozenset[int], frozenset[int]] | None = None) -> None:
        self.schema = schema
        self.alias = alias.lower() if alias is not None else None
        self.others = others
        self.plan_ids = plan_ids  # (the table side's plan ids, the other side's) in a DataFrame join

    def resolve_reference(self, e: Any) -> tuple[Col, str] | None:
        """A ColumnReference (`df.col`, `F.col(...)`): a reference tied to a DataFrame's plan is
        the table's only when that plan is on the table's side of a join (and not the other's)."""
        parts = _column_parts(e)
        if parts is None:
            return None
        plan_id = getattr(e, "_plan_id", None)
        if self.plan_ids is not None and plan_id is not None:
            ours, theirs = self.plan_ids
            if plan_id not in ours or plan_id in theirs:
                return None
            return self.resolve(parts, surely_ours=True)
        return self.resolve(parts)

    def resolve(self, parts: list[str], surely_ours: bool = False) -> tuple[Col, str] | None:
        if self.alias is not None and len(parts) > 1 and parts[0].lower() == self.alias:
            parts = parts[1:]  # Spark prefers the qualifier over a struct column of that name
        elif self.others is not None and not surely_ours and (len(parts) > 1 or parts[0].lower() in self.others):
            return None  # the other relation's, or qualified by its alias
        fields: Any = self.schema
        path: list[str] = []
        field = None
        for part in parts:
            if not isinstance(fields, StructType):
                return None
            matches = [f for f in fields.fields if f.name.lower() == part.lower()]
            if len(matches) != 1:
                return None
            field = matches[0]
            path.append(field.name)
            fields = field.type
        if field is None or not isinstance(field.type, (PrimitiveType, DecimalType)):
            return None
        return Col(tuple(path)), str(field.type)


def _compare(columns: _Columns, op: str, column: list[str] | Any, value: Any, flipped: bool = False) -> Predicate:
    """`column op value`; `column` is a name's parts (SQL text) or a Connect ColumnReference."""
    resolved = columns.resolve(column) if isinstance(column, list) else columns.resolve_reference(column)
    if resolved is None:
        return Unknown("not a column of the table")
    col, type_name = resolved
    if value is None:
        return Cmp(FLIPPED[op] if flipped else op, col, Lit(None))
    if _kind(type_name) == "other" or _kind(type_name) != _lit_kind(value):
        return Unknown(f"{type_name} against {type(value).__name__}")
    return Cmp(FLIPPED[op] if flipped else op, col, Lit(value))


# -- Connect's unresolved expressions ----------------------------------------------------
def translate_column(expr: Any, schema: StructType, alias: str | None = None) -> Predicate:
    """A Connect `Column._expr` as a predicate over `schema`'s columns (`alias`: the table's)."""
    return _translate(expr, _Columns(schema, alias))


def translate_join_side(expr: Any, schema: StructType, alias: str | None, other_columns: list[str],
                        plan_ids: tuple[frozenset[int], frozenset[int]]) -> Predicate:
    """A filter above a DataFrame join as a predicate over one side's table columns: a
    reference belongs to that side by its DataFrame's plan id (`df.col`), its alias, or,
    unqualified, by being no column of the other side; any other conjunct is Unknown."""
    columns = _Columns(schema, alias, frozenset(c.lower() for c in other_columns), plan_ids)
    if isinstance(expr, str):
        return _translate_sql(expr, columns)
    return _translate(expr._expr, columns)


def translate_target_column(expr: Any, schema: StructType, alias: str, other_columns: list[str]) -> Predicate:
    """A join condition (MERGE's) as a predicate over the target's columns only: conjuncts that
    name a source column (or any column not surely the target's) are Unknown, so only the
    target-side conjuncts skip files."""
    return _translate(expr, _Columns(schema, alias, frozenset(c.lower() for c in other_columns)))


def _translate(expr: Any, columns: _Columns) -> Predicate:
    try:
        return _expr(expr, columns)
    except Exception as e:  # noqa: BLE001 - an expression shape we do not know: no skipping
        return Unknown(str(e))


def _expr(e: Any, columns: _Columns) -> Predicate:
    kind = type(e).__name__
    if kind == "SQLExpression":
        return _translate_sql(e._expr, columns)
    if kind != "UnresolvedFunction" or getattr(e, "_is_distinct", False):
        return Unknown(kind)
    name, args = e._name, list(e._args)
    if name == "and" and len(args) == 2:
        return And(_expr(args[0], columns), _expr(args[1], columns))
    if name == "or" and len(args) == 2:
        return Or(_expr(args[0], columns), _expr(args[1], columns))
    if name == "not" and len(args) == 1:
        return Not(_expr(args[0], columns))
    if name in ("isNull", "isnull", "isNotNull", "isnotnull") and len(args) == 1:
        resolved = columns.resolve_reference(args[0])
        if resolved is None:
            return Unknown(name)
        return IsNull(resolved[0]) if name.lower() == "isnull" else IsNotNull(resolved[0])
    if name in _OPS and len(args) == 2:
        left, right = args
        if _column_parts(left) is not None and _is_literal(right):
            return _compare(columns, _OPS[name], left, _literal(right))
        if _column_parts(right) is not None and _is_literal(left):
            return _compare(columns, _OPS[name], right, _literal(left), flipped=True)
        return Unknown(name)
    if name == "in" and len(args) >= 2 and all(_is_literal(a) for a in args[1:]):
        resolved = columns.resolve_reference(args[0])
        values = [_literal(a) for a in args[1:]]
        if resolved is None or any(v is not None and _lit_kind(v) != _kind(resolved[1]) for v in values):
            return Unknown(name)
        if _kind(resolved[1]) == "other":
            return Unknown(name)
        return In(resolved[0], tuple(Lit(v) for v in values))
    return Unknown(name)


def _column_parts(e: Any) -> list[str] | None:
    if type(e).__name__ != "ColumnReference":
        return None
    try:
        parts = split_identifier(e._unparsed_identifier)
    except DeltaIllegalArgumentError:  # unbalanced backquotes: not a column path
        return None
    return parts if all(parts) else None


def _is_literal(e: Any) -> bool:
    return type(e).__name__ == "LiteralExpression"


def _literal(e: Any) -> Any:
    from pyspark.sql.types import DateType, DecimalType, TimestampNTZType, TimestampType

    value = e._value
    if isinstance(e._dataType, (TimestampType, TimestampNTZType)):
        raise ValueError("timestamp literals are not translated over Connect")
    if isinstance(e._dataType, DateType) and isinstance(value, int):
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    if isinstance(e._dataType, DecimalType) and not isinstance(value, Decimal):
        return Decimal(str(value))
    return value


# -- SQL text (`df.filter("id < 10 AND p = 'a'")`) ------------------------------------------
def translate_sql(text: str, schema: StructType, alias: str | None = None,
                  others: frozenset[str] | None = None) -> Predicate:
    """A SQL boolean expression (the simple forms: comparisons of a column with a literal,
    IN lists, IS [NOT] NULL, AND/OR/NOT, parentheses) as a predicate; anything else Unknown.
    `others`: the columns of relations beside the table (see _Columns)."""
    return _translate_sql(text, _Columns(schema, alias, others))


def _translate_sql(text: str, columns: _Columns) -> Predicate:
    try:
        parser = _SqlParser(text, columns)
        out = parser.disjunction()
        if not parser.at_end():
            return Unknown("trailing SQL")
        return out
    except Exception as e:  # noqa: BLE001 - anything unexpected: no skipping
        return Unknown(str(e))


class _SqlParser(TokenStream):
    """A recursive-descent reader of the simple predicate forms, on pydelta's SQL tokens."""

    def __init__(self, text: str, columns: _Columns) -> None:
        super().__init__(text)
        self.columns = columns

    def disjunction(self) -> Predicate:
        out = self.conjunction()
        while self.accept("OR"):
            out = Or(out, self.conjunction())
        return out

    def conjunction(self) -> Predicate:
        out = self.negation()
        while self.accept("AND"):
            out = And(out, self.negation())
        return out

    def negation(self) -> Predicate:
        if self.accept("NOT") or self.accept_punct("!"):
            return Not(self.negation())
        if self.accept_punct("("):
            out = self.disjunction()
            if not self.accept_punct(")"):
                raise ValueError("expected )")
            return out
        return self.comparison()

    def comparison(self) -> Predicate:
        left = self.operand()
        if self.accept("IS"):
            negated = self.accept("NOT")
            if not self.accept("NULL"):
                raise ValueError("IS what?")
            resolved = self.columns.resolve(left[1]) if left[0] == "col" else None
            if resolved is None:
                return Unknown("IS NULL of a non-column")
            return IsNotNull(resolved[0]) if negated else IsNull(resolved[0])
        negated = self.accept("NOT")
        if self.accept("IN"):
            if not self.accept_punct("("):
                raise ValueError("IN without (")
            values = [self.operand()]
            while self.accept_punct(","):
                values.append(self.operand())
            if not self.accept_punct(")"):
                raise ValueError("IN without )")
            resolved = self.columns.resolve(left[1]) if left[0] == "col" else None
            if resolved is None or any(v[0] != "lit" for v in values) or _kind(resolved[1]) == "other" \
                    or any(v[1] is not None and _lit_kind(v[1]) != _kind(resolved[1]) for v in values):
                return Unknown("IN")
            pred: Predicate = In(resolved[0], tuple(Lit(v[1]) for v in values))
            return Not(pred) if negated else pred
        if negated:
            raise ValueError("NOT what?")
        tok = self.next()
        if tok.kind != "punct" or tok.text not in _OPS:
            raise ValueError(f"not a comparison: {tok.text}")
        right = self.operand()
        op = _OPS[tok.text]
        if left[0] == "col" and right[0] == "lit":
            return _compare(self.columns, op, left[1], right[1])
        if left[0] == "lit" and right[0] == "col":
            return _compare(self.columns, op, right[1], left[1], flipped=True)
        return Unknown("comparison of two columns or two literals")

    def operand(self) -> tuple[str, Any]:
        """("col", name parts) or ("lit", value)."""
        tok = self.next()
        if tok.kind == "string":
            return "lit", tok.value()
        if tok.kind == "number":
            return "lit", _number(tok.text)
        if tok.kind == "punct" and tok.text == "-":
            kind, value = self.operand()
            if kind != "lit" or _lit_kind(value) != "number":
                raise ValueError("unary minus")
            return "lit", -value
        if tok.kind == "word" and tok.upper in ("TRUE", "FALSE"):
            return "lit", tok.upper == "TRUE"
        if tok.kind == "word" and tok.upper == "NULL":
            return "lit", None
        after = self.peek()
        if tok.kind == "word" and tok.upper == "DATE" and after is not None and after.kind == "string":
            return "lit", dt.date.fromisoformat(self.next().value())
        if tok.kind in ("word", "quoted"):
            parts = [tok.value()]
            while self.accept_punct("."):
                nxt = self.next()
                if nxt.kind not in ("word", "quoted"):
                    raise ValueError("bad column path")
                parts.append(nxt.value())
            following = self.peek()
            if following is not None and following.kind == "punct" and following.text == "(":
                raise ValueError("a function call")
            return "col", parts
        raise ValueError(f"unexpected {tok.text}")


def _number(text: str) -> int | float | Decimal:
    """A SQL numeric literal as Spark types it: 1 (int), 1L/1S/1Y (integral), 1.5 (decimal),
    1e3 / 1.5D (double), 1.5BD (decimal)."""
    lowered = text.lower()
    for suffix in ("bd", "l", "s", "y", "d", "f"):
        if lowered.endswith(suffix):
            body = lowered[: -len(suffix)]
            if suffix == "bd":
                return Decimal(body)
            if suffix in ("d", "f"):
                return float(body)
            return int(body)
    if "e" in lowered:
        return float(lowered)
    if "." in lowered:
        try:
            return Decimal(lowered)
        except InvalidOperation as e:
            raise ValueError(text) from e
    return int(lowered)
