"""A tiny predicate language for planning scans (partition pruning, data skipping).

Engines translate their filter expressions into these nodes; anything they
cannot translate becomes `Unknown`, which never prunes a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Col:
    path: tuple[str, ...]  # logical column path, e.g. ("a", "b") for a.b


@dataclass(frozen=True)
class Lit:
    value: Any  # None, bool, int, float, str, bytes, Decimal, date, datetime


@dataclass(frozen=True)
class Cmp:
    op: str  # "=", "!=", "<", "<=", ">", ">=", "<=>"
    col: Col
    lit: Lit


@dataclass(frozen=True)
class And:
    left: Predicate
    right: Predicate


@dataclass(frozen=True)
class Or:
    left: Predicate
    right: Predicate


@dataclass(frozen=True)
class Not:
    child: Predicate


@dataclass(frozen=True)
class IsNull:
    col: Col


@dataclass(frozen=True)
class IsNotNull:
    col: Col


@dataclass(frozen=True)
class In:
    col: Col
    values: tuple[Lit, ...]


@dataclass(frozen=True)
class Unknown:
    reason: str = ""


Predicate = Cmp | And | Or | Not | IsNull | IsNotNull | In | Unknown

FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}
NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def push_not(p: Predicate, negate: bool = False) -> Predicate:
    """Push negations down to the leaves, so pruning only sees positive forms."""
    if isinstance(p, Not):
        return push_not(p.child, not negate)
    if isinstance(p, And):
        a, b = push_not(p.left, negate), push_not(p.right, negate)
        return Or(a, b) if negate else And(a, b)
    if isinstance(p, Or):
        a, b = push_not(p.left, negate), push_not(p.right, negate)
        return And(a, b) if negate else Or(a, b)
    if not negate:
        return p
    if isinstance(p, Cmp) and p.op in NEGATED:
        return Cmp(NEGATED[p.op], p.col, p.lit)
    if isinstance(p, IsNull):
        return IsNotNull(p.col)
    if isinstance(p, IsNotNull):
        return IsNull(p.col)
    return Unknown("negation of " + type(p).__name__)


def columns_of(p: Predicate) -> set[tuple[str, ...]]:
    if isinstance(p, (And, Or)):
        return columns_of(p.left) | columns_of(p.right)
    if isinstance(p, Not):
        return columns_of(p.child)
    if isinstance(p, (Cmp, IsNull, IsNotNull, In)):
        return {p.col.path}
    return set()


def rename_columns(p: Predicate, names: dict[tuple[str, ...], tuple[str, ...]]) -> Predicate:
    """`p` with every column path looked up in `names`; a leaf on a path not there becomes Unknown."""
    if isinstance(p, (And, Or)):
        return type(p)(rename_columns(p.left, names), rename_columns(p.right, names))
    if isinstance(p, Not):
        return Not(rename_columns(p.child, names))
    if isinstance(p, (Cmp, IsNull, IsNotNull, In)):
        path = names.get(p.col.path)
        if path is None:
            return Unknown(f"column {'.'.join(p.col.path)}")
        if isinstance(p, Cmp):
            return Cmp(p.op, Col(path), p.lit)
        if isinstance(p, In):
            return In(Col(path), p.values)
        return type(p)(Col(path))
    return p
