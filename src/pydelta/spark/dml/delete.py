"""DELETE FROM a Delta table, copy-on-write, as delta-spark's DeleteCommand does it.

1. No condition: every file is removed (no data is read).
2. A condition on partition columns only: the files of matching partitions are
   removed whole, again without reading data.
3. Otherwise: data skipping picks candidate files, one Spark job finds which of
   them hold matching rows (only file names and counts come back to the
   driver), and a second job rewrites just those files without the deleted
   rows. Old files are removed and the new ones added in one commit.
   With delta.enableChangeDataFeed the deleted rows of rewritten files are
   also written as change data (`_change_type` = delete) under `_change_data/`.
   With delta.enableDeletionVectors the matching rows are marked in deletion
   vectors instead and nothing is rewritten (`deletion_vectors.py`).
"""

from __future__ import annotations

import time
from typing import Any

from pydelta.log.snapshot import Snapshot
from pydelta.protocol.action_types import Action
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.dml.commit import (
    PreparedCommit,
    check_dml_supported,
    discard_files,
    elapsed_ms,
    new_transaction,
    transaction_metadata,
)
from pydelta.spark.dml.deletion_vectors import DvDelete, mark_deleted, matching_rows, persistent_dvs
from pydelta.spark.dml.files import (
    add_rows,
    candidate_files,
    cdf_enabled,
    count_dvs,
    files_with_matches,
    logical_record_count,
    remove_actions,
    select_files,
    total_bytes,
    with_change_type,
    write_cdc,
    write_rows,
)
from pydelta.spark.read.conditions import READ_ALL, analyze, is_partition_only
from pydelta.spark.read.scan import build_dataframe
from pydelta.spark.write.dataframe import files_matching_partitions
from pydelta.txn.commit_info import Operation
from pydelta.txn.row_tracking import check_row_ids_preserved, materializes_row_ids

__all__ = ["delete", "prepare_delete"]


def delete(table: Any, condition: Any = None) -> None:
    """`DeltaTable.delete(condition)`: returns None, like delta-spark's Python API."""
    prepared = prepare_delete(table._spark, table.snapshot(), condition, alias=getattr(table, "_alias", None))
    prepared.commit()
    return None


def prepare_delete(
    spark: SparkSession, snapshot: Snapshot, condition: Any = None, *, alias: str | None = None
) -> PreparedCommit:
    """Plan the delete and write the rewritten files; nothing is committed yet."""
    from pyspark.sql import functions as F

    started = time.monotonic()
    check_dml_supported(snapshot, "DELETE")
    txn = new_transaction(spark, snapshot)
    metadata = transaction_metadata(txn)
    files = snapshot.files()
    root = snapshot.table_root

    predicates: list[str] = []
    actions: list[Action] = []
    scan_ms = rewrite_ms = 0
    deleted_rows: int | None = 0
    copied_rows = 0
    added: list[Action] = []
    cdc: list[Action] = []
    removed = files.slice(0, 0)
    dv_delete: DvDelete | None = None

    if condition is None:
        removed = files
        txn.read_predicate(READ_ALL)
        txn.read_files(files.column("path").to_pylist())
        deleted_rows = logical_record_count(removed)
        scan_ms = elapsed_ms(started)
    else:
        base = build_dataframe(spark, snapshot, files.slice(0, 0))
        if alias:
            base = base.alias(alias)
        cond = analyze(base, condition)
        predicates = [cond.sql]
        predicate = cond.predicate()
        if is_partition_only(spark, cond, snapshot.partition_columns):
            # Case 2: whole files, decided from partition values alone.
            removed = files_matching_partitions(spark, snapshot, files, cond.column, alias)
            txn.read_predicate(predicate)
            txn.read_files(removed.column("path").to_pylist())
            deleted_rows = logical_record_count(removed)
            scan_ms = elapsed_ms(started)
        elif persistent_dvs(spark, metadata, snapshot.protocol, "delete"):
            # Case 3 with deletion vectors: mark the matching rows deleted, rewrite nothing.
            candidates = candidate_files(snapshot, files, txn, predicate)
            new_rows = matching_rows(spark, snapshot, candidates, cond.column, alias) if candidates.num_rows else {}
            scan_ms = elapsed_ms(started)
            dv_delete = mark_deleted(snapshot, candidates, new_rows)
            deleted_rows = dv_delete.deleted_rows
        else:
            # Case 3: find the files with matching rows, rewrite them without those rows.
            check_row_ids_preserved(snapshot, "DELETE (copy-on-write)")
            candidates, counts = files_with_matches(spark, snapshot, files, txn, predicate, cond.column, alias)
            scan_ms = elapsed_ms(started)
            if counts:
                removed = select_files(snapshot, candidates, counts)
                deleted_rows = sum(counts.values())
                rewrite_started = time.monotonic()
                keep_ids = materializes_row_ids(metadata)  # copied rows keep their row IDs
                data = build_dataframe(spark, snapshot, removed, row_ids=keep_ids)
                if alias:
                    data = data.alias(alias)
                hit = F.coalesce(cond.column, F.lit(False))
                added = write_rows(spark, data.filter(~hit), snapshot, metadata, row_ids=keep_ids)
                copied_rows = add_rows([a["add"] for a in added])
                if cdf_enabled(metadata):
                    # Whole-file deletes need no change data (readers use the removes); rewrites do.
                    changes = with_change_type(data.filter(hit), metadata.schema, "delete")
                    try:
                        cdc = write_cdc(spark, changes, snapshot, metadata)
                    except BaseException:
                        discard_files(snapshot.storage, root, added)
                        raise
                rewrite_ms = elapsed_ms(rewrite_started)

    if removed.num_rows:
        actions = remove_actions(removed) + added + cdc
    if dv_delete is not None:
        actions = dv_delete.actions

    metrics: dict[str, Any] = {
        "numAddedFiles": len(added),
        "numRemovedFiles": removed.num_rows if dv_delete is None else dv_delete.removed_files,
        "numDeletionVectorsAdded": 0 if dv_delete is None else dv_delete.dvs_added,
        "numDeletionVectorsRemoved": count_dvs(removed) if dv_delete is None else dv_delete.dvs_removed,
        "numDeletionVectorsUpdated": 0 if dv_delete is None else dv_delete.dvs_updated,
        "numAddedChangeFiles": len(cdc),
        "numDeletedRows": deleted_rows or 0,
        "numCopiedRows": copied_rows,
        "executionTimeMs": elapsed_ms(started),
        "scanTimeMs": scan_ms,
        "rewriteTimeMs": rewrite_ms,
        "numRemovedBytes": total_bytes(removed) if dv_delete is None else dv_delete.removed_bytes,
        "numAddedBytes": sum(a["add"]["size"] for a in added),
    }
    if metrics["numDeletedRows"] == 0 and metrics["numRemovedFiles"] != 0:
        # delta-spark: row counts are unknown for whole-file deletes without stats.
        for key in ("numDeletedRows", "numCopiedRows", "numAddedFiles"):
            metrics.pop(key)
    return PreparedCommit(txn, actions, Operation.delete(predicates), metrics, started=started,
                          result=deleted_rows, spark=spark)
