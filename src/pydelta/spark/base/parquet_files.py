"""Reading a snapshot's data files with Spark's own Parquet reader."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydelta.errors import MissingDataFileError
from pydelta.protocol.partition_values import hadoop_path
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.conf import held_session_conf

_NO_LISTING_JOB = str(2**31 - 1)
_GLOB_CHARACTER = re.compile(r"([{}\[\]*?\\])")  # what Spark's isGlobPath looks for


def reader_paths(paths: list[str]) -> tuple[list[str], str]:
    """The strings to hand Spark's file readers for decoded absolute `paths`, and the
    `__globPaths__` option to read them with, so that each path names exactly one file.

    Without globbing Spark (4.0-4.3, DataSource.checkAndGlobPathIfNecessary) expands each path
    that *looks* like a glob (`?`, `*`, `[`, `{`, a backslash) into every path of the read, so
    two files under `/data/q?m/` would be read twice each. Such a read globs instead, with
    those characters escaped, which Hadoop's globber matches literally; reads of ordinary paths
    keep globbing off (no pattern matching per file).
    """
    strings = [hadoop_path(p) for p in paths]
    if not any(_GLOB_CHARACTER.search(s) for s in strings):
        return strings, "false"
    return [_GLOB_CHARACTER.sub(r"\\\1", s) for s in strings], "true"


def read_parquet_files(spark: SparkSession, read_schema: Any, paths: list[str], base_path: str | None = None,
                       options: Mapping[str, str] | None = None) -> DataFrame:
    """Spark's Parquet reader over exactly `paths` (decoded absolute paths, listed in the driver),
    with `read_schema` (None: the files' own) and `options` as the scan's own; a file gone since
    the snapshot (vacuumed, deleted by hand) is a MissingDataFileError."""
    strings, glob = reader_paths(paths)
    reader = spark.read if read_schema is None else spark.read.schema(read_schema)
    reader = reader.options(**(options or {})).option("__globPaths__", glob)
    if base_path is not None:  # a plain path: Spark does not glob the base path
        reader = reader.option("basePath", hadoop_path(base_path))
    # Spark lists the files of a read on the driver below this threshold, with a Spark job above
    # it: pydelta's files are known (listed by the log), so the driver always does it.
    try:
        with held_session_conf(spark, "spark.sql.sources.parallelPartitionDiscovery.threshold", _NO_LISTING_JOB):
            return reader.parquet(*strings)
    except Exception as e:  # AnalysisException for a missing file
        text = str(e)
        if "PATH_NOT_FOUND" in text or "does not exist" in text:
            raise MissingDataFileError(
                f"a data file of this table version is missing (vacuumed or deleted): {text.splitlines()[0]}"
            ) from None
        raise
