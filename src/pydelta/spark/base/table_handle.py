"""A Delta table at a path, as every room below the two fronts receives it.

The rooms that act on a whole table (OPTIMIZE, VACUUM, RESTORE, MERGE, clustering, features)
need the session, the location, the table's Hadoop options and its snapshot; both fronts
give them this: the DeltaTable API (its table objects are TableHandles) and SQL (which opens
one per statement), so neither front reaches through the other.
"""

from __future__ import annotations

from pydelta.log.snapshot import Snapshot
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.engine import SparkEngine
from pydelta.spark.base.hadoop_storage import check_table_options, qualify_path


class TableHandle:
    """The table at `path` in `spark`, with an optional alias and delta-spark's per-table `hadoopConf`."""

    def __init__(self, spark: SparkSession, path: str, alias: str | None = None,
                 hadoopConf: dict[str, str] | None = None) -> None:
        self._spark = spark
        self._hadoop_conf = {str(k): str(v) for k, v in (hadoopConf or {}).items()}
        if self._hadoop_conf:
            path = qualify_path(spark, path, self._hadoop_conf)
            check_table_options(path, self._hadoop_conf)
        self._path = path
        self._alias = alias
        self._engine = SparkEngine(spark, self._hadoop_conf)
        self._snapshot: Snapshot | None = None

    @property
    def path(self) -> str:
        """The table's location, as given (or as resolved against `fs.defaultFS` in `hadoopConf`)."""
        return self._path

    def snapshot(self) -> Snapshot:
        """The table's latest state: the first call reads the log, later ones read only the commits since."""
        if self._snapshot is None:
            self._snapshot = self._engine.load_snapshot(self._path)
        else:
            self._snapshot = self._snapshot.update()
        return self._snapshot
