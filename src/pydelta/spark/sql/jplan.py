"""Reading Spark's parsed (unresolved) logical plans through py4j.

pydelta lets Spark's own parser read every statement it knows, then looks at the
plan's node classes and fields to find the tables, expressions and text spans a
Delta statement needs. Only this module touches Scala collections and Options.
"""

from __future__ import annotations

from typing import Any, Iterator


def parse_plan(spark: Any, text: str) -> Any:
    """Spark's unresolved plan of `text` (raises py4j's error for a parse error)."""
    return spark._jsparkSession.sessionState().sqlParser().parsePlan(text)


def kind(node: Any) -> str:
    return node.getClass().getSimpleName()


def seq(scala_seq: Any) -> list[Any]:
    out = []
    it = scala_seq.iterator()
    while it.hasNext():
        out.append(it.next())
    return out


def option(scala_option: Any) -> Any:
    return scala_option.get() if scala_option.isDefined() else None


def scala_map(scala_map_obj: Any) -> dict[Any, Any]:
    out = {}
    it = scala_map_obj.iterator()
    while it.hasNext():
        pair = it.next()
        out[pair._1()] = pair._2()
    return out


def expr_sql(expr: Any) -> str | None:
    """The SQL text of an (unresolved) expression, or None for a missing one."""
    return None if expr is None else expr.sql()


def children(node: Any) -> list[Any]:
    return seq(node.children())


def span(node: Any) -> tuple[int, int] | None:
    """(start, stop-inclusive) character offsets of `node` in the statement, if known."""
    origin = node.origin()
    start, stop = option(origin.startIndex()), option(origin.stopIndex())
    if start is None or stop is None:
        return None
    return int(start), int(stop)


def subquery_plans(node: Any) -> list[Any]:
    """Plans of subquery expressions (IN (SELECT ...), EXISTS, scalar) inside `node`."""
    out: list[Any] = []
    for expr in seq(node.expressions()):
        out.extend(_subqueries_of(expr))
    return out


_SUBQUERY_EXPRESSIONS = {"ScalarSubquery", "Exists", "ListQuery", "LateralSubquery"}


def _subqueries_of(expr: Any) -> list[Any]:
    found = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if e.getClass().getSimpleName() in _SUBQUERY_EXPRESSIONS:
            found.append(e.plan())
        stack.extend(seq(e.children()))
    return found


def walk(node: Any) -> Iterator[Any]:
    """Every plan node under `node` (itself included), subqueries and CTE definitions too."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(children(n))
        stack.extend(subquery_plans(n))
        if kind(n) == "UnresolvedWith":
            for pair in seq(n.cteRelations()):
                stack.append(pair._2())
        if kind(n) == "RelationTimeTravel":
            stack.append(n.relation())


def identifier_parts(node: Any) -> list[str]:
    """Name parts of an UnresolvedRelation / UnresolvedIdentifier / UnresolvedTable(OrView)."""
    parts = node.nameParts() if kind(node) == "UnresolvedIdentifier" else node.multipartIdentifier()
    return [str(p) for p in seq(parts)]


def is_command(spark: Any, node: Any) -> bool:
    """True for statements (commands), False for queries."""
    command = spark._jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.plans.logical.Command")
    return bool(command.isInstance(node))
