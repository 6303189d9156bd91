"""Removing column mapping: `ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')`
or `UNSET TBLPROPERTIES ('delta.columnMapping.mode')` on a table in mode name or id.

delta-spark's RemoveColumnMappingCommand: the files hold physical names (or field ids), so a
metadata-only change would lose every column. One transaction therefore commits the schema
without column-mapping metadata, the configuration without the mode (or with `none`) and
without `delta.columnMapping.maxColumnId`, and every data file rewritten with the logical
names as Parquet column names (dataChange=false adds and removes; deleted rows dropped; row
IDs kept). The protocol keeps the columnMapping feature (DROP FEATURE removes it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from pydelta.errors import DeltaAnalysisError
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.action_types import AddFile, RemoveFile, as_add, as_remove
from pydelta.protocol.actions import Metadata
from pydelta.protocol.clustering import DOMAIN as CLUSTERING_DOMAIN
from pydelta.protocol.column_mapping_removal import clustering_without_mapping, metadata_without_mapping
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.conf import session_time_zone
from pydelta.spark.base.engine import table_snapshot
from pydelta.spark.base.hadoop_storage import table_hadoop_options
from pydelta.spark.base.pyspark_compat import alias
from pydelta.txn import row_tracking
from pydelta.txn.commit_info import Operation

ALLOW_REMOVAL = "spark.databricks.delta.columnMapping.allowRemoval"
PRESERVED_ROW_TRACKING_TAG = "delta.rowTracking.preserved"
OPERATION = Operation("REMOVE COLUMN MAPPING", {})


def removal_allowed(spark: SparkSession) -> bool:
    """spark.databricks.delta.columnMapping.allowRemoval (default true)."""
    return str(spark.conf.get(ALLOW_REMOVAL, "true")).strip().lower() == "true"


def mode_change_refused(old: str, new: str = "none") -> DeltaAnalysisError:
    """DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE, e.g. name -> none while removal is not allowed."""
    return DeltaAnalysisError(f"[DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE] Changing column mapping mode from "
                              f"'{old}' to '{new}' is not supported.")


# ---- the Spark rewrite -----------------------------------------------------------------------


def remove_column_mapping(spark: SparkSession, path: str, *, unset: bool) -> int:
    """Rewrite the table at `path` without column mapping in one commit; returns its version."""
    snapshot = table_snapshot(spark, path)
    new = metadata_without_mapping(snapshot.metadata, unset=unset)  # refuses bad names before any work
    return rewrite_and_commit(spark, snapshot, new)


def rewrite_and_commit(spark: SparkSession, snapshot: Snapshot, metadata: Metadata) -> int:
    """The REMOVE COLUMN MAPPING commit: `metadata` (without mapping) and every file of `snapshot`
    rewritten under it (DROP FEATURE columnMapping commits through here too)."""
    from pydelta.txn.row_tracking import check_row_ids_preserved

    check_row_ids_preserved(snapshot, "REMOVE COLUMN MAPPING")
    snapshot.protocol.check_writable()
    adds, removes = _rewrite(spark, snapshot, metadata)
    return _commit(spark, snapshot, metadata, adds, removes)


def _rewrite(spark: SparkSession, snapshot: Snapshot, metadata: Metadata) -> tuple[list[AddFile], list[RemoveFile]]:
    """Every live row (deletion vectors applied) written again under `metadata`, by logical name."""
    from pydelta.spark.read.scan import ROW_ID_COL, ROW_VERSION_COL, build_dataframe
    from pydelta.spark.write.data_files import (
        file_rows_to_adds,
        remove_action,
        write_data_files,
    )
    from pydelta.txn.row_tracking import materialized_names, materializes_row_ids

    files = snapshot.files()
    if files.num_rows == 0:
        return [], []
    keep_ids = materializes_row_ids(snapshot.metadata)
    hidden = materialized_names(snapshot.metadata) if keep_ids else []
    df = _without_field_ids(build_dataframe(spark, snapshot, files, row_ids=keep_ids), metadata)
    if keep_ids:
        df = df.withColumnRenamed(ROW_ID_COL, hidden[0]).withColumnRenamed(ROW_VERSION_COL, hidden[1])
    adds = write_data_files(df, snapshot.table_root, metadata, data_change=False, hidden=hidden,
                            session_time_zone=session_time_zone(spark),
                            hadoop_options=table_hadoop_options(snapshot.storage),
                            protocol=snapshot.protocol)
    now = int(time.time() * 1000)
    removes = [remove_action(a, data_change=False, timestamp_ms=now) for a in file_rows_to_adds(files)]
    return adds, removes


def _without_field_ids(df: DataFrame, metadata: Metadata) -> Any:
    """`df` with the column (and nested field) metadata of `metadata`'s schema: an id-mode read
    leaves `parquet.field.id` on the columns, and Spark would write it into the new files."""
    from pyspark.sql import functions as F

    from pydelta.protocol.schema import quote_identifier
    from pydelta.spark.read.scan import spark_schema

    fields = spark_schema(metadata.schema).fields
    table = [alias(F.col(quote_identifier(f.name)).cast(f.dataType), f.name, f.metadata, f.dataType) for f in fields]
    others = [F.col(quote_identifier(c)) for c in df.columns[len(fields):]]  # row-tracking columns follow
    return df.select(*table, *others)


def _commit(spark: SparkSession, snapshot: Snapshot, metadata: Metadata, adds: list[AddFile],
            removes: list[RemoveFile]) -> int:
    from pydelta.spark.base.transactions import open_transaction

    txn = open_transaction(spark, snapshot)
    txn.read_whole_table()  # every file is rewritten: any concurrent data change conflicts
    txn.update_metadata(metadata)
    clustered = clustering_without_mapping(snapshot.metadata, snapshot.domain_metadata)
    if clustered is not None:  # the clustering columns, now by logical name
        txn.add_domain_metadata(CLUSTERING_DOMAIN, clustered)
    tags = {PRESERVED_ROW_TRACKING_TAG: "true"} if row_tracking.enabled(snapshot.metadata) else None
    actions = [as_remove(r) for r in removes] + [as_add(a) for a in adds]
    return txn.commit(actions, OPERATION, operation_metrics=_metrics(adds, removes), tags=tags, data_change=False)


def _metrics(adds: Sequence[AddFile], removes: Sequence[RemoveFile]) -> dict[str, int]:
    """The keys of delta-spark's REMOVE_COLUMN_MAPPING metric set."""
    return {
        "numRewrittenFiles": len(removes),
        "numOutputBytes": sum(a.get("size") or 0 for a in adds),
        "numRemovedBytes": sum(r.get("size") or 0 for r in removes),
        "numCopiedRows": sum(json.loads(stats).get("numRecords", 0) for a in adds if (stats := a.get("stats"))),
        "numDeletionVectorsRemoved": sum(1 for r in removes if r.get("deletionVector")),
    }


__all__ = ["ALLOW_REMOVAL", "mode_change_refused", "removal_allowed", "remove_column_mapping", "rewrite_and_commit"]
