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

The stages live in their own modules: `merge_plan` (checks, schema evolution in
`merge_schema`, analysis, candidate files), `merge_classify` (touched files, each row's
clause), `merge_output` (the rows and change data written, counts, metrics); the clauses
and their action codes are in `merge_clauses`. This module is the builder and runs the stages.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from pydelta.errors import DeltaNotImplementedError, DmlTypeError, MultipleSourceRowMatchingTargetRowInMergeError
from pydelta.log.snapshot import Snapshot
from pydelta.spark.base._typing import Column, DataFrame, SparkSession
from pydelta.spark.base.spark_errors import boundary_class
from pydelta.spark.dml.commit import PreparedCommit, discard_files
from pydelta.spark.dml.merge_classify import TouchedFiles, find_touched_files, materialize_source
from pydelta.spark.dml.merge_clauses import MergeClause
from pydelta.spark.dml.merge_output import (
    MergeWrites,
    append_inserts,
    merge_actions,
    merge_metrics,
    record_identity_high_water_marks,
    rewrite_touched_files,
)
from pydelta.spark.dml.merge_plan import candidate_files, plan_merge
from pydelta.spark.read.conditions import as_column, column_mapping
from pydelta.txn.commit_info import Operation

__all__ = [
    "DeltaMergeBuilder",
    "MergeClause",
    "MultipleSourceRowMatchingTargetRowInMergeError",
    "prepare_merge",
]


# ---- the builder -------------------------------------------------------------------------------------------


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

    def _with(self, clause: MergeClause | None = None, *, schema_evolution: bool | None = None) -> DeltaMergeBuilder:
        out = DeltaMergeBuilder.__new__(DeltaMergeBuilder)
        out._table, out._source, out._condition = self._table, self._source, self._condition
        out._clauses = self._clauses + ((clause,) if clause is not None else ())
        out._schema_evolution = self._schema_evolution if schema_evolution is None else schema_evolution
        return out

    @staticmethod
    def _cond(condition: Any) -> Column | None:
        return None if condition is None else as_column(condition, "'condition'")

    def whenMatchedUpdate(self, condition: Any = None, set: Any = None) -> DeltaMergeBuilder:  # noqa: A002
        """Update the target rows a source row matches (and `condition` holds for).

        Args:
            condition: optional extra condition (SQL string or Column) on the matched pair.
            set: target column name -> new value (SQL string or Column, may use source columns).

        Returns:
            A new builder with the clause added.

        Example:
            >>> t.alias("t").merge(src.alias("s"), "t.id = s.id") \\
            ...     .whenMatchedUpdate(set={"value": "s.value"}).execute()
        """
        values = column_mapping(set, "'set' in whenMatchedUpdate")
        return self._with(MergeClause("matched", "update", self._cond(condition), values))

    def whenMatchedUpdateAll(self, condition: Any = None) -> DeltaMergeBuilder:
        """Update every column of a matched target row with the source row's same-named column.

        Args:
            condition: optional extra condition (SQL string or Column) on the matched pair.

        Returns:
            A new builder with the clause added.

        Example:
            >>> t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
        """
        return self._with(MergeClause("matched", "update", self._cond(condition), None, star=True))

    def whenMatchedDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        """Delete the target rows a source row matches (and `condition` holds for).

        Args:
            condition: optional extra condition (SQL string or Column) on the matched pair.

        Returns:
            A new builder with the clause added.

        Example:
            >>> t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedDelete("s.deleted").execute()
        """
        return self._with(MergeClause("matched", "delete", self._cond(condition)))

    def whenNotMatchedInsert(self, condition: Any = None, values: Any = None) -> DeltaMergeBuilder:
        """Insert a row for each source row that matches no target row.

        Args:
            condition: optional condition (SQL string or Column) on the source row.
            values: target column name -> value (SQL string or Column over source columns);
                columns left out get their default value or null.

        Returns:
            A new builder with the clause added.

        Example:
            >>> t.alias("t").merge(src.alias("s"), "t.id = s.id") \\
            ...     .whenNotMatchedInsert(values={"id": "s.id", "value": "s.value"}).execute()
        """
        vals = column_mapping(values, "'values' in whenNotMatchedInsert")
        return self._with(MergeClause("notMatched", "insert", self._cond(condition), vals))

    def whenNotMatchedInsertAll(self, condition: Any = None) -> DeltaMergeBuilder:
        """Insert each unmatched source row as it is (its columns by name).

        Args:
            condition: optional condition (SQL string or Column) on the source row.

        Returns:
            A new builder with the clause added.

        Example:
            >>> t.alias("t").merge(src.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
        """
        return self._with(MergeClause("notMatched", "insert", self._cond(condition), None, star=True))

    def whenNotMatchedBySourceUpdate(self, condition: Any = None, set: Any = None) -> DeltaMergeBuilder:  # noqa: A002
        """Update the target rows that no source row matches.

        Args:
            condition: optional condition (SQL string or Column) on the target row.
            set: target column name -> new value (SQL string or Column over target columns).

        Returns:
            A new builder with the clause added.

        Example:
            >>> t.alias("t").merge(src.alias("s"), "t.id = s.id") \\
            ...     .whenNotMatchedBySourceUpdate(set={"active": "false"}).execute()
        """
        values = column_mapping(set, "'set' in whenNotMatchedBySourceUpdate")
        return self._with(MergeClause("notMatchedBySource", "update", self._cond(condition), values))

    def whenNotMatchedBySourceDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        """Delete the target rows that no source row matches (and `condition` holds for).

        Args:
            condition: optional condition (SQL string or Column) on the target row.

        Returns:
            A new builder with the clause added.

        Example:
            >>> t.alias("t").merge(src.alias("s"), "t.id = s.id").whenNotMatchedBySourceDelete().execute()
        """
        return self._with(MergeClause("notMatchedBySource", "delete", self._cond(condition)))

    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        """Let this merge add the source's new columns (and nested fields) to the table's schema.

        Returns:
            A new builder that evolves the schema, as `spark.databricks.delta.schema.autoMerge.enabled` would.

        Example:
            >>> t.alias("t").merge(src.alias("s"), "t.id = s.id") \\
            ...     .whenNotMatchedInsertAll().withSchemaEvolution().execute()
        """
        return self._with(schema_evolution=True)

    def execute(self) -> DataFrame:
        """Run the merge as one commit, its clauses applied in the order they were added.

        Returns:
            A one-row DataFrame: num_affected_rows, num_updated_rows, num_deleted_rows,
            num_inserted_rows (as delta-spark returns).

        Example:
            >>> t.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedDelete().execute().show()
        """
        return run_merge(self._table._spark, self._table.snapshot(), self._source, self._condition,
                         list(self._clauses), schema_evolution=self._schema_evolution,
                         alias=getattr(self._table, "_alias", None))


# ---- the one entry of every front (the builder above, SQL's MERGE INTO, Connect's) -----------------------

# SQL's WHEN clauses: (when, action) -> (kind, action, star)
_SQL_CLAUSES = {
    ("matched", "update"): ("matched", "update", False),
    ("matched", "updateAll"): ("matched", "update", True),
    ("matched", "delete"): ("matched", "delete", False),
    ("notMatched", "insert"): ("notMatched", "insert", False),
    ("notMatched", "insertAll"): ("notMatched", "insert", True),
    ("notMatchedBySource", "update"): ("notMatchedBySource", "update", False),
    ("notMatchedBySource", "delete"): ("notMatchedBySource", "delete", False),
}


def sql_clause(when: str, action: str, condition: str | None, assignments: dict[str, str]) -> MergeClause:
    """One WHEN clause of a SQL MERGE: `when` matched / notMatched / notMatchedBySource, `action`
    update, updateAll, delete, insert or insertAll, `assignments` the SET / VALUES as {column: SQL}."""
    shape = _SQL_CLAUSES.get((when, action))
    if shape is None:
        raise DeltaNotImplementedError(f"MERGE clause {action} in WHEN {when.upper()} is not supported")
    kind, verb, star = shape
    cond = None if condition is None else as_column(condition, "'condition'")
    if star or verb == "delete":
        return MergeClause(kind, verb, cond, None, star=star)
    return MergeClause(kind, verb, cond, column_mapping(assignments, f"the {action} of WHEN {when.upper()}"))


def run_merge(spark: SparkSession, snapshot: Snapshot, source: DataFrame, condition: Any,
              clauses: list[MergeClause], *, schema_evolution: bool, alias: str | None) -> DataFrame:
    """Plan, write and commit a MERGE; delta-spark's one-row result (affected, updated, deleted, inserted)."""
    prepared = prepare_merge(spark, snapshot, source, as_column(condition, "'condition'"), clauses,
                             schema_evolution=schema_evolution, alias=alias)
    prepared.commit()
    affected, updated, deleted, inserted = prepared.result
    return spark.createDataFrame(
        [(affected, updated, deleted, inserted)],
        "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long",
    )


# ---- running the stages ------------------------------------------------------------------------------------


def prepare_merge(
    spark: SparkSession,
    snapshot: Snapshot,
    source: DataFrame,
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
    started = time.monotonic()
    plan = plan_merge(spark, snapshot, source, condition, clauses, schema_evolution=schema_evolution, alias=alias)
    candidates = candidate_files(plan)
    timing = {"materializeSourceTimeMs": 0, "scanTimeMs": 0, "rewriteTimeMs": 0}
    found = TouchedFiles(plan.files.slice(0, 0))
    writes = MergeWrites()
    persisted = False
    try:
        if not plan.insert_only and candidates.num_rows:
            persisted = materialize_source(source, timing)
            found = find_touched_files(plan, candidates, timing, check_source_first=check_source_first)
        if found.files.num_rows:
            rewrite_touched_files(plan, found, writes, timing)
            if found.unverified and found.expected_target_rows != writes.target_rows_out():
                # A target row met several source rows: start over with the uniqueness check,
                # which decides between the error and copying the row once.
                discard_files(plan.snapshot.storage, plan.root, writes.added + writes.cdc)
                writes.added, writes.cdc = [], []
                return prepare_merge(spark, snapshot, source, condition, clauses, schema_evolution=schema_evolution,
                                     alias=alias, check_source_first=True)
        elif plan.inserts:
            append_inserts(plan, candidates, found, writes, timing)
        if found.num_source_rows is None:
            found.num_source_rows = source.count()
    except BaseException:
        discard_files(plan.snapshot.storage, plan.root, writes.added + writes.cdc)
        raise
    finally:
        if persisted:
            with contextlib.suppress(Exception):
                source.unpersist(blocking=False)

    record_identity_high_water_marks(plan, writes.added)
    metrics, result = merge_metrics(found, writes, timing, started)
    operation = Operation.merge(
        plan.merge_cond.sql,
        [r.history for r in plan.matched],
        [r.history for r in plan.inserts],
        [r.history for r in plan.by_source],
    )
    return PreparedCommit(txn=plan.txn, actions=merge_actions(found, writes), operation=operation, metrics=metrics,
                          started=started, result=result, spark=spark)
