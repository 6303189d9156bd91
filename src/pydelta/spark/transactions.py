"""What every pydelta transaction opened from Spark records and reads: the engine (with the
session's commitInfo.userMetadata), the isolation level, the table's current snapshot."""

from __future__ import annotations


from pydelta.errors import DeltaTableNotFoundError
from pydelta.log.snapshot import Snapshot, load_snapshot
from pydelta.protocol.actions import Metadata
from pydelta.txn.commit_info import EngineInfo
from pydelta.version import __version__
from pydelta.spark._typing import SparkSession


def engine_info(spark: SparkSession) -> str:
    """engineInfo for a commit from `spark`, carrying the session's commitInfo.userMetadata to every commit."""
    return EngineInfo(f"pydelta/{__version__} Apache-Spark/{spark.version}",
                      spark.conf.get("spark.databricks.delta.commitInfo.userMetadata", None))


def isolation_level(metadata: Metadata | None) -> str:
    level = (metadata.configuration.get("delta.isolationLevel") if metadata else None) or "WriteSerializable"
    return "Serializable" if level.lower() == "serializable" else "WriteSerializable"


def try_load(path: str) -> Snapshot | None:
    try:
        return load_snapshot(path)
    except DeltaTableNotFoundError:
        return None
