"""Pieces DELETE, UPDATE and MERGE share: conditions, scans that know their file,
rewriting files copy-on-write, metrics and the commit.

Every DML command here runs in one OptimisticTransaction: plan on one snapshot,
let Spark find the touched files and write their replacements (and change
data files when delta.enableChangeDataFeed is on), then commit adds, removes
and cdc actions together. Nothing is committed before the last step, so any
failure leaves the table as it was; files written by a command that then fails
or loses a commit race are deleted (best effort; VACUUM removes any left).

Commands are split into `prepare_*` (everything but the commit, returning a
PreparedCommit) and `PreparedCommit.commit()`, so concurrent commits can be
interleaved deterministically (tests, conflict handling).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from pydelta.errors import (
    DeltaAnalysisError,
    DeltaConcurrentModificationException,
    DeltaError,
    DmlTypeError,
)
from pydelta.log.data_skipping import FileSkipper
from pydelta.log.snapshot import Snapshot
from pydelta.protocol import properties as P
from pydelta.txn.row_tracking import (  # noqa: F401 - re-exported for the DML modules
    check_row_ids_preserved,
    materialized_names,
    materializes_row_ids,
)
from pydelta.protocol.actions import Metadata
from pydelta.protocol.predicates import And, Predicate, Unknown
from pydelta.protocol.schema import StructType, quote_identifier
from pydelta.spark.write.constraints import constraint_checks, violations_as_errors, with_checks
from pydelta.spark.write.data_files import file_rows_to_adds, remove_action, write_data_files
from pydelta.spark.predicates import filter_condition, predicate_text, translate
from pydelta.spark.read.scan import FILE_COL, ROW_COL, ROW_ID_COL, ROW_VERSION_COL, build_dataframe, spark_file_uri
from pydelta.spark.transactions import engine_info, isolation_level
from pydelta.spark.write.conform import conform
from pydelta.spark.write.dataframe import files_matching_partitions
from pydelta.txn.commit_info import Operation
from pydelta.txn.transaction import OptimisticTransaction
from pydelta.spark.conf import session_time_zone
from pydelta.spark._typing import Column, DataFrame, JavaObject, SparkSession

__all__ = ["FILE_COL", "ROW_COL", "DmlTypeError", "PreparedCommit", "files_matching_partitions"]

# A predicate that keeps every file: what delta-spark records for an unfiltered read.
READ_ALL = Unknown("true")


# ---- arguments ----------------------------------------------------------------------------


def as_column(value: Any, argname: str = "'condition'") -> Column:
    """A pyspark Column from a SQL string or a Column."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(value, Column):
        return value
    if isinstance(value, str):
        try:
            return F.expr(value)
        except Exception as e:  # ParseException
            raise DeltaAnalysisError(f"cannot parse {argname} {value!r}: {_first_line(e)}") from None
    raise DmlTypeError(
        f"{argname} must be a Spark SQL Column or a string (expression in SQL syntax), found to be of type {type(value)}"
    )


def column_mapping(value: Any, argname: str) -> dict[str, Column]:
    """A {column name: Column} dict from delta-spark's `set` / `values` argument."""
    from pyspark.sql import Column

    if value is None:
        raise ValueError(f"{argname} cannot be None")  # delta-spark's _dict_to_jmap
    if not isinstance(value, dict):
        raise DmlTypeError(f"{argname} must be a dict, found to be {type(value)}")
    out = {}
    for key, expr in value.items():
        if not isinstance(key, str):
            raise DmlTypeError(
                f"Keys of dict in {argname} must contain only strings with column names, found '{key}' of type '{type(key)}"
            )
        if not isinstance(expr, (str, Column)):
            raise DmlTypeError(
                f"Values of dict in {argname} must contain only Spark SQL Columns or strings (expressions in SQL "
                f"syntax) as values, found '{expr}' of type '{type(expr)}'"
            )
        out[key] = as_column(expr, argname)
    return out


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def analysis_error(what: str, e: BaseException) -> DeltaAnalysisError:
    return DeltaAnalysisError(f"{what}: {_first_line(e)}")


# ---- analyzed conditions --------------------------------------------------------------------


@dataclass
class Condition:
    """A user condition analyzed against a DataFrame."""

    column: Column
    expr: JavaObject  # the analyzed Catalyst expression
    sql: str  # how history records it: delta-spark's simpleString without expression ids

    @property
    def references(self) -> list[str]:
        return expression_references(self.expr)

    @property
    def deterministic(self) -> bool:
        try:
            return bool(self.expr.deterministic())
        except Exception:
            return False

    def predicate(self) -> Predicate:
        return translate(self.expr)


def analyze(df: DataFrame, condition: Any, what: str = "the condition") -> Condition:
    col = as_column(condition)
    try:
        expr = filter_condition(df._jdf, col._jc)
    except Exception as e:
        raise analysis_error(f"cannot resolve {what} {_describe(condition)}", e) from None
    if expr is None:
        raise DeltaAnalysisError(f"cannot resolve {what} {_describe(condition)}")
    try:
        dtype = expr.dataType().simpleString()
    except Exception:
        dtype = "boolean"
    if dtype != "boolean":
        raise DeltaAnalysisError(f"{what} {_describe(condition)} must be a boolean expression, not {dtype}")
    return Condition(col, expr, predicate_text(df.sparkSession, expr))


def _describe(condition: Any) -> str:
    return repr(condition) if isinstance(condition, str) else str(condition)


def expression_references(expr: JavaObject) -> list[str]:
    seq = expr.references().toSeq()
    return [str(seq.apply(i).name()) for i in range(seq.size())]


def has_subquery(spark: SparkSession, expr: JavaObject) -> bool:
    try:
        jvm = spark.sparkContext._jvm
        if jvm is None:  # a stopped context
            return False
        return bool(jvm.org.apache.spark.sql.catalyst.expressions.SubqueryExpression.hasSubquery(expr))
    except Exception:
        return False


def conjuncts(expr: JavaObject) -> list[JavaObject]:
    """The AND-ed parts of a Catalyst expression."""
    from pydelta.spark.predicates import _children, _name

    if _name(expr) == "And":
        out = []
        for child in _children(expr):
            out.extend(conjuncts(child))
        return out
    return [expr]


def is_partition_only(spark: SparkSession, cond: Condition, partition_columns: Iterable[str]) -> bool:
    """delta-spark's isPredicateMetadataOnly: only partition columns, no subquery (and deterministic)."""
    lowered = {c.lower() for c in partition_columns}
    if not cond.deterministic or has_subquery(spark, cond.expr):
        return False
    return all(r.lower() in lowered for r in cond.references)


def and_all(predicates: list[Predicate]) -> Predicate:
    if not predicates:
        return READ_ALL
    out = predicates[0]
    for p in predicates[1:]:
        out = And(out, p)
    return out


# ---- the transaction ------------------------------------------------------------------------


def check_dml_supported(snapshot: Snapshot, operation: str, *, removes_rows: bool = True) -> None:
    """Refuse early (before writing anything) what the commit would refuse."""
    if removes_rows:
        check_not_append_only(snapshot)


def check_not_append_only(snapshot: Snapshot) -> None:
    if P.APPEND_ONLY.get(snapshot.configuration):
        raise DeltaAnalysisError(
            "This table is configured to only allow appends. If you would like to permit updates or deletes, use "
            "'ALTER TABLE <table_name> SET TBLPROPERTIES (delta.appendOnly=false)'."
        )


def transaction_metadata(txn: OptimisticTransaction) -> Metadata:
    """The metadata `txn` commits with; a DML transaction starts from a table's snapshot, so it has one."""
    metadata = txn.metadata
    if metadata is None:
        raise DeltaError(f"internal error: no table metadata in the transaction on {txn.table_root}")
    return metadata


def new_transaction(spark: SparkSession, snapshot: Snapshot) -> OptimisticTransaction:
    from pydelta.spark.maintenance.auto_compact import check_session_conf

    check_session_conf(spark)
    return OptimisticTransaction(
        snapshot.table_root, snapshot, engine_info=engine_info(spark), isolation_level=isolation_level(snapshot.metadata)
    )


# ---- the table's files ------------------------------------------------------------------------


def file_uris(snapshot: Snapshot, files: pa.Table) -> list[str]:
    """What Spark reports as `_metadata.file_path` for each file of `files`."""
    return [spark_file_uri(snapshot.absolute_path(p)) for p in files.column("path").to_pylist()]


def select_files(snapshot: Snapshot, files: pa.Table, uris: Iterable[str]) -> pa.Table:
    """The rows of `files` whose Spark file URI is in `uris`."""
    wanted = set(uris)
    mask = [u in wanted for u in file_uris(snapshot, files)]
    found = sum(mask)
    if found != len(wanted):
        missing = sorted(wanted - set(file_uris(snapshot, files)))[:3]
        raise DeltaError(f"internal error: Spark reported files that are not in the snapshot: {missing}")
    return files.filter(pa.array(mask, pa.bool_()))


def candidate_files(snapshot: Snapshot, files: pa.Table, txn: OptimisticTransaction, predicate: Predicate) -> pa.Table:
    """The files that may hold rows matching `predicate` (by stats), recorded as read by `txn`."""
    candidates = FileSkipper.for_metadata(files, snapshot.metadata).prune(predicate)
    txn.read_predicate(predicate)
    txn.read_files(candidates.column("path").to_pylist())
    return candidates


def files_with_matches(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, txn: OptimisticTransaction, predicate: Predicate,
    condition: Any, alias: str | None,
) -> tuple[pa.Table, dict[str, int]]:
    """Candidate files (pruned by stats, recorded as read) and, per file URI, its rows matching `condition`.

    Only file URIs and counts come back to the driver, never rows.
    """
    candidates = candidate_files(snapshot, files, txn, predicate)
    counts: dict[str, int] = {}
    if candidates.num_rows:
        df = scan(spark, snapshot, candidates, with_file=True)
        if alias:
            df = df.alias(alias)
        rows = df.filter(condition).groupBy(FILE_COL).count().collect()
        counts = {r[0]: int(r[1]) for r in rows}
    return candidates, counts


def scan(spark: SparkSession, snapshot: Snapshot, files: pa.Table, *, with_file: bool = False, row_ids: bool = False) -> DataFrame:
    """The rows of `files` (logical columns), plus FILE_COL / ROW_COL when `with_file`, plus the
    stable row ID / commit version (ROW_ID_COL / ROW_VERSION_COL) with `row_ids`."""
    return build_dataframe(spark, snapshot, files, with_file=with_file, row_ids=row_ids)


def logical_record_count(files: pa.Table) -> int | None:
    """Rows in `files` per their stats (minus DV-deleted rows), or None when a file has no stats."""
    if files.num_rows == 0:
        return 0
    counts = files.column("num_records")
    if counts.null_count:
        return None
    total = pc.sum(counts).as_py() or 0
    dvs = files.column("deletion_vector")
    if dvs.null_count < files.num_rows:
        for dv in dvs.to_pylist():
            if dv:
                total -= int(dv.get("cardinality") or 0)
    return int(total)


def total_bytes(files: pa.Table) -> int:
    if files.num_rows == 0:
        return 0
    return int(pc.sum(files.column("size")).as_py() or 0)


def count_dvs(files: pa.Table) -> int:
    if files.num_rows == 0:
        return 0
    return files.num_rows - files.column("deletion_vector").null_count


def add_rows(adds: list[dict[str, Any]]) -> int:
    total = 0
    for a in adds:
        stats = a.get("stats")
        if stats:
            total += int(json.loads(stats).get("numRecords", 0))
    return total


def remove_actions(files: pa.Table) -> list[dict[str, Any]]:
    now = int(time.time() * 1000)
    return [{"remove": remove_action(a, data_change=True, timestamp_ms=now)} for a in file_rows_to_adds(files)]


# ---- writing ---------------------------------------------------------------------------------------


def write_rows(spark: SparkSession, df: DataFrame, root: str, metadata: Metadata, *, repartition: bool = False,
               row_ids: bool = False) -> list[dict[str, Any]]:
    """Write `df` (columns by the table's logical names) as new data files, constraints checked inline.

    `row_ids`: `df` also has ROW_ID_COL / ROW_VERSION_COL (see `materializes_row_ids`), written
    into the table's materialized row-tracking columns so rows keep their stable IDs.
    """
    from pyspark.sql import functions as F

    hidden: list[str] = []
    if row_ids:
        hidden = materialized_names(metadata)
        df = df.withColumnRenamed(ROW_ID_COL, hidden[0]).withColumnRenamed(ROW_VERSION_COL, hidden[1])
    data = conform(df, metadata.schema, keep=hidden)
    data = with_checks(data, constraint_checks(metadata.schema, metadata.configuration))
    if repartition and metadata.partition_columns:
        data = data.repartition(*[F.col(quote_identifier(c)) for c in metadata.partition_columns])
    with violations_as_errors():
        adds = write_data_files(
            data, root, metadata, data_change=True,
            session_time_zone=session_time_zone(spark), hidden=hidden,
        )
    return [{"add": a} for a in adds]


# ---- change data files ------------------------------------------------------------------------------

CDF_KEY = "delta.enableChangeDataFeed"
CHANGE_TYPE = "_change_type"


def cdf_enabled(metadata: Metadata) -> bool:
    """Whether writers must produce change data files (delta.enableChangeDataFeed)."""
    return P.ENABLE_CHANGE_DATA_FEED.get(metadata.configuration)


def cdc_schema(schema: StructType) -> StructType:
    from pydelta.protocol.schema import STRING, StructField

    return StructType(tuple(schema.fields) + (StructField(CHANGE_TYPE, STRING, True),))


def with_change_type(df: DataFrame, schema: StructType, change_type: str | Column) -> DataFrame:
    """`df` shaped to the table schema (generated columns computed), plus `_change_type`.

    `change_type` is a string or a Column evaluated on `df` (e.g. from an action column).
    """
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    value = change_type if isinstance(change_type, Column) else F.lit(change_type)
    return conform(df.withColumn(CHANGE_TYPE, value), cdc_schema(schema))


def write_cdc(spark: SparkSession, df: DataFrame, root: str, metadata: Metadata) -> list[dict[str, Any]]:
    """Write change rows (table columns + `_change_type`) under `_change_data/`; returns `cdc` actions.

    Files are partitioned like the table (PROTOCOL.md: `_change_data/part=value/...`),
    with physical column names under column mapping, as delta-spark writes them.
    """
    import os
    from dataclasses import replace

    from pyspark.sql import functions as F

    full = cdc_schema(metadata.schema)
    cdc_metadata = replace(metadata, schema_string=full.to_json())
    data = df.select(*[F.col(quote_identifier(f.name)) for f in full.fields])
    written = write_data_files(
        data, os.path.join(root, "_change_data"), cdc_metadata, data_change=False,
        session_time_zone=session_time_zone(spark), passthrough=(CHANGE_TYPE,),
    )
    return [
        {"cdc": {"path": "_change_data/" + a["path"], "partitionValues": a["partitionValues"], "size": a["size"],
                 "dataChange": False}}
        for a in written
    ]


# ---- counts and timing --------------------------------------------------------------------------------


def observation() -> Any:
    import uuid

    from pyspark.sql import Observation

    return Observation(f"pydelta_dml_{uuid.uuid4().hex[:12]}")


def observed(obs: Any, wait_s: float = 5.0) -> dict[str, Any] | None:
    """The metrics of an Observation whose query has run, or None if Spark never reported them.

    Spark skips reporting when the optimizer removed the observed part of the
    plan (e.g. a join with an empty side); callers then fall back to counting.
    """
    jo = getattr(obs, "_jo", None)
    if jo is None:
        return None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            done = bool(jo.future().isCompleted())
        except Exception:
            done = True  # older API without a future: get() is safe after the action
        if done:
            break
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)
    try:
        return {k: (0 if v is None else v) for k, v in obs.get.items()}
    except Exception:
        return None


def elapsed_ms(since: float) -> int:
    return int((time.monotonic() - since) * 1000)


# ---- the commit ------------------------------------------------------------------------------------------


@dataclass
class PreparedCommit:
    """A DML command whose data files are written; `commit()` publishes it.

    Split in two so tests (and callers) can interleave other commits between
    the read and the commit, which is what conflict detection is about.
    """

    txn: OptimisticTransaction
    actions: list[dict[str, Any]]
    operation: Operation
    metrics: dict[str, Any]
    started: float = field(default_factory=time.monotonic)
    result: Any = None
    spark: SparkSession | None = None  # runs the post-commit hooks (auto compaction)

    def commit(self) -> int | None:
        """Commit; returns the version, or None when delta-spark would skip an empty commit.

        When the commit loses to a conflicting transaction, the files this command
        wrote are deleted (nothing references them) and the conflict is re-raised.
        """
        if "executionTimeMs" in self.metrics:
            self.metrics["executionTimeMs"] = max(
                int(self.metrics["executionTimeMs"]), int((time.monotonic() - self.started) * 1000)
            )
        if not self.actions and self.txn.isolation_level == "Serializable" and not self.txn.metadata_changed:
            # delta-spark (skipRecordingEmptyCommits): an empty commit is skipped under Serializable.
            return None
        try:
            version = self.txn.commit(self.actions, self.operation, operation_metrics=self.metrics, data_change=True)
        except DeltaConcurrentModificationException:
            discard_files(self.txn.table_root, self.actions)
            raise
        from pydelta.spark.maintenance.auto_compact import after_data_commit

        if self.spark is not None:
            after_data_commit(self.spark, self.txn, version, self.actions)
        return version


def discard_files(table_root: str, actions: Iterable[dict[str, Any]]) -> None:
    """Delete the data / change files of uncommitted `add` and `cdc` actions (best effort).

    An `add` of a path the same actions remove is an existing file getting a new deletion
    vector: the data file stays, only the new DV file goes.
    """
    import os

    from pydelta.log.replay import canonical_path
    from pydelta.log.storage import is_remote_uri, storage_for
    from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor

    actions = list(actions)
    removed = {a["remove"]["path"] for a in actions if a.get("remove")}
    for action in actions:
        for kind in ("add", "cdc"):
            body = action.get(kind)
            if not body or not body.get("path"):
                continue
            path: str | None = canonical_path(body["path"], table_root)
            if kind == "add" and body["path"] in removed:
                dv = body.get("deletionVector")
                path = DeletionVectorDescriptor.from_dict(dv).absolute_path(table_root) if dv else None
            if path is None:
                continue
            try:
                if is_remote_uri(path):
                    storage_for(path).delete(path)
                else:
                    os.remove(path)
            except OSError:
                pass

