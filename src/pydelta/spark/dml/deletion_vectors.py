"""Deleting rows with deletion vectors instead of rewriting their files (merge-on-read).

When a table has `delta.enableDeletionVectors = true`, DELETE (and UPDATE and MERGE, which
then write only the new and changed rows to new files) marks the matching rows
of each touched file in a deletion vector, as delta-spark does: one Spark job collects
the matching rows' indexes per file (`_metadata.row_index`), the driver unions them with
the file's current DV, writes all new bitmaps into one DV file, and the commit replaces
each file's (path, old DV) by (path, new DV). A file whose every row is now deleted is
simply removed. Stats are kept, with `tightBounds: false` (min/max may now be wider than
the live rows). No change data files are written: change-feed readers derive the deleted
rows from the DV difference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pyarrow as pa

from pydelta.log.deletion_vector_files import read_deleted_rows, write_deletion_vectors
from pydelta.log.file_actions import add_action_from_file_row
from pydelta.log.snapshot import Snapshot
from pydelta.protocol import properties
from pydelta.protocol.action_types import Action, AddFile, DeletionVectorDict
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor
from pydelta.protocol.stats import TIGHT_BOUNDS
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.dml.files import file_uris, remove_actions, scan
from pydelta.spark.read import plan_pruning
from pydelta.spark.read.scan import FILE_COL, ROW_COL, spark_file_uri

ENABLE_KEY = "delta.enableDeletionVectors"


def persistent_dvs(spark: SparkSession, metadata: Metadata, protocol: Protocol, command: str) -> bool:
    """Whether `command` ("delete" / "update" / "merge") writes deletion vectors: delta-spark's rule, the
    table property plus spark.databricks.delta.<command>.deletionVectors.persistent (default true)."""
    enabled = properties.ENABLE_DELETION_VECTORS.get(metadata.configuration)
    conf = f"spark.databricks.delta.{command}.deletionVectors.persistent"
    persistent = str(spark.conf.get(conf, "true")).strip().lower() != "false"
    return enabled and persistent and protocol.has_feature("deletionVectors")


def matching_rows(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, condition: Any, alias: str | None
) -> dict[str, np.ndarray]:
    """Per file URI (as Spark reports it), the sorted physical row indexes whose rows match `condition`."""
    from pyspark.sql import functions as F

    df = scan(spark, snapshot, files, with_file=True)
    if alias:
        df = df.alias(alias)
    uris = file_uris(snapshot, files)
    # `files` are already the candidates the condition left: no pruning pass on these plans.
    return rows_by_file(plan_pruning.unpruned(df, "filter", F.coalesce(condition, F.lit(False))), uris)


def rows_by_file(df: DataFrame, uris: list[str] | None = None) -> dict[str, np.ndarray]:
    """Per file URI, the sorted row indexes of the rows of `df` (which carries FILE_COL and ROW_COL).

    With the candidate file `uris` known, rows are collected as (file number, row index) longs
    through a broadcast join on the few matching rows, with no shuffle; else grouped in Spark.
    """
    from pyspark.sql import functions as F

    if uris is None:
        table = df.groupBy(FILE_COL).agg(F.collect_list(F.col(ROW_COL)).alias("rows")).toArrow()
        out: dict[str, np.ndarray] = {}
        for uri, rows in zip(table.column(FILE_COL).to_pylist(),
                             table.column("rows").to_numpy(zero_copy_only=False), strict=True):
            out[uri] = np.unique(np.asarray(rows, dtype=np.int64))
        return out
    numbers = F.broadcast(df.sparkSession.createDataFrame(
        pa.table({"__file_number": pa.array(range(len(uris)), pa.int64()), "__file_uri": pa.array(uris, pa.string())})))
    pairs = (plan_pruning.unpruned(df, "join", numbers, df[FILE_COL] == numbers["__file_uri"], "inner")
             .select("__file_number", F.col(ROW_COL).alias("__row")).toArrow())
    file_numbers = pairs.column("__file_number").to_numpy()
    rows = pairs.column("__row").to_numpy()
    order = np.lexsort((rows, file_numbers))
    file_numbers, rows = file_numbers[order], rows[order]
    starts = np.flatnonzero(np.diff(file_numbers, prepend=-1))
    ends = [*starts[1:], len(rows)]
    # strict=False: no rows gives no start, and ends is [0]
    return {uris[int(file_numbers[a])]: np.unique(rows[a:b]) for a, b in zip(starts, ends, strict=False)}


@dataclass
class DvDelete:
    """The actions and metrics of marking rows deleted in the given files."""

    actions: list[Action] = field(default_factory=list)
    removed_files: int = 0  # files all of whose rows are now deleted
    removed_bytes: int = 0
    dvs_added: int = 0  # files that had no DV before
    dvs_updated: int = 0  # files whose DV grew
    dvs_removed: int = 0  # old DVs of removed files
    deleted_rows: int = 0


def mark_deleted(snapshot: Snapshot, files: pa.Table, new_rows: dict[str, np.ndarray]) -> DvDelete:
    """Replace each file of `files` that has rows in `new_rows` by itself with a bigger deletion vector."""
    root = snapshot.table_root
    out = DvDelete()
    keep_rows, keep_sets, gone = [], [], []
    for row in files.to_pylist():
        rows = new_rows.get(spark_file_uri(snapshot.absolute_path(row["path"])))
        if rows is None or rows.size == 0:
            continue
        old_dv = row.get("deletion_vector")
        old = (read_deleted_rows(DeletionVectorDescriptor.from_dict(old_dv), root, snapshot.storage) if old_dv
               else np.array([], np.uint64))
        union = np.union1d(old.astype(np.int64), rows)
        out.deleted_rows += int(union.size - old.size)
        if row.get("num_records") is not None and union.size >= int(row["num_records"]):
            gone.append(row)
            out.dvs_removed += 1 if old_dv else 0
            continue
        keep_rows.append(row)
        keep_sets.append(union)
        if old_dv:
            out.dvs_updated += 1
        else:
            out.dvs_added += 1
    descriptors = write_deletion_vectors(root, keep_sets, storage=snapshot.storage) if keep_sets else []
    touched = {r["path"] for r in gone + keep_rows}
    out.removed_files = len(gone)
    out.removed_bytes = sum(int(r["size"]) for r in gone)
    mask = pa.array([p in touched for p in files.column("path").to_pylist()], pa.bool_())
    out.actions = remove_actions(files.filter(mask)) if touched else []
    for row, descriptor in zip(keep_rows, descriptors, strict=True):
        out.actions.append({"add": _add_with_dv(row, descriptor)})
    return out


def _add_with_dv(row: dict[str, Any], descriptor: DeletionVectorDescriptor) -> AddFile:
    """The file's add action, now carrying `descriptor` and loose (not tight) stats bounds."""
    add = add_action_from_file_row(row)
    add["deletionVector"] = cast(DeletionVectorDict, descriptor.to_dict())
    if row.get("stats"):
        stats = json.loads(row["stats"])
        stats[TIGHT_BOUNDS] = False
        add["stats"] = json.dumps(stats, separators=(",", ":"))
    return add
