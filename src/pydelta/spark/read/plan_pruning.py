"""Data skipping wherever a Delta scan sits in a DataFrame's plan.

A Delta read is a Parquet scan over the snapshot's files. Spark's optimizer pushes
filters down to the scan they apply to, through select/withColumn, into the sides of
joins and through views. After each `filter`/`where`/`join` on any DataFrame whose plan
holds a scan pydelta built, the optimized plan is searched for Filter nodes directly
above such a scan; their conditions prune the scan's files by the log's partition
values and min/max/nullCount stats, and the scan is replaced in the analyzed plan by
one over the remaining files, with the same output attributes, so the rest of the plan
is untouched. Pruning never fails a query: any error leaves the DataFrame as it was.

Scans are known by the identity hash of their JVM FileIndex, confirmed by its root paths
(a bounded registry, newest kept): a scan built elsewhere, or evicted, is simply not pruned.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pydelta.log.data_skipping import FileSkipper
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.predicates import And, Predicate, rename_columns
from pydelta.protocol.schema import StructType, column_mapping_mode, physical_name
from pydelta.spark.base import jplan
from pydelta.spark.base._typing import DataFrame, JavaObject, SparkSession
from pydelta.spark.base.predicates import translate

logger = logging.getLogger(__name__)

_MAX_SCANS = 64  # each entry holds its file list: keep the newest scans only


@dataclass(frozen=True)
class _Scan:
    """What pydelta knows about one Parquet scan it built: enough to build it again on fewer files."""

    snapshot: Snapshot
    files: pa.Table  # rows of snapshot.files() the scan reads
    read_schema: Any  # the Spark schema the scan was read with
    base_path: str | None  # basePath of a hive-style partitioned read
    options: Mapping[str, str]  # the scan's own options (the table's Hadoop options among them)
    num_paths: int  # the FileIndex's root paths: with the first one, they confirm an identity match
    first_path: str


_SCANS: OrderedDict[int, _Scan] = OrderedDict()


def _relation_leaves(plan: JavaObject) -> list[Any]:
    return [leaf for leaf in jplan.seq(plan.collectLeaves()) if jplan.kind(leaf) == "LogicalRelation"]


def register(df: DataFrame, snapshot: Snapshot, files: pa.Table, read_schema: Any, base_path: str | None,
             options: Mapping[str, str] | None = None) -> None:
    """Remember the scan of `df` (a plain Parquet read of `files`) so later filters can prune it."""
    try:
        leaves = _relation_leaves(df._jdf.queryExecution().analyzed())
        if len(leaves) != 1:
            return
        location = leaves[0].relation().location()
        key = jplan.identity(df.sparkSession, location)
        roots = location.rootPaths()
        scan = _Scan(snapshot, files, read_schema, base_path, dict(options or {}), int(roots.size()),
                     str(roots.head()))
    except Exception as e:  # noqa: BLE001 - pruning is an optimization
        logger.debug("not registering a Delta scan for pruning: %s", e)
        return
    _SCANS[key] = scan
    _SCANS.move_to_end(key)
    while len(_SCANS) > _MAX_SCANS:
        _SCANS.popitem(last=False)


def prune(df: DataFrame) -> Any:
    """`df` with every registered Delta scan under a pushed-down filter reading only the files that may match."""
    if not _SCANS:
        return df
    try:
        return _prune(df)
    except Exception as e:  # noqa: BLE001 - never fail a query over pruning
        logger.debug("plan pruning skipped: %s", e)
        return df


def _prune(df: DataFrame) -> Any:
    spark = df.sparkSession
    qe = df._jdf.queryExecution()
    analyzed = qe.analyzed()
    scans = {}
    for leaf in _relation_leaves(analyzed):
        scan = _registered(spark, leaf)
        if scan is not None:
            scans[_first_attribute_id(leaf)] = (leaf, scan)
    if not scans or _reads_cached_data(spark, qe):
        return df
    replacements = {}
    for attr_id, conditions in _pushed_conditions(qe.optimizedPlan()).items():
        if attr_id not in scans:
            continue
        leaf, scan = scans[attr_id]
        predicate = _logical(_conjunction([translate(c) for c in conditions]), scan.snapshot)
        pruned = FileSkipper.for_metadata(scan.files, scan.snapshot.metadata).prune(predicate)
        if pruned.num_rows < scan.files.num_rows:
            replacements[attr_id] = _scan_over(spark, leaf, scan, pruned)
    if not replacements:
        return df
    return _with_scans_replaced(spark, analyzed, replacements)


def restrict(df: DataFrame, snapshot: Snapshot, files: pa.Table) -> Any:
    """`df` with the scans of `snapshot` in its plan reading only `files` (same output attributes).

    A read may be several scans, each of some of the files (those with deletion vectors apart):
    each keeps the ones it read, and one left with none reads nothing. If no scan keeps a file,
    the first still reads its first file: the filter that pruned the rest drops its rows, and
    the scan keeps the `_metadata` column the plan above may use.
    """
    spark = df.sparkSession
    analyzed = df._jdf.queryExecution().analyzed()
    kept = {}
    for leaf in _relation_leaves(analyzed):
        scan = _registered(spark, leaf)
        if scan is not None and scan.snapshot is snapshot:
            in_scan = pc.is_in(files.column("path"), value_set=scan.files.column("path"))
            kept[_first_attribute_id(leaf)] = (leaf, scan, files.filter(in_scan))
    if kept and not any(rows.num_rows for _, _, rows in kept.values()):
        attr_id, (leaf, scan, _) = next(iter(kept.items()))
        kept[attr_id] = (leaf, scan, scan.files.slice(0, 1))
    replacements = {
        attr_id: _scan_over(spark, leaf, scan, rows)
        for attr_id, (leaf, scan, rows) in kept.items() if rows.num_rows < scan.files.num_rows
    }
    if not replacements:
        return df
    return _with_scans_replaced(spark, analyzed, replacements)


def _with_scans_replaced(spark: SparkSession, analyzed: Any, replacements: dict[int, Any]) -> Any:
    """A DataFrame of `analyzed` with the LogicalRelations keyed in `replacements` swapped."""
    from pyspark.sql.classic.dataframe import DataFrame

    plan, _ = _replace(analyzed, replacements)
    jvm: JavaObject = spark._jvm
    jds = jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, plan)
    return DataFrame(jds, spark)


def _registered(spark: SparkSession, leaf: Any) -> _Scan | None:
    """The registered scan `leaf` reads, if any (an identity-hash hit is confirmed by the root paths)."""
    relation = leaf.relation()
    if relation.getClass().getSimpleName() != "HadoopFsRelation":  # file scans only have a FileIndex
        return None
    location = relation.location()
    scan = _SCANS.get(jplan.identity(spark, location))
    if scan is None:
        return None
    roots = location.rootPaths()
    if int(roots.size()) != scan.num_paths or str(roots.head()) != scan.first_path:
        return None
    return scan


def _first_attribute_id(leaf: Any) -> int:
    return int(leaf.output().head().exprId().id())


def _reads_cached_data(spark: SparkSession, qe: Any) -> bool:
    """A plan over cached data keeps its scans: replacing one would miss the cache."""
    if spark._jsparkSession.sharedState().cacheManager().isEmpty():
        return False
    return "InMemoryRelation" in str(qe.withCachedData().treeString())


def _pushed_conditions(plan: JavaObject) -> dict[int, list[Any]]:
    """Conjuncts of every Filter directly above a LogicalRelation, by the relation's first attribute id."""
    out: dict[int, list[Any]] = {}
    stack = [plan]
    while stack:
        node = stack.pop()
        kids = jplan.children(node)
        if jplan.kind(node) == "Filter" and len(kids) == 1 and jplan.kind(kids[0]) == "LogicalRelation":
            out.setdefault(_first_attribute_id(kids[0]), []).append(node.condition())
        stack.extend(kids)
    return out


def _conjunction(predicates: list[Predicate]) -> Predicate:
    result = predicates[0]
    for p in predicates[1:]:
        result = And(result, p)
    return result


def _logical(predicate: Predicate, snapshot: Snapshot) -> Predicate:
    """Column paths of the scan (physical names under column mapping) as the table's logical names."""
    if column_mapping_mode(snapshot.configuration) == "none":
        return predicate
    return rename_columns(predicate, _physical_to_logical(snapshot.schema))


def _physical_to_logical(
    schema: StructType, parent: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
) -> dict[tuple[str, ...], tuple[str, ...]]:
    out: dict[tuple[str, ...], tuple[str, ...]] = {}
    for field in schema.fields:
        phys, logical = parent[0] + (physical_name(field),), parent[1] + (field.name,)
        out[phys] = logical
        if isinstance(field.type, StructType):
            out.update(_physical_to_logical(field.type, (phys, logical)))
    return out


def _scan_over(spark: SparkSession, leaf: Any, scan: _Scan, files: pa.Table) -> Any:
    """A LogicalRelation like `leaf` (same output attributes) over `files` only."""
    jvm: JavaObject = spark._jvm
    if files.num_rows == 0:
        return jvm.org.apache.spark.sql.catalyst.plans.logical.LocalRelation(
            leaf.output(), jplan.scala_list(leaf, []), leaf.isStreaming(), jvm.scala.Option.empty())
    from pydelta.spark.base.parquet_files import read_parquet_files

    paths = [scan.snapshot.absolute_path(p) for p in files.column("path").to_pylist()]
    df = read_parquet_files(spark, scan.read_schema, paths, scan.base_path, scan.options)
    register(df, scan.snapshot, files, scan.read_schema, scan.base_path, scan.options)
    (new_leaf,) = _relation_leaves(df._jdf.queryExecution().analyzed())
    return jvm.org.apache.spark.sql.execution.datasources.LogicalRelation(
        new_leaf.relation(), leaf.output(), leaf.catalogTable(), leaf.isStreaming(), leaf.stream())


def _replace(node: Any, replacements: dict[int, Any]) -> tuple[Any, bool]:
    """`node` with each LogicalRelation whose first attribute id is in `replacements` swapped."""
    if jplan.kind(node) == "LogicalRelation":
        attr_id = _first_attribute_id(node)
        if attr_id in replacements:
            return replacements[attr_id], True
        return node, False
    kids = jplan.children(node)
    if not kids:
        return node, False
    rebuilt = [_replace(k, replacements) for k in kids]
    if not any(changed for _, changed in rebuilt):
        return node, False
    seq = jplan.scala_list(node, [n for n, _ in rebuilt])
    return node.withNewChildren(seq), True


def install() -> None:
    """Prune after every `filter`/`where` (which calls filter) and `join` of a classic DataFrame."""
    try:
        from pyspark.sql.classic.dataframe import DataFrame
    except ImportError:  # a Spark Connect-only client (pyspark-client): no classic DataFrames
        return

    if getattr(DataFrame, "_pydelta_plan_pruning", False):
        return
    for name in ("filter", "join"):
        setattr(DataFrame, name, _pruning(getattr(DataFrame, name)))
    setattr(DataFrame, "_pydelta_plan_pruning", True)  # noqa: B010 - the marker checked above; mypy: not on the class


def _pruning(method: Any) -> Any:
    def pruned(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        if hasattr(self, "_pydelta_snapshot") and method.__name__ == "filter":
            return out  # a filter on the Delta read itself: that DataFrame prunes its own scan
        return prune(out)

    pruned.__name__ = method.__name__
    pruned.__doc__ = method.__doc__
    pruned._pydelta_unpruned = method  # type: ignore[attr-defined]
    return pruned


def unpruned(df: DataFrame, method: str, *args: Any) -> DataFrame:
    """`df.<method>(*args)` (filter or join) without the pruning pass: for plans pydelta builds
    itself over files it already chose (deletion vectors, partition values, DML row matching)."""
    plain = getattr(type(df), method)  # classic's or Spark Connect's DataFrame class
    run: Callable[..., DataFrame] = getattr(plain, "_pydelta_unpruned", plain)
    return run(df, *args)
