"""Enforcing NOT NULL, column invariants and CHECK constraints while Spark writes.

Checks run inside the write job itself (an `assert_true` in a filter), so
data is read once; a violation fails the job before anything is committed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydelta.errors import DeltaCastError, DeltaError, InvariantViolationError
from pydelta.protocol.schema import StructType, quote_identifier
from pydelta.spark.base._typing import DataFrame

MARKER = "PYDELTA_CONSTRAINT_VIOLATION"


def _not_null_checks(schema: StructType, prefix: str = "", display: str = "") -> list[tuple[str, str]]:
    """(SQL check, message) per NOT NULL field; `prefix` is quoted SQL, `display` the plain dotted name."""
    out = []
    for f in schema.fields:
        name = f"{prefix}{quote_identifier(f.name)}"
        if not f.nullable:
            out.append((f"{name} IS NOT NULL", f"NOT NULL constraint violated for column: {display}{f.name}"))
        if isinstance(f.type, StructType):
            # nested non-null fields only apply when the parent struct is present
            for expr, msg in _not_null_checks(f.type, f"{name}.", f"{display}{f.name}."):
                out.append((f"({name} IS NULL OR {expr})", msg))
    return out


def _invariants(schema: StructType, prefix: str = "") -> list[tuple[str, str]]:
    out = []
    for f in schema.fields:
        raw = f.metadata.get("delta.invariants")
        if raw:
            try:
                expr = json.loads(raw)["expression"]["expression"]
            except (ValueError, KeyError, TypeError):
                raise InvariantViolationError(
                    f"column {f.name!r} has an unreadable delta.invariants: {raw!r}") from None
            out.append((expr, f"Invariant violated for column: {prefix}{f.name}: {expr}"))
        if isinstance(f.type, StructType):
            out.extend(_invariants(f.type, f"{prefix}{f.name}."))
    return out


def constraint_checks(schema: StructType, configuration: dict[str, str]) -> list[tuple[str, str]]:
    """(SQL boolean expression, message) pairs every written row must satisfy."""
    checks = _not_null_checks(schema) + _invariants(schema)
    for f in schema.fields:
        expr = f.metadata.get("delta.generationExpression")
        if expr:
            checks.append((f"{quote_identifier(f.name)} <=> ({expr})",
                           f"Generated column {f.name} does not match its expression {expr}"))
    for key, expr in configuration.items():
        if key.lower().startswith("delta.constraints."):
            name = key[len("delta.constraints.") :]
            checks.append((expr, f"CHECK constraint {name} ({expr}) violated"))
    return checks


def with_checks(df: DataFrame, checks: list[tuple[str, str]]) -> Any:
    """`df` with each check asserted per row, inline in the same job."""
    from pyspark.sql import functions as F

    if not checks:
        return df
    conditions = [
        F.assert_true(F.coalesce(F.expr(expr), F.lit(False)), F.lit(f"{MARKER}: {message}")).isNull()
        for expr, message in checks
    ]
    cond = conditions[0]
    for c in conditions[1:]:
        cond = cond & c
    return df.filter(cond)


def _marked_message(text: str, marker: str) -> str:
    """The message raised after `marker: ` inside a Spark failure's text."""
    start = text.index(marker) + len(marker) + 2
    message = text[start:].splitlines()[0]
    for sep in ("'", '"', " SQLSTATE", "\tat "):
        if sep in message:
            message = message.split(sep)[0]
    return message.strip()


def violation_from(exc: BaseException) -> DeltaError | None:
    """The pydelta error for a Spark failure caused by one of our checks (a constraint, or a
    value `store_assignment.store_cast` could not store), if it was."""
    from pydelta.spark.write.store_assignment import CAST_MARKER

    text = str(exc)
    if CAST_MARKER in text:
        return DeltaCastError(_marked_message(text, CAST_MARKER))
    if MARKER not in text:
        return None
    message = _marked_message(text, MARKER)
    return InvariantViolationError(message, error_class=_violation_class(message))


def _violation_class(message: str) -> str | None:
    """delta-spark's error class for the check whose message this is."""
    if message.startswith("NOT NULL constraint violated"):
        return "DELTA_NOT_NULL_CONSTRAINT_VIOLATED"
    if message.startswith(("CHECK constraint", "Invariant violated")):
        return "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"
    return None


@contextmanager
def violations_as_errors() -> Iterator[None]:
    """Turn a Spark job failure caused by one of our checks into InvariantViolationError (or DeltaCastError)."""
    try:
        yield
    except DeltaError:
        raise
    except Exception as e:
        violation = violation_from(e)
        if violation is not None:
            raise violation from None
        raise

