"""`spark.sql(...)` with Delta: route each statement to pydelta or to Spark.

1. Delta's own statements (DESCRIBE HISTORY, RESTORE, VACUUM, ...) are parsed here.
2. Everything else is parsed by Spark's parser. Statements whose target is a Delta
   table (CREATE ... USING DELTA, INSERT, UPDATE, DELETE, MERGE, ALTER, DESCRIBE,
   SHOW ...) are run by pydelta.
3. Any other statement runs in Spark, with each Delta relation it reads replaced by
   pydelta's scan of the table (queries, CTAS sources, views over Delta tables).
Statements that touch no Delta table reach Spark untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydelta.errors import DeltaParseError
from pydelta.spark.base import jplan
from pydelta.spark.base._typing import JavaObject, SparkSession
from pydelta.spark.base.jplan import NOT_DELTA
from pydelta.spark.base.pyspark_compat import refuse_newer_sql
from pydelta.spark.read import plan_pruning
from pydelta.spark.sql.at_syntax import rewrite_at_syntax
from pydelta.spark.sql.queries import (
    drop_views,
    find_delta_relations,
    is_table_changes,
    substitute,
    substitute_plan,
)
from pydelta.spark.sql.statements import parse_utility, run_utility
from pydelta.spark.sql.targets import TargetCache

# Statements whose views must outlive the statement (they store SQL text referring to them).
_KEEPS_VIEWS = {"CreateViewCommand", "CreateView", "CacheTableAsSelect", "CacheTable"}


def run_sql(spark: SparkSession, text: str, original: Callable[[str], Any], *, has_args: bool = False) -> Any:
    """Run `text` as spark.sql does, with Delta tables served by pydelta.

    With parameter markers (`has_args`), queries over Delta tables run in Spark with the
    arguments; Delta's own statements and DML/DDL on a Delta table raise
    _ParametersNeedBinding before doing anything (the caller binds the markers into the text).
    """
    try:
        utility = parse_utility(text)
    except DeltaParseError:
        if has_args:  # a marker where the grammar wants a value: bind, then parse again
            raise _ParametersNeedBinding("a Delta statement") from None
        raise
    if utility is not None:
        if has_args:
            raise _ParametersNeedBinding(type(utility).__name__)
        return run_utility(spark, utility)
    try:
        plan = jplan.parse_plan(spark, text)
    except Exception:  # noqa: BLE001 - Spark reports its own parse error, unchanged
        refuse_newer_sql(text)
        rewritten = rewrite_at_syntax(text)  # `t@v5` on a Spark whose parser lacks it (before 4.2)
        if rewritten is None:
            return original(text)
        try:
            plan = jplan.parse_plan(spark, rewritten)
        except Exception:  # noqa: BLE001
            return original(text)
        text = rewritten
    from pydelta.spark.sql.handlers import HANDLERS

    kind = jplan.node_kind(plan)
    summary = jplan.summarize(plan)
    resolved: TargetCache = {}  # name -> Delta target, for this statement
    changes = any(k == "UnresolvedTableValuedFunction" and is_table_changes(p) for k, p in summary.names)
    handler = HANDLERS.get(kind)
    if handler is not None:
        if has_args:  # served from its text (when on a Delta table): bind the markers first
            raise _ParametersNeedBinding(kind)
        result = handler(spark, text, plan)
        if result is not NOT_DELTA:
            return result
    elif not changes and (not summary.names or (summary.exact and not _names_delta_table(spark, summary, resolved))):
        # no Delta table named in it: Spark's, untouched (but views over Delta reads still skip files)
        return plan_pruning.prune(original(text))
    else:
        refuse_unserved_delta_command(spark, plan, resolved)
    return plan_pruning.prune(run_with_delta_relations(spark, text, plan, original, summary.has_subqueries, resolved,
                                                       plan_substitution=not has_args))


# Commands on a Delta table that Spark's catalog serves correctly on its own.
_SPARK_SERVES = {"RenameTable", "RefreshTable", "UncacheTable", "CacheTable", "DropTable", "ShowTables",
                 "ShowViews", "SetCatalogAndNamespace", "ShowNamespaces"}

# Statements Spark refuses on v2 tables (and so on delta-spark's), by plan class.
_SPARK_REFUSES_ON_V2 = {"AnalyzeTable": "ANALYZE TABLE", "AnalyzeColumn": "ANALYZE TABLE",
                       "RepairTable": "MSCK REPAIR TABLE"}

_STATEMENT_NAMES = {"RecoverPartitions": "MSCK REPAIR TABLE",
                    "AddPartitions": "ALTER TABLE ... ADD PARTITION",
                    "DropPartitions": "ALTER TABLE ... DROP PARTITION",
                    "RenamePartitions": "ALTER TABLE ... PARTITION ... RENAME TO",
                    "SetTableLocation": "ALTER TABLE ... SET LOCATION",
                    "SetTableSerDeProperties": "ALTER TABLE ... SET SERDE",
                    "ReplaceColumns": "ALTER TABLE ... REPLACE COLUMNS", "CommentOnTable": "COMMENT ON TABLE",
                    "ShowTableExtended": "SHOW TABLE EXTENDED"}


def refuse_unserved_delta_command(spark: SparkSession, plan: JavaObject, cache: TargetCache) -> None:
    """A command pydelta does not serve, aimed at a Delta table: a clear error, never a JVM stack."""
    kind = jplan.kind(plan)
    if kind in _SPARK_SERVES or not jplan.is_command(spark, plan):
        return
    from pydelta.spark.sql.targets import resolve

    for node in jplan.walk(plan):
        if jplan.kind(node) in ("UnresolvedTable", "UnresolvedTableOrView") and \
                resolve(spark, jplan.identifier_parts(node), cache) is not None:
            from pydelta.errors import DeltaNotImplementedError

            if kind in _SPARK_REFUSES_ON_V2:  # delta-spark's tables are v2 tables: Spark's own error
                from pydelta.errors import DeltaAnalysisError

                raise DeltaAnalysisError(f"[NOT_SUPPORTED_COMMAND_FOR_V2_TABLE] {_SPARK_REFUSES_ON_V2[kind]} is not "
                                         "supported for v2 tables.")
            name = _STATEMENT_NAMES.get(kind, kind)
            raise DeltaNotImplementedError(f"{name} on a Delta table is not supported by pydelta yet")


def run_with_delta_relations(spark: SparkSession, text: str, plan: JavaObject, original: Callable[[str], Any],
                              has_subqueries: bool = True, resolved: TargetCache | None = None,
                              plan_substitution: bool = False) -> Any:
    """Run `text` in Spark with every Delta relation in it replaced by pydelta's scan."""
    relations = find_delta_relations(spark, text, plan, subqueries=has_subqueries, cache=resolved)
    if not relations:
        return original(text)
    if plan_substitution and not jplan.is_command(spark, plan):
        df = substitute_plan(spark, plan, relations)  # a query: keeps the scans' metadata columns
        if df is not None:
            return df
    rewritten, views = substitute(spark, text, relations)
    keep = jplan.kind(plan) in _KEEPS_VIEWS
    try:
        return original(rewritten)
    finally:
        if not keep:
            drop_views(spark, views)


class _ParametersNeedBinding(Exception):
    """A statement pydelta serves from its text carries parameter markers: bind them first."""


def _names_delta_table(spark: SparkSession, summary: jplan.TreeSummary, cache: TargetCache) -> bool:
    """Whether any table the statement names is a Delta table (statements with odd names count as yes)."""
    from pydelta.spark.sql.targets import resolve

    if not summary.exact:
        return True
    return any(kind != "UnresolvedTableValuedFunction" and resolve(spark, parts, cache) is not None
               for kind, parts in summary.names)
