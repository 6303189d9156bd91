"""Auto compaction: delta-spark's post-commit hook that compacts small files after a write.

It runs after every committed transaction that wrote data files (appends, overwrites, DML,
streaming batches; never after OPTIMIZE itself) when the session conf
`spark.databricks.delta.autoCompact.enabled` says "true", or, with the conf unset, when the
table property `delta.autoOptimize.autoCompact` (or the legacy `delta.autoOptimize`) is true.

Which partitions: only those the commit added files to (delta-spark's default
`autoCompact.modifiedPartitionsOnly.enabled`), and of those only the ones that either hold at
least `autoCompact.minNumFiles` (50) small files, or have not been auto-compacted by this
process yet, as delta-spark's in-driver partition statistics decide. delta-spark counts small
files per driver as commits pass by; pydelta counts them in the post-commit snapshot, which
gives the same answer for a table written by one process and a truthful one for a table written
by several. At most `autoCompact.maxNumModifiedPartitions` (128) partitions per run.

The compaction itself is OPTIMIZE on those partitions with auto compaction's own file sizes
(`autoCompact.maxFileSize`, 128 MiB; files under `autoCompact.minFileSize`, half of that, are
small), recorded as an OPTIMIZE commit with `auto: true`. When it fails, the user's commit stands
and the error says so (delta-spark's DELTA_POST_COMMIT_HOOK_FAILED).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import pyarrow.compute as pc

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.log.snapshot import Snapshot
from pydelta.protocol import properties
from pydelta.protocol.schema import column_mapping_mode, physical_name, quote_identifier
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.conf import conf_bytes, conf_value
from pydelta.spark.base.jplan import string_literal
from pydelta.spark.base.transactions import PostCommitHook

logger = logging.getLogger(__name__)

ENABLED_CONF = "spark.databricks.delta.autoCompact.enabled"
MAX_FILE_SIZE_CONF = "spark.databricks.delta.autoCompact.maxFileSize"
MIN_FILE_SIZE_CONF = "spark.databricks.delta.autoCompact.minFileSize"
MIN_NUM_FILES_CONF = "spark.databricks.delta.autoCompact.minNumFiles"
MAX_PARTITIONS_CONF = "spark.databricks.delta.autoCompact.maxNumModifiedPartitions"
TABLE_PROPERTY = "delta.autoOptimize.autoCompact"
LEGACY_TABLE_PROPERTY = "delta.autoOptimize"
ALLOWED_VALUES = ("true", "false")
HOOK_NAME = "Auto Compact"
# Commits that compact, restore or convert files are not compacted after (OPTIMIZE's own, RESTORE's,
# and those delta-spark writes outside its TransactionalWrite: CONVERT, REMOVE COLUMN MAPPING).
NOT_AFTER = ("OPTIMIZE", "RESTORE", "CONVERT", "REMOVE COLUMN MAPPING")
_DEFAULT_MAX_FILE_SIZE = 128 * 1024 * 1024
_DEFAULT_MIN_NUM_FILES = 50
_DEFAULT_MAX_PARTITIONS = 128

# (physical column, value) pairs; empty for an unpartitioned table
PartitionKey: TypeAlias = frozenset[tuple[str, str | None]]

_lock = threading.Lock()
_compacted: dict[str, set[PartitionKey]] = {}  # table id -> partitions this process auto-compacted
_reserved: dict[str, set[PartitionKey]] = {}  # table id -> partitions being compacted right now


def _auto_compact_type(value: str) -> bool:
    """delta-spark's AutoCompactType: "true" enables, "false" disables, anything else is refused."""
    lowered = value.strip().lower()
    if lowered not in ALLOWED_VALUES:
        raise DeltaIllegalArgumentError(
            f"[DELTA_INVALID_AUTO_COMPACT_TYPE] Invalid auto-compact type: {value}. "
            f"Allowed values are: ({','.join(ALLOWED_VALUES)}).")
    return lowered == "true"


def is_enabled(spark: SparkSession, configuration: Mapping[str, str]) -> bool:
    """The session conf wins; then the legacy `delta.autoOptimize`; then `delta.autoOptimize.autoCompact`."""
    session = conf_value(spark, ENABLED_CONF)
    if session is not None:
        return _auto_compact_type(session)
    if properties.AUTO_OPTIMIZE.get(configuration):
        return True
    table = configuration.get(TABLE_PROPERTY)
    return _auto_compact_type(table) if table is not None else False


def check_session_conf(spark: SparkSession) -> None:
    """Refuse a bad `autoCompact.enabled` before a write commits (delta-spark refuses it at SET)."""
    session = conf_value(spark, ENABLED_CONF)
    if session is not None:
        _auto_compact_type(session)


def _int_conf(spark: SparkSession, key: str, default: int) -> int:
    raw = conf_value(spark, key, str(default))
    try:
        value = int(raw)
    except ValueError:
        raise DeltaIllegalArgumentError(f"{key} should be an integer, got {raw!r}") from None
    if value < 0:
        raise DeltaIllegalArgumentError(f"{key} has to be positive")
    return value


def _partitions_added(actions: Iterable[Mapping[str, Any]]) -> set[PartitionKey]:
    return {frozenset((a["add"].get("partitionValues") or {}).items()) for a in actions if "add" in a}


def _small_file_counts(snapshot: Any, min_file_size: int) -> dict[PartitionKey, int]:
    files = snapshot.files()
    small = files.filter(pc.less(files.column("size"), min_file_size))
    counts: dict[PartitionKey, int] = {}
    for pv in small.column("partition_values").to_pylist():
        key = frozenset((k, v) for k, v in (pv or []))
        counts[key] = counts.get(key, 0) + 1
    return counts


def _choose(table_id: str, added: set[PartitionKey], counts: Mapping[PartitionKey, int], min_num_files: int,
            max_partitions: int) -> set[PartitionKey]:
    """The partitions to compact now, reserved against other threads of this process."""
    with _lock:
        busy = _reserved.setdefault(table_id, set())
        done = _compacted.setdefault(table_id, set())
        chosen = {p for p in added - busy
                  if counts.get(p, 0) >= min_num_files or (p not in done and counts.get(p, 0) > 0)}
        if len(chosen) > max_partitions:
            chosen = set(random.sample(sorted(chosen, key=_sort_key), max_partitions))
        busy |= chosen
    return chosen


def _sort_key(partition: PartitionKey) -> list[tuple[str, bool, str]]:
    """A total order of partitions whose values may be null (a plain sort cannot compare None)."""
    return sorted((column, value is None, value or "") for column, value in partition)


def _release(table_id: str, partitions: set[PartitionKey], compacted: bool) -> None:
    with _lock:
        _reserved.get(table_id, set()).difference_update(partitions)
        if compacted:
            _compacted.setdefault(table_id, set()).update(partitions)


def _sql_literal(value: str | None) -> str:
    return "NULL" if value is None or value == "" else string_literal(value)


def partition_predicate(snapshot: Any, partitions: Iterable[PartitionKey]) -> list[str]:
    """delta-spark's createPartitionPredicate: `col <=> CAST('v' AS type)` per column, ANDed, ORed
    over the partitions; no predicate for an unpartitioned table."""
    from pydelta.spark.read.scan import spark_schema

    schema = snapshot.schema
    logical_types = spark_schema(schema)
    mapped = column_mapping_mode(snapshot.configuration) != "none"
    logical_of = {(physical_name(schema.field(n)) if mapped else n): n for n in snapshot.partition_columns}
    branches = []
    for partition in partitions:
        if not partition:
            continue
        terms = []
        for physical, value in sorted(partition):
            name = logical_of.get(physical, physical)
            type_sql = logical_types[name].dataType.simpleString()
            terms.append(f"{quote_identifier(name)} <=> CAST({_sql_literal(value)} AS {type_sql.upper()})")
        branches.append(" AND ".join(terms))
    if not branches:
        return []
    return [" OR ".join(f"({b})" for b in branches) if len(branches) > 1 else branches[0]]


class _Table:
    """What OPTIMIZE needs of a DeltaTable: the session and the table's latest snapshot, read
    through the storage of the commit that triggered it (the table's own Hadoop options kept)."""

    def __init__(self, spark: SparkSession, snapshot: Snapshot) -> None:
        self._spark = spark
        self._snapshot = snapshot

    def snapshot(self) -> Snapshot:
        self._snapshot = self._snapshot.update()
        return self._snapshot


def after_data_commit(spark: SparkSession, txn: Any, version: int, actions: Sequence[Mapping[str, Any]]) -> None:
    """The post-commit hook: compact the small files of the partitions this commit wrote to."""
    if (txn.committed_commit_info or {}).get("operation") in NOT_AFTER:
        return
    added = _partitions_added(actions)
    if not added:
        return  # delta-spark: no hook on a commit that wrote no files
    metadata = txn.metadata
    configuration = (metadata.configuration if metadata is not None else {}) or {}
    if not is_enabled(spark, configuration):
        return
    from pydelta.log.catalog_maintenance import maintenance_permitted

    if txn.snapshot is not None and not maintenance_permitted(txn.snapshot, "optimize"):
        return  # a catalog-managed table whose catalog does not permit OPTIMIZE: no auto compaction
    _compact(spark, txn, added)


#: The post-commit hook (spark/session.py lists it).
AUTO_COMPACTION = PostCommitHook(HOOK_NAME, after_data_commit, check_session_conf)


def _compact(spark: SparkSession, txn: Any, added: set[PartitionKey]) -> None:
    from pydelta.spark.maintenance.optimize import optimize

    max_file_size = conf_bytes(spark, MAX_FILE_SIZE_CONF, _DEFAULT_MAX_FILE_SIZE)
    min_file_size = conf_bytes(spark, MIN_FILE_SIZE_CONF, max_file_size // 2)
    min_num_files = _int_conf(spark, MIN_NUM_FILES_CONF, _DEFAULT_MIN_NUM_FILES)
    max_partitions = max(1, _int_conf(spark, MAX_PARTITIONS_CONF, _DEFAULT_MAX_PARTITIONS))
    snapshot = txn.post_commit_snapshot()
    table_id = snapshot.metadata.id
    chosen = _choose(table_id, added, _small_file_counts(snapshot, min_file_size), min_num_files, max_partitions)
    if not chosen:
        return
    compacted = False
    try:
        optimize(_Table(spark, snapshot), partition_predicate(snapshot, chosen), auto=True,
                 min_file_size=min_file_size, max_file_size=max_file_size)
        compacted = True
    finally:
        _release(table_id, chosen, compacted)
