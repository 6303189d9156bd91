"""Planning a MERGE, before any Spark job runs.

Checks the clauses, evolves the target schema when asked, analyzes the merge condition and
every clause against `source FULL OUTER JOIN (empty) target` (so errors surface before any
data is read), types each clause's values for the target schema, and picks the candidate
target files by data skipping. The result, a MergePlan, is all the later stages read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from pydelta.errors import DeltaAnalysisError
from pydelta.log.data_skipping import FileSkipper
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.actions import Metadata
from pydelta.protocol.identity import IdentitySpec, identity_columns
from pydelta.protocol.predicates import Or, Predicate, Unknown
from pydelta.protocol.schema import StructType, quote_identifier
from pydelta.spark.base._typing import Column, DataFrame, JavaObject, SparkSession
from pydelta.spark.base.connect_session import is_connect
from pydelta.spark.base.predicates import _children, _name, translate
from pydelta.spark.dml.commit import check_dml_supported, new_transaction, transaction_metadata
from pydelta.spark.dml.merge_clauses import (
    MergeClause,
    ResolvedClause,
    check_clauses,
    check_identity_assignments,
    clause_code,
)
from pydelta.spark.dml.merge_schema import evolve_target_schema, schema_evolution_enabled, source_fields
from pydelta.spark.dml.update import resolve_assignments, typed_values
from pydelta.spark.read.conditions import READ_ALL, Condition, analysis_error, analyze, and_all, as_column, conjuncts
from pydelta.spark.read.scan import build_dataframe, spark_schema
from pydelta.txn.row_tracking import check_row_ids_preserved, materializes_row_ids
from pydelta.txn.transaction import OptimisticTransaction

#: The target's alias in the merge's joins when the table has none.
TARGET_ALIAS = "__pydelta_merge_target"


@dataclass
class TargetColumns:
    """The target side of the merge's joins, by table column name."""

    alias: str
    names: dict[str, str]  # lower-case name -> name in the table's (read) schema
    out_schema: StructType  # the schema rows are written with (evolved, if the merge evolves it)

    def column(self, name: str) -> Column:
        from pyspark.sql import functions as F

        return F.col(f"{quote_identifier(self.alias)}.{quote_identifier(name)}")

    def current(self, name: str) -> Column:
        """The target row's value of column `name`: NULL for a column schema evolution adds."""
        from pyspark.sql import functions as F

        if name.lower() in self.names:
            return self.column(self.names[name.lower()])
        return F.lit(None).cast(spark_schema(self.out_schema)[name].dataType)


@dataclass
class MergePlan:
    """A MERGE analyzed against one snapshot, in the transaction that will commit it."""

    spark: SparkSession
    snapshot: Snapshot
    txn: OptimisticTransaction
    source: DataFrame
    condition: Column  # the merge condition
    merge_cond: Condition  # ... analyzed (history records its SQL)
    join: JavaObject | None  # the analyzed Join node (left: source, right: target)
    files: pa.Table  # the snapshot's files
    read_schema: StructType  # the table's schema as read
    metadata: Metadata  # the metadata the commit writes with (schema evolved, maybe)
    target: TargetColumns
    resolved: list[ResolvedClause]  # every clause, in order
    keep_ids: bool  # rewritten target rows keep their materialized row IDs
    identity_codes: dict[str, list[int]]  # identity column -> codes of the INSERTs that generate it
    identity_specs: list[IdentitySpec]  # ... and those columns' specs

    @property
    def root(self) -> str:
        return self.snapshot.table_root

    @property
    def out_schema(self) -> StructType:
        return self.target.out_schema

    @property
    def matched(self) -> list[ResolvedClause]:
        return [r for r in self.resolved if r.clause.kind == "matched"]

    @property
    def inserts(self) -> list[ResolvedClause]:
        """The NOT MATCHED (insert) clauses."""
        return [r for r in self.resolved if r.clause.kind == "notMatched"]

    @property
    def by_source(self) -> list[ResolvedClause]:
        return [r for r in self.resolved if r.clause.kind == "notMatchedBySource"]

    @property
    def insert_only(self) -> bool:
        return not self.matched and not self.by_source

    @property
    def only_unconditional_delete(self) -> bool:
        """A single unconditional MATCHED DELETE: exempt from the multiple-match error (as in delta-spark)."""
        matched = self.matched
        return len(matched) == 1 and matched[0].clause.action == "delete" and matched[0].clause.condition is None


def plan_merge(spark: SparkSession, snapshot: Snapshot, source: DataFrame, condition: Any,
               clauses: list[MergeClause], *, schema_evolution: bool, alias: str | None) -> MergePlan:
    """Check and analyze the merge; stages the evolved schema (if any) in a new transaction."""
    check_clauses(clauses)
    check_dml_supported(snapshot, "MERGE", removes_rows=False)
    check_row_ids_preserved(snapshot, "MERGE")
    keep_ids = materializes_row_ids(snapshot.metadata)
    txn = new_transaction(spark, snapshot)
    read_md = snapshot.metadata
    files = snapshot.files()
    cond_col = as_column(condition)
    check_identity_assignments(read_md.schema, clauses, source)
    evolve = schema_evolution_enabled(spark, schema_evolution)
    if evolve:
        evolve_target_schema(txn, read_md, source, clauses, alias)
    metadata = transaction_metadata(txn)
    target = TargetColumns(alias or TARGET_ALIAS, {f.name.lower(): f.name for f in read_md.schema.fields},
                           metadata.schema)

    empty_target = build_dataframe(spark, snapshot, files.slice(0, 0)).alias(target.alias)
    analysis_df = _analysis_join(source, empty_target, cond_col)
    merge_cond = analyze(analysis_df, cond_col, "the merge condition")
    # Over Spark Connect the client sees no analyzed plan (no join node): each clause's side is
    # checked by the server analyzing its expressions against that side alone.
    join = None if is_connect(spark) else _join_node(analysis_df._jdf.queryExecution().analyzed())
    resolved = _resolve_clauses(clauses, source, analysis_df, join, read_md.schema, target, alias, evolve)
    if join is None:
        for r in resolved:
            if r.clause.kind != "matched":
                _check_side_on_server(source if r.clause.kind == "notMatched" else empty_target, r)
    identity_codes = _identity_inserts(target.out_schema, resolved)
    return MergePlan(
        spark=spark, snapshot=snapshot, txn=txn, source=source, condition=cond_col, merge_cond=merge_cond,
        join=join, files=files, read_schema=read_md.schema, metadata=metadata, target=target, resolved=resolved,
        keep_ids=keep_ids, identity_codes=identity_codes,
        identity_specs=[s for s in identity_columns(target.out_schema) if s.name in identity_codes],
    )


# ---- analysis ------------------------------------------------------------------------------------------


def _analysis_join(source: DataFrame, empty_target: DataFrame, condition: Column) -> DataFrame:
    """`source FULL OUTER JOIN target` over no target files: every expression of the merge
    resolves against it without reading data."""
    try:
        return source.join(empty_target, condition, "full_outer")
    except Exception as e:
        raise analysis_error("[DELTA_MERGE_UNRESOLVED_EXPRESSION] cannot resolve the merge condition", e) from None


def _join_node(plan: JavaObject) -> JavaObject | None:
    while _name(plan) != "Join":
        kids = _children(plan)
        if not kids:
            return None
        plan = kids[0]
    return plan


def _resolve_clauses(clauses: list[MergeClause], source: DataFrame, analysis_df: DataFrame, join: JavaObject | None,
                     read_schema: StructType, target: TargetColumns, alias: str | None,
                     evolve: bool) -> list[ResolvedClause]:
    """Each clause with its action code, analyzed condition and typed values, in order."""
    src_fields = source_fields(source)
    resolved: list[ResolvedClause] = []
    counters = {"matched": 0, "notMatched": 0, "notMatchedBySource": 0}
    for clause in clauses:
        counters[clause.kind] += 1
        code = clause_code(clause, counters[clause.kind])
        cond = None
        if clause.condition is not None:
            cond = analyze(analysis_df, clause.condition, f"the {clause.clause_name} condition")
        values: dict[str, Any] = {}
        if clause.action != "delete":
            if clause.star:
                raw = _star_values(clause, source, read_schema, src_fields, evolve)
            else:
                raw = dict(clause.assignments or {})
            values = resolve_assignments(target.out_schema, raw, alias, target.current, clause=clause.clause_name)
            if clause.action == "insert" and not clause.star:
                values = _with_column_defaults(target.out_schema, values)
            values = typed_values(analysis_df, target.out_schema, values, f"{clause.clause_name}")
        resolved.append(ResolvedClause(clause, code, cond, values))
        if join is not None and clause.kind != "matched":
            _check_side(analysis_df, join, resolved[-1])
    return resolved


def _star_values(clause: MergeClause, source: DataFrame, read_schema: StructType, src_fields: dict[str, Any],
                 evolve: bool) -> dict[str, Column]:
    """`*` as SET/VALUES assignments, keyed like user keys (quoted names)."""
    out = {}
    if evolve:
        for field in source.schema.fields:
            out[quote_identifier(field.name)] = source[quote_identifier(field.name)]
        return out
    for f in read_schema.fields:
        sf = src_fields.get(f.name.lower())
        if sf is None:
            if f.metadata.get("delta.generationExpression") or "delta.identity.start" in f.metadata:
                continue  # computed from the other columns, or generated (identity)
            cols = ", ".join(quote_identifier(n) for n in source.columns)
            kind = "UPDATE" if clause.action == "update" else "INSERT"
            raise DeltaAnalysisError(
                f"[DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve {quote_identifier(f.name)} in {kind} "
                f"clause given columns {cols}."
            )
        out[quote_identifier(f.name)] = source[quote_identifier(sf.name)]
    return out


def _with_column_defaults(schema: StructType, values: dict[str, Any]) -> dict[str, Any]:
    """An INSERT clause's values plus each unassigned column's DEFAULT (delta-spark fills them so)."""
    from pyspark.sql import functions as F

    from pydelta.spark.ddl.column_defaults import CURRENT_DEFAULT_KEY

    out = dict(values)
    for f in schema.fields:
        sql = f.metadata.get(CURRENT_DEFAULT_KEY)
        if f.name not in out and sql is not None:
            out[f.name] = F.expr(str(sql))
    return out


def _check_side(analysis_df: DataFrame, join: JavaObject, r: ResolvedClause) -> None:
    """NOT MATCHED clauses may only use source columns, NOT MATCHED BY SOURCE clauses only target columns."""
    side = join.left() if r.clause.kind == "notMatched" else join.right()
    allowed = side.outputSet()
    exprs: list[Any] = [r.cond.expr] if r.cond is not None and r.cond.expr is not None else []
    if r.values:
        plan = analysis_df.select(*[v.alias(f"v{i}") for i, v in enumerate(r.values.values())])._jdf
        project = plan.queryExecution().analyzed().projectList()
        exprs += [project.apply(i) for i in range(project.size())]
    for expr in exprs:
        refs = expr.references()
        if refs.subsetOf(allowed):
            continue
        seq = refs.toSeq()
        bad = [seq.apply(i) for i in range(seq.size()) if not allowed.contains(seq.apply(i))]
        out = side.output()
        cols = ", ".join(str(out.apply(i).sql()) for i in range(out.size()))
        where = "condition" if r.cond is not None and expr is r.cond.expr else "clause"
        raise DeltaAnalysisError(
            f"[DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve {bad[0].sql() if bad else expr.sql()} in "
            f"{r.clause.clause_name} {where} given columns {cols}."
        )


def _check_side_on_server(side: DataFrame, r: ResolvedClause) -> None:
    """_check_side over Spark Connect: the clause's expressions must resolve against its side
    alone (one round trip; a second, per expression, only to name the one that does not)."""
    exprs = ([("condition", r.cond.column)] if r.cond is not None else []) + [
        ("clause", value) for value in r.values.values()]
    if not exprs:
        return
    try:
        _ = side.select(*[column.alias(f"v{i}") for i, (_, column) in enumerate(exprs)]).schema
        return
    except Exception:  # noqa: BLE001 - the server's analysis error; ours names the clause and side
        pass
    for where, column in exprs:
        try:
            _ = side.select(column.alias("v")).schema
        except Exception:  # noqa: BLE001
            cols = ", ".join(quote_identifier(c) for c in side.columns)
            raise DeltaAnalysisError(f"[DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve {column} in "
                                     f"{r.clause.clause_name} {where} given columns {cols}.") from None


def _identity_inserts(schema: StructType, resolved: list[ResolvedClause]) -> dict[str, list[int]]:
    """Identity column -> codes of the INSERT clauses that leave it to be generated."""
    out: dict[str, list[int]] = {}
    for spec in identity_columns(schema):
        codes = [r.code for r in resolved if r.clause.action == "insert" and spec.name not in r.values]
        if codes:
            out[spec.name] = codes
    return out


# ---- candidate target files ------------------------------------------------------------------------------


def candidate_files(plan: MergePlan) -> pa.Table:
    """The target files that may hold rows a clause acts on, by data skipping; recorded as read.

    Skipping uses the target-only conjuncts of the merge condition and, for matched-only
    merges, of the MATCHED clause conditions; with NOT MATCHED BY SOURCE clauses every
    file is a candidate.
    """
    read_predicate: Predicate = READ_ALL
    side = None if plan.by_source else _target_side(plan)
    if side is not None:
        parts = [p for p in [side(plan.merge_cond)] if p is not None]
        if not plan.inserts and plan.matched:
            # Matched-only merges also skip files no matched clause condition can touch.
            ors = _any_matched_condition(plan.matched, side)
            if ors is not None:
                parts.append(ors)
        if parts:
            read_predicate = and_all(parts)
    files = plan.files
    if read_predicate is not READ_ALL:
        candidates = FileSkipper.for_metadata(files, plan.snapshot.metadata).prune(read_predicate)
    else:
        candidates = files
    plan.txn.read_predicate(read_predicate)
    plan.txn.read_files(candidates.column("path").to_pylist())
    return candidates


TargetSide = Callable[[Condition], "Predicate | None"]


def _target_side(plan: MergePlan) -> TargetSide | None:
    """How to take a condition's target-only conjuncts for skipping: from Spark's analyzed plan
    on classic sessions; over Spark Connect (no plan) from the client's own unresolved
    expression, over the target's columns only. None when there is no way."""
    if is_connect(plan.spark):
        from pydelta.spark.read.connect.expressions import translate_target_column

        def connect_side(condition: Condition) -> Predicate | None:
            p = translate_target_column(condition.column._expr, plan.read_schema, plan.target.alias,
                                        plan.source.columns)
            return None if isinstance(p, Unknown) else p

        return connect_side
    if plan.join is None:
        return None
    target_attrs = plan.join.right().outputSet()
    return lambda condition: _target_only_predicate(condition.expr, target_attrs)


def _any_matched_condition(matched: list[ResolvedClause], side: TargetSide) -> Predicate | None:
    """The OR of the MATCHED clauses' target-only conditions; None when one has none (it can hit any file)."""
    ors: Predicate | None = None
    for r in matched:
        p = side(r.cond) if r.cond is not None else None
        if p is None:
            return None
        ors = p if ors is None else Or(ors, p)
    return ors


def _target_only_predicate(expr: JavaObject, target_attrs: JavaObject) -> Predicate | None:
    """The target-only conjuncts of `expr`, translated for data skipping (None when there are none)."""
    parts = []
    for conj in conjuncts(expr):
        try:
            if conj.deterministic() and conj.references().nonEmpty() and conj.references().subsetOf(target_attrs):
                parts.append(translate(conj))
        except Exception:
            continue
    return and_all(parts) if parts else None
