"""A row of `Snapshot.files()` back to the add action it came from.

Commands that recommit live files (CLONE, RESTORE, row-tracking backfills, REORG) rebuild
the file's add action from the snapshot's files table.
"""

from __future__ import annotations

from typing import Any, cast

from pydelta.protocol.action_types import AddFile, DeletionVectorDict


def add_action_from_file_row(row: dict[str, Any]) -> AddFile:
    """A `Snapshot.files()` row back to the add action it came from, with dataChange=true."""
    pv = row.get("partition_values")
    out: AddFile = {
        "path": row["path"],
        "partitionValues": dict(pv) if pv is not None else {},
        "size": row["size"],
        "modificationTime": row.get("modification_time") or 0,
        "dataChange": True,
    }
    if row.get("stats") is not None:
        out["stats"] = row["stats"]
    if row.get("tags"):
        out["tags"] = dict(row["tags"])
    if row.get("deletion_vector"):
        out["deletionVector"] = cast(
            DeletionVectorDict, {k: v for k, v in row["deletion_vector"].items() if v is not None})
    if row.get("base_row_id") is not None:
        out["baseRowId"] = row["base_row_id"]
    if row.get("default_row_commit_version") is not None:
        out["defaultRowCommitVersion"] = row["default_row_commit_version"]
    if row.get("clustering_provider") is not None:
        out["clusteringProvider"] = row["clustering_provider"]
    return out
