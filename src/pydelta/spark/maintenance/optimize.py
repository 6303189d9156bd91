"""OPTIMIZE: bin-packing compaction and Z-ordering (delta-spark's OptimizeTableCommand).

Planning follows delta-spark's OptimizeExecutor:
 * candidate files are the live files of the partitions selected by `where(...)`
   (partition columns only);
 * compaction keeps the files smaller than `spark.databricks.delta.optimize.minFileSize`
   or with too many rows deleted by a deletion vector
   (`spark.databricks.delta.optimize.maxDeletedRowsRatio`), groups them per partition and
   packs them, smallest first, into bins of at most
   `spark.databricks.delta.optimize.maxFileSize` bytes; a bin of a single file is left
   alone unless that file has a deletion vector (rewriting it purges the deleted rows);
 * Z-order takes every candidate file of a partition as one bin and range-partitions the
   rows by an interleaved-bits z-value of the Z-order columns into
   `max(1, binSize / maxFileSize)` files.
Every bin is rewritten by its own Spark job (several run at once, up to
`spark.databricks.delta.optimize.maxThreads`); new files are added and old ones removed
with dataChange=false in one OPTIMIZE commit, which therefore runs under snapshot
isolation: concurrent appends never conflict, while a concurrent removal of a compacted
file does (ConcurrentDeleteReadException / ConcurrentDeleteDeleteException).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pydelta.errors import (
    DeltaAnalysisError,
    DeltaConcurrentModificationException,
    DeltaIllegalArgumentError,
)
from pydelta.log.snapshot import Snapshot
from pydelta.protocol import clustering, zcubes
from pydelta.protocol.action_types import AddFile, RemoveFile, as_add, as_remove
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.conf import conf_bool, conf_bytes, conf_value, session_time_zone
from pydelta.spark.base.connect_session import is_connect
from pydelta.spark.base.hadoop_storage import table_hadoop_options
from pydelta.spark.base.spark_errors import boundary_class
from pydelta.spark.maintenance.zorder import validate_zorder_columns, zorder_dataframe
from pydelta.txn.commit_info import Operation

logger = logging.getLogger(__name__)

MIN_FILE_SIZE_CONF = "spark.databricks.delta.optimize.minFileSize"
MAX_FILE_SIZE_CONF = "spark.databricks.delta.optimize.maxFileSize"
MAX_DELETED_ROWS_RATIO_CONF = "spark.databricks.delta.optimize.maxDeletedRowsRatio"
MAX_THREADS_CONF = "spark.databricks.delta.optimize.maxThreads"
REPARTITION_CONF = "spark.databricks.delta.optimize.repartition.enabled"
NUM_RANGE_IDS_CONF = "spark.databricks.io.skipping.mdc.rangeId.max"
ADD_NOISE_CONF = "spark.databricks.io.skipping.mdc.addNoise"
_GIB = 1 << 30
_MAX_COMMIT_ATTEMPTS = 10


@boundary_class
class DeltaOptimizeBuilder:
    """delta-spark's `DeltaOptimizeBuilder`: `table.optimize().where(...).executeCompaction()`."""

    def __init__(self, table: Any) -> None:
        self._table = table
        self._filters: list[str] = []

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        """Optimize only the partitions this predicate selects (partition columns only).

        Args:
            partitionFilter: a SQL predicate on partition columns; calls add up (AND).

        Returns:
            This builder.

        Example:
            >>> t.optimize().where("date = '2024-01-01'").executeCompaction()
        """
        if not isinstance(partitionFilter, str) or not partitionFilter.strip():
            raise DeltaIllegalArgumentError("where() needs a partition filter SQL expression string")
        self._filters.append(partitionFilter)
        return self

    def executeCompaction(self) -> DataFrame:
        """Bin-pack small files (and files with many deleted rows) into files of about maxFileSize.

        Returns:
            A one-row DataFrame: the table path and delta-spark's OptimizeMetrics struct.

        Example:
            >>> t.optimize().executeCompaction().select("metrics.numFilesAdded").show()
        """
        return optimize(self._table, self._filters, ())

    def executePurge(self) -> DataFrame:
        """`REORG TABLE ... APPLY (PURGE)`: rewrite every file with a deletion vector.

        Only the partitions `where` selects; afterwards no deleted row is left in a data file.

        Returns:
            A one-row DataFrame: the table path and the OptimizeMetrics struct.

        Example:
            >>> t.optimize().executePurge()
        """
        return optimize(self._table, self._filters, (), purge=True)

    def executeZOrderBy(self, *cols: Any) -> DataFrame:
        """Rewrite each selected partition's files Z-ordered on these data columns.

        Args:
            cols: column names (strings, or lists of them); nested fields as `a.b`.

        Returns:
            A one-row DataFrame: the table path and the OptimizeMetrics struct (with zOrderStats).

        Example:
            >>> t.optimize().where("date = '2024-01-01'").executeZOrderBy("user_id", "ts")
        """
        names: list[str] = []
        for c in cols:
            if isinstance(c, (list, tuple)):
                names.extend(c)
            else:
                names.append(c)
        for n in names:
            if type(n) is not str:  # delta-spark's check and message
                raise TypeError(f"Z-order column must be str. Found {n} with type {type(n)}")
        return optimize(self._table, self._filters, names)


# ---- planning -----------------------------------------------------------------------------------


@dataclass
class Bin:
    partition: tuple[tuple[str, str | None], ...]
    files: pa.Table  # rows of Snapshot.files()

    @property
    def size(self) -> int:
        return int(sum(self.files.column("size").to_pylist()))


@dataclass
class OptimizeResult:
    adds: list[AddFile] = field(default_factory=list)
    removes: list[RemoveFile] = field(default_factory=list)
    removed_dvs: list[dict[str, Any]] = field(default_factory=list)
    version: int | None = None


def _java_seq(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.size())]


def _parse_expression(spark: SparkSession, sql: str) -> Any:
    try:
        return spark._jsparkSession.sessionState().sqlParser().parseExpression(sql)
    except Exception as e:
        raise DeltaAnalysisError(f"cannot parse the partition predicate {sql!r}: {str(e).splitlines()[0]}") from None


def _has_subquery(expr: Any) -> bool:
    name = expr.getClass().getSimpleName()
    if "Subquery" in name or name in ("Exists", "ListQuery", "InSubquery"):
        return True
    return any(_has_subquery(c) for c in _java_seq(expr.children()))


def predicate_strings(spark: SparkSession, filters: Sequence[str]) -> list[str]:
    """How history records the OPTIMIZE / REORG predicates, exactly as delta-spark does.

    delta-spark records the *parsed, unresolved* expression's simpleString (OptimizeTableCommand
    parses each WHERE text and never resolves what it records), so columns keep the parser's
    quote mark: `part = 1` is recorded as `('part = 1)`, `part IN (0, 2)` as `'part IN (0,2)`.
    """
    from pydelta.spark.base.predicates import max_to_string_fields

    if is_connect(spark):  # no SQL parser on a Connect client: the texts as given
        return list(filters)
    limit = max_to_string_fields(spark)
    return [str(_parse_expression(spark, sql).simpleString(limit)) for sql in filters]


def _verify_on_server(spark: SparkSession, snapshot: Snapshot, filters: Sequence[str]) -> None:
    """Over Spark Connect (no parser on the client): each predicate must resolve against the
    partition columns alone, which the server's analysis of a filter over them decides."""
    from pydelta.spark.read.partitions import partition_rows_dataframe

    columns = partition_rows_dataframe(spark, snapshot, snapshot.files().slice(0, 0)).drop("__pydelta_idx")
    for sql in filters:
        try:
            columns.filter(sql).schema  # noqa: B018 (the server analyzes the filter)
        except Exception as e:
            raise DeltaAnalysisError(
                f"Predicate {sql!r} must reference only the partition columns "
                f"[{', '.join(snapshot.partition_columns)}]: {str(e).splitlines()[0]}") from None


def verify_partition_predicates(spark: SparkSession, filters: Sequence[str], partition_columns: Sequence[str]) -> None:
    """Only partition columns may be referenced, and no subqueries (delta-spark's rule)."""
    case_sensitive = conf_bool(spark, "spark.sql.caseSensitive", False)
    for sql in filters:
        expr = _parse_expression(spark, sql)
        if _has_subquery(expr):
            raise DeltaAnalysisError("Subquery is not supported in partition predicates.")
        for ref in _java_seq(expr.references().toSeq()):
            parts = [str(p) for p in _java_seq(ref.nameParts())]  # raw names, never `quoted`
            name = parts[0] if len(parts) == 1 else str(ref.name())
            ok = name in partition_columns if case_sensitive else name.lower() in {c.lower() for c in partition_columns}
            if not ok:
                raise DeltaAnalysisError(
                    f"Predicate references non-partition column '{name}'. Only the partition columns may be "
                    f"referenced: [{', '.join(partition_columns)}]"
                )


def select_partitions(spark: SparkSession, snapshot: Snapshot, filters: Sequence[str]) -> pa.Table:
    """The live files of the partitions matching every filter."""
    files = snapshot.files()
    if not filters or files.num_rows == 0:
        return files
    from pydelta.spark.read.partitions import partition_rows_dataframe

    df = partition_rows_dataframe(spark, snapshot, files)
    for sql in filters:
        try:
            df = df.filter(sql)
        except Exception as e:
            raise DeltaAnalysisError(
                f"cannot resolve the partition predicate {sql!r}: {str(e).splitlines()[0]}") from None
    keep = sorted(r[0] for r in df.select("__pydelta_idx").collect())
    return files.take(pa.array(keep, pa.int64()))


def _read_predicate(spark: SparkSession, snapshot: Snapshot, filters: Sequence[str]) -> Any:
    """The pydelta predicate of the filters (for conflict detection), or None for the whole table."""
    if not filters:
        return None
    from pydelta.protocol.predicates import And
    from pydelta.spark.base.predicates import filter_condition, translate
    from pydelta.spark.read.partitions import partition_rows_dataframe

    if is_connect(spark):  # the client's own translation (Unknown, i.e. the whole table, when unsure)
        from pydelta.spark.read.connect.expressions import translate_sql

        predicates = [translate_sql(sql, snapshot.schema) for sql in filters]
    else:
        base = partition_rows_dataframe(spark, snapshot, snapshot.files().slice(0, 0))
        predicates = [translate(filter_condition(base._jdf, sql)) for sql in filters]
    out = predicates[0]
    for p in predicates[1:]:
        out = And(out, p)
    return out


def _has_dv(row: dict[str, Any]) -> bool:
    return bool(row.get("deletion_vector"))


def _should_compact_for_deletes(row: dict[str, Any], max_ratio: float) -> bool:
    dv = row.get("deletion_vector")
    if not dv:
        return False
    records = row.get("num_records")
    if records is None:
        return True  # delta-spark: DVs without numRecords stats are always compacted
    if records == 0:
        return True
    return bool((dv.get("cardinality") or 0) / records > max_ratio)


def _clustering_columns(snapshot: Snapshot, filters: Sequence[str], zorder_by: Sequence[str],
                        rewrite: bool) -> list[str] | None:
    """The clustering columns (logical names) OPTIMIZE clusters by; None for an unclustered table."""
    physical = clustering.columns_of(snapshot.domain_metadata)
    if physical is None or rewrite:
        return None
    if zorder_by:
        raise DeltaAnalysisError("[DELTA_CLUSTERING_WITH_ZORDER_BY] OPTIMIZE command for Delta table with Liquid "
                                 "clustering cannot specify ZORDER BY. Please remove ZORDER BY "
                                 f"({', '.join(zorder_by)}).")
    if filters:
        raise DeltaAnalysisError("[DELTA_CLUSTERING_WITH_PARTITION_PREDICATE] OPTIMIZE command for Delta table with "
                                 "Liquid clustering doesn't support partition predicates. Please remove the "
                                 f"predicates: {', '.join(filters)}.")
    return clustering.logical_names(snapshot.schema, snapshot.configuration, physical)


def _partition_key(row: dict[str, Any]) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted((k, v) for k, v in (row.get("partition_values") or [])))


def plan_bins(
    files: pa.Table,
    *,
    zorder: bool,
    min_file_size: int,
    max_file_size: int,
    max_deleted_rows_ratio: float,
) -> list[Bin]:
    """Group the candidate files into bins, as delta-spark's OptimizeExecutor does."""
    all_rows = files.to_pylist()
    by_partition: dict[tuple[tuple[str, str | None], ...], list[int]] = {}
    for i, r in enumerate(all_rows):
        if not zorder and not (r["size"] < min_file_size or _should_compact_for_deletes(r, max_deleted_rows_ratio)):
            continue
        by_partition.setdefault(_partition_key(r), []).append(i)
    max_bin = math.inf if zorder else max_file_size
    bins: list[Bin] = []
    for key in sorted(by_partition, key=lambda k: [(a, b is None, b or "") for a, b in k]):
        idxs = sorted(by_partition[key], key=lambda i: all_rows[i]["size"])
        groups: list[list[int]] = []
        current: list[int] = []
        current_size = 0
        for i in idxs:
            size = all_rows[i]["size"]
            if current and size + current_size > max_bin:
                groups.append(current)
                current, current_size = [], 0
            current.append(i)
            current_size += size
        if current:
            groups.append(current)
        for g in groups:
            if zorder or len(g) > 1 or (len(g) == 1 and _has_dv(all_rows[g[0]])):
                bins.append(Bin(key, files.take(pa.array(g, pa.int64()))))
    return bins


def _clustering_bins(spark: SparkSession, candidates: pa.Table, columns: list[str], full: bool) -> list[Bin]:
    """delta-spark's ClusteringStrategy: the files to recluster, grouped into new ZCubes."""
    min_cube = conf_bytes(spark, zcubes.MIN_CUBE_SIZE_CONF, zcubes.DEFAULT_MIN_CUBE_SIZE)
    target_cube = conf_bytes(spark, zcubes.TARGET_CUBE_SIZE_CONF, zcubes.DEFAULT_TARGET_CUBE_SIZE)
    rows = candidates.to_pylist()
    for i, row in enumerate(rows):
        row["_index"] = i
    chosen = zcubes.clustering_candidates(rows, columns, full=full, min_cube_size=min_cube)
    groups = zcubes.group_into_cubes(chosen, max(min_cube, target_cube))
    return [Bin((), candidates.take(pa.array([r["_index"] for r in g], pa.int64()))) for g in groups]


# ---- execution --------------------------------------------------------------------------------------


def _file_size_histogram(sizes: list[int]) -> dict[str, int]:
    s = sorted(sizes) or [0]
    n = len(s)
    return {"min": s[0], "p25": s[n // 4], "p50": s[n // 2], "p75": s[n * 3 // 4], "max": s[-1]}


def _size_metrics(sizes: list[int]) -> tuple[int | None, int | None, float, int, int]:
    if not sizes:
        return (None, None, 0.0, 0, 0)
    return (min(sizes), max(sizes), sum(sizes) / len(sizes), len(sizes), sum(sizes))


def metrics_schema() -> Any:
    from pyspark.sql.types import (
        BooleanType,
        DoubleType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    def size_struct() -> StructType:
        return StructType([
            StructField("min", LongType()), StructField("max", LongType()), StructField("avg", DoubleType(), False),
            StructField("totalFiles", LongType(), False), StructField("totalSize", LongType(), False),
        ])

    def zfile() -> StructType:
        return StructType([StructField("num", LongType(), False), StructField("size", LongType(), False)])

    zorder = StructType([
        StructField("strategyName", StringType()), StructField("inputCubeFiles", zfile()),
        StructField("inputOtherFiles", zfile()), StructField("inputNumCubes", LongType(), False),
        StructField("mergedFiles", zfile()), StructField("numOutputCubes", LongType(), False),
        StructField("mergedNumCubes", LongType()),
    ])
    parallelism = StructType([
        StructField("maxClusterActiveParallelism", LongType()), StructField("minClusterActiveParallelism", LongType()),
        StructField("maxSessionActiveParallelism", LongType()), StructField("minSessionActiveParallelism", LongType()),
    ])
    dv = StructType([
        StructField("numDeletionVectorsRemoved", LongType(), False),
        StructField("numDeletionVectorRowsRemoved", LongType(), False),
    ])
    return StructType([
        StructField("numFilesAdded", LongType(), False),
        StructField("numFilesRemoved", LongType(), False),
        StructField("filesAdded", size_struct()),
        StructField("filesRemoved", size_struct()),
        StructField("partitionsOptimized", LongType(), False),
        StructField("zOrderStats", zorder),
        StructField("numBins", LongType(), False),
        StructField("numBatches", LongType(), False),
        StructField("totalConsideredFiles", LongType(), False),
        StructField("totalFilesSkipped", LongType(), False),
        StructField("preserveInsertionOrder", BooleanType(), False),
        StructField("numFilesSkippedToReduceWriteAmplification", LongType(), False),
        StructField("numBytesSkippedToReduceWriteAmplification", LongType(), False),
        StructField("startTimeMs", LongType(), False),
        StructField("endTimeMs", LongType(), False),
        StructField("totalClusterParallelism", LongType(), False),
        StructField("totalScheduledTasks", LongType(), False),
        StructField("autoCompactParallelismStats", parallelism),
        StructField("deletionVectorStats", dv),
        StructField("numTableColumns", LongType(), False),
        StructField("numTableColumnsWithStats", LongType(), False),
    ])


def result_schema() -> Any:
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType([StructField("path", StringType()), StructField("metrics", metrics_schema())])


def _rewrite_bin(spark: SparkSession, snapshot: Snapshot, metadata: Any, b: Bin, zorder_paths: list[list[str]] | None,
                 max_file_size: int, use_repartition: bool, num_ranges: int, add_noise: bool,
                 timestamp_ms: int) -> tuple[list[AddFile], list[RemoveFile]]:
    """Rewrite one bin (one Spark job); returns its add and remove actions (dataChange=false)."""
    from pydelta.spark.read.scan import build_dataframe
    from pydelta.spark.write.data_files import (
        file_rows_to_adds,
        remove_action,
        write_data_files,
    )

    desc = f"{snapshot.table_root}<br/>Optimizing {b.files.num_rows} files"
    if b.partition:
        desc += " in partition (" + ",".join(f"{k}={v}" for k, v in b.partition) + ")"
    sc = None if is_connect(spark) else spark.sparkContext  # Connect: no job descriptions from the client
    previous = sc.getLocalProperty("spark.job.description") if sc is not None else None
    if sc is not None:
        sc.setJobDescription(desc)
    from pydelta.spark.read.scan import ROW_ID_COL, ROW_VERSION_COL
    from pydelta.txn.row_tracking import materialized_names, materializes_row_ids

    keep_ids = materializes_row_ids(metadata)  # compaction keeps every row's ID and commit version
    hidden = materialized_names(metadata) if keep_ids else []
    try:
        df = build_dataframe(spark, snapshot, b.files, row_ids=keep_ids)
        if keep_ids:
            df = df.withColumnRenamed(ROW_ID_COL, hidden[0]).withColumnRenamed(ROW_VERSION_COL, hidden[1])
        if zorder_paths:
            num_files = max(1, b.size // max_file_size)
            rows = sum(r or 0 for r in b.files.column("num_records").to_pylist())
            df = zorder_dataframe(df, zorder_paths, num_files, num_ranges=num_ranges, add_noise=add_noise,
                                  total_rows=rows or None)
        else:
            df = df.repartition(1) if use_repartition else df.coalesce(1)
        adds = write_data_files(
            df, snapshot.table_root, metadata, data_change=False,
            session_time_zone=session_time_zone(spark), hidden=hidden,
            hadoop_options=table_hadoop_options(snapshot.storage),
            protocol=snapshot.protocol,
        )
    finally:
        if sc is not None:
            sc.setJobDescription(previous)  # type: ignore[arg-type]
    removes = [remove_action(a, data_change=False, timestamp_ms=timestamp_ms) for a in file_rows_to_adds(b.files)]
    return adds, removes


@dataclass
class _Settings:
    """The session confs an OPTIMIZE run reads (file sizes, ratios, parallelism, Z-order tuning)."""

    min_file_size: int
    max_file_size: int
    max_deleted_rows_ratio: float
    max_threads: int
    num_ranges: int
    use_repartition: bool
    add_noise: bool


def _settings(spark: SparkSession, min_file_size: int | None, max_file_size: int | None) -> _Settings:
    """OPTIMIZE's confs, checked before anything runs (explicit sizes win: auto compaction's own)."""
    if min_file_size is None:
        min_file_size = conf_bytes(spark, MIN_FILE_SIZE_CONF, _GIB)
    if max_file_size is None:
        max_file_size = conf_bytes(spark, MAX_FILE_SIZE_CONF, _GIB)
    if max_file_size <= 0:
        raise DeltaIllegalArgumentError(f"{MAX_FILE_SIZE_CONF} must be positive")
    try:
        max_ratio = float(conf_value(spark, MAX_DELETED_ROWS_RATIO_CONF, "0.05"))
        max_threads = max(1, int(conf_value(spark, MAX_THREADS_CONF, "15")))
        num_ranges = max(1, int(conf_value(spark, NUM_RANGE_IDS_CONF, "1000")))
    except ValueError as e:
        raise DeltaIllegalArgumentError(f"invalid OPTIMIZE configuration: {e}") from None
    return _Settings(min_file_size, max_file_size, max_ratio, max_threads, num_ranges,
                     conf_bool(spark, REPARTITION_CONF, False), conf_bool(spark, ADD_NOISE_CONF, True))


def optimize(
    table: Any,
    partition_filters: Sequence[str] = (),
    zorder_by: Sequence[str] = (),
    *,
    before_commit: Callable[[], None] | None = None,
    purge: bool = False,
    rewrite_paths: Sequence[str] | None = None,
    full: bool = False,
    auto: bool = False,
    min_file_size: int | None = None,
    max_file_size: int | None = None,
) -> DataFrame:
    """Run OPTIMIZE (compaction, or Z-order when `zorder_by` is given); returns delta-spark's result DataFrame.

    `purge` is REORG TABLE ... APPLY (PURGE): every file with a deletion vector is rewritten
    without its deleted rows (however few), and nothing else; recorded as a REORG commit.
    `rewrite_paths`: exactly these files are rewritten, each on its own (a REORG without
    purge: DROP FEATURE typeWidening rewrites the files written before a type change).
    On a clustered table (liquid clustering) OPTIMIZE clusters: the files no clustering run
    wrote yet (all files with `full`, OPTIMIZE ... FULL) are Z-ordered together on the
    clustering columns and marked `clusteringProvider: liquid`.
    `auto` is auto compaction's run (spark/maintenance/auto_compact.py): its own file sizes
    instead of the OPTIMIZE confs, recorded with `auto: true`.
    """
    from pydelta.txn.commit_checks import require_maintenance_permitted
    from pydelta.txn.row_tracking import check_row_ids_preserved

    spark: SparkSession = table._spark
    start_ms = int(time.time() * 1000)
    snapshot = table.snapshot()
    snapshot.protocol.check_writable()
    reorg = purge or rewrite_paths is not None
    require_maintenance_permitted(snapshot, "reorg" if reorg else "optimize")
    check_row_ids_preserved(snapshot, "REORG" if reorg else "OPTIMIZE")
    filters = list(partition_filters)
    zorder_by = list(zorder_by)
    cluster_by = _clustering_columns(snapshot, filters, zorder_by, reorg)
    if is_connect(spark):
        _verify_on_server(spark, snapshot, filters)
    else:
        verify_partition_predicates(spark, filters, snapshot.partition_columns)
    zorder_paths: list[list[str]] | None
    if cluster_by:
        zorder_paths = validate_zorder_columns(spark, snapshot, cluster_by)
    else:
        zorder_paths = validate_zorder_columns(spark, snapshot, zorder_by) if zorder_by else None
    settings = _settings(spark, min_file_size, max_file_size)

    candidates = select_partitions(spark, snapshot, filters)
    if purge:
        candidates = candidates.filter(candidates.column("deletion_vector").is_valid())
        settings.min_file_size, settings.max_deleted_rows_ratio = 0, 0.0
    cube_tags: list[dict[str, str]] = []  # per bin, when clustering
    if rewrite_paths is not None:
        candidates = candidates.filter(pc.is_in(candidates.column("path"), pa.array(list(rewrite_paths), pa.string())))
        bins = [Bin(_partition_key(candidates.slice(i, 1).to_pylist()[0]), candidates.slice(i, 1))
                for i in range(candidates.num_rows)]
    elif cluster_by:
        bins = _clustering_bins(spark, candidates, cluster_by, full)
        candidates = pa.concat_tables([b.files for b in bins]) if bins else candidates.slice(0, 0)
        cube_tags = [zcubes.new_cube_tags(cluster_by) for _ in bins]
    else:
        bins = plan_bins(candidates, zorder=bool(zorder_paths), min_file_size=settings.min_file_size,
                         max_file_size=settings.max_file_size, max_deleted_rows_ratio=settings.max_deleted_rows_ratio)

    result = _rewrite_bins(spark, snapshot, bins, zorder_paths, settings, cube_tags)
    if result.adds or result.removes:
        predicates = predicate_strings(spark, filters)
        if reorg:
            operation = Operation.reorg_purge(predicates, apply_purge=purge)
        elif cluster_by is not None:
            operation = Operation.optimize(predicates, cluster_by=cluster_by, is_full=full, auto=auto)
        else:
            operation = Operation.optimize(predicates, zorder_by, auto=auto)
        read_predicate = _read_predicate(spark, snapshot, filters)
        result.version = _commit(spark, snapshot, result, operation, read_predicate,
                                 candidates.column("path").to_pylist(), before_commit)
    metrics_row = _metrics_row(spark, snapshot, result, bins, candidates.num_rows, bool(zorder_paths),
                               start_ms, int(time.time() * 1000))
    return spark.createDataFrame([(f"file:{snapshot.table_root}", metrics_row)], result_schema())


def _rewrite_bins(spark: SparkSession, snapshot: Snapshot, bins: list[Bin], zorder_paths: list[list[str]] | None,
                  settings: _Settings, cube_tags: list[dict[str, str]]) -> OptimizeResult:
    """Rewrite every bin (in parallel, up to maxThreads); the adds and removes to commit."""
    result = OptimizeResult()
    if not bins:
        return result
    metadata = snapshot.metadata
    timestamp_ms = int(time.time() * 1000)

    def run(b: Bin) -> tuple[list[AddFile], list[RemoveFile]]:
        return _rewrite_bin(spark, snapshot, metadata, b, zorder_paths, settings.max_file_size,
                            settings.use_repartition, settings.num_ranges, settings.add_noise, timestamp_ms)

    if len(bins) == 1 or settings.max_threads == 1:
        outputs = [run(b) for b in bins]
    else:
        with ThreadPoolExecutor(max_workers=min(settings.max_threads, len(bins))) as pool:
            outputs = list(pool.map(run, bins))
    for i, (adds, removes) in enumerate(outputs):
        if cube_tags:
            for add in adds:  # each bin is one new ZCube
                add["clusteringProvider"] = clustering.PROVIDER
                add["tags"] = {**(add.get("tags") or {}), **cube_tags[i]}
        result.adds.extend(adds)
        result.removes.extend(removes)
    for b in bins:
        result.removed_dvs.extend(dv for dv in b.files.column("deletion_vector").to_pylist() if dv)
    return result


def _commit(spark: SparkSession, snapshot: Snapshot, result: OptimizeResult, operation: Operation,
            read_predicate: Any, candidate_paths: list[str], before_commit: Callable[[], None] | None) -> int:
    """Commit the rewrite, retrying as delta-spark's commitAndRetry does; the committed version."""
    from pydelta.spark.base.transactions import open_transaction

    removed_sizes = [r.get("size") or 0 for r in result.removes]
    added_sizes = [a["size"] for a in result.adds]
    hist = _file_size_histogram(added_sizes)
    metrics = {
        "numAddedFiles": len(result.adds),
        "numRemovedFiles": len(result.removes),
        "numAddedBytes": sum(added_sizes),
        "numRemovedBytes": sum(removed_sizes),
        "minFileSize": hist["min"],
        "p25FileSize": hist["p25"],
        "p50FileSize": hist["p50"],
        "p75FileSize": hist["p75"],
        "maxFileSize": hist["max"],
        "numDeletionVectorsRemoved": len(result.removed_dvs),
    }
    partition_columns = list(snapshot.partition_columns)
    txn_snapshot = snapshot
    hook = before_commit
    for attempt in range(1, _MAX_COMMIT_ATTEMPTS + 1):
        txn = open_transaction(spark, txn_snapshot)
        if read_predicate is None:
            txn.read_whole_table()
        else:
            txn.read_predicate(read_predicate)
        txn.read_files(candidate_paths)
        actions = [as_add(a) for a in result.adds] + [as_remove(r) for r in result.removes]
        if hook is not None:
            hook()
            hook = None
        try:
            version = txn.commit(actions, operation, operation_metrics=metrics, data_change=False)
        except DeltaConcurrentModificationException:
            # delta-spark's commitAndRetry: still valid when every candidate file is still in
            # the table and the partitioning did not change.
            latest = txn_snapshot.update()
            live = set(latest.files().column("path").to_pylist())
            if (attempt == _MAX_COMMIT_ATTEMPTS or not set(candidate_paths) <= live
                    or list(latest.partition_columns) != partition_columns):
                raise
            logger.info("OPTIMIZE of %s: retrying the commit after a concurrent update", snapshot.table_root)
            txn_snapshot = latest
            continue
        return version
    raise AssertionError("unreachable: the last attempt returns or raises")


def _metrics_row(spark: SparkSession, snapshot: Snapshot, result: OptimizeResult, bins: list[Bin],
                 num_candidates: int, zorder: bool, start_ms: int, end_ms: int) -> tuple[Any, ...]:
    """delta-spark's OptimizeMetrics as the `metrics` struct of OPTIMIZE's result row."""
    removed_sizes = [r.get("size") or 0 for r in result.removes]
    added_sizes = [a["size"] for a in result.adds]
    partitions = len({b.partition for b in bins})
    zorder_stats = None
    if zorder:
        merged = (len(result.removes), sum(removed_sizes))
        zorder_stats = ("all", (0, 0), merged, 0, merged, partitions, None)
    dv_stats = None
    if result.removed_dvs:
        dv_stats = (len(result.removed_dvs), sum(int(d.get("cardinality") or 0) for d in result.removed_dvs))
    num_columns = len(snapshot.schema.fields)
    try:
        indexed = int(snapshot.metadata.configuration.get("delta.dataSkippingNumIndexedCols", "32"))
    except ValueError:
        indexed = 32
    with_stats = num_columns if indexed < 0 else min(indexed, num_columns)
    try:
        parallelism = int(spark.sparkContext.defaultParallelism)
    except Exception:
        parallelism = 0
    return (
        len(result.adds),
        len(result.removes),
        _size_metrics(added_sizes),
        _size_metrics(removed_sizes),
        partitions,
        zorder_stats,
        len(bins),
        len(bins),
        num_candidates,
        num_candidates - len(result.removes),
        False,
        0,
        0,
        start_ms,
        end_ms,
        parallelism,
        0,
        None,
        dv_stats,
        num_columns,
        with_stats,
    )
