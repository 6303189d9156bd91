"""INSERT, UPDATE, DELETE, MERGE and TRUNCATE on Delta tables, from Spark's parsed plans.

Each handler gets Spark's unresolved plan of the statement and either runs it
(returning delta-spark's result DataFrame) or answers NOT_DELTA so the router
hands the statement to Spark.
"""

from __future__ import annotations

from typing import Any, Callable

from pydelta.errors import DeltaAnalysisError, DeltaNotImplementedError
from pydelta.spark.sql import jplan
from pydelta.spark.sql.jplan import NOT_DELTA
from pydelta.spark.sql.targets import DeltaTarget, quote_parts, resolve
from pydelta.spark.jvm import jvm
from pydelta.spark._typing import JavaObject, SparkSession


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
            from pydelta.log.snapshot import load_snapshot
            from pydelta.spark.read.scan import read_snapshot

            return read_snapshot(spark, load_snapshot(target.path)).alias(parts[-1])
        return spark.table(quote_parts(parts)).alias(parts[-1])  # a view or another source's table
    if jplan.kind(node) == "LocalRelation":  # INSERT ... VALUES: Spark parsed the literal rows
        from pyspark.sql import DataFrame

        jdf = jvm(spark).org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, node)
        return DataFrame(jdf, spark)
    return spark.sql(jplan.text_of(text, node))


def _is_true_literal(expr: Any) -> bool:
    return jplan.kind(expr) == "Literal" and str(expr.sql()).lower() == "true"


def _delta_table(spark: SparkSession, target: DeltaTarget, alias: str | None) -> Any:
    from pydelta.spark.table_api import DeltaTableApi

    table = DeltaTableApi.forPath(spark, target.path)
    return table.alias(alias) if alias else table


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
    table = _delta_table(spark, target, alias)
    prepared = prepare_delete(spark, table.snapshot(), condition, alias=alias)
    prepared.commit()
    rows = prepared.metrics.get("numDeletedRows", -1)
    return spark.createDataFrame([(int(rows),)], "num_affected_rows BIGINT")


def _update(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target, alias, node = _relation_target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    from pydelta.spark.dml.update import column_mapping, prepare_update

    alias, fix = _unaliased(spark, alias, node)
    table = _delta_table(spark, target, alias)
    assignments = _assignments(plan, alias, _column_defaults(table), fix)
    condition = jplan.option(plan.condition())
    prepared = prepare_update(spark, table.snapshot(), fix(condition).sql() if condition is not None else None,
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
    table = _delta_table(spark, target, alias)
    defaults = _column_defaults(table)
    builder = table.merge(source, fix(plan.mergeCondition()).sql())
    for action in jplan.seq(plan.matchedActions()):
        builder = _merge_clause(builder, action, "matched", alias, defaults, fix)
    for action in jplan.seq(plan.notMatchedActions()):
        builder = _merge_clause(builder, action, "notMatched", alias, defaults, fix)
    for action in jplan.seq(plan.notMatchedBySourceActions()):
        builder = _merge_clause(builder, action, "notMatchedBySource", alias, defaults, fix)
    if plan.withSchemaEvolution():
        builder = builder.withSchemaEvolution()
    return builder.execute()


def _column_defaults(table: Any) -> dict[str, str]:
    """lower-case column name -> the SQL its DEFAULT keyword stands for (typed; NULL without a default)."""
    from pydelta.spark.ddl.column_defaults import CURRENT_DEFAULT_KEY

    out = {}
    for field in table.toDF().schema.fields:
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


def _merge_clause(builder: Any, action: Any, when: str, alias: str | None, defaults: dict[str, str],
                  fix: Requalify) -> Any:
    kind = jplan.kind(action)
    cond = jplan.option(action.condition())
    condition = fix(cond).sql() if cond is not None else None
    if when == "matched":
        if kind == "UpdateAction":
            return builder.whenMatchedUpdate(condition, _assignments(action, alias, defaults, fix))
        if kind == "UpdateStarAction":
            return builder.whenMatchedUpdateAll(condition)
        if kind == "DeleteAction":
            return builder.whenMatchedDelete(condition)
    elif when == "notMatched":
        if kind == "InsertAction":
            return builder.whenNotMatchedInsert(condition, _assignments(action, alias, defaults, fix))
        if kind == "InsertStarAction":
            return builder.whenNotMatchedInsertAll(condition)
    else:
        if kind == "UpdateAction":
            return builder.whenNotMatchedBySourceUpdate(condition, _assignments(action, alias, defaults, fix))
        if kind == "DeleteAction":
            return builder.whenNotMatchedBySourceDelete(condition)
    raise DeltaNotImplementedError(f"MERGE clause {kind} in WHEN {when.upper()} is not supported")


def _insert(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    target, _, _ = _relation_target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    from pydelta.log.snapshot import load_snapshot
    from pydelta.spark.read.scan import spark_schema
    from pydelta.spark.write.store_assignment import inserted, widens_on_insert
    from pydelta.spark.write.conform import nullable_type
    from pydelta.spark.write.dataframe import write_dataframe

    snapshot = load_snapshot(target.path)
    schema = spark_schema(snapshot.schema)
    static = {str(k): jplan.option(v) for k, v in jplan.scala_map(plan.partitionSpec()).items()}
    static_given = {k: v for k, v in static.items() if v is not None}
    user_cols = [str(c) for c in jplan.seq(plan.userSpecifiedCols())]
    by_name = bool(plan.byName())
    table_cols = [f.name for f in schema.fields]

    def field_of(name: str) -> Any:
        for f in schema.fields:
            if f.name.lower() == name.lower():
                return f
        raise DeltaAnalysisError(f"[UNRESOLVED_COLUMN] column {name!r} is not in table {target.display()}")

    from pydelta.spark.ddl.column_defaults import default_value, values_with_defaults

    positional = user_cols or [c for c in table_cols if c.lower() not in {k.lower() for k in static_given}]
    data = None if by_name else values_with_defaults(spark, plan.query(), positional, field_of)
    if data is None:
        data = _dataframe_of(spark, text, plan.query())

    if by_name:
        columns = list(data.columns)
    elif user_cols:
        columns = user_cols
    else:
        columns = [c for c in table_cols if c.lower() not in {k.lower() for k in static_given}]
    options: dict[str, Any] = {}
    if jplan.has_method(plan, "withSchemaEvolution") and plan.withSchemaEvolution():
        options["mergeSchema"] = "true"  # INSERT WITH SCHEMA EVOLUTION
    extra = _evolved_columns(spark, data, columns, options) if not by_name and not user_cols else []
    columns = columns + extra
    if not by_name and len(data.columns) != len(columns):
        raise DeltaAnalysisError(
            f"[INSERT_COLUMN_ARITY_MISMATCH] cannot write to {target.display()}: the data has {len(data.columns)} "
            f"columns, the target {len(columns)} ({', '.join(columns)})"
        )
    widen = widens_on_insert(spark, snapshot.configuration, options)
    exprs = []
    if not by_name:  # positional: the query's own names may repeat (CAST(id AS STRING) is named `id` too)
        data = data.toDF(*[f"__pydelta_insert_{i}" for i in range(len(data.columns))])
    for source, name in zip(data.schema.fields, columns):
        if name in extra:  # a new column: schema evolution adds it with the source's type
            exprs.append(F.col(quote_parts([source.name])).alias(name))
            continue
        exprs.append(inserted(F.col(quote_parts([source.name])), source.dataType, field_of(name), widen))
    for name, value in static_given.items():
        exprs.append(inserted(F.lit(value), StringType(), field_of(name), widen=False))
    data = data.select(*exprs)
    present = {c.lower() for c in data.columns}
    generated = {f.name for f in snapshot.schema.fields
                 if "delta.generationExpression" in (f.metadata or {}) or "delta.identity.start" in (f.metadata or {})}
    for field in schema.fields:  # columns not given are NULL (generated and identity ones are computed on write)
        if field.name.lower() not in present and field.name not in generated:
            default = default_value(field)
            value = default if default is not None else F.lit(None)
            data = data.withColumn(field.name, value.cast(nullable_type(field.dataType)))
    mode = "overwrite" if plan.overwrite() else "append"
    replace = jplan.option(plan.replaceCriteriaOpt()) if jplan.has_method(plan, "replaceCriteriaOpt") else None
    if replace is not None:
        cond = replace.cond()
        options["replaceWhere"] = jplan.text_of(text, cond) if jplan.span(cond) is not None else cond.sql()
        mode = "overwrite"
    elif plan.overwrite() and static_given:
        options["replaceWhere"] = " AND ".join(
            f"`{field_of(k).name}` <=> CAST({jplan.string_literal(v)} AS {field_of(k).dataType.simpleString()})"
            for k, v in static_given.items())
    elif plan.overwrite() and static and len(static_given) < len(static):
        options["partitionOverwriteMode"] = "dynamic"
    write_dataframe(data, target.path, mode, None, options)
    return jplan.empty_result(spark)




def _evolved_columns(spark: SparkSession, data: Any, columns: list[str], options: dict[str, Any]) -> list[str]:
    """Names of the query's trailing columns beyond the table's, when schema evolution is on:
    delta-spark's by-position INSERT adds them to the table (without evolution: an arity error)."""
    from pydelta.spark.write.options import merge_schema_requested, session_conf

    if len(data.columns) <= len(columns) or not merge_schema_requested(options, session_conf(spark)):
        return []
    taken = {c.lower() for c in columns}
    extra = list(data.columns[len(columns):])
    if any(c.lower() in taken for c in extra):
        return []  # a clash: the arity error below says what is wrong
    return extra


def _truncate(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """TRUNCATE TABLE: every file removed in one commit (operation TRUNCATE), as delta-spark
    (4.3+): no commit when the table has no files; metrics numRemovedFiles and executionTimeMs."""
    table = plan.table()
    parts = jplan.identifier_parts(table)
    target = resolve(spark, parts)
    if target is None:
        return NOT_DELTA
    from pydelta.log.snapshot import load_snapshot
    from pydelta.spark.dml.delete import prepare_delete
    from pydelta.txn.commit_info import Operation

    snapshot = load_snapshot(target.path)
    prepared = prepare_delete(spark, snapshot, None)
    if snapshot.num_files == 0:
        return jplan.empty_result(spark)
    prepared.operation = Operation.truncate()
    prepared.metrics = {"numRemovedFiles": prepared.metrics.get("numRemovedFiles", snapshot.num_files),
                        "executionTimeMs": prepared.metrics.get("executionTimeMs", 0)}
    prepared.commit()
    return jplan.empty_result(spark)


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
    "TruncateTable": _truncate,
    "TruncatePartition": _truncate_partition,
}
