"""What a Spark session gives the log core, handed down explicitly (delta-kernel-rs passes an
`Engine`, pyiceberg a `FileIO`): the storage a table's log is read and committed through, and
the replay of very large logs as a Spark job on the session (`log_replay`).

A session's own settings decide it, so two sessions of one process side by side each reach
their tables their own way: a Hadoop-only URI (`hdfs://`, `viewfs://`, ...) goes through the
Hadoop FileSystem of the session's configuration (its SQL confs and a table's `hadoopConf`
over it); an S3 URI through pydelta's object-store client with the session's fs.s3a.* settings;
any other path through the log core's own storage. Nothing here is process-wide: the Spark
layer loads every snapshot and opens every transaction through `SparkEngine`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from pydelta.errors import DeltaTableNotFoundError
from pydelta.log.snapshot import Snapshot, load_snapshot
from pydelta.log.storage import HADOOP_ONLY_SCHEMES, Storage, storage_for
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.hadoop_storage import (
    S3A_SCHEMES,
    HadoopFileSystemStorage,
    StorageWithHadoopOptions,
    s3a_storage_options,
    session_s3a_settings,
)
from pydelta.spark.base.log_replay import spark_replayer


class SparkEngine:
    """The storage and snapshots of tables as one Spark session (and a table's `hadoopConf`) sees them."""

    def __init__(self, spark: SparkSession, hadoop_options: Mapping[str, str] | None = None) -> None:
        self.spark = spark
        self.hadoop_options = dict(hadoop_options or {})

    def storage(self, path: str) -> Storage:
        """The storage serving the table at `path` for this session."""
        scheme = urlparse(path).scheme.lower()
        if scheme in HADOOP_ONLY_SCHEMES:
            from pydelta.spark.base.connect_session import is_connect

            if not is_connect(self.spark):
                return HadoopFileSystemStorage(self.spark, self.hadoop_options)
        if scheme in S3A_SCHEMES:
            bucket = urlparse(path).netloc
            settings = session_s3a_settings(self.spark, self.hadoop_options, bucket)
            storage = storage_for(path, s3a_storage_options(settings, bucket))
            return StorageWithHadoopOptions(storage, self.hadoop_options) if self.hadoop_options else storage
        return storage_for(path)

    def load_snapshot(self, path: str, *, version: int | None = None, timestamp: Any = None,
                      check_protocol: bool = True) -> Snapshot:
        """The table at `path` (at `version` or `timestamp`), read through this session's storage;
        a log above `spark.pydelta.logReplay.sparkMinBytes` replays on this session (a classic
        one: a Connect client has no JVM to run it on)."""
        from pydelta.spark.base.connect_session import is_connect

        replayer = None if is_connect(self.spark) else spark_replayer(self.spark)
        return load_snapshot(path, version=version, timestamp=timestamp, storage=self.storage(path),
                             check_protocol=check_protocol, replayer=replayer)

    def try_load(self, path: str) -> Snapshot | None:
        """`load_snapshot`, or None where there is no table yet."""
        try:
            return self.load_snapshot(path)
        except DeltaTableNotFoundError:
            return None


def table_snapshot(spark: SparkSession, path: str, *, version: int | None = None, timestamp: Any = None) -> Snapshot:
    """The table at `path` as `spark` sees it (see `SparkEngine`)."""
    return SparkEngine(spark).load_snapshot(path, version=version, timestamp=timestamp)


def try_table_snapshot(spark: SparkSession, path: str) -> Snapshot | None:
    """`table_snapshot`, or None where there is no table yet."""
    return SparkEngine(spark).try_load(path)
