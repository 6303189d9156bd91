"""pydelta: Delta Lake tables for PySpark, implemented in Python.

The log core (`pydelta.load_snapshot`) needs no JVM; the Spark entry points
(`enable`, `configure_spark`, `DeltaTable`) import PySpark only when used.
"""

from __future__ import annotations

from typing import Any

from pydelta.errors import DeltaError
from pydelta.version import __version__

__all__ = ["DeltaError", "DeltaTable", "__version__", "configure_spark", "enable", "load_snapshot", "write"]


def load_snapshot(path: str, version: int | None = None, timestamp: object | None = None,
                  storage_options: dict[str, str] | None = None, storage: Any = None):
    """Load the table state at `path` (latest, or at `version` / `timestamp`) without Spark.

    `path` may be an object-store URI (`s3://bucket/table`, `gs://`, `abfss://`...);
    `storage_options` then carries its credentials/endpoint (else the environment's).
    `storage`: an explicit `pydelta.log.storage.Storage` to read through.
    """
    from pydelta.log.snapshot import load_snapshot as _load

    return _load(path, version=version, timestamp=timestamp, storage_options=storage_options, storage=storage)


def enable(spark: Any) -> Any:
    """Make an existing SparkSession Delta-capable (idempotent)."""
    from pydelta.spark.session import enable as _enable

    return _enable(spark)


def configure_spark(builder: Any) -> Any:
    """Add pydelta to a SparkSession builder."""
    from pydelta.spark.session import configure_spark as _configure

    return _configure(builder)


def write(
    df: Any,
    path: str,
    mode: str = "errorifexists",
    partition_by: list[str] | None = None,
    **options: Any,
) -> int | None:
    """Write a Spark DataFrame to the Delta table at `path`, like `df.write.format("delta")`.

    Returns the committed version, or None when nothing was committed (mode
    "ignore" on an existing table, or an already applied txnAppId/txnVersion).
    """
    from pydelta.spark.session import enable as _enable
    from pydelta.spark.write.dataframe import write_dataframe

    _enable(df.sparkSession)
    return write_dataframe(df, path, mode, partition_by, options)


def __getattr__(name: str) -> Any:
    if name == "DeltaTable":
        from pydelta.tables import DeltaTable

        return DeltaTable
    raise AttributeError(name)
