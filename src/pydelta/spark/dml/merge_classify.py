"""Classifying a MERGE's rows: which target files a clause touches, and which clause each row meets.

Touched files: one join of the source with the candidate target rows, each carrying a small
file number and its row index; one aggregation returns per file how many rows a clause would
modify and whether several source rows match one target row. Only these per-file numbers
reach the driver. When the source is unique on its join keys and has many rows per candidate
file, nearly every file is touched: the search is skipped and all candidates are rewritten.

Row actions: in the rewriting join each row gets the code of the first clause (in order, per
kind) whose condition holds: update, delete, insert, or copy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from pydelta.errors import MultipleSourceRowMatchingTargetRowInMergeError
from pydelta.protocol.schema import quote_identifier
from pydelta.spark.base._typing import Column, DataFrame, JavaObject, SparkSession
from pydelta.spark.base.predicates import _children, _name
from pydelta.spark.dml.commit import elapsed_ms, observation, observed
from pydelta.spark.dml.deletion_vectors import persistent_dvs
from pydelta.spark.dml.files import file_uris, logical_record_count, scan
from pydelta.spark.dml.merge_clauses import ACTION, COPY, DROP, ResolvedClause
from pydelta.spark.dml.merge_plan import MergePlan
from pydelta.spark.read.conditions import Condition, conjuncts
from pydelta.spark.read.scan import FILE_COL, ROW_COL

SOURCE_PRESENT = "__pydelta_source_row_present"
TARGET_PRESENT = "__pydelta_target_row_present"
FILE_IDX = "__pydelta_file_index"

ONE_PASS_CONF = "spark.pydelta.merge.onePassSourceRowsPerFile"
#: Plan nodes whose re-reading gives the same rows cheaply (see `_cheap_to_reread`).
REREAD_NODES = {"Project", "Filter", "SubqueryAlias", "Range", "LocalRelation", "LogicalRelation"}


@dataclass
class TouchedFiles:
    """What the search for touched target files found (or, rewriting in one pass, assumed)."""

    files: pa.Table  # the target files to rewrite
    num_source_rows: int | None = None  # when a job counted them on the way
    any_match: bool = False  # some source row matched some target row
    overcount: int = 0  # extra matches of target rows an unconditional delete deletes once
    need_dedupe: bool = False  # target rows matched several times but not modified: copy once
    unverified: bool = False  # one pass without checking the source's keys for uniqueness
    expected_target_rows: int | None = None  # of the candidates, from their stats (unverified only)


# ---- the source --------------------------------------------------------------------------------------


def materialize_source(source: DataFrame, timing: dict[str, int]) -> bool:
    """Cache the source (read by two jobs) unless it is cached, cheap to read again or uncacheable;
    returns whether this call cached it (the caller unpersists it)."""
    from pyspark import StorageLevel

    t0 = time.monotonic()
    persisted = False
    level = source.storageLevel
    if not (level.useMemory or level.useDisk) and not _cheap_to_reread(source) and _cacheable(source):
        source.persist(StorageLevel.MEMORY_AND_DISK)
        persisted = True
    timing["materializeSourceTimeMs"] = elapsed_ms(t0)
    return persisted


def _cheap_to_reread(source: DataFrame) -> bool:
    """Whether reading the source again gives the same rows at little cost, so the merge need
    not cache it: a deterministic plan of projections and filters over ranges, local rows or
    files (file relations keep the file list they were planned with)."""
    from pydelta.spark.base import jplan

    try:
        plan = source._jdf.queryExecution().analyzed()
        return bool(plan.deterministic()) and all(jplan.kind(node) in REREAD_NODES for node in jplan.walk(plan))
    except Exception:  # noqa: BLE001 - a plan we cannot read: cache it
        return False


def _cacheable(source: DataFrame) -> bool:
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


def _source_join_keys(merge_cond: Condition, join: JavaObject | None) -> list[str] | None:
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


def _unique_on(source: DataFrame, keys: list[str]) -> bool:
    """Whether no two source rows share a (non-null) key: one small aggregation over the source."""
    from pyspark.sql import functions as F

    cols = [F.col(quote_identifier(k)) for k in keys]
    not_null = and_all_columns([c.isNotNull() for c in cols])
    dup = source.where(not_null).groupBy(*cols).count().where(F.col("count") > 1).limit(1)
    return not dup.take(1)


def and_all_columns(columns: list[Column]) -> Column:
    out = columns[0]
    for c in columns[1:]:
        out = out & c
    return out


def _one_pass(spark: SparkSession, source_rows: int | None, candidate_files: int) -> bool:
    """Whether to rewrite all candidate files without first finding the touched ones.

    With this many (unique-keyed) source rows per candidate file, practically every file
    holds a match, and the search (a second join over the target) would only cost time.
    """
    threshold = int(str(spark.conf.get(ONE_PASS_CONF, "1000")))
    return threshold > 0 and source_rows is not None and source_rows >= threshold * candidate_files


# ---- touched files -----------------------------------------------------------------------------------


def find_touched_files(plan: MergePlan, candidates: pa.Table, timing: dict[str, int], *,
                       check_source_first: bool) -> TouchedFiles:
    """The candidate files some clause acts on (a MATCHED or NOT MATCHED BY SOURCE clause modifies
    one of their rows, or, with NOT MATCHED clauses, a source row matches one of their rows).

    Raises MultipleSourceRowMatchingTargetRowInMergeError when several source rows match a
    target row a MATCHED clause would modify (but for one unconditional MATCHED DELETE).
    `check_source_first`: see `prepare_merge`.
    """
    spark, source = plan.spark, plan.source
    t0 = time.monotonic()
    found = TouchedFiles(candidates.slice(0, 0))
    unique = False
    keys = None if plan.by_source else _source_join_keys(plan.merge_cond, plan.join)
    if keys is not None and not check_source_first and not persistent_dvs(
            spark, plan.metadata, plan.snapshot.protocol, "merge"):
        found.expected_target_rows = logical_record_count(candidates)
        if found.expected_target_rows is not None:
            found.num_source_rows = source.count()
            found.unverified = _one_pass(spark, found.num_source_rows, candidates.num_rows)
    if not found.unverified:
        unique = keys is not None and _unique_on(source, keys)
        if unique and found.num_source_rows is None:
            found.num_source_rows = source.count()
    if found.unverified or (unique and _one_pass(spark, found.num_source_rows, candidates.num_rows)):
        # So many source rows per candidate file that nearly every file is touched: skip the
        # search and rewrite the candidates in one pass (unique keys, or the rewrite's row
        # counts show whether a target row matched several source rows).
        found.files = candidates
        timing["scanTimeMs"] = elapsed_ms(t0)
        return found

    stats, source_rows = _per_file_stats(plan, candidates, unique)
    found.num_source_rows = source_rows if source_rows is not None else found.num_source_rows
    timing["scanTimeMs"] = elapsed_ms(t0)
    if sum(int(r["conflicts"]) for r in stats) and not plan.only_unconditional_delete:
        raise MultipleSourceRowMatchingTargetRowInMergeError()
    found.any_match = any(int(r["matched"]) for r in stats)
    touched_rows = [r for r in stats if int(r["acted"]) > 0 or (plan.inserts and int(r["matched"]) > 0)]
    found.need_dedupe = any(int(r["dups"]) for r in touched_rows)
    found.overcount = sum(int(r["over"]) for r in stats) if plan.only_unconditional_delete else 0
    if touched_rows:
        found.files = candidates.take(pa.array(sorted(int(r[FILE_IDX]) for r in touched_rows), pa.int64()))
    return found


def _per_file_stats(plan: MergePlan, candidates: pa.Table, unique: bool) -> tuple[list[Any], int | None]:
    """One job: per candidate file (FILE_IDX), the target rows a clause modifies ("acted"),
    rows some source row matches ("matched"), rows matched several times and modified
    ("conflicts") or not ("dups"), and the extra matches ("over"); plus the source's row count
    when Spark reported it."""
    from pyspark.sql import functions as F

    spark, snapshot = plan.spark, plan.snapshot
    obs = observation()
    src = plan.source.observe(obs, F.count(F.lit(1)).alias("n")).withColumn(SOURCE_PRESENT, F.lit(True))
    # Rows carry a small file number (not the long file URI) through the join and shuffles.
    uris = file_uris(snapshot, candidates)
    index = spark.createDataFrame(list(zip(uris, range(len(uris)), strict=True)), f"{FILE_COL} string, {FILE_IDX} long")
    target = (scan(spark, snapshot, candidates, with_file=True)
              .join(F.broadcast(index), FILE_COL).drop(FILE_COL).alias(plan.target.alias))
    joined = src.join(target, plan.condition, "right_outer" if plan.by_source else "inner")
    is_match = F.col(SOURCE_PRESENT).isNotNull()
    m_act = (is_match & any_hit(plan.matched)).cast("int")
    u_act = (~is_match & any_hit(plan.by_source)).cast("int")
    if unique:
        # At most one source row per target row: per-file flags straight from the join.
        per_file = joined.groupBy(FILE_IDX).agg(
            F.sum(m_act).alias("acted"), F.count(F.lit(1)).alias("matched"),
            F.lit(0).alias("conflicts"), F.lit(0).alias("dups"), F.lit(0).alias("over"),
        )
    else:
        if plan.by_source:
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
    return stats, int(seen["n"]) if seen is not None else None


# ---- row actions ---------------------------------------------------------------------------------------


def any_hit(resolved: list[ResolvedClause]) -> Column:
    """Whether any of the clauses' conditions holds."""
    from pyspark.sql import functions as F

    out = F.lit(False)
    for r in resolved:
        out = out | r.hit()
    return out


def first_action(cases: list[tuple[Column, int]], otherwise: int) -> Column:
    """CASE WHEN cond THEN code ... ELSE otherwise END: the code of the first case that holds."""
    from pyspark.sql import functions as F

    if not cases:
        return F.lit(otherwise)
    (cond, code), rest = cases[0], cases[1:]
    action = F.when(cond, F.lit(code))
    for cond, code in rest:
        action = action.when(cond, F.lit(code))
    return action.otherwise(F.lit(otherwise))


def source_present() -> Column:
    from pyspark.sql import functions as F

    return F.col(SOURCE_PRESENT).isNotNull()


def target_present() -> Column:
    from pyspark.sql import functions as F

    return F.col(TARGET_PRESENT).isNotNull()


def rewrite_join(plan: MergePlan, files: pa.Table, *, with_file: bool) -> DataFrame:
    """The source outer-joined with the rows of the touched `files` (FULL with NOT MATCHED clauses,
    else RIGHT), each row with its ACTION: matched rows take the first MATCHED clause that holds
    (else COPY), target-only rows the first NOT MATCHED BY SOURCE clause (else COPY), source-only
    rows the first NOT MATCHED clause (else DROP)."""
    from pyspark.sql import functions as F

    src = plan.source.withColumn(SOURCE_PRESENT, F.lit(True))
    target = scan(plan.spark, plan.snapshot, files, with_file=with_file, row_ids=plan.keep_ids).alias(plan.target.alias)
    target = target.withColumn(TARGET_PRESENT, F.lit(True))
    joined = src.join(target, plan.condition, "full_outer" if plan.inserts else "right_outer")
    s_in, t_in = source_present(), target_present()
    cases = [(s_in & t_in & r.hit(), r.code) for r in plan.matched]
    cases.append((s_in & t_in, COPY))
    cases += [(~s_in & r.hit(), r.code) for r in plan.by_source]
    cases.append((~s_in, COPY))
    cases += [(~t_in & r.hit(), r.code) for r in plan.inserts]
    return joined.withColumn(ACTION, first_action(cases, DROP))


def insert_actions(plan: MergePlan) -> Column:
    """ACTION for source rows that match no target row: the first NOT MATCHED clause that holds, else DROP."""
    return first_action([(r.hit(), r.code) for r in plan.inserts], DROP)
