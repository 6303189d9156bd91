"""A row of `Snapshot.files()` back to the add action it came from.

Commands that recommit live files (CLONE, RESTORE, row-tracking backfills, REORG) rebuild
the file's add action from the snapshot's files table.
"""

from __future__ import annotations

from typing import Any


def add_action_from_file_row(row: dict[str, Any]) -> dict[str, Any]:
    """A `Snapshot.files()` row back to the add action it came from, with dataChange=true."""
    pv = row.get("partition_values")
    out: dict[str, Any] = {
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
        out["deletionVector"] = {k: v for k, v in row["deletion_vector"].items() if v is not None}
    for src, dst in (("base_row_id", "baseRowId"), ("default_row_commit_version", "defaultRowCommitVersion"),
                     ("clustering_provider", "clusteringProvider")):
        if row.get(src) is not None:
            out[dst] = row[src]
    return out
