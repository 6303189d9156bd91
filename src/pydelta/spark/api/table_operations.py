"""The operations of a Delta table at a path, the instance side of delta-spark's `DeltaTable`:
reading it, its history and details, DELETE / UPDATE / MERGE, and its maintenance (VACUUM,
OPTIMIZE, RESTORE, protocol and table features, manifests).

`pydelta.spark.api.delta_table.DeltaTableApi` adds the class methods that open or make tables
(`forPath`, `create`...) and the clones; `pydelta.tables.DeltaTable` is the public class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from pydelta.log.snapshot import Snapshot
from pydelta.spark.base._typing import DataFrame
from pydelta.spark.base.spark_errors import boundary_class
from pydelta.spark.base.table_handle import TableHandle

if TYPE_CHECKING:
    from pydelta.spark.dml.merge import DeltaMergeBuilder
    from pydelta.spark.maintenance.optimize import DeltaOptimizeBuilder


def _check_condition(condition: Any, argname: str = "'condition'") -> None:
    """delta-spark's _condition_to_jcolumn type check."""
    from pyspark.sql import Column

    if condition is not None and not isinstance(condition, (Column, str)):
        raise TypeError(
            f"{argname} must be a Spark SQL Column or a string (expression in SQL syntax), "
            f"found to be of type {type(condition)}"
        )


def _check_mapping(mapping: Any, argname: str) -> None:
    """delta-spark's _dict_to_jmap checks."""
    from pyspark.sql import Column

    if mapping is None:
        raise ValueError(f"{argname} cannot be None")
    if not isinstance(mapping, dict):
        raise TypeError(f"{argname} must be a dict, found to be {type(mapping)}")
    for col, expr in mapping.items():
        if not isinstance(col, str):
            raise TypeError(
                f"Keys of dict in {argname} must contain only strings with column names, "
                f"found '{col}' of type '{type(col)}"
            )
        if not isinstance(expr, (Column, str)):
            raise TypeError(
                f"Values of dict in {argname} must contain only Spark SQL Columns or strings "
                f"(expressions in SQL syntax) as values, found '{expr}' of type '{type(expr)}'"
            )


@boundary_class
class DeltaTableOperations(TableHandle):
    """A Delta table at a path and what can be done with it (see `pydelta.tables.DeltaTable`).

    `hadoopConf` (delta-spark's per-table Hadoop options, see `DeltaTableApi.forPath`) travels
    with the table's storage (`TableHandle`): its log, and as per-relation options every Spark
    scan and write of its data files that an operation runs; the session's conf is left alone.
    """

    def snapshot(self) -> Snapshot:
        """The table's latest state as pydelta's log core sees it (pydelta's own method).

        The first call reads the log; later calls bring the same snapshot up to date with
        the commits made since, reading only those.

        Returns:
            A `pydelta.log.snapshot.Snapshot`: version, schema, metadata, protocol and files.

        Example:
            ```python
            snap = DeltaTable.forPath(spark, "/data/events").snapshot()
            print(snap.version, snap.metadata.partition_columns)
            ```
        """
        return super().snapshot()

    def toDF(self) -> DataFrame:
        """Read the table's latest version as a DataFrame.

        The DataFrame is built from the snapshot current at the call: later commits to the
        table do not change what it returns. Filters on it skip files by the log's
        partition values and column statistics.

        Returns:
            The table's rows, under the table's alias if `alias()` gave one.

        Example:
            ```python
            recent = DeltaTable.forPath(spark, "/data/events").toDF().where("day >= '2024-01-01'")
            ```
        """
        from pydelta.spark.read.scan import read_snapshot

        df = read_snapshot(self._spark, self.snapshot())
        return df.alias(self._alias) if self._alias else df

    def alias(self, aliasName: str) -> Self:
        """Name the table for use in conditions and expressions (a SQL table alias).

        Args:
            aliasName: The alias, e.g. `"t"` to write `t.id` in a merge condition.

        Returns:
            A new table object for the same table, carrying the alias.

        Example:
            ```python
            target = DeltaTable.forPath(spark, "/data/events").alias("t")
            target.merge(updates.alias("u"), "t.id = u.id").whenMatchedUpdateAll().execute()
            ```
        """
        table = type(self)(self._spark, self._path, aliasName, self._hadoop_conf)
        table._snapshot = self._snapshot
        return table

    def history(self, limit: int | None = None) -> DataFrame:
        """List the table's commits, newest first.

        Args:
            limit: How many of the latest commits to list; all of them when omitted.

        Returns:
            One row per commit with delta-spark's history columns (`version`, `timestamp`,
            `operation`, `operationParameters`, `operationMetrics`, ...).

        Example:
            ```python
            last = DeltaTable.forPath(spark, "/data/events").history(1).collect()[0]
            print(last.version, last.operation)
            ```
        """
        from pydelta.spark.read.table_info import history_dataframe

        return history_dataframe(self._spark, self.snapshot(), limit)

    def detail(self) -> DataFrame:
        """Describe the table: format, location, size, partitioning, properties, protocol.

        Returns:
            One row with delta-spark's `DESCRIBE DETAIL` columns (`format`, `id`, `location`,
            `numFiles`, `sizeInBytes`, `partitionColumns`, `properties`, ...).

        Example:
            ```python
            info = DeltaTable.forPath(spark, "/data/events").detail().first()
            print(info.numFiles, info.sizeInBytes)
            ```
        """
        from pydelta.spark.read.table_info import detail_dataframe

        return detail_dataframe(self._spark, self.snapshot())

    # ---- DML (pydelta.spark.dml) ---------------------------------------------------------
    def delete(self, condition: Any = None) -> None:
        """Delete the rows that match a condition, or every row.

        Args:
            condition: A SQL expression string or a Column; all rows are deleted when omitted.

        Example:
            ```python
            from pyspark.sql import functions as F

            events.delete("day < '2023-01-01'")
            events.delete(F.col("status") == "test")
            ```
        """
        from pydelta.spark.dml.delete import delete

        _check_condition(condition)
        return delete(self, condition)

    def update(self, condition: Any = None, set: Any = None) -> None:  # noqa: A002
        """Change column values of the rows that match a condition, or of every row.

        Args:
            condition: A SQL expression string or a Column selecting the rows; all rows when omitted.
            set: Required. The new values: column name -> SQL expression string or Column,
                evaluated on each row before the update. It has a default of None only so that
                it can follow `condition` by keyword in every language binding.

        Example:
            ```python
            from pyspark.sql import functions as F

            events.update("status = 'pending'", {"status": "'done'", "attempts": "attempts + 1"})
            events.update(F.col("id") == 7, set={"status": F.lit("cancelled")})
            ```
        """
        from pydelta.spark.dml.update import update

        _check_mapping(set, "'set'")
        _check_condition(condition)
        return update(self, condition, set)

    def updateExpr(self, condition: Any = None, set: Any = None) -> None:  # noqa: A002
        """The same as `update` (the name of delta-spark's Scala method for SQL-string values).

        Args:
            condition: A SQL expression string or a Column selecting the rows; all rows when omitted.
            set: Column name -> new value as a SQL expression string (or Column).

        Example:
            ```python
            events.updateExpr("id = 7", {"status": "'cancelled'"})
            ```
        """
        return self.update(condition, set)

    def merge(self, source: DataFrame, condition: Any) -> DeltaMergeBuilder:
        """Start a MERGE of a source DataFrame into this table.

        Add `whenMatched...`, `whenNotMatched...` and `whenNotMatchedBySource...` clauses
        to the returned builder, then call its `execute()`. A target row that an update or
        delete clause acts on must match only one source row.

        Args:
            source: The rows to merge in.
            condition: How a source row matches a target row: a SQL expression string or a
                Column, usually over the aliases of both sides.

        Returns:
            The merge builder (`pydelta.spark.dml.merge.DeltaMergeBuilder`).

        Raises:
            ValueError: `source` or `condition` is None.
            TypeError: `source` is not a DataFrame, or `condition` neither a string nor a Column.

        Example:
            ```python
            (events.alias("t")
                .merge(changes.alias("s"), "t.id = s.id")
                .whenMatchedDelete("s.deleted")
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute())
            ```
        """
        from pyspark.sql import DataFrame as SparkDataFrame

        from pydelta.spark.dml.merge import DeltaMergeBuilder

        if source is None:
            raise ValueError("'source' in merge cannot be None")
        if not isinstance(source, SparkDataFrame):
            raise TypeError("Type of 'source' in merge must be DataFrame.")
        if condition is None:
            raise ValueError("'condition' in merge cannot be None")
        _check_condition(condition)
        return DeltaMergeBuilder(self, source, condition)

    # ---- maintenance (pydelta.spark.maintenance) ------------------------------------------
    def vacuum(self, retentionHours: float | None = None) -> DataFrame:
        """Delete the files no version within the retention period needs any more.

        Files that the table's versions inside the retention period do not reference, and
        that are older than it, are deleted; time travel to versions before the period stops
        working. A period shorter than the table's `delta.deletedFileRetentionDuration`
        (7 days by default) is refused unless
        `spark.databricks.delta.retentionDurationCheck.enabled` is false.

        Args:
            retentionHours: The retention period in hours; the table's configured one when omitted.

        Returns:
            An empty DataFrame, as delta-spark's.

        Example:
            ```python
            events.vacuum()       # the table's retention period (7 days by default)
            events.vacuum(240)    # keep what the last 10 days of versions need
            ```
        """
        from pydelta.spark.maintenance.vacuum import vacuum

        return vacuum(self, retentionHours)

    def optimize(self) -> DeltaOptimizeBuilder:
        """Start an OPTIMIZE: compact small files, or Z-order the data by some columns.

        Returns:
            The optimize builder (`pydelta.spark.maintenance.optimize.DeltaOptimizeBuilder`):
            restrict it to some partitions with `where`, then run `executeCompaction()` or
            `executeZOrderBy(...)`.

        Example:
            ```python
            metrics = events.optimize().where("day = '2024-06-01'").executeCompaction()
            events.optimize().executeZOrderBy("user_id")
            ```
        """
        from pydelta.spark.maintenance.optimize import DeltaOptimizeBuilder

        return DeltaOptimizeBuilder(self)

    def restoreToVersion(self, version: int) -> DataFrame:
        """Make an earlier version the table's current state again, as a new commit.

        Args:
            version: The version to go back to.

        Returns:
            One row of restore metrics (`table_size_after_restore`,
            `num_of_files_after_restore`, `num_removed_files`, `num_restored_files`,
            `removed_files_size`, `restored_files_size`).

        Raises:
            ValueError: `version` is not an int.

        Example:
            ```python
            events.restoreToVersion(12)
            ```
        """
        from pydelta.spark.maintenance.restore import restore

        if not isinstance(version, int):
            raise ValueError(f"version needs to be an int but got '{type(version)}'.")
        return restore(self, version=version)

    def restoreToTimestamp(self, timestamp: str) -> DataFrame:
        """Make the version current at a point in time the table's current state again, as a new commit.

        Args:
            timestamp: A date (`yyyy-MM-dd`) or timestamp (`yyyy-MM-dd HH:mm:ss`), read in
                the session's time zone.

        Returns:
            One row of restore metrics, as `restoreToVersion` returns.

        Raises:
            ValueError: `timestamp` is not a string.

        Example:
            ```python
            events.restoreToTimestamp("2024-06-01 08:00:00")
            ```
        """
        from pydelta.spark.maintenance.restore import restore

        if not isinstance(timestamp, str):
            raise ValueError(f"timestamp needs to be a string but got '{type(timestamp)}'.")
        return restore(self, timestamp=timestamp)

    def upgradeTableProtocol(self, readerVersion: int, writerVersion: int) -> None:
        """Raise the table's minimum reader and writer protocol versions.

        Clients that implement only lower versions can no longer read (reader version) or
        write (writer version) the table. Versions never go down: a lower value than the
        current one leaves that side unchanged.

        Args:
            readerVersion: The reader version to require.
            writerVersion: The writer version to require.

        Raises:
            ValueError: A version is not an int.

        Example:
            ```python
            events.upgradeTableProtocol(1, 4)
            ```
        """
        from pydelta.spark.maintenance.protocol_ops import upgrade_table_protocol

        if not isinstance(readerVersion, int):
            raise ValueError(f"The readerVersion needs to be an integer but got '{type(readerVersion)}'.")
        if not isinstance(writerVersion, int):
            raise ValueError(f"The writerVersion needs to be an integer but got '{type(writerVersion)}'.")
        upgrade_table_protocol(self, readerVersion, writerVersion)

    def addFeatureSupport(self, featureName: str) -> None:
        """Add a table feature to the table's protocol.

        A table without table features moves to them: writer version 7 for a writer-only
        feature, reader 3 and writer 7 for a reader-writer feature.

        Args:
            featureName: The feature's name, e.g. `"deletionVectors"` or `"columnMapping"`.

        Raises:
            ValueError: `featureName` is not a string.

        Example:
            ```python
            events.addFeatureSupport("deletionVectors")
            ```
        """
        from pydelta.spark.maintenance.protocol_ops import add_feature_support

        if not isinstance(featureName, str):
            raise ValueError(f"featureName needs to be a string but got '{type(featureName)}'.")
        add_feature_support(self, featureName)

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        """Remove a table feature from the table's protocol.

        The feature's traces in the latest version (deletion vectors, a table property...)
        are removed first. The resulting protocol is normalized: when the remaining
        features are exactly those of a legacy protocol version, the table goes back to
        that version. A reader-writer feature is dropped at once by default, its older
        history kept behind protected checkpoints; the rules are in `pydelta.txn.drop_feature`.

        Args:
            featureName: The feature to drop.
            truncateHistory: Use delta-spark's older `TRUNCATE HISTORY` way instead: the first
                call removes the traces and fails asking to wait for the retention period, a
                later call truncates the log's history and drops the feature. Off when omitted.

        Raises:
            ValueError: `featureName` is not a string or `truncateHistory` not a bool.

        Example:
            ```python
            events.dropFeatureSupport("deletionVectors")
            ```
        """
        from pydelta.spark.maintenance.drop_feature import drop_feature_support

        if not isinstance(featureName, str):
            raise ValueError(f"featureName needs to be a string but got '{type(featureName)}'.")
        if truncateHistory is not None and not isinstance(truncateHistory, bool):
            raise ValueError(f"truncateHistory needs to be a boolean but got '{type(truncateHistory)}'.")
        drop_feature_support(self, featureName, bool(truncateHistory))

    def generate(self, mode: str) -> None:
        """Write manifest files of the table's data files for other engines.

        Args:
            mode: The kind of manifest; `"symlink_format_manifest"` (any case), the one
                delta-spark has, writes `_symlink_format_manifest/` for Presto, Trino and Athena.

        Example:
            ```python
            events.generate("symlink_format_manifest")
            ```
        """
        from pydelta.spark.maintenance.manifest import generate

        generate(self, mode)
