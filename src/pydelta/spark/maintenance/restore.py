"""RESTORE: make the table's files and metadata those of an older version (delta-spark's RestoreTableCommand).

One commit: files of the old version missing now are re-added (their add actions as they
were, with dataChange=true), files added since are removed (dataChange=true), and the old
version's metadata is set again. The protocol only ever moves up: the new protocol supports
every feature of both versions. Restoring is itself a version, so it can be undone by
restoring to the version before it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from pydelta.errors import DeltaIllegalArgumentError, RestoreMissingFilesError
from pydelta.log.file_actions import add_action_from_file_row as _add_action
from pydelta.log.replay import canonical_path
from pydelta.log.snapshot import Snapshot, load_snapshot
from pydelta.log.timestamps import ict_enablement_version
from pydelta.protocol.action_types import as_add, as_remove
from pydelta.protocol.deletion_vectors import dv_unique_id
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.read.time_travel import java_timestamp_string, parse_timestamp, session_zone
from pydelta.txn.commit_info import Operation

IGNORE_MISSING_FILES_CONF = "spark.sql.files.ignoreMissingFiles"


def _keyed(snapshot: Snapshot) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for row in snapshot.files().to_pylist():
        out[(canonical_path(row["path"], snapshot.table_root), dv_unique_id(row.get("deletion_vector")))] = row
    return out


def _version_at_timestamp(snapshot: Snapshot, ts_ms: int) -> int:
    """delta-spark's getActiveCommitAtTime(canReturnLastCommit = true)."""
    from pydelta.errors import VersionNotFoundError
    from pydelta.log.timestamps import commit_timestamps

    stamps = commit_timestamps(snapshot.storage, snapshot.table_root, ict_enablement_version(snapshot.metadata))
    if not stamps or ts_ms < stamps[0].timestamp:
        first = stamps[0] if stamps else None
        raise VersionNotFoundError(
            f"The provided timestamp ({datetime.fromtimestamp(ts_ms / 1000, tz=UTC).isoformat()}) is before "
            f"the earliest version available to this table"
            + (f" (version {first.version})." if first else ".")
            + " Please use a timestamp after the earliest version."
        )
    best = stamps[0].version
    for ct in stamps:
        if ct.timestamp <= ts_ms:
            best = ct.version
        else:
            break
    return best


def restore(table: Any, version: int | None = None, timestamp: Any = None) -> DataFrame:
    """Restore `table` to `version` or `timestamp`; returns delta-spark's one-row metrics DataFrame."""
    from pyspark.sql.types import LongType, StructField, StructType

    from pydelta.spark.base.conf import conf_bool
    from pydelta.spark.base.transactions import open_transaction
    from pydelta.spark.write.data_files import remove_action
    from pydelta.txn import protocol_upgrade as pu

    spark: SparkSession = table._spark
    if (version is None) == (timestamp is None):
        raise DeltaIllegalArgumentError("Either the version or timestamp should be provided for restore")
    latest = table.snapshot()
    timestamp_param: str | None = None
    if version is None:
        dt = parse_timestamp(spark, timestamp)
        timestamp_param = java_timestamp_string(dt, session_zone(spark))
        target_version = _version_at_timestamp(latest, int(dt.timestamp() * 1000))
    else:
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise DeltaIllegalArgumentError(f"invalid version to restore: {version!r}")
        target_version = version
    if target_version >= latest.version:
        raise DeltaIllegalArgumentError(
            f"requirement failed: Version to restore ({target_version})should be less then last available "
            f"version ({latest.version})"
        )
    source = load_snapshot(latest.table_root, version=target_version, storage=latest.storage)

    txn = open_transaction(spark, latest)
    txn.read_whole_table()  # delta-spark's commitLarge: any concurrent change fails the restore

    src_files = _keyed(source)
    tgt_files = _keyed(latest)
    to_add = [_add_action(row) for key, row in src_files.items() if key not in tgt_files]
    now = int(time.time() * 1000)
    to_remove = [
        remove_action(_add_action(row), data_change=True, timestamp_ms=now)
        for key, row in tgt_files.items()
        if key not in src_files
    ]

    if not conf_bool(spark, IGNORE_MISSING_FILES_CONF, False):
        # Through the table's storage: its files may live where only Hadoop reaches (hdfs://, viewfs://).
        missing = [a["path"] for a in to_add
                   if not latest.storage.exists(canonical_path(a["path"], latest.table_root))]
        if missing:
            raise RestoreMissingFilesError(
                f"Not all files from version {target_version} are available in file system.\n"
                f" Missed files (top 100 files): {','.join(missing[:100])}.\n"
                " Please use more recent version or timestamp for restoring.\n"
                f" To disable check update option {IGNORE_MISSING_FILES_CONF}"
            )

    txn.update_metadata(source.metadata)
    current = txn.protocol
    assert current is not None
    merged = pu.merge(source.protocol, current)
    if pu.added_features(merged, current):
        txn.update_protocol(merged)

    restored_size = sum(int(a["size"] or 0) for a in to_add)
    removed_size = sum(int(r.get("size") or 0) for r in to_remove)
    source_files = source.files()
    metrics = {
        "numRestoredFiles": len(to_add),
        "restoredFilesSize": restored_size,
        "numRemovedFiles": len(to_remove),
        "removedFilesSize": removed_size,
        "numOfFilesAfterRestore": source_files.num_rows,
        "tableSizeAfterRestore": int(sum(source_files.column("size").to_pylist())),
    }
    actions = [as_add(a) for a in to_add] + [as_remove(r) for r in to_remove]
    txn.commit(actions, Operation.restore(version=version, timestamp=timestamp_param), operation_metrics=metrics)

    schema = StructType([
        StructField(name, LongType(), True)
        for name in ("table_size_after_restore", "num_of_files_after_restore", "num_removed_files",
                     "num_restored_files", "removed_files_size", "restored_files_size")
    ])
    row = (metrics["tableSizeAfterRestore"], metrics["numOfFilesAfterRestore"], metrics["numRemovedFiles"],
           metrics["numRestoredFiles"], metrics["removedFilesSize"], metrics["restoredFilesSize"])
    return spark.createDataFrame([row], schema)

