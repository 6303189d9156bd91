"""Reading a snapshot's data files with Spark's own Parquet reader."""

from __future__ import annotations

from typing import Any, Mapping

from pydelta.errors import MissingDataFileError
from pydelta.protocol.partition_values import file_uri
from pydelta.spark._typing import SparkSession


def read_parquet_files(spark: SparkSession, read_schema: Any, paths: list[str], base_path: str | None = None,
                       options: Mapping[str, str] | None = None) -> Any:
    """Spark's Parquet reader over exactly `paths` (listed in the driver, never globbed), with
    `options` as the scan's own; a file gone since the snapshot (vacuumed, deleted by hand) is a
    MissingDataFileError."""
    jvm_conf = spark.conf
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    previous = jvm_conf.get(key)
    jvm_conf.set(key, str(max(32, len(paths) + 1)))  # list our known files in the driver
    try:
        reader = spark.read.schema(read_schema).options(**(options or {})).option("__globPaths__", "false")
        if base_path is not None:
            reader = reader.option("basePath", file_uri(base_path))
        return reader.parquet(*paths)
    except Exception as e:  # AnalysisException for a missing file
        text = str(e)
        if "PATH_NOT_FOUND" in text or "does not exist" in text:
            raise MissingDataFileError(
                f"a data file of this table version is missing (vacuumed or deleted): {text.splitlines()[0]}"
            ) from None
        raise
    finally:
        if previous is None:  # was unset: unset it again
            jvm_conf.unset(key)
        else:
            jvm_conf.set(key, previous)
