"""DataFrames for DeltaTable.history() and DeltaTable.detail(), with delta-spark's columns."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydelta.log.history import history
from pydelta.log.snapshot import Snapshot
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.txn import protocol_upgrade as pu

HISTORY_SCHEMA = (
    "version BIGINT, timestamp TIMESTAMP, userId STRING, userName STRING, operation STRING, "
    "operationParameters MAP<STRING,STRING>, "
    "job STRUCT<jobId: STRING, jobName: STRING, jobRunId: STRING, runId: STRING, jobOwnerId: STRING, "
    "triggerType: STRING>, "
    "notebook STRUCT<notebookId: STRING>, clusterId STRING, readVersion BIGINT, isolationLevel STRING, "
    "isBlindAppend BOOLEAN, operationMetrics MAP<STRING,STRING>, userMetadata STRING, engineInfo STRING"
)

DETAIL_SCHEMA = (
    "format STRING, id STRING, name STRING, description STRING, location STRING, createdAt TIMESTAMP, "
    "lastModified TIMESTAMP, partitionColumns ARRAY<STRING>, clusteringColumns ARRAY<STRING>, numFiles BIGINT, "
    "sizeInBytes BIGINT, properties MAP<STRING,STRING>, minReaderVersion INT, minWriterVersion INT, "
    "tableFeatures ARRAY<STRING>"
)


def _ts(ms: int | None) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, tz=UTC) if ms is not None else None


def _str_map(d: Any) -> dict[str, str | None] | None:
    if d is None:
        return None
    return {str(k): (v if isinstance(v, str) or v is None else json.dumps(v)) for k, v in d.items()}


def history_rows(snapshot: Snapshot, limit: int | None = None) -> list[tuple[Any, ...]]:
    rows = []
    for entry in history(snapshot, limit):
        ci = entry.commit_info
        job = ci.get("job")
        notebook = ci.get("notebook")
        rows.append(
            (
                entry.version,
                _ts(entry.timestamp),
                ci.get("userId"),
                ci.get("userName"),
                ci.get("operation"),
                _str_map(ci.get("operationParameters")),
                (tuple(job.get(k) for k in ("jobId", "jobName", "jobRunId", "runId", "jobOwnerId", "triggerType"))
                 if job else None),
                (notebook.get("notebookId"),) if notebook else None,
                ci.get("clusterId"),
                ci.get("readVersion"),
                ci.get("isolationLevel"),
                ci.get("isBlindAppend"),
                _str_map(ci.get("operationMetrics")),
                ci.get("userMetadata"),
                ci.get("engineInfo"),
            )
        )
    return rows


def history_dataframe(spark: SparkSession, snapshot: Snapshot, limit: int | None = None) -> DataFrame:
    return spark.createDataFrame(history_rows(snapshot, limit), HISTORY_SCHEMA)


def detail_dataframe(spark: SparkSession, snapshot: Snapshot) -> DataFrame:
    """DESCRIBE DETAIL's row: from the version checksum alone when the snapshot has one (no replay)."""
    md = snapshot.metadata
    clustering = None
    if "delta.clustering" in snapshot.domain_metadata:
        try:
            domain = json.loads(snapshot.domain_metadata["delta.clustering"])
            clustering = [".".join(c) for c in domain.get("clusteringColumns", [])]
        except (ValueError, TypeError, AttributeError):
            clustering = None
    row = (
        md.format.provider if md.format.provider != "parquet" else "delta",
        md.id,
        md.name,
        md.description,
        "file:" + snapshot.table_root,
        _ts(md.created_time),
        _ts(snapshot.timestamp),
        list(md.partition_columns),
        clustering or [],
        snapshot.num_files,
        snapshot.size_in_bytes,
        dict(md.configuration),
        snapshot.protocol.min_reader_version,
        snapshot.protocol.min_writer_version,
        sorted(pu.all_features(snapshot.protocol)),
    )
    return spark.createDataFrame([row], DETAIL_SCHEMA)
