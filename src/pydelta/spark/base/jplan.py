"""Reading Spark's parsed (unresolved) logical plans through py4j.

pydelta lets Spark's own parser read every statement it knows, then looks at the
plan's node classes and fields to find the tables, expressions and text spans a
Delta statement needs. Only this module touches Scala collections and Options.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydelta.spark.base._typing import DataFrame, JavaObject, SparkSession
from pydelta.spark.base.jvm import jvm

NOT_DELTA = object()  # a statement handler's answer: this statement is not for pydelta


def parse_plan(spark: SparkSession, text: str) -> Any:
    """Spark's unresolved plan of `text` (raises py4j's error for a parse error)."""
    return spark._jsparkSession.sessionState().sqlParser().parsePlan(text)


def kind(node: Any) -> str:
    """The class name of a Java object (two py4j calls)."""
    return str(node.getClass().getSimpleName())


def node_kind(node: Any) -> str:
    """The class name of a plan or expression node (TreeNode.nodeName: one py4j call)."""
    return str(node.nodeName())


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


def children(node: Any) -> list[Any]:
    return seq(node.children())


def scala_list(node: Any, items: list[Any]) -> Any:
    """A Scala immutable Seq of `items` (py4j cannot pass a Python list as one)."""
    from py4j.java_collections import ListConverter
    from py4j.java_gateway import JavaClass

    gateway = node._gateway_client
    converters = JavaClass("scala.jdk.javaapi.CollectionConverters", gateway)
    return converters.asScala(ListConverter().convert(items, gateway)).toList()


def identity(spark: SparkSession, obj: Any) -> int:
    """The JVM identity hash of a Java object (tells apart equal but distinct nodes)."""
    return int(jvm(spark).java.lang.System.identityHashCode(obj))


def span(node: Any) -> tuple[int, int] | None:
    """(start, stop-inclusive) character offsets of `node` in the statement, if known."""
    origin = node.origin()
    start, stop = option(origin.startIndex()), option(origin.stopIndex())
    if start is None or stop is None:
        return None
    return int(start), int(stop)


def text_of(text: str, node: Any) -> str:
    """The statement text `node` was parsed from (its span in `text`).

    A hint (`SELECT /*+ REPARTITION(3) */ ...`) spans only its comment: its text is the
    hint's and its child's together."""
    where = span(node)
    if where is not None and kind(node) == "UnresolvedHint":
        inner = span(node.child())
        if inner is not None:
            where = (min(where[0], inner[0]), max(where[1], inner[1]))
    if where is None:
        from pydelta.errors import DeltaNotImplementedError

        raise DeltaNotImplementedError(f"pydelta cannot locate this part of the statement: {node.toString()[:200]}")
    return text[where[0]:where[1] + 1]


def has_method(obj: Any, name: str) -> bool:
    """Whether a Java object has a method `name` (py4j's hasattr is always true); for fields
    that only some Spark versions have."""
    return any(m.getName() == name for m in obj.getClass().getMethods())


_STATIC_METHODS: dict[tuple[int, str, str], bool] = {}


def has_static_method(jv: Any, class_name: str, name: str) -> bool:
    """Whether the JVM class `class_name` has a (static) method `name`: for helpers only some
    Spark versions have. Asked once per JVM (reflection over py4j costs a round trip per method)."""
    key = (id(jv), class_name, name)
    if key not in _STATIC_METHODS:
        methods = jv.java.lang.Class.forName(class_name).getMethods()
        _STATIC_METHODS[key] = any(m.getName() == name for m in methods)
    return _STATIC_METHODS[key]


def expression_sql(expression: Any) -> str:
    """The SQL text of a column's default or generation expression as the parser kept it: a
    `DefaultValueExpression`/`GeneratedColumn` (`originalSQL`) on Spark 4.1+, a plain string on 4.0."""
    return expression if isinstance(expression, str) else str(expression.originalSQL())


def string_literal(value: str) -> str:
    """`value` as a SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def empty_result(spark: SparkSession) -> DataFrame:
    """The empty, column-less DataFrame DDL and most commands return."""
    from pyspark.sql.types import StructType

    return spark.createDataFrame([], StructType([]))


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


_COMMAND_CLASS: dict[int, Any] = {}


def is_command(spark: SparkSession, node: Any) -> bool:
    """True for statements (commands), False for queries."""
    key = id(jvm(spark))
    if key not in _COMMAND_CLASS:
        _COMMAND_CLASS[key] = jvm(spark).java.lang.Class.forName("org.apache.spark.sql.catalyst.plans.logical.Command")
    return bool(_COMMAND_CLASS[key].isInstance(node))


_TABLE_NODE = re.compile(
    r"'?(UnresolvedRelation|UnresolvedTableOrView|UnresolvedTable|UnresolvedTableValuedFunction) \[(.*?)\], ")
_PLAIN_PART = re.compile(r"[\w$/:.@=-]+")
_SUBQUERY = re.compile(r"(?:list|exists|scalar-subquery|lateral-subquery|outer)#\d+")


@dataclass(frozen=True)
class TreeSummary:
    """What one `treeString()` call tells about a plan, to skip node-by-node py4j walks."""

    names: tuple[tuple[str, tuple[str, ...]], ...]  # (node kind, name parts) per table-like node
    has_subqueries: bool
    exact: bool  # every name could be read back unambiguously from the text


def summarize(plan: JavaObject) -> TreeSummary:
    tree = str(plan.treeString())
    names = []
    exact = True
    for match in _TABLE_NODE.finditer(tree):
        parts = tuple(match.group(2).split(", "))
        if not all(_PLAIN_PART.fullmatch(p) for p in parts):
            exact = False  # a name with spaces, commas or brackets: the text is ambiguous
        names.append((match.group(1), parts))
    return TreeSummary(tuple(names), bool(_SUBQUERY.search(tree)), exact)
