"""Queries over Delta tables: each Delta relation becomes a pydelta scan.

Spark's parser finds the relations (with their text spans); every one that names
a Delta table (by catalog name or delta.`/path`, with VERSION/TIMESTAMP AS OF or
`@v` time travel) is replaced in the statement text by a temporary view over
pydelta's scan of the right snapshot. Filters that apply to a single Delta
relation prune its files first (partition values and min/max stats), exactly as
`filter` on a Delta DataFrame does; Spark still applies every filter itself.
"""

from __future__ import annotations

import itertools
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from pydelta.spark.base import jplan
from pydelta.spark.base._typing import JavaObject, SparkSession
from pydelta.spark.base.engine import table_snapshot
from pydelta.spark.base.jvm import gateway, jvm
from pydelta.spark.base.raw import raw_sql
from pydelta.spark.read.hidden_metadata import under_alias
from pydelta.spark.read.time_travel import stamp_text
from pydelta.spark.sql.targets import DeltaTarget, TargetCache, resolve

_counter = itertools.count()
_PASS_THROUGH = {"SubqueryAlias", "RelationTimeTravel"}


@dataclass
class DeltaRelation:
    """One Delta relation of a statement."""

    target: DeltaTarget
    start: int
    stop: int  # inclusive
    version: int | None = None
    timestamp_sql: str | None = None
    alias: str | None = None  # the user's alias, when the relation has one
    default_alias: str = ""
    conditions: list[str] = field(default_factory=list)  # conjuncts (unqualified SQL) for file pruning
    change_range: dict[str, Any] | None = None  # table_changes(...): change-feed read options
    node_id: int | None = None  # JVM identity of the parsed node the relation replaces


@dataclass
class _Node:
    node: Any
    parent: _Node | None
    kind: str = ""


def _walk_with_parents(root: Any, subqueries: bool = True) -> list[_Node]:
    out: list[_Node] = []
    stack = [_Node(root, None)]
    while stack:
        item = stack.pop()
        out.append(item)
        n = item.node
        k = jplan.node_kind(n)
        item.kind = k
        for child in jplan.children(n):
            stack.append(_Node(child, item))
        if subqueries:
            for sub in jplan.subquery_plans(n):
                stack.append(_Node(sub, None))
        if k == "UnresolvedWith":
            for pair in jplan.seq(n.cteRelations()):
                stack.append(_Node(pair._2(), None))
        if k == "RelationTimeTravel":
            stack.append(_Node(n.relation(), item))
    return out


def _cte_names(nodes: list[_Node]) -> set[str]:
    names: set[str] = set()
    for item in nodes:
        if item.kind == "UnresolvedWith":
            names.update(str(pair._1()).lower() for pair in jplan.seq(item.node.cteRelations()))
    return names


_AT_SYNTAX = re.compile(r"\s*@\s*v?\d+", re.IGNORECASE)


def _timestamp_sql(sql: str) -> str:
    """`t@20240101120000000` carries yyyyMMddHHmmssSSS: make it a timestamp literal."""
    m = re.fullmatch(r"'(\d{17})'", sql)
    return sql if m is None else f"'{stamp_text(m.group(1))}'"


def find_delta_relations(spark: SparkSession, text: str, plan: JavaObject, skip: Any = None,
                         subqueries: bool = True, cache: TargetCache | None = None) -> list[DeltaRelation]:
    """The Delta relations of `plan` with their spans; `skip` is a node to leave alone (a DML target)."""
    nodes = _walk_with_parents(plan, subqueries)
    ctes = _cte_names(nodes)
    relations: list[DeltaRelation] = []
    for item in nodes:
        node = item.node
        if item.kind == "UnresolvedTableValuedFunction":
            changes = _table_changes(spark, node, cache)
            if changes is not None:
                changes.node_id = jplan.identity(spark, node)
                if item.parent is not None and item.parent.kind == "SubqueryAlias":
                    alias = str(item.parent.node.alias())
                    if text[changes.stop] == ")":
                        changes.alias = alias  # the alias follows the span: it stays in the text
                    else:
                        changes.default_alias = alias  # the span swallowed the alias: write it back
                relations.append(changes)
            continue
        if item.kind != "UnresolvedRelation" or (skip is not None and node.equals(skip)):
            continue
        parts = jplan.identifier_parts(node)
        if len(parts) == 1 and parts[0].lower() in ctes:
            continue
        target = resolve(spark, parts, cache)
        if target is None:
            continue
        span = jplan.span(node)
        if span is None:
            continue
        rel = DeltaRelation(target, span[0], span[1], default_alias=parts[-1], node_id=jplan.identity(spark, node))
        parent = item.parent
        if parent is not None and parent.kind == "RelationTimeTravel":
            tt = parent.node
            rel.node_id = jplan.identity(spark, tt)
            at_syntax = _AT_SYNTAX.match(text, rel.stop + 1)
            if at_syntax is not None:  # t@v5 / t@yyyyMMddHHmmssSSS (the node's span also covers an alias)
                rel.stop = at_syntax.end() - 1
            else:
                tt_span = jplan.span(tt)
                if tt_span is not None:
                    rel.start, rel.stop = min(rel.start, tt_span[0]), max(rel.stop, tt_span[1])
            version = jplan.option(tt.version())
            rel.version = int(version) if version is not None else None
            ts = jplan.option(tt.timestamp())
            rel.timestamp_sql = _timestamp_sql(ts.sql()) if ts is not None else None
            parent = parent.parent
        if parent is not None and parent.kind == "SubqueryAlias":
            rel.alias = str(parent.node.alias())
        _collect_conditions(rel, item)
        relations.append(rel)
    return relations


TABLE_CHANGES = ("table_changes", "table_changes_by_path")


def is_table_changes(parts: tuple[str, ...] | list[str]) -> bool:
    return bool(parts) and parts[-1].lower() in TABLE_CHANGES


def _table_changes(spark: SparkSession, node: Any, cache: TargetCache | None) -> DeltaRelation | None:
    """`table_changes('t', start[, end])` / `table_changes_by_path('/p', start[, end])` as a change-feed relation.

    As delta-spark: the first argument names the table (a path for the _by_path form), start and
    end are versions (integers) or timestamps (strings / timestamps), both inclusive.
    """
    from pydelta.errors import DeltaAnalysisError, DeltaIllegalArgumentError
    from pydelta.protocol.schema import split_identifier

    parts = [str(p) for p in jplan.seq(node.name())]
    if not is_table_changes(parts):
        return None
    fn = parts[-1].lower()
    args = jplan.seq(node.functionArgs())
    if len(args) not in (2, 3):
        raise DeltaAnalysisError(
            f"{fn} takes 2 or 3 arguments (table, start[, end]); got {len(args)}")
    values = [raw_sql(spark, f"SELECT {a.sql()}").first()[0] for a in args]
    if values[0] is None or any(v is None for v in values[1:]):
        raise DeltaIllegalArgumentError(
            "[DELTA_CDC_READ_NULL_RANGE_BOUNDARY] CDC read start/end parameters cannot be null. "
            "Please provide a valid version or timestamp.")
    name = str(values[0])
    target = resolve(spark, ["delta", name] if fn == "table_changes_by_path" else split_identifier(name), cache)
    if target is None:
        from pydelta.errors import DeltaTableNotFoundError

        raise DeltaTableNotFoundError(f"{name} is not a Delta table ({fn})")
    options: dict[str, Any] = {}
    bounds = (("startingVersion", "startingTimestamp"), ("endingVersion", "endingTimestamp"))
    for (version_key, ts_key), value in zip(bounds, values[1:], strict=False):  # the end is optional
        if isinstance(value, int) and not isinstance(value, bool):
            options[version_key] = value
        else:
            options[ts_key] = value
    span = jplan.span(node)
    if span is None:
        raise DeltaAnalysisError(f"cannot locate {fn}(...) in the statement text")
    return DeltaRelation(target, span[0], span[1], default_alias=fn, change_range=options)


def _conjuncts(expr: Any) -> list[Any]:
    if jplan.kind(expr) == "And":
        return _conjuncts(expr.left()) + _conjuncts(expr.right())
    return [expr]


def _attributes(expr: Any) -> list[Any] | None:
    """UnresolvedAttributes of `expr`; None when it holds something unsafe to move (subqueries...)."""
    found = []
    stack = [expr]
    while stack:
        e = stack.pop()
        k = jplan.kind(e)
        if k in jplan._SUBQUERY_EXPRESSIONS or k in ("UnresolvedStar", "OuterReference"):
            return None
        if k == "UnresolvedAttribute":
            found.append(e)
        stack.extend(jplan.seq(e.children()))
    return found


def _collect_conditions(rel: DeltaRelation, item: _Node) -> None:
    """Conjuncts of the Filter right above this relation (or above an inner join with it)."""
    qualifier = (rel.alias or rel.default_alias).lower()
    above = item.parent
    while above is not None and above.kind in _PASS_THROUGH:
        above = above.parent
    own_filter = above is not None and above.kind == "Filter"
    if not own_filter and above is not None and above.kind == "Join":
        if "Inner" not in str(above.node.joinType()):
            return
        above = above.parent
        if above is None or above.kind != "Filter":
            return
    elif not own_filter:
        return
    assert above is not None  # a Filter: its own, or the one above the inner join
    for conjunct in _conjuncts(above.node.condition()):
        attrs = _attributes(conjunct)
        if not attrs:
            continue
        text = conjunct.sql()
        ok = True
        for attr in attrs:
            parts = [str(p) for p in jplan.seq(attr.nameParts())]
            if len(parts) == 1 and own_filter:
                continue
            if len(parts) == 2 and parts[0].lower() == qualifier:
                text = text.replace(attr.sql(), "`" + parts[1].replace("`", "``") + "`")
                continue
            ok = False
            break
        if ok:
            rel.conditions.append(text)


def relation_dataframe(spark: SparkSession, rel: DeltaRelation) -> Any:
    """pydelta's scan of the relation's snapshot, on the files its conditions may match.

    The conditions are resolved against an empty frame of the table's schema (no scan
    is built for that), so the files are pruned before the one real scan is built.
    """
    from pyspark.sql import functions as F

    from pydelta.log.data_skipping import FileSkipper
    from pydelta.protocol.predicates import And
    from pydelta.spark.base.hadoop_storage import require_connector
    from pydelta.spark.base.predicates import filter_condition, translate
    from pydelta.spark.read.scan import build_dataframe, spark_schema, wrap

    require_connector(spark, rel.target.path)  # before the log is read: Spark's data path needs it
    if rel.change_range is not None:
        from pydelta.spark.read.cdf import read_change_feed

        return read_change_feed(spark, table_snapshot(spark, rel.target.path), rel.change_range)
    timestamp = None
    if rel.timestamp_sql is not None:
        micros = raw_sql(spark, f"SELECT unix_micros(CAST({rel.timestamp_sql} AS TIMESTAMP))").first()[0]
        timestamp = micros // 1000
    if rel.target.name is None:  # delta.`/path`: delta-spark's path read errors
        from pydelta.errors import DeltaAnalysisError
        from pydelta.spark.read.options import load_for_read
        from pydelta.spark.read.time_travel import split_at_syntax

        path, at_version, at_timestamp = split_at_syntax(spark, rel.target.path)  # delta.`/path@v1`
        version = rel.version
        if at_version is not None or at_timestamp is not None:
            if version is not None or timestamp is not None:
                raise DeltaAnalysisError("[DELTA_UNSUPPORTED_TIME_TRAVEL_MULTIPLE_FORMATS] "
                                         "Cannot specify time travel in multiple formats.")
            version, timestamp = at_version, at_timestamp
        snapshot = load_for_read(spark, path, version=version, timestamp=timestamp)
    else:
        snapshot = table_snapshot(spark, rel.target.path, version=rel.version, timestamp=timestamp)
    snapshot.protocol.check_readable()
    files = snapshot.files()
    if rel.conditions and files.num_rows:
        probe = spark.createDataFrame([], spark_schema(snapshot.schema))
        predicate = None
        for condition in rel.conditions:
            try:
                part = translate(filter_condition(probe._jdf, F.expr(condition)._jc))
            except Exception:  # noqa: BLE001 - pruning is an optimisation; Spark applies the filter anyway
                continue
            predicate = part if predicate is None else And(predicate, part)
        if predicate is not None:
            files = FileSkipper.for_metadata(files, snapshot.metadata).prune(predicate)
    return wrap(build_dataframe(spark, snapshot, files, row_tracking_metadata=True), snapshot, files)


def substitute(spark: SparkSession, text: str, relations: list[DeltaRelation]) -> tuple[str, list[str]]:
    """`text` with each Delta relation replaced by a temporary view; returns (text, view names)."""
    views: list[str] = []
    out = text
    for rel in sorted(relations, key=lambda r: r.start, reverse=True):
        view = f"__pydelta_{next(_counter)}_{uuid.uuid4().hex[:8]}"
        relation_dataframe(spark, rel).createOrReplaceTempView(view)
        views.append(view)
        replacement = f"`{view}`"
        if rel.alias is None:
            replacement += f" AS `{rel.default_alias.replace('`', '``')}`"
        out = out[:rel.start] + replacement + out[rel.stop + 1:]
    return out, views


def substitute_plan(spark: SparkSession, plan: JavaObject, relations: list[DeltaRelation]) -> Any | None:
    """The query `plan` run with each Delta relation's parsed node replaced by pydelta's scan, as a
    DataFrame; None when a relation sits where only the text substitution reaches (a subquery
    expression).

    Unlike a temporary view, the scan's plan keeps its metadata columns: `_metadata.file_path`,
    `_metadata.row_index` and, with row tracking, `_metadata.row_id` are selectable in SQL.
    """
    from pyspark.sql.classic.dataframe import DataFrame

    by_node = {rel.node_id: rel for rel in relations}
    if None in by_node or len(by_node) != len(relations):
        return None
    replaced: set[int] = set()

    catalyst = jvm(spark).org.apache.spark.sql.catalyst

    def scan_plan(rel: DeltaRelation, identifier: Any) -> Any:
        replaced.add(rel.node_id)  # type: ignore[arg-type]
        plan = relation_dataframe(spark, rel)._jdf.queryExecution().analyzed()
        return under_alias(jvm(spark), plan, identifier)

    def rebuilt(node: Any) -> Any:
        rel = by_node.get(jplan.identity(spark, node))
        if rel is not None:
            return scan_plan(rel, catalyst.AliasIdentifier(rel.default_alias))
        if jplan.kind(node) == "SubqueryAlias":  # the user's alias of a Delta relation
            rel = by_node.get(jplan.identity(spark, node.child()))
            if rel is not None:
                return scan_plan(rel, node.identifier())
        if jplan.kind(node) == "UnresolvedWith" and int(node.productArity()) == 3:
            return _with_ctes_rebuilt(spark, node, rebuilt)
        node = subqueries.rebuilt(node)
        kids = jplan.children(node)
        if not kids:
            return node
        new_kids = [rebuilt(k) for k in kids]
        if all(a is b for a, b in zip(new_kids, kids, strict=True)):
            return node
        return node.withNewChildren(jplan.scala_list(node, new_kids))

    subqueries = _SubqueryPlans(spark, rebuilt)
    try:
        new_plan = rebuilt(plan)
    except Exception:  # noqa: BLE001 - a plan shape the rebuild cannot copy: the text substitution serves it
        return None
    if len(replaced) != len(relations):
        return None
    return DataFrame(jvm(spark).org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, new_plan), spark)


class _SubqueryPlans:
    """Rebuilds the plans inside a node's subquery expressions (IN / EXISTS / scalar subqueries),
    which are not children of the node, so their Delta relations get the scan's plan too."""

    def __init__(self, spark: SparkSession, rebuild_plan: Any) -> None:
        jv = jvm(spark)
        self._spark = spark
        self._rebuild_plan = rebuild_plan
        self._pattern = jv.org.apache.spark.sql.catalyst.trees.TreePattern.PLAN_EXPRESSION()
        load = jv.java.lang.Class.forName
        self._expression = load("org.apache.spark.sql.catalyst.expressions.Expression")
        self._subquery = load("org.apache.spark.sql.catalyst.expressions.SubqueryExpression")
        self._seq = load("scala.collection.Seq")
        self._option = load("scala.Option")

    def rebuilt(self, node: Any) -> Any:
        """`node` with its own expressions' subquery plans rebuilt (the node itself when none changed)."""
        if not any(e.containsPattern(self._pattern) for e in jplan.seq(node.expressions())):
            return node
        arity = int(node.productArity())
        values = [node.productElement(i) for i in range(arity)]
        new_values = [self._value(v) for v in values]
        if all(a is b for a, b in zip(new_values, values, strict=True)):
            return node
        args = gateway(self._spark).new_array(jvm(self._spark).java.lang.Object, arity)
        for i, value in enumerate(new_values):
            args[i] = value
        return node.makeCopy(args)

    def _value(self, value: Any) -> Any:
        if value is None or not hasattr(value, "getClass"):
            return value
        if self._expression.isInstance(value):
            return self._expr(value)
        if self._option.isInstance(value) and value.isDefined():
            inner = value.get()
            new = self._value(inner)
            return value if new is inner else jvm(self._spark).scala.Some(new)
        if self._seq.isInstance(value):
            items = jplan.seq(value)
            new_items = [self._value(item) for item in items]
            if all(a is b for a, b in zip(new_items, items, strict=True)):
                return value
            return jplan.scala_list(value, new_items)
        return value

    def _expr(self, expr: Any) -> Any:
        if not expr.containsPattern(self._pattern):
            return expr
        out = expr
        if self._subquery.isInstance(expr):
            plan = expr.plan()
            new_plan = self._rebuild_plan(plan)
            if new_plan is not plan:
                out = out.withNewPlan(new_plan)
        kids = jplan.children(out)
        new_kids = [self._expr(k) for k in kids]
        if any(a is not b for a, b in zip(new_kids, kids, strict=True)):
            out = out.withNewChildren(jplan.scala_list(out, new_kids))
        return out


def _with_ctes_rebuilt(spark: SparkSession, node: Any, rebuilt: Any) -> Any:
    """A WITH node with its query and its CTE definitions (not children in Spark's sense) rebuilt."""
    child = node.child()
    new_child = rebuilt(child)
    pairs = jplan.seq(node.cteRelations())
    new_pairs = [(pair, rebuilt(pair._2())) for pair in pairs]
    if new_child is child and all(new is pair._2() for pair, new in new_pairs):
        return node
    tuples = [pair if new is pair._2() else _with_second(spark, pair, new) for pair, new in new_pairs]
    return jvm(spark).org.apache.spark.sql.catalyst.plans.logical.UnresolvedWith(
        new_child, jplan.scala_list(node, tuples), node.productElement(2))


def _with_second(spark: SparkSession, pair: Any, value: Any) -> Any:
    """The CTE entry `pair` (a Scala tuple: name, definition[, ...]) with its definition replaced."""
    items = [pair.productElement(i) for i in range(int(pair.productArity()))]
    items[1] = value
    return getattr(jvm(spark).scala, f"Tuple{len(items)}")(*items)


def drop_views(spark: SparkSession, views: list[str]) -> None:
    for view in views:
        spark.catalog.dropTempView(view)
