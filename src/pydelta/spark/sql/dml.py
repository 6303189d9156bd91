"""INSERT, UPDATE, DELETE, MERGE and TRUNCATE on Delta tables, from Spark's parsed plans.

Each handler gets Spark's unresolved plan of the statement and either runs it
(returning delta-spark's result DataFrame) or answers NOT_DELTA so the router
hands the statement to Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydelta.errors import DeltaAnalysisError
from pydelta.log.snapshot import Snapshot
from pydelta.spark.base import jplan
from pydelta.spark.base._typing import JavaObject, SparkSession
from pydelta.spark.base.engine import table_snapshot
from pydelta.spark.base.jplan import NOT_DELTA
from pydelta.spark.base.jvm import jvm
from pydelta.spark.sql.targets import DeltaTarget, quote_parts, resolve

# ---- helpers -----------------------------------------------------------------------------


def _relation_target(spark: SparkSession, node: Any) -> tuple[DeltaTarget | None, str | None, Any]:
    """(Delta target, alias, relation node) of a DML target: a relation, maybe aliased."""
    alias = None
    if jplan.kind(node) == "SubqueryAlias":
        alias = str(node.alias())
        node = node.child()
    if jplan.kind(node) != "UnresolvedRelation":
        return None, alias, node
    return resolve(spark, jplan.identifier_parts(node)), alias, node


Requalify = Callable[[Any], Any]


def _qualifier(spark: SparkSession, parts: list[str]) -> list[str]:
    """The name parts Spark qualifies an unaliased table's columns with ([catalog, db, table]),
    so `people10m.id`, `db.people10m.id` and delta.`/p`.id all name the table's column."""
    if len(parts) == 1:
        return ["spark_catalog", spark.catalog.currentDatabase(), parts[0]]
    return ["spark_catalog", *parts] if len(parts) == 2 else list(parts)


def _requalifier(spark: SparkSession, tables: list[tuple[list[str], str]]) -> Requalify:
    """Rewrites column references qualified by an unaliased table's name (any suffix of
    [catalog, db, table]) to the single alias pydelta gives that table's DataFrame."""
    from pydelta.spark.sql.targets import path_parts

    rules = [(_qualifier(spark, parts) if path_parts(parts) is None else ["spark_catalog", *parts], alias)
             for parts, alias in tables]

    def rename(name: list[str]) -> list[str] | None:
        lower = [p.lower() for p in name]
        for qualifier, alias in rules:
            for k in range(len(qualifier), 0, -1):
                suffix = [p.lower() for p in qualifier[-k:]]
                if len(name) > k and lower[:k] == suffix:
                    return None if name[:k] == [alias] else [alias, *name[k:]]
        return None

    def fix(expr: Any) -> Any:
        return _rewrite_attributes(expr, rename)[0] if rules else expr

    return fix


def _rewrite_attributes(expr: Any, rename: Callable[[list[str]], list[str] | None]) -> tuple[Any, bool]:
    """(expr with each UnresolvedAttribute renamed by `rename`, whether anything changed)."""
    if jplan.node_kind(expr) == "UnresolvedAttribute":
        new = rename([str(p) for p in jplan.seq(expr.nameParts())])
        if new is None:
            return expr, False
        from py4j.java_gateway import JavaClass

        cls = JavaClass("org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute", expr._gateway_client)
        return cls(jplan.scala_list(expr, new)), True
    kids = [_rewrite_attributes(k, rename) for k in jplan.children(expr)]
    if not any(changed for _, changed in kids):
        return expr, False
    return expr.withNewChildren(jplan.scala_list(expr, [k for k, _ in kids])), True


def _default_alias(parts: list[str]) -> str:
    """The alias an unaliased relation gets: its table name (the path for delta.`/path`)."""
    return parts[-1]


def _dataframe_of(spark: SparkSession, text: str, node: Any) -> Any:
    """A DataFrame for a plan node of the statement (a relation or a query), Delta tables included."""
    if jplan.kind(node) == "SubqueryAlias":
        return _dataframe_of(spark, text, node.child()).alias(str(node.alias()))
    if jplan.kind(node) == "UnresolvedRelation":
        parts = jplan.identifier_parts(node)
        target = resolve(spark, parts)
        if target is not None:
            from pydelta.spark.read.scan import read_snapshot

            return read_snapshot(spark, table_snapshot(spark, target.path)).alias(parts[-1])
        return spark.table(quote_parts(parts)).alias(parts[-1])  # a view or another source's table
    if jplan.kind(node) == "LocalRelation":  # INSERT ... VALUES: Spark parsed the literal rows
        from pyspark.sql import DataFrame

        jdf = jvm(spark).org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, node)
        return DataFrame(jdf, spark)
    return spark.sql(jplan.text_of(text, node))


def _is_true_literal(expr: Any) -> bool:
    return jplan.kind(expr) == "Literal" and str(expr.sql()).lower() == "true"


def _snapshot(spark: SparkSession, target: DeltaTarget) -> Snapshot:
    return table_snapshot(spark, target.path)


# ---- DML ---------------------------------------------------------------------------------


def _unaliased(spark: SparkSession, alias: str | None, node: Any) -> tuple[str, Requalify]:
    """(alias, requalifier) of a DML target: an unaliased table is known by its own name."""
    if alias:
        return alias, _requalifier(spark, [])
    parts = jplan.identifier_parts(node)
    return _default_alias(parts), _requalifier(spark, [(parts, _default_alias(parts))])


def _delete(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target, alias, node = _relation_target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    from pydelta.spark.dml.delete import prepare_delete

    alias, fix = _unaliased(spark, alias, node)
    condition = None if _is_true_literal(plan.condition()) else fix(plan.condition()).sql()
    prepared = prepare_delete(spark, _snapshot(spark, target), condition, alias=alias)
    prepared.commit()
    rows = prepared.metrics.get("numDeletedRows", -1)
    return spark.createDataFrame([(int(rows),)], "num_affected_rows BIGINT")


def _update(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target, alias, node = _relation_target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    from pydelta.spark.dml.update import prepare_update
    from pydelta.spark.read.conditions import column_mapping

    alias, fix = _unaliased(spark, alias, node)
    snapshot = _snapshot(spark, target)
    assignments = _assignments(plan, alias, column_defaults(spark, snapshot), fix)
    condition = jplan.option(plan.condition())
    prepared = prepare_update(spark, snapshot, fix(condition).sql() if condition is not None else None,
                              column_mapping(assignments, "SET"), alias=alias)
    prepared.commit()
    return spark.createDataFrame([(int(prepared.metrics.get("numUpdatedRows", 0)),)], "num_affected_rows BIGINT")


def _merge(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target, alias, node = _relation_target(spark, plan.targetTable())
    if target is None:
        return NOT_DELTA
    tables = [] if alias else [(jplan.identifier_parts(node), _default_alias(jplan.identifier_parts(node)))]
    alias = alias or tables[0][1]
    if jplan.kind(plan.sourceTable()) == "UnresolvedRelation":  # an unaliased source: known by its name too
        parts = jplan.identifier_parts(plan.sourceTable())
        tables.append((parts, parts[-1]))
    fix = _requalifier(spark, tables)
    source = _dataframe_of(spark, text, plan.sourceTable())
    from pydelta.spark.dml.merge import run_merge

    snapshot = _snapshot(spark, target)
    defaults = column_defaults(spark, snapshot)
    clauses = [_merge_clause(action, when, alias, defaults, fix)
               for when, actions in (("matched", plan.matchedActions()), ("notMatched", plan.notMatchedActions()),
                                     ("notMatchedBySource", plan.notMatchedBySourceActions()))
               for action in jplan.seq(actions)]
    return run_merge(spark, snapshot, source, fix(plan.mergeCondition()).sql(), clauses,
                     schema_evolution=bool(plan.withSchemaEvolution()), alias=alias)


def column_defaults(spark: SparkSession, snapshot: Snapshot) -> dict[str, str]:
    """lower-case column name -> the SQL its DEFAULT keyword stands for (typed; NULL without a default).
    From the schema readers see, built in Python: a DataFrame over the table would cost a JVM
    analysis (a third of a small UPDATE's time) for the same fields."""
    from pydelta.spark.ddl.column_defaults import CURRENT_DEFAULT_KEY
    from pydelta.spark.read.scan import reader_schema

    out = {}
    for field in reader_schema(snapshot.schema).fields:
        sql = (field.metadata or {}).get(CURRENT_DEFAULT_KEY, "NULL")
        out[field.name.lower()] = f"CAST(({sql}) AS {field.dataType.simpleString()})"
    return out


def _assignments(action: Any, alias: str | None, defaults: dict[str, str], fix: Requalify) -> dict[str, str]:
    """SET / VALUES of a MERGE clause as {column: SQL}; the DEFAULT keyword becomes the column's default."""
    from pydelta.spark.ddl.column_defaults import is_default_keyword

    out = {}
    for a in jplan.seq(action.assignments()):
        key = fix(a.key()).sql()
        if alias and key.lower().startswith(alias.lower() + "."):
            key = key[len(alias) + 1:]
        value = a.value()
        bare = key.strip("`").lower()
        out[key] = defaults.get(bare, "NULL") if is_default_keyword(value) else fix(value).sql()
    return out


# Spark's merge action classes, by the clause action they stand for.
_MERGE_ACTIONS = {"UpdateAction": "update", "UpdateStarAction": "updateAll", "DeleteAction": "delete",
                  "InsertAction": "insert", "InsertStarAction": "insertAll"}


def _merge_clause(action: Any, when: str, alias: str | None, defaults: dict[str, str], fix: Requalify) -> Any:
    from pydelta.spark.dml.merge import sql_clause

    kind = jplan.kind(action)
    cond = jplan.option(action.condition())
    condition = fix(cond).sql() if cond is not None else None
    name = _MERGE_ACTIONS.get(kind, kind)
    assignments = _assignments(action, alias, defaults, fix) if name in ("update", "insert") else {}
    return sql_clause(when, name, condition, assignments)


def _insert(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target, _, _ = _relation_target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    from pydelta.spark.ddl.column_defaults import values_with_defaults
    from pydelta.spark.read.scan import spark_schema
    from pydelta.spark.sql.insert import field_lookup, insert_into, positional_columns

    snapshot = table_snapshot(spark, target.path)
    schema = spark_schema(snapshot.schema)
    static = {str(k): jplan.option(v) for k, v in jplan.scala_map(plan.partitionSpec()).items()}
    user_cols = [str(c) for c in jplan.seq(plan.userSpecifiedCols())]
    by_name = bool(plan.byName())
    data = None if by_name else values_with_defaults(spark, plan.query(), positional_columns(schema, user_cols, static),
                                                     field_lookup(schema, target))
    if data is None:
        data = _dataframe_of(spark, text, plan.query())
    replace = jplan.option(plan.replaceCriteriaOpt()) if jplan.has_method(plan, "replaceCriteriaOpt") else None
    replace_where = None
    if replace is not None:
        replace_where = _condition_text(text, replace.cond())
    evolve = bool(jplan.has_method(plan, "withSchemaEvolution") and plan.withSchemaEvolution())
    insert_into(spark, target, snapshot, data, by_name=by_name, user_cols=user_cols, static=static,
                overwrite=bool(plan.overwrite()), replace_where=replace_where, evolve=evolve)
    return jplan.empty_result(spark)


def _replace_where(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """INSERT INTO t REPLACE WHERE cond SELECT ... as Spark 4.0's parser gives it (an
    OverwriteByExpression by position; 4.1+ gives an InsertIntoStatement with replaceCriteriaOpt)."""
    if jplan.kind(plan.table()) != "UnresolvedRelation":
        return NOT_DELTA
    target, _, _ = _relation_target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    from pydelta.spark.sql.insert import insert_into

    insert_into(spark, target, table_snapshot(spark, target.path), _dataframe_of(spark, text, plan.query()),
                by_name=False, user_cols=[], static={}, overwrite=False,
                replace_where=_condition_text(text, plan.deleteExpr()), evolve=False)
    return jplan.empty_result(spark)


def _condition_text(text: str, cond: JavaObject) -> str:
    """A REPLACE WHERE condition as the user wrote it (Spark's SQL of it when the parser kept no span)."""
    return jplan.text_of(text, cond) if jplan.span(cond) is not None else str(cond.sql())


def _truncate(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target = resolve(spark, jplan.identifier_parts(plan.table()))
    if target is None:
        return NOT_DELTA
    truncate(spark, target)
    return jplan.empty_result(spark)


def truncate(spark: SparkSession, target: DeltaTarget) -> None:
    """TRUNCATE TABLE: every file removed in one commit (operation TRUNCATE), as delta-spark
    (4.3+): no commit when the table has no files; metrics numRemovedFiles and executionTimeMs."""
    from pydelta.spark.dml.delete import prepare_delete
    from pydelta.txn.commit_info import Operation

    snapshot = table_snapshot(spark, target.path)
    prepared = prepare_delete(spark, snapshot, None)
    if snapshot.num_files == 0:
        return
    prepared.operation = Operation.truncate()
    prepared.metrics = {"numRemovedFiles": prepared.metrics.get("numRemovedFiles", snapshot.num_files),
                        "executionTimeMs": prepared.metrics.get("executionTimeMs", 0)}
    prepared.commit()


def _truncate_partition(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target = resolve(spark, jplan.identifier_parts(plan.table()))
    if target is None:
        return NOT_DELTA
    raise DeltaAnalysisError("[DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED] Operation not allowed: TRUNCATE TABLE on "
                             "Delta tables does not support partition predicates; use DELETE to delete specific "
                             "partitions or rows.")


DML_HANDLERS = {
    "DeleteFromTable": _delete,
    "UpdateTable": _update,
    "MergeIntoTable": _merge,
    "InsertIntoStatement": _insert,
    "OverwriteByExpression": _replace_where,
    "TruncateTable": _truncate,
    "TruncatePartition": _truncate_partition,
}
