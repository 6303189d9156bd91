"""The output of a MERGE: the rows to write, change data, row counts and the commit's metrics.

Touched files are rewritten in one job: the rewriting join's rows become table rows by their
ACTION (updated values, inserted values, or the target row copied), counted on the way by a
Spark Observation. With deletion vectors, changed target rows are marked deleted in place and
only new rows are written. Without touched files, inserts are appended (a left-anti join
against the target when rows may match).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from pydelta.protocol.action_types import Action
from pydelta.protocol.identity import IdentitySpec
from pydelta.protocol.schema import StructType, quote_identifier
from pydelta.spark.base._typing import Column, DataFrame
from pydelta.spark.dml.commit import elapsed_ms, observation, observed, transaction_metadata
from pydelta.spark.dml.deletion_vectors import DvDelete, mark_deleted, persistent_dvs, rows_by_file
from pydelta.spark.dml.files import (
    cdf_enabled,
    count_dvs,
    remove_actions,
    scan,
    total_bytes,
    with_change_type,
    write_cdc,
    write_rows,
)
from pydelta.spark.dml.merge_classify import (
    TouchedFiles,
    insert_actions,
    rewrite_join,
    source_present,
    target_present,
)
from pydelta.spark.dml.merge_clauses import ACTION, COPY, ResolvedClause, outcome_codes
from pydelta.spark.dml.merge_plan import MergePlan
from pydelta.spark.read.scan import FILE_COL, ROW_COL, ROW_ID_COL, ROW_VERSION_COL, spark_schema

DEDUPE_KEY = "__pydelta_merge_row_key"
ROW_ID_OUT = "__pydelta_merge_row_id"
ROW_VERSION_OUT = "__pydelta_merge_row_version"

@dataclass
class MergeWrites:
    """The files a merge has written so far (deleted again if it fails), and its row counts."""

    added: list[Action] = field(default_factory=list)
    cdc: list[Action] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # row counts by outcome (see outcome_codes)
    dv_merge: DvDelete | None = None  # with deletion vectors: the touched files' new DVs

    def target_rows_out(self) -> int:
        """Target rows the rewrite accounted for: each exactly once unless several source rows matched it."""
        return sum(self.counts.get(k, 0) for k in ("copied", "matched_updated", "matched_deleted"))


# ---- the two ways of writing ------------------------------------------------------------------------


def rewrite_touched_files(plan: MergePlan, found: TouchedFiles, writes: MergeWrites, timing: dict[str, int]) -> None:
    """Rewrite the touched files (and insert) in one job; with the change feed, write change data."""
    from pyspark.sql import functions as F

    spark, snapshot, metadata = plan.spark, plan.snapshot, plan.metadata
    t0 = time.monotonic()
    write_changes = cdf_enabled(metadata)
    dedupe_deletes = write_changes and found.overcount > 0
    # Deletion vectors: changed target rows are marked deleted in their files and only
    # new rows are written (no copies); with duplicate matches, copy-on-write as before.
    with_dvs = (persistent_dvs(spark, metadata, snapshot.protocol, "merge")
                and not found.need_dedupe and not dedupe_deletes and plan.out_schema == plan.read_schema)
    joined = rewrite_join(plan, found.files, with_file=found.need_dedupe or dedupe_deletes or with_dvs)
    act = F.col(ACTION)
    if found.need_dedupe:
        # A target row matched by several source rows that no clause modifies is copied once.
        key = F.when((act == COPY) & source_present(),
                     F.concat_ws("#", F.col(FILE_COL), F.col(ROW_COL).cast("string")))
        joined = joined.withColumn(
            DEDUPE_KEY, key.otherwise(F.concat(F.lit("u"), F.monotonically_increasing_id().cast("string")))
        ).dropDuplicates([DEDUPE_KEY])
    dv_rows: dict[str, np.ndarray] = {}
    if with_dvs:
        changed_target_rows = joined.filter(target_present() & (act != COPY))
        dv_rows = rows_by_file(changed_target_rows.select(F.col(FILE_COL), F.col(ROW_COL)))
        joined = joined.filter(~target_present() | (act != COPY))  # unchanged rows stay where they are
    joined = _with_identity_values(joined, plan.identity_specs, write_changes)
    tgt = plan.target.column
    out, obs = _output(joined, plan.out_schema, plan.resolved, plan.target.current,
                       row_ids=(tgt(ROW_ID_COL), tgt(ROW_VERSION_COL)) if plan.keep_ids else None,
                       identity=plan.identity_codes)
    writes.added = write_rows(spark, out, plan.snapshot, metadata, repartition=True, row_ids=plan.keep_ids)
    if write_changes:
        changes = _changes(joined, plan.out_schema, plan.resolved, plan.target.current, dedupe_deletes,
                           plan.identity_codes)
        writes.cdc = write_cdc(spark, changes, plan.snapshot, metadata)
    if with_dvs:
        writes.dv_merge = mark_deleted(snapshot, found.files, dv_rows)
    timing["rewriteTimeMs"] = elapsed_ms(t0)
    seen = observed(obs)
    writes.counts = _counts(seen) if seen is not None else _count_actions(joined, plan.resolved)


def append_inserts(plan: MergePlan, candidates: pa.Table, found: TouchedFiles, writes: MergeWrites,
                   timing: dict[str, int]) -> None:
    """Insert only: append the source rows that match no target row (no file is rewritten)."""
    from pyspark.sql import functions as F

    spark, out_schema = plan.spark, plan.out_schema
    t0 = time.monotonic()
    src = plan.source
    obs_src = None
    if found.num_source_rows is None:
        obs_src = observation()
        src = src.observe(obs_src, F.count(F.lit(1)).alias("n"))
    if (plan.insert_only and candidates.num_rows) or found.any_match:
        target = scan(spark, plan.snapshot, candidates).alias(plan.target.alias)
        src = src.join(target, plan.condition, "left_anti")
    joined = _with_identity_values(src.withColumn(ACTION, insert_actions(plan)), plan.identity_specs, False)

    def no_target_row(name: str) -> Column:
        return F.lit(None).cast(spark_schema(out_schema)[name].dataType)

    out, obs = _output(joined, out_schema, plan.inserts, no_target_row, identity=plan.identity_codes)
    if plan.keep_ids:  # inserted rows get fresh IDs from their file's baseRowId
        out = out.withColumn(ROW_ID_COL, F.lit(None).cast("long")).withColumn(
            ROW_VERSION_COL, F.lit(None).cast("long"))
    writes.added = write_rows(spark, out, plan.snapshot, plan.metadata, repartition=True, row_ids=plan.keep_ids)
    timing["rewriteTimeMs"] = elapsed_ms(t0)
    seen = observed(obs)
    writes.counts = _counts(seen) if seen is not None else _count_actions(joined, plan.inserts)
    if obs_src is not None:
        seen_src = observed(obs_src)
        found.num_source_rows = int(seen_src["n"]) if seen_src is not None else None


# ---- rows to write -------------------------------------------------------------------------------------


def _output(joined: DataFrame, out_schema: StructType, resolved: list[ResolvedClause], current: Callable[[str], Column],
            row_ids: tuple[Column, Column] | None = None, identity: Mapping[str, list[int]] | None = None
            ) -> tuple[DataFrame, Any]:
    """The rows to write (table columns) from `joined` + ACTION, and the Observation counting actions.

    `row_ids`: the target's stable row ID and commit version columns (row tracking): copied and
    updated rows keep the ID, updated rows take this commit's version, inserted rows get neither.
    """
    from pyspark.sql import functions as F

    act = F.col(ACTION)
    obs = observation()
    aggs = [F.count(F.when(act.isin(codes), 1)).alias(name) for name, codes in outcome_codes(resolved).items() if codes]
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


def _values(joined: DataFrame, out_schema: StructType, resolved: list[ResolvedClause], current: Callable[[str], Column],
            keep: bool = False, identity: Mapping[str, list[int]] | None = None) -> DataFrame:
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
        branches: Column | None = None
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


def _changes(joined: DataFrame, out_schema: StructType, resolved: list[ResolvedClause],
             current: Callable[[str], Column], dedupe_deletes: bool,
             identity: Mapping[str, list[int]] | None = None) -> DataFrame:
    """Change data rows of a rewriting merge: pre/post images of updates, deletes, inserts."""
    from pyspark.sql import functions as F

    act = F.col(ACTION)
    kinds = outcome_codes(resolved)
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


def _identity_column(name: str) -> str:
    return f"__pydelta_identity_{name}"


def _with_identity_values(joined: DataFrame, specs: list[IdentitySpec], stable: bool) -> DataFrame:
    """`joined` plus a generated value per identity column (used by the inserting rows). With
    `stable` (the change feed reads `joined` again) the rows are checkpointed first, so data
    and change files see the same values."""
    from pydelta.spark.write.identity import with_identity_values

    if not specs:
        return joined
    renamed = [IdentitySpec(_identity_column(s.name), s.start, s.step, s.allow_explicit_insert, s.high_water_mark)
               for s in specs]
    out = with_identity_values(joined, renamed)
    return out.localCheckpoint(eager=True) if stable else out


def record_identity_high_water_marks(plan: MergePlan, added: list[Action]) -> None:
    """Stage in the transaction how far the generated identity values went."""
    if not plan.identity_specs or not added:
        return
    from pydelta.protocol.identity import with_high_water_marks
    from pydelta.spark.write.identity import high_water_marks

    metadata = transaction_metadata(plan.txn)
    marks = high_water_marks(plan.spark, metadata, plan.identity_specs, [a["add"] for a in added], plan.root)
    if marks:
        plan.txn.update_metadata(with_high_water_marks(metadata, marks), replace_previous=True)


# ---- counts and metrics --------------------------------------------------------------------------------


def _counts(seen: dict[str, Any]) -> dict[str, int]:
    return {k: int(v or 0) for k, v in seen.items()}


def _count_actions(joined: DataFrame, resolved: list[ResolvedClause]) -> dict[str, int]:
    """Fallback when Spark did not report the observed counts: count the actions in another job."""
    by_code = {int(r[0]): int(r[1]) for r in joined.groupBy(ACTION).count().collect()}
    out = {name: sum(by_code.get(c, 0) for c in codes) for name, codes in outcome_codes(resolved).items()}
    out["copied"] = by_code.get(COPY, 0)
    return out


def merge_actions(found: TouchedFiles, writes: MergeWrites) -> list[Action]:
    """The commit's actions: the touched files removed (or given new DVs), the new data and change files."""
    actions = (remove_actions(found.files) if found.files.num_rows else []) + writes.added + writes.cdc
    if writes.dv_merge is not None:
        actions = writes.dv_merge.actions + writes.added + writes.cdc
    return actions


def merge_metrics(found: TouchedFiles, writes: MergeWrites, timing: dict[str, int],
                  started: float) -> tuple[dict[str, Any], tuple[int, int, int, int]]:
    """delta-spark's MERGE operation metrics, and the (affected, updated, deleted, inserted) rows."""
    counts, touched, dv_merge, added = writes.counts, found.files, writes.dv_merge, writes.added
    inserted = counts.get("inserted", 0)
    m_updated = counts.get("matched_updated", 0)
    u_updated = counts.get("by_source_updated", 0)
    m_deleted = max(0, counts.get("matched_deleted", 0) - found.overcount)
    u_deleted = counts.get("by_source_deleted", 0)
    copied = counts.get("copied", 0)
    updated = m_updated + u_updated
    deleted = m_deleted + u_deleted
    metrics = {
        "numSourceRows": found.num_source_rows,
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
        "numTargetChangeFilesAdded": len(writes.cdc),
        "executionTimeMs": elapsed_ms(started),
        **timing,
        "numTargetDeletionVectorsAdded": 0 if dv_merge is None else dv_merge.dvs_added,
        "numTargetDeletionVectorsRemoved": count_dvs(touched) if dv_merge is None else dv_merge.dvs_removed,
        "numTargetDeletionVectorsUpdated": 0 if dv_merge is None else dv_merge.dvs_updated,
    }
    return metrics, (updated + deleted + inserted, updated, deleted, inserted)
