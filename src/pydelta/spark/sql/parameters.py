"""Parameter markers (`spark.sql(text, args=...)`) bound into the statement text.

Spark binds `:name` and `?` markers itself for the statements it runs, but pydelta serves
Delta's own statements (OPTIMIZE, RESTORE, ...) and DML/DDL on Delta tables from their text.
For those the markers are replaced, before routing, by the arguments as SQL literals (Spark
renders each one, so every type Spark accepts as an argument works). Markers are found by
a small lexer that skips string literals, quoted identifiers and comments, as Spark's does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydelta.errors import DeltaAnalysisError
from pydelta.spark.base._typing import SparkSession


def bind_parameters(spark: SparkSession, text: str, args: Mapping[str, Any] | Sequence[Any]) -> str:
    """`text` with each marker replaced by its argument's SQL literal."""
    named = isinstance(args, Mapping)
    out: list[str] = []
    last = 0
    position = 0
    for start, end, name in _markers(text):
        if named != (name is not None):
            raise DeltaAnalysisError("[INVALID_QUERY_MIXED_QUERY_PARAMETERS] Parameterized query must either use "
                                     "positional, or named parameters, but not both.")
        if named:
            assert isinstance(args, Mapping) and name is not None  # named markers take a mapping
            if name not in args:
                raise _unbound(name)
            value = args[name]
        else:
            if position >= len(args):
                raise _unbound(f"_{position + 1}")
            value = args[position]  # type: ignore[index]
            position += 1
        out.append(text[last:start])
        out.append(_literal_sql(spark, value))
        last = end
    out.append(text[last:])
    return "".join(out)


def _unbound(name: str) -> DeltaAnalysisError:
    return DeltaAnalysisError(f"[UNBOUND_SQL_PARAMETER] Found the unbound parameter: {name}. Please, fix `args` and "
                              "provide a mapping of the parameter to either a SQL literal or collection constructor "
                              "functions such as `map()`, `array()`, `struct()`.")


def _literal_sql(spark: SparkSession, value: Any) -> str:
    """The argument as Spark's SQL text for it (a Column must be a literal or a constructor of
    literals): the analyzed expression's SQL, e.g. DATE '2024-01-02', 1.50BD, array(1, 2)."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    column = value if isinstance(value, Column) else F.lit(value)
    plan = spark.range(1).select(column.alias("value"))._jdf.queryExecution().analyzed()
    return str(plan.projectList().head().child().sql())


def _markers(text: str) -> Iterator[tuple[int, int, str | None]]:
    """(start, end, name) of each marker; name None for `?`."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in ("'", '"'):
            i = _skip_string(text, i)
        elif c == "`":
            close = text.find("`", i + 1)
            while close != -1 and text.startswith("``", close):
                close = text.find("`", close + 2)
            i = n if close == -1 else close + 1
        elif text.startswith("--", i):
            newline = text.find("\n", i)
            i = n if newline == -1 else newline + 1
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            i = n if close == -1 else close + 2
        elif text.startswith("::", i):
            i += 2  # the cast operator
        elif c == "?":
            yield i, i + 1, None
            i += 1
        elif c == ":" and i + 1 < n and (text[i + 1].isalpha() or text[i + 1] == "_"):
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            yield i, j, text[i + 1:j]
            i = j
        else:
            i += 1


def _skip_string(text: str, start: int) -> int:
    """The index after the string literal opened at `start` (backslash escapes, doubled quotes)."""
    quote, i, n = text[start], start + 1, len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
        elif text[i] == quote:
            if i + 1 < n and text[i + 1] == quote:
                i += 2
            else:
                return i + 1
        else:
            i += 1
    return n
