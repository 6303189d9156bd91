"""MERGE INTO a Delta table (delta-spark's DeltaMergeBuilder), copy-on-write.

Execution follows delta-spark's classic merge executor, as Spark jobs only:

1. Candidate target files: data skipping on the target-only conjuncts of the
   merge condition (and, for matched-only merges, of the clause conditions);
   all files when there are NOT MATCHED BY SOURCE clauses.
2. Find touched files: join the (persisted) source with the candidate target
   rows, each carrying a file number and its row index; one aggregation
   returns, per file, how many rows a clause would modify and whether several
   source rows match one target row. Only these per-file numbers reach the
   driver.
3. Rewrite the touched files: a right/full outer join of source and touched
   target rows; each output row gets the action of the first clause (in
   order, per kind) whose condition holds: update, delete, insert, or copy.
   Row counts are observed inside the same write job (Spark Observation).
4. Without touched files (or for insert-only merges), inserts are appended
   (a left-anti join against the target when rows may match); nothing is
   rewritten.

Multiple matches: a target row matched by several source rows is an error
(DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE) when a MATCHED clause
would update or delete it, except for delta-spark's exemption of a single
unconditional MATCHED DELETE. Unlike delta-spark, a row matched several times
that no clause modifies is not an error: it is kept (copied once).

Schema evolution (withSchemaEvolution() or
spark.databricks.delta.schema.autoMerge.enabled) adds top-level source columns
that `*` or SET/VALUES assign. With delta.enableChangeDataFeed, rewriting
merges also write change data (update pre/post images, deletes, inserts).

Everything commits in one transaction; an error (multiple matches, constraint
violations, conflicts) leaves the table unchanged.
"""

from __future__ import annotations

import re

import time
from dataclasses import dataclass, replace
from typing import Any, Mapping

import pyarrow as pa

from pydelta.errors import DeltaAnalysisError, MultipleSourceRowMatchingTargetRowInMergeError
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.actions import Metadata
from pydelta.protocol.predicates import Or, Predicate
from pydelta.protocol.schema import StructType, column_mapping_mode, parse_schema, quote_identifier
from pydelta.protocol import type_widening
from pydelta.protocol.identity import identity_columns as identity_columns_of
from pydelta.protocol.schema_evolution import as_nullable, assign_column_mapping
from pydelta.log.data_skipping import FileSkipper
from pydelta.spark.dml.common import (
    FILE_COL,
    READ_ALL,
    ROW_COL,
    Condition,
    DmlTypeError,
    PreparedCommit,
    analysis_error,
    analyze,
    and_all,
    cdf_enabled,
    as_column,
    check_dml_supported,
    check_row_ids_preserved,
    materializes_row_ids,
    column_mapping,
    conjuncts,
    count_dvs,
    discard_files,
    elapsed_ms,
    file_uris,
    logical_record_count,
    new_transaction,
    observation,
    observed,
    remove_actions,
    scan,
    total_bytes,
    with_change_type,
    write_cdc,
    write_rows,
)
from pydelta.spark.dml.deletion_vectors import DvDelete, mark_deleted, persistent_dvs, rows_by_file
from pydelta.spark.dml.update import resolve_assignments, split_name, typed_values
from pydelta.spark.predicates import _children, _name, translate
from pydelta.spark.read.scan import ROW_ID_COL, ROW_VERSION_COL, build_dataframe, spark_schema
from pydelta.spark.spark_errors import boundary_class
from pydelta.txn.commit_info import Operation
from pydelta.spark._typing import JavaObject, SparkSession

__all__ = [
    "DeltaMergeBuilder",
    "MultipleSourceRowMatchingTargetRowInMergeError",
    "MergeClause",
    "prepare_merge",
]

DOCS = "https://docs.delta.io/latest/delta-update.html#upsert-into-a-table-using-merge"
AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"

SOURCE_PRESENT = "__pydelta_source_row_present"
TARGET_PRESENT = "__pydelta_target_row_present"
ACTION = "__pydelta_merge_action"
DEDUPE_KEY = "__pydelta_merge_row_key"
TARGET_ALIAS = "__pydelta_merge_target"
FILE_IDX = "__pydelta_file_index"

COPY = 0
DROP = -1


# ---- clauses and the builder ------------------------------------------------------------------------


@dataclass(frozen=True)
class MergeClause:
    kind: str  # "matched" | "notMatched" | "notMatchedBySource"
    action: str  # "update" | "delete" | "insert"
    condition: Any = None  # pyspark Column or None
    assignments: dict[str, Any] | None = None  # None with star=True: updateAll / insertAll
    star: bool = False

    @property
    def clause_name(self) -> str:
        return {"matched": "MATCHED", "notMatched": "NOT MATCHED", "notMatchedBySource": "NOT MATCHED BY SOURCE"}[
            self.kind
        ] + f" {self.action.upper()}"


@boundary_class
class DeltaMergeBuilder:
    """`DeltaTable.merge(source, condition)`: add `when...` clauses, then `execute()`.

    Like delta-spark's, every `when...` call returns a new builder.
    """

    def __init__(self, table: Any, source: Any, condition: Any, clauses: tuple[MergeClause, ...] = (),
                 schema_evolution: bool = False) -> None:
        from pyspark.sql import DataFrame

        if not isinstance(source, DataFrame):
            raise DmlTypeError(f"the merge source must be a Spark DataFrame, found {type(source)}")
        if condition is None:
            raise DmlTypeError("the merge condition must be a Spark SQL Column or a string, found None")
        self._table = table
        self._source = source
        self._condition = as_column(condition, "'condition'")
        self._clauses = tuple(clauses)
        self._schema_evolution = schema_evolution

    def _with(self, clause: MergeClause | None = None, *, schema_evolution: bool | None = None) -> "DeltaMergeBuilder":
        out = DeltaMergeBuilder.__new__(DeltaMergeBuilder)
        out._table, out._source, out._condition = self._table, self._source, self._condition
        out._clauses = self._clauses + ((clause,) if clause is not None else ())
        out._schema_evolution = self._schema_evolution if schema_evolution is None else schema_evolution
        return out

    @staticmethod
    def _cond(condition: Any) -> Any:
        return None if condition is None else as_column(condition, "'condition'")

    def whenMatchedUpdate(self, condition: Any = None, set: Any = None) -> "DeltaMergeBuilder":  # noqa: A002
        values = column_mapping(set, "'set' in whenMatchedUpdate")
        return self._with(MergeClause("matched", "update", self._cond(condition), values))

    def whenMatchedUpdateAll(self, condition: Any = None) -> "DeltaMergeBuilder":
        return self._with(MergeClause("matched", "update", self._cond(condition), None, star=True))

    def whenMatchedDelete(self, condition: Any = None) -> "DeltaMergeBuilder":
        return self._with(MergeClause("matched", "delete", self._cond(condition)))

    def whenNotMatchedInsert(self, condition: Any = None, values: Any = None) -> "DeltaMergeBuilder":
        vals = column_mapping(values, "'values' in whenNotMatchedInsert")
        return self._with(MergeClause("notMatched", "insert", self._cond(condition), vals))

    def whenNotMatchedInsertAll(self, condition: Any = None) -> "DeltaMergeBuilder":
        return self._with(MergeClause("notMatched", "insert", self._cond(condition), None, star=True))

    def whenNotMatchedBySourceUpdate(self, condition: Any = None, set: Any = None) -> "DeltaMergeBuilder":  # noqa: A002
        values = column_mapping(set, "'set' in whenNotMatchedBySourceUpdate")
        return self._with(MergeClause("notMatchedBySource", "update", self._cond(condition), values))

    def whenNotMatchedBySourceDelete(self, condition: Any = None) -> "DeltaMergeBuilder":
        return self._with(MergeClause("notMatchedBySource", "delete", self._cond(condition)))

    def withSchemaEvolution(self) -> "DeltaMergeBuilder":
        return self._with(schema_evolution=True)

    def execute(self) -> Any:
        """Run the merge; returns delta-spark's one-row DataFrame of affected row counts."""
        spark = self._table._spark
        prepared = prepare_merge(
            spark, self._table.snapshot(), self._source, self._condition, list(self._clauses),
            schema_evolution=self._schema_evolution, alias=getattr(self._table, "_alias", None),
        )
        prepared.commit()
        affected, updated, deleted, inserted = prepared.result
        return spark.createDataFrame(
            [(affected, updated, deleted, inserted)],
            "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long",
        )


# ---- planning ---------------------------------------------------------------------------------------------


def _check_clauses(clauses: list[MergeClause]) -> None:
    if not clauses:
        raise DeltaAnalysisError("[DELTA_MERGE_MISSING_WHEN] There must be at least one WHEN clause in a MERGE statement.")
    for kind, code, label in (
        ("matched", "DELTA_NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION", "MATCHED"),
        ("notMatched", "DELTA_NON_LAST_NOT_MATCHED_CLAUSE_OMIT_CONDITION", "NOT MATCHED"),
        ("notMatchedBySource", "DELTA_NON_LAST_NOT_MATCHED_BY_SOURCE_CLAUSE_OMIT_CONDITION", "NOT MATCHED BY SOURCE"),
    ):
        of_kind = [c for c in clauses if c.kind == kind]
        if len(of_kind) > 1 and any(c.condition is None for c in of_kind[:-1]):
            raise DeltaAnalysisError(
                f"[{code}] When there are more than one {label} clauses in a MERGE statement, only the last "
                f"{label} clause can omit the condition."
            )


def _source_fields(source: Any) -> dict[str, Any]:
    """lower-case name -> Spark StructField of the source."""
    return {f.name.lower(): f for f in source.schema.fields}


def _evolved_schema(schema: StructType, source: Any, clauses: list[MergeClause], alias: str | None,
                    widen: bool = False) -> StructType:
    """delta-spark's schema evolution for MERGE: source columns that `*` or SET/VALUES assign, appended.

    `widen` (type widening enabled): a target column that a `*` clause fills from a source
    column of a wider type takes that type (recorded in delta.typeChanges).
    """
    from pyspark.sql.types import StructType as SparkStructType

    if widen:
        source_types = {f.name.lower(): f for f in parse_schema(source.schema.json()).fields}
        assigned = _assigned_from_source(clauses, alias, schema, source_types)
        fields = []
        for f in schema.fields:
            sf = assigned.get(f.name.lower())
            if sf is not None and sf.type != f.type and type_widening.allowed_by_schema_evolution(f.type, sf.type):
                f = type_widening.record_evolution(f, sf.type)
            fields.append(f)
        schema = StructType(tuple(fields))

    existing = {f.name.lower() for f in schema.fields}
    src = _source_fields(source)
    wanted: list[Any] = []

    def want(spark_field: Any) -> None:
        if spark_field.name.lower() not in existing and all(w.name.lower() != spark_field.name.lower() for w in wanted):
            wanted.append(spark_field)

    for c in clauses:
        if c.action == "delete" or c.kind == "notMatchedBySource":
            continue
        if c.star:
            for f in source.schema.fields:
                want(f)
        else:
            for key in c.assignments or {}:
                parts = split_name(key)
                if len(parts) > 1 and alias and parts[0].lower() == alias.lower():
                    parts = parts[1:]
                if len(parts) == 1 and parts[0].lower() not in existing and parts[0].lower() in src:
                    want(src[parts[0].lower()])
    if not wanted:
        return schema
    added = as_nullable(parse_schema(SparkStructType(wanted).json()))
    return StructType(tuple(schema.fields) + tuple(added.fields))


def _assigned_from_source(clauses: list[MergeClause], alias: str | None, schema: StructType,
                          source_fields: dict[str, Any]) -> dict[str, Any]:
    """target column (lower case) -> the source field an UPDATE/INSERT assigns to it as is.

    `*` assigns every same-named source column; an explicit `t.c = s.x` counts when its
    value names a source column directly (delta-spark widens both kinds).
    """
    targets = {f.name.lower() for f in schema.fields}
    out: dict[str, Any] = {}
    for c in clauses:
        if c.action == "delete" or c.kind == "notMatchedBySource":
            continue
        if c.star:
            out.update({k: v for k, v in source_fields.items() if k in targets})
            continue
        for key, value in (c.assignments or {}).items():
            value_parts = _column_reference(value)
            if value_parts is None:
                continue
            key_parts = split_name(key)
            if len(key_parts) > 1 and alias and key_parts[0].lower() == alias.lower():
                key_parts = key_parts[1:]
            if len(value_parts) == 2 and alias and value_parts[0].lower() == alias.lower():
                continue  # a target column
            if len(key_parts) == 1 and key_parts[0].lower() in targets and len(value_parts) in (1, 2):
                field = source_fields.get(value_parts[-1].lower())
                if field is not None:
                    out[key_parts[0].lower()] = field
    return out


def _column_reference(value: Any) -> list[str] | None:
    """The name parts of a value that is a bare column reference (`s.x`, `x`), else None."""
    from pydelta.spark.sql import jplan

    jc = getattr(value, "_jc", None)
    if jc is None:
        return None
    try:
        node = jc.node()  # Spark 4: the Column's ColumnNode
    except Exception:  # noqa: BLE001 - no such node API: not a reference we can see
        return None
    kind = jplan.kind(node)
    if kind == "UnresolvedAttribute":
        return [str(p) for p in jplan.seq(node.nameParts())]
    if kind == "SqlExpression":  # F.expr / a string value: a reference only if it is just a (dotted) name
        text = str(node.expression()).strip()
        if re.fullmatch(r"(`[^`]+`|[A-Za-z_]\w*)(\.(`[^`]+`|[A-Za-z_]\w*))?", text):
            return split_name(text)
    return None


def _check_side(analysis_df: Any, join: Any, r: "_Resolved") -> None:
    """NOT MATCHED clauses may only use source columns, NOT MATCHED BY SOURCE clauses only target columns."""
    side = join.left() if r.clause.kind == "notMatched" else join.right()
    allowed = side.outputSet()
    exprs = [r.cond.expr] if r.cond is not None else []
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


def _join_node(plan: JavaObject) -> Any:
    while _name(plan) != "Join":
        kids = _children(plan)
        if not kids:
            return None
        plan = kids[0]
    return plan


def _source_join_keys(merge_cond: Any, join: Any) -> list[str] | None:
    """Names of source columns compared for equality with target expressions in the merge condition.

    When the source is unique on these keys, a target row matches at most one source row,
    so finding touched files needs no per-row counting. None when there are no such keys.
    """
    if join is None:
        return None
    source_attrs, target_attrs = join.left().outputSet(), join.right().outputSet()
    keys: list[str] = []
    for conj in conjuncts(merge_cond.expr):
        if _name(conj) not in ("EqualTo", "EqualNullSafe"):
            continue
        left, right = _children(conj)
        for src, tgt in ((left, right), (right, left)):
            if (_name(src) == "AttributeReference" and source_attrs.contains(src)
                    and tgt.references().nonEmpty() and tgt.references().subsetOf(target_attrs)):
                keys.append(str(src.name()))
    return keys or None


def _unique_on(source: Any, keys: list[str]) -> bool:
    """Whether no two source rows share a (non-null) key: one small aggregation over the source."""
    from pyspark.sql import functions as F

    cols = [F.col(quote_identifier(k)) for k in keys]
    not_null = and_all_columns([c.isNotNull() for c in cols])
    dup = source.where(not_null).groupBy(*cols).count().where(F.col("count") > 1).limit(1)
    return not dup.take(1)


REREAD_NODES = {"Project", "Filter", "SubqueryAlias", "Range", "LocalRelation", "LogicalRelation"}


def _cheap_to_reread(source: Any) -> bool:
    """Whether reading the source again gives the same rows at little cost, so the merge need
    not cache it: a deterministic plan of projections and filters over ranges, local rows or
    files (file relations keep the file list they were planned with)."""
    from pydelta.spark.sql import jplan

    try:
        plan = source._jdf.queryExecution().analyzed()
        return bool(plan.deterministic()) and all(jplan.kind(node) in REREAD_NODES for node in jplan.walk(plan))
    except Exception:  # noqa: BLE001 - a plan we cannot read: cache it
        return False


def _cacheable(source: Any) -> bool:
    """Whether Spark's in-memory columnar cache can hold the source: Spark 4.3's cannot hold
    GEOMETRY/GEOGRAPHY ("not support type"), so such a source is read again instead."""
    from pyspark.sql import types as T

    spatial = getattr(T, "SpatialType", None)

    def has_spatial(dt: Any) -> bool:
        if spatial is not None and isinstance(dt, spatial):
            return True
        if isinstance(dt, T.StructType):
            return any(has_spatial(f.dataType) for f in dt.fields)
        if isinstance(dt, T.ArrayType):
            return has_spatial(dt.elementType)
        if isinstance(dt, T.MapType):
            return has_spatial(dt.keyType) or has_spatial(dt.valueType)
        return False

    return not has_spatial(source.schema)


ONE_PASS_CONF = "spark.pydelta.merge.onePassSourceRowsPerFile"


def _one_pass(spark: SparkSession, source_rows: int | None, candidate_files: int) -> bool:
    """Whether to rewrite all candidate files without first finding the touched ones.

    With this many (unique-keyed) source rows per candidate file, practically every file
    holds a match, and the search (a second join over the target) would only cost time.
    """
    threshold = int(spark.conf.get(ONE_PASS_CONF, "1000"))
    return threshold > 0 and source_rows is not None and source_rows >= threshold * candidate_files


def and_all_columns(columns: list[Any]) -> Any:
    out = columns[0]
    for c in columns[1:]:
        out = out & c
    return out


def _target_only_predicate(expr: Any, target_attrs: Any) -> Predicate | None:
    """The target-only conjuncts of `expr`, translated for data skipping (None when there are none)."""
    parts = []
    for conj in conjuncts(expr):
        try:
            if conj.deterministic() and conj.references().nonEmpty() and conj.references().subsetOf(target_attrs):
                parts.append(translate(conj))
        except Exception:
            continue
    return and_all(parts) if parts else None


@dataclass
class _Resolved:
    clause: MergeClause
    code: int
    cond: Condition | None
    values: dict[str, Any]  # target column -> typed Column (update / insert)

    @property
    def history(self) -> dict[str, str | None]:
        return {"predicate": self.cond.sql if self.cond is not None else None, "actionType": self.clause.action}

    def hit(self) -> Any:
        from pyspark.sql import functions as F

        if self.cond is None:
            return F.lit(True)
        return F.coalesce(self.cond.column, F.lit(False))


def _check_identity_columns(schema: StructType, clauses: list[MergeClause], source: Any) -> None:
    """MERGE into a table with identity columns: no clause may set a GENERATED ALWAYS one
    (UPDATE: DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED, INSERT: ..._EXPLICIT_INSERT_...)."""
    from pydelta.protocol.identity import identity_columns

    source_names = {c.lower() for c in source.columns}
    for spec in identity_columns(schema):
        if spec.allow_explicit_insert:
            continue
        for c in clauses:
            if c.action not in ("update", "insert"):
                continue
            keys = {split_name(k)[-1].lower() for k in (c.assignments or {})}
            if spec.name.lower() in keys or (c.star and spec.name.lower() in source_names):
                if c.action == "update":
                    raise DeltaAnalysisError(f"[DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED] UPDATE on IDENTITY "
                                             f"column {spec.name} is not supported.")
                raise DeltaAnalysisError(f"[DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED] Providing values "
                                         f"for GENERATED ALWAYS AS IDENTITY column {spec.name} is not supported.")


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


def _identity_inserts(schema: StructType, resolved: list["_Resolved"]) -> dict[str, list[int]]:
    """Identity column -> codes of the INSERT clauses that leave it to be generated."""
    from pydelta.protocol.identity import identity_columns

    out: dict[str, list[int]] = {}
    for spec in identity_columns(schema):
        codes = [r.code for r in resolved if r.clause.action == "insert" and spec.name not in r.values]
        if codes:
            out[spec.name] = codes
    return out


def _identity_column(name: str) -> str:
    return f"__pydelta_identity_{name}"


def _with_identity_values(joined: Any, specs: list[Any], stable: bool) -> Any:
    """`joined` plus a generated value per identity column (used by the inserting rows). With
    `stable` (the change feed reads `joined` again) the rows are checkpointed first, so data
    and change files see the same values."""
    from pydelta.protocol.identity import IdentitySpec
    from pydelta.spark.ddl.identity import with_identity_values

    if not specs:
        return joined
    renamed = [IdentitySpec(_identity_column(s.name), s.start, s.step, s.allow_explicit_insert, s.high_water_mark)
               for s in specs]
    out = with_identity_values(joined, renamed)
    return out.localCheckpoint(eager=True) if stable else out


def prepare_merge(
    spark: SparkSession,
    snapshot: Snapshot,
    source: Any,
    condition: Any,
    clauses: list[MergeClause],
    *,
    schema_evolution: bool = False,
    alias: str | None = None,
    check_source_first: bool = False,
) -> PreparedCommit:
    """Plan and run the merge's Spark jobs; returns the (uncommitted) result.

    `check_source_first`: test the source's keys for uniqueness before a one-pass rewrite
    (else the rewrite runs at once and its row counts tell whether a target row matched
    several source rows; if one did, the merge starts over with this set).

    `result` of the returned PreparedCommit is (num_affected_rows, num_updated_rows,
    num_deleted_rows, num_inserted_rows).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = time.monotonic()
    _check_clauses(clauses)
    check_dml_supported(snapshot, "MERGE", removes_rows=False)
    check_row_ids_preserved(snapshot, "MERGE")
    keep_ids = materializes_row_ids(snapshot.metadata)  # rewritten target rows keep their row IDs
    txn = new_transaction(spark, snapshot)
    read_md = snapshot.metadata
    schema = read_md.schema
    files = snapshot.files()
    root = snapshot.table_root
    cond_col = as_column(condition)
    matched = [c for c in clauses if c.kind == "matched"]
    not_matched = [c for c in clauses if c.kind == "notMatched"]
    by_source = [c for c in clauses if c.kind == "notMatchedBySource"]
    insert_only = not matched and not by_source
    _check_identity_columns(schema, clauses, source)
    only_unconditional_delete = len(matched) == 1 and matched[0].action == "delete" and matched[0].condition is None

    # ---- schema evolution ----------------------------------------------------------------------
    evolve = schema_evolution or str(spark.conf.get(AUTO_MERGE_CONF, "false")).strip().lower() == "true"
    widen = type_widening.enabled(read_md.configuration)
    out_schema = _evolved_schema(schema, source, clauses, alias, widen) if evolve else schema
    if out_schema != schema:
        config = dict(read_md.configuration)
        if column_mapping_mode(config) != "none":
            out_schema, config = assign_column_mapping(out_schema, config)
        txn.update_metadata(replace(read_md, schema_string=out_schema.to_json(), configuration=config))
    metadata: Metadata = txn.metadata  # type: ignore[assignment]
    out_schema = metadata.schema
    target_names = {f.name.lower(): f.name for f in schema.fields}

    # ---- analysis: every expression against source FULL OUTER JOIN (empty) target ---------------------
    t_alias = alias or TARGET_ALIAS
    empty_target = build_dataframe(spark, snapshot, files.slice(0, 0)).alias(t_alias)
    try:
        analysis_df = source.join(empty_target, cond_col, "full_outer")
    except Exception as e:
        raise analysis_error("[DELTA_MERGE_UNRESOLVED_EXPRESSION] cannot resolve the merge condition", e) from None
    merge_cond = analyze(analysis_df, cond_col, "the merge condition")
    join = _join_node(analysis_df._jdf.queryExecution().analyzed())
    target_attrs = join.right().outputSet() if join is not None else None

    def tgt(name: str) -> Any:
        return F.col(f"{quote_identifier(t_alias)}.{quote_identifier(name)}")

    def current(name: str) -> Any:
        if name.lower() in target_names:
            return tgt(target_names[name.lower()])
        return F.lit(None).cast(spark_schema(out_schema)[name].dataType)

    src_fields = _source_fields(source)

    def star_values(clause: MergeClause) -> dict[str, Any]:
        """`*` as SET/VALUES assignments, keyed like user keys (quoted names)."""
        out = {}
        if evolve:
            for f in source.schema.fields:
                out[quote_identifier(f.name)] = source[quote_identifier(f.name)]
            return out
        for f in schema.fields:
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

    resolved: list[_Resolved] = []
    counters = {"matched": 0, "notMatched": 0, "notMatchedBySource": 0}
    for clause in clauses:
        counters[clause.kind] += 1
        n = counters[clause.kind]
        base = {"matched": 0, "notMatchedBySource": 10_000, "notMatched": 20_000}[clause.kind]
        code = base + n if clause.action != "delete" else -(base + n + 1_000)
        cond = None
        if clause.condition is not None:
            cond = analyze(analysis_df, clause.condition, f"the {clause.clause_name} condition")
        values: dict[str, Any] = {}
        if clause.action != "delete":
            raw = star_values(clause) if clause.star else dict(clause.assignments or {})
            values = resolve_assignments(out_schema, raw, alias, current, clause=clause.clause_name)
            if clause.action == "insert" and not clause.star:
                values = _with_column_defaults(out_schema, values)
            values = typed_values(analysis_df, out_schema, values, f"{clause.clause_name}")
        resolved.append(_Resolved(clause, code, cond, values))
        if join is not None and clause.kind != "matched":
            _check_side(analysis_df, join, resolved[-1])
    identity_codes = _identity_inserts(out_schema, resolved)
    identity_specs = [s for s in identity_columns_of(out_schema) if s.name in identity_codes]
    r_matched = [r for r in resolved if r.clause.kind == "matched"]
    r_insert = [r for r in resolved if r.clause.kind == "notMatched"]
    r_by_source = [r for r in resolved if r.clause.kind == "notMatchedBySource"]

    def any_hit(rs: list[_Resolved]) -> Any:
        out = F.lit(False)
        for r in rs:
            out = out | r.hit()
        return out

    # ---- candidate target files ------------------------------------------------------------------------
    read_predicate: Predicate = READ_ALL
    if not by_source and target_attrs is not None:
        pred = _target_only_predicate(merge_cond.expr, target_attrs)
        parts = [pred] if pred is not None else []
        if not not_matched and matched:
            # Matched-only merges also skip files no matched clause condition can touch.
            ors: Predicate | None = None
            for r in r_matched:
                p = _target_only_predicate(r.cond.expr, target_attrs) if r.cond is not None else None
                if p is None:
                    ors = None
                    break
                ors = p if ors is None else Or(ors, p)
            if ors is not None:
                parts.append(ors)
        if parts:
            read_predicate = and_all(parts)
    candidates = FileSkipper.for_metadata(files, snapshot.metadata).prune(read_predicate) if read_predicate is not READ_ALL else files
    txn.read_predicate(read_predicate)
    txn.read_files(candidates.column("path").to_pylist())

    metrics_timing = {"materializeSourceTimeMs": 0, "scanTimeMs": 0, "rewriteTimeMs": 0}
    num_source_rows: int | None = None
    touched = files.slice(0, 0)
    any_match = False
    overcount = 0
    need_dedupe = False
    persisted = False
    unique = False
    unverified = False  # one pass without the source uniqueness check
    expected_target_rows: int | None = None  # of the candidates, from their stats (unverified only)
    counts: dict[str, int] = {}
    added: list[dict[str, Any]] = []
    cdc: list[dict[str, Any]] = []
    dv_merge: DvDelete | None = None
    try:
        # ---- find touched files ---------------------------------------------------------------------------
        if not insert_only and candidates.num_rows:
            t0 = time.monotonic()
            level = source.storageLevel
            if not (level.useMemory or level.useDisk) and not _cheap_to_reread(source) and _cacheable(source):
                source.persist(StorageLevel.MEMORY_AND_DISK)
                persisted = True
            metrics_timing["materializeSourceTimeMs"] = elapsed_ms(t0)
            t0 = time.monotonic()
            keys = None if by_source else _source_join_keys(merge_cond, join)
            if keys is not None and not check_source_first and not persistent_dvs(
                    spark, metadata, snapshot.protocol, "merge"):
                expected_target_rows = logical_record_count(candidates)
                if expected_target_rows is not None:
                    num_source_rows = source.count()
                    unverified = _one_pass(spark, num_source_rows, candidates.num_rows)
            if not unverified:
                unique = keys is not None and _unique_on(source, keys)
                if unique and num_source_rows is None:
                    num_source_rows = source.count()
        if not insert_only and candidates.num_rows and (
                unverified or (unique and _one_pass(spark, num_source_rows, candidates.num_rows))):
            # So many source rows per candidate file that nearly every file is touched: skip the
            # search and rewrite the candidates in one pass (unique keys, or the rewrite's row
            # counts show whether a target row matched several source rows).
            touched = candidates
            metrics_timing["scanTimeMs"] = elapsed_ms(t0)
        elif not insert_only and candidates.num_rows:
            obs = observation()
            src = source.observe(obs, F.count(F.lit(1)).alias("n")).withColumn(SOURCE_PRESENT, F.lit(True))
            # Rows carry a small file number (not the long file URI) through the join and shuffles.
            uris = file_uris(snapshot, candidates)
            index = spark.createDataFrame(list(zip(uris, range(len(uris)))), f"{FILE_COL} string, {FILE_IDX} long")
            target = (scan(spark, snapshot, candidates, with_file=True)
                      .join(F.broadcast(index), FILE_COL).drop(FILE_COL).alias(t_alias))
            joined = src.join(target, cond_col, "right_outer" if by_source else "inner")
            is_match = F.col(SOURCE_PRESENT).isNotNull()
            m_act = (is_match & any_hit(r_matched)).cast("int")
            u_act = (~is_match & any_hit(r_by_source)).cast("int")
            if unique:
                # At most one source row per target row: per-file flags straight from the join.
                per_file = joined.groupBy(FILE_IDX).agg(
                    F.sum(m_act).alias("acted"), F.count(F.lit(1)).alias("matched"),
                    F.lit(0).alias("conflicts"), F.lit(0).alias("dups"), F.lit(0).alias("over"),
                )
            else:
                if by_source:
                    joined = joined.filter(is_match | (u_act == 1))
                per_row = joined.groupBy(F.col(FILE_IDX), F.col(ROW_COL)).agg(
                    F.count(F.col(SOURCE_PRESENT)).alias("n"), F.sum(m_act).alias("a"), F.max(u_act).alias("u")
                )
                n, a, u = F.col("n"), F.col("a"), F.col("u")
                per_file = per_row.groupBy(FILE_IDX).agg(
                    F.sum(F.when((a > 0) | (u > 0), 1).otherwise(0)).alias("acted"),
                    F.sum(F.when(n > 0, 1).otherwise(0)).alias("matched"),
                    F.sum(F.when((n > 1) & (a > 0), 1).otherwise(0)).alias("conflicts"),
                    F.sum(F.when((n > 1) & (a == 0), 1).otherwise(0)).alias("dups"),
                    F.sum(F.when(n > 1, n - 1).otherwise(0)).alias("over"),
                )
            stats = per_file.collect()
            seen = observed(obs)
            num_source_rows = int(seen["n"]) if seen is not None else num_source_rows
            metrics_timing["scanTimeMs"] = elapsed_ms(t0)
            if sum(int(r["conflicts"]) for r in stats) and not only_unconditional_delete:
                raise MultipleSourceRowMatchingTargetRowInMergeError()
            any_match = any(int(r["matched"]) for r in stats)
            touched_rows = [r for r in stats if int(r["acted"]) > 0 or (not_matched and int(r["matched"]) > 0)]
            need_dedupe = any(int(r["dups"]) for r in touched_rows)
            overcount = sum(int(r["over"]) for r in stats) if only_unconditional_delete else 0
            if touched_rows:
                touched = candidates.take(pa.array(sorted(int(r[FILE_IDX]) for r in touched_rows), pa.int64()))

        act = F.col(ACTION)
        if touched.num_rows:
            # ---- rewrite touched files (and insert) in one job ----------------------------------------------
            t0 = time.monotonic()
            src = source.withColumn(SOURCE_PRESENT, F.lit(True))
            write_changes = cdf_enabled(metadata)
            dedupe_deletes = write_changes and overcount > 0
            # Deletion vectors: changed target rows are marked deleted in their files and only
            # new rows are written (no copies); with duplicate matches, copy-on-write as before.
            with_dvs = (persistent_dvs(spark, metadata, snapshot.protocol, "merge")
                        and not need_dedupe and not dedupe_deletes and out_schema == schema)
            target = scan(spark, snapshot, touched, with_file=need_dedupe or dedupe_deletes or with_dvs,
                          row_ids=keep_ids).alias(t_alias)
            target = target.withColumn(TARGET_PRESENT, F.lit(True))
            joined = src.join(target, cond_col, "full_outer" if not_matched else "right_outer")
            s_in = F.col(SOURCE_PRESENT).isNotNull()
            t_in = F.col(TARGET_PRESENT).isNotNull()
            action = None
            for r in r_matched:
                action = _when(action, s_in & t_in & r.hit(), r.code)
            action = _when(action, s_in & t_in, COPY)
            for r in r_by_source:
                action = _when(action, ~s_in & r.hit(), r.code)
            action = _when(action, ~s_in, COPY)
            for r in r_insert:
                action = _when(action, ~t_in & r.hit(), r.code)
            joined = joined.withColumn(ACTION, action.otherwise(F.lit(DROP)))
            if need_dedupe:
                # A target row matched by several source rows that no clause modifies is copied once.
                key = F.when((act == COPY) & s_in, F.concat_ws("#", F.col(FILE_COL), F.col(ROW_COL).cast("string")))
                joined = joined.withColumn(
                    DEDUPE_KEY, key.otherwise(F.concat(F.lit("u"), F.monotonically_increasing_id().cast("string")))
                ).dropDuplicates([DEDUPE_KEY])
            if with_dvs:
                changed_target_rows = joined.filter(t_in & (act != COPY))
                dv_rows = rows_by_file(changed_target_rows.select(F.col(FILE_COL), F.col(ROW_COL)))
                joined = joined.filter(~t_in | (act != COPY))  # unchanged rows stay where they are
            joined = _with_identity_values(joined, identity_specs, write_changes)
            out, obs = _output(joined, out_schema, resolved, current,
                               row_ids=(tgt(ROW_ID_COL), tgt(ROW_VERSION_COL)) if keep_ids else None,
                               identity=identity_codes)
            added = write_rows(spark, out, root, metadata, repartition=True, row_ids=keep_ids)
            if write_changes:
                changes = _changes(joined, out_schema, resolved, current, dedupe_deletes, identity_codes)
                cdc = write_cdc(spark, changes, root, metadata)
            if with_dvs:
                dv_merge = mark_deleted(snapshot, touched, dv_rows)
            metrics_timing["rewriteTimeMs"] = elapsed_ms(t0)
            seen = observed(obs)
            counts = _counts(seen) if seen is not None else _count_actions(joined, resolved)
            if unverified and expected_target_rows != sum(
                    counts.get(k, 0) for k in ("copied", "matched_updated", "matched_deleted")):
                # A target row met several source rows: start over with the uniqueness check,
                # which decides between the error and copying the row once.
                discard_files(root, added + cdc)
                added, cdc = [], []
                return prepare_merge(spark, snapshot, source, condition, clauses, schema_evolution=schema_evolution,
                                     alias=alias, check_source_first=True)
        elif not_matched:
            # ---- insert only: append source rows that match nothing -----------------------------------------
            t0 = time.monotonic()
            src = source
            obs_src = None
            if num_source_rows is None:
                obs_src = observation()
                src = src.observe(obs_src, F.count(F.lit(1)).alias("n"))
            if (insert_only and candidates.num_rows) or any_match:
                src = src.join(scan(spark, snapshot, candidates).alias(t_alias), cond_col, "left_anti")
            action = None
            for r in r_insert:
                action = _when(action, r.hit(), r.code)
            joined = _with_identity_values(src.withColumn(ACTION, action.otherwise(F.lit(DROP))), identity_specs,
                                           False)
            out, obs = _output(joined, out_schema, r_insert, lambda name: F.lit(None).cast(
                spark_schema(out_schema)[name].dataType), identity=identity_codes)
            if keep_ids:  # inserted rows get fresh IDs from their file's baseRowId
                out = out.withColumn(ROW_ID_COL, F.lit(None).cast("long")).withColumn(
                    ROW_VERSION_COL, F.lit(None).cast("long"))
            added = write_rows(spark, out, root, metadata, repartition=True, row_ids=keep_ids)
            metrics_timing["rewriteTimeMs"] = elapsed_ms(t0)
            seen = observed(obs)
            counts = _counts(seen) if seen is not None else _count_actions(joined, r_insert)
            if obs_src is not None:
                seen_src = observed(obs_src)
                num_source_rows = int(seen_src["n"]) if seen_src is not None else None
        if num_source_rows is None:
            num_source_rows = source.count()
    except BaseException:
        discard_files(root, added + cdc)
        raise
    finally:
        if persisted:
            try:
                source.unpersist(blocking=False)
            except Exception:
                pass

    if identity_specs and added:  # the commit records how far the identity values went
        from pydelta.protocol.identity import with_high_water_marks
        from pydelta.spark.ddl.identity import high_water_marks

        marks = high_water_marks(spark, txn.metadata, identity_specs, [a["add"] for a in added], root)
        if marks:
            txn.update_metadata(with_high_water_marks(txn.metadata, marks), replace_previous=True)
    inserted = counts.get("inserted", 0)
    m_updated = counts.get("matched_updated", 0)
    u_updated = counts.get("by_source_updated", 0)
    m_deleted = max(0, counts.get("matched_deleted", 0) - overcount)
    u_deleted = counts.get("by_source_deleted", 0)
    copied = counts.get("copied", 0)
    updated = m_updated + u_updated
    deleted = m_deleted + u_deleted

    actions = (remove_actions(touched) if touched.num_rows else []) + added + cdc
    if dv_merge is not None:
        actions = dv_merge.actions + added + cdc
    metrics = {
        "numSourceRows": num_source_rows,
        "numTargetRowsInserted": inserted,
        "numTargetRowsUpdated": updated,
        "numTargetRowsMatchedUpdated": m_updated,
        "numTargetRowsNotMatchedBySourceUpdated": u_updated,
        "numTargetRowsDeleted": deleted,
        "numTargetRowsMatchedDeleted": m_deleted,
        "numTargetRowsNotMatchedBySourceDeleted": u_deleted,
        "numTargetRowsCopied": copied,
        "numTargetBytesAdded": sum(a["add"]["size"] for a in added),
        "numTargetBytesRemoved": total_bytes(touched) if dv_merge is None else dv_merge.removed_bytes,
        "numOutputRows": inserted + updated + copied,
        "numTargetFilesAdded": len(added),
        "numTargetFilesRemoved": touched.num_rows if dv_merge is None else dv_merge.removed_files,
        "numTargetChangeFilesAdded": len(cdc),
        "executionTimeMs": elapsed_ms(started),
        **metrics_timing,
        "numTargetDeletionVectorsAdded": 0 if dv_merge is None else dv_merge.dvs_added,
        "numTargetDeletionVectorsRemoved": count_dvs(touched) if dv_merge is None else dv_merge.dvs_removed,
        "numTargetDeletionVectorsUpdated": 0 if dv_merge is None else dv_merge.dvs_updated,
    }
    operation = Operation.merge(
        merge_cond.sql,
        [r.history for r in r_matched],
        [r.history for r in r_insert],
        [r.history for r in r_by_source],
    )
    return PreparedCommit(txn, actions, operation, metrics, started=started,
                          result=(updated + deleted + inserted, updated, deleted, inserted), spark=spark)


def _when(expr: Any, cond: Any, code: int) -> Any:
    from pyspark.sql import functions as F

    return F.when(cond, F.lit(code)) if expr is None else expr.when(cond, F.lit(code))


def _output(joined: Any, out_schema: StructType, resolved: list[_Resolved], current: Any,
            row_ids: tuple[Any, Any] | None = None, identity: Mapping[str, list[int]] | None = None
            ) -> tuple[Any, Any]:
    """The rows to write (table columns) from `joined` + ACTION, and the Observation counting actions.

    `row_ids`: the target's stable row ID and commit version columns (row tracking): copied and
    updated rows keep the ID, updated rows take this commit's version, inserted rows get neither.
    """
    from pyspark.sql import functions as F

    act = F.col(ACTION)
    obs = observation()
    aggs = [F.count(F.when(act.isin(codes), 1)).alias(name) for name, codes in _kinds(resolved).items() if codes]
    aggs.append(F.count(F.when(act == COPY, 1)).alias("copied"))
    observed_df = joined.observe(obs, *aggs).filter(act >= 0)
    if row_ids is not None:
        updates = [r.code for r in resolved if r.clause.action == "update"]
        observed_df = observed_df.withColumn(ROW_ID_OUT, row_ids[0]).withColumn(
            ROW_VERSION_OUT, F.when(act.isin(updates), F.lit(None).cast("long")).otherwise(row_ids[1]))
    out = _values(observed_df, out_schema, resolved, current, keep=row_ids is not None, identity=identity)
    if row_ids is not None:
        out = out.withColumnRenamed(ROW_ID_OUT, ROW_ID_COL).withColumnRenamed(ROW_VERSION_OUT, ROW_VERSION_COL)
    return out.drop(ACTION), obs


ROW_ID_OUT = "__pydelta_merge_row_id"
ROW_VERSION_OUT = "__pydelta_merge_row_version"


def _values(joined: Any, out_schema: StructType, resolved: list[_Resolved], current: Any,
            keep: bool = False, identity: Mapping[str, list[int]] | None = None) -> Any:
    """Per row of `joined`, the table columns its ACTION produces (plus ACTION; plus the
    row-tracking output columns with `keep`)."""
    from pyspark.sql import functions as F

    act = F.col(ACTION)
    columns = []
    generated_later = []
    for f in out_schema.fields:
        assigning = [r for r in resolved if f.name in r.values]
        gen = f.metadata.get("delta.generationExpression")
        if gen and not assigning:
            continue  # conform() computes it from the written columns
        value = current(f.name)
        branches = None
        if identity and f.name in identity:  # generated for the inserts that do not give it
            branches = F.when(act.isin(identity[f.name]), F.col(_identity_column(f.name)))
        for r in assigning:
            branches = F.when(act == r.code, r.values[f.name]) if branches is None else branches.when(
                act == r.code, r.values[f.name])
        columns.append((branches.otherwise(value) if branches is not None else value).alias(f.name))
        if gen:
            generated_later.append((f.name, gen, [r.code for r in assigning]))
    kept = [F.col(ROW_ID_OUT), F.col(ROW_VERSION_OUT)] if keep else []
    out = joined.select(*columns, act, *kept)
    for name, gen, codes in generated_later:
        out = out.withColumn(name, F.when(act.isin(codes), F.col(quote_identifier(name))).otherwise(F.expr(gen)))
    return out


def _changes(joined: Any, out_schema: StructType, resolved: list[_Resolved], current: Any,
             dedupe_deletes: bool, identity: Mapping[str, list[int]] | None = None) -> Any:
    """Change data rows of a rewriting merge: pre/post images of updates, deletes, inserts."""
    from pyspark.sql import functions as F

    act = F.col(ACTION)
    kinds = _kinds(resolved)
    updates = kinds["matched_updated"] + kinds["by_source_updated"]
    deletes = kinds["matched_deleted"] + kinds["by_source_deleted"]
    inserts = kinds["inserted"]
    post = _values(joined.filter(act.isin(updates + inserts)), out_schema, resolved, current, identity=identity)
    post = with_change_type(post, out_schema, F.when(act.isin(inserts), "insert").otherwise("update_postimage"))
    pre_rows = joined.filter(act.isin(updates + deletes))
    if dedupe_deletes:
        # One unconditional delete matched by several source rows: one delete event per target row.
        pre_rows = pre_rows.dropDuplicates([FILE_COL, ROW_COL])
    pre = pre_rows.select(*[current(f.name).alias(f.name) for f in out_schema.fields], act)
    pre = with_change_type(pre, out_schema, F.when(act.isin(deletes), "delete").otherwise("update_preimage"))
    return post.unionByName(pre)


def _kinds(resolved: list[_Resolved]) -> dict[str, list[int]]:
    def codes(kind: str | None, action: str) -> list[int]:
        return [r.code for r in resolved if (kind is None or r.clause.kind == kind) and r.clause.action == action]

    return {
        "inserted": codes(None, "insert"),
        "matched_updated": codes("matched", "update"),
        "by_source_updated": codes("notMatchedBySource", "update"),
        "matched_deleted": codes("matched", "delete"),
        "by_source_deleted": codes("notMatchedBySource", "delete"),
    }


def _counts(seen: dict[str, Any]) -> dict[str, int]:
    return {k: int(v or 0) for k, v in seen.items()}


def _count_actions(joined: Any, resolved: list[_Resolved]) -> dict[str, int]:
    """Fallback when Spark did not report the observed counts: count the actions in another job."""
    by_code = {int(r[0]): int(r[1]) for r in joined.groupBy(ACTION).count().collect()}
    out = {name: sum(by_code.get(c, 0) for c in codes) for name, codes in _kinds(resolved).items()}
    out["copied"] = by_code.get(COPY, 0)
    return out
