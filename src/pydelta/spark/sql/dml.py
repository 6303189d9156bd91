"""INSERT, UPDATE, DELETE, MERGE and TRUNCATE on Delta tables, from Spark's parsed plans.

Each handler gets Spark's unresolved plan of the statement and either runs it
(returning delta-spark's result DataFrame) or answers NOT_DELTA so the router
hands the statement to Spark.
"""

from __future__ import annotations

from typing import Any

from pydelta.errors import DeltaAnalysisError, DeltaNotImplementedError
from pydelta.spark.sql import jplan
from pydelta.spark.sql.router import NOT_DELTA
from pydelta.spark.sql.targets import DeltaTarget, quote_parts, resolve


# ---- helpers -----------------------------------------------------------------------------


def _relation_target(spark: Any, node: Any) -> tuple[DeltaTarget | None, str | None, Any]:
    """(Delta target, alias, relation node) of a DML target: a relation, maybe aliased."""
    alias = None
    if jplan.kind(node) == "SubqueryAlias":
        alias = str(node.alias())
        node = node.child()
    if jplan.kind(node) != "UnresolvedRelation":
        return None, alias, node
    return resolve(spark, jplan.identifier_parts(node)), alias, node


def _dataframe_of(spark: Any, text: str, node: Any) -> Any:
    """A DataFrame for a plan node of the statement (a relation or a query), Delta tables included."""
    if jplan.kind(node) == "SubqueryAlias":
        return _dataframe_of(spark, text, node.child()).alias(str(node.alias()))
    if jplan.kind(node) == "UnresolvedRelation":
        parts = jplan.identifier_parts(node)
        target = resolve(spark, parts)
        if target is not None:
            from pydelta.log.snapshot import load_snapshot
            from pydelta.spark.read import read_snapshot

            return read_snapshot(spark, load_snapshot(target.path)).alias(parts[-1])
        return spark.table(quote_parts(parts)).alias(parts[-1])  # a view or another source's table
    if jplan.kind(node) == "LocalRelation":  # INSERT ... VALUES: Spark parsed the literal rows
        from pyspark.sql import DataFrame

        jdf = spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, node)
        return DataFrame(jdf, spark)
    return spark.sql(jplan.text_of(text, node))


def _is_true_literal(expr: Any) -> bool:
    return jplan.kind(expr) == "Literal" and str(expr.sql()).lower() == "true"


def _delta_table(spark: Any, target: DeltaTarget, alias: str | None) -> Any:
    from pydelta.tables import DeltaTable

    table = DeltaTable.forPath(spark, target.path)
    return table.alias(alias) if alias else table


# ---- DML ---------------------------------------------------------------------------------


def _delete(spark: Any, text: str, plan: Any) -> Any:
    target, alias, _ = _relation_target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    from pydelta.spark.dml.delete import prepare_delete

    condition = None if _is_true_literal(plan.condition()) else plan.condition().sql()
    table = _delta_table(spark, target, alias)
    prepared = prepare_delete(spark, table.snapshot(), condition, alias=alias)
    prepared.commit()
    rows = prepared.metrics.get("numDeletedRows", -1)
    return spark.createDataFrame([(int(rows),)], "num_affected_rows BIGINT")


def _update(spark: Any, text: str, plan: Any) -> Any:
    target, alias, _ = _relation_target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    from pydelta.spark.dml.update import column_mapping, prepare_update

    table = _delta_table(spark, target, alias)
    assignments = _assignments(plan, alias, _column_defaults(table))
    condition = jplan.option(plan.condition())
    prepared = prepare_update(spark, table.snapshot(), condition.sql() if condition is not None else None,
                              column_mapping(assignments, "SET"), alias=alias)
    prepared.commit()
    return spark.createDataFrame([(int(prepared.metrics.get("numUpdatedRows", 0)),)], "num_affected_rows BIGINT")


def _merge(spark: Any, text: str, plan: Any) -> Any:
    target, alias, _ = _relation_target(spark, plan.targetTable())
    if target is None:
        return NOT_DELTA
    source = _dataframe_of(spark, text, plan.sourceTable())
    table = _delta_table(spark, target, alias)
    defaults = _column_defaults(table)
    builder = table.merge(source, plan.mergeCondition().sql())
    for action in jplan.seq(plan.matchedActions()):
        builder = _merge_clause(builder, action, "matched", alias, defaults)
    for action in jplan.seq(plan.notMatchedActions()):
        builder = _merge_clause(builder, action, "notMatched", alias, defaults)
    for action in jplan.seq(plan.notMatchedBySourceActions()):
        builder = _merge_clause(builder, action, "notMatchedBySource", alias, defaults)
    if plan.withSchemaEvolution():
        builder = builder.withSchemaEvolution()
    return builder.execute()


def _column_defaults(table: Any) -> dict[str, str]:
    """lower-case column name -> the SQL its DEFAULT keyword stands for (typed; NULL without a default)."""
    from pydelta.spark.column_defaults import CURRENT_DEFAULT_KEY

    out = {}
    for field in table.toDF().schema.fields:
        sql = (field.metadata or {}).get(CURRENT_DEFAULT_KEY, "NULL")
        out[field.name.lower()] = f"CAST(({sql}) AS {field.dataType.simpleString()})"
    return out


def _assignments(action: Any, alias: str | None, defaults: dict[str, str]) -> dict[str, str]:
    """SET / VALUES of a MERGE clause as {column: SQL}; the DEFAULT keyword becomes the column's default."""
    from pydelta.spark.column_defaults import is_default_keyword

    out = {}
    for a in jplan.seq(action.assignments()):
        key = a.key().sql()
        if alias and key.lower().startswith(alias.lower() + "."):
            key = key[len(alias) + 1:]
        value = a.value()
        bare = key.strip("`").lower()
        out[key] = defaults.get(bare, "NULL") if is_default_keyword(value) else value.sql()
    return out


def _merge_clause(builder: Any, action: Any, when: str, alias: str | None, defaults: dict[str, str]) -> Any:
    kind = jplan.kind(action)
    cond = jplan.option(action.condition())
    condition = cond.sql() if cond is not None else None
    if when == "matched":
        if kind == "UpdateAction":
            return builder.whenMatchedUpdate(condition, _assignments(action, alias, defaults))
        if kind == "UpdateStarAction":
            return builder.whenMatchedUpdateAll(condition)
        if kind == "DeleteAction":
            return builder.whenMatchedDelete(condition)
    elif when == "notMatched":
        if kind == "InsertAction":
            return builder.whenNotMatchedInsert(condition, _assignments(action, alias, defaults))
        if kind == "InsertStarAction":
            return builder.whenNotMatchedInsertAll(condition)
    else:
        if kind == "UpdateAction":
            return builder.whenNotMatchedBySourceUpdate(condition, _assignments(action, alias, defaults))
        if kind == "DeleteAction":
            return builder.whenNotMatchedBySourceDelete(condition)
    raise DeltaNotImplementedError(f"MERGE clause {kind} in WHEN {when.upper()} is not supported")


def _insert(spark: Any, text: str, plan: Any) -> Any:
    target, _, _ = _relation_target(spark, plan.table())
    if target is None:
        return NOT_DELTA
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    from pydelta.log.snapshot import load_snapshot
    from pydelta.spark.read import spark_schema
    from pydelta.spark.store_assignment import inserted, widens_on_insert
    from pydelta.spark.write import nullable_type, write_dataframe

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

    from pydelta.spark.column_defaults import default_value, values_with_defaults

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
    if not by_name and len(data.columns) != len(columns):
        raise DeltaAnalysisError(
            f"[INSERT_COLUMN_ARITY_MISMATCH] cannot write to {target.display()}: the data has {len(data.columns)} "
            f"columns, the target {len(columns)} ({', '.join(columns)})"
        )
    options: dict[str, Any] = {}
    if jplan.has_method(plan, "withSchemaEvolution") and plan.withSchemaEvolution():
        options["mergeSchema"] = "true"  # INSERT WITH SCHEMA EVOLUTION
    widen = widens_on_insert(spark, snapshot.configuration, options)
    exprs = []
    if not by_name:  # positional: the query's own names may repeat (CAST(id AS STRING) is named `id` too)
        data = data.toDF(*[f"__pydelta_insert_{i}" for i in range(len(data.columns))])
    for source, name in zip(data.schema.fields, columns):
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




def _truncate(spark: Any, text: str, plan: Any) -> Any:
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


def _truncate_partition(spark: Any, text: str, plan: Any) -> Any:
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
