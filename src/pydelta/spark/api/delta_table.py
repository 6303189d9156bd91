"""The delta-spark Python API (DeltaTable, DeltaTableBuilder) over pydelta's Spark wings, for a
session pydelta is already enabled on: the SQL statements use it as it is; `pydelta.tables`
adds enabling the session (its DeltaTable and DeltaTableBuilder are the public classes).

`DeltaTableApi` is the class side of DeltaTable (opening, creating, converting and cloning
tables) over `table_operations.DeltaTableOperations` (what a table at a path can do);
`TableBuilderApi` is `execute()` over `table_definition.TableDefinition` (the builder's setters).
"""

from __future__ import annotations

import os
import re
from typing import Any, Self

from pydelta.errors import (
    DeltaError,
    DeltaIllegalArgumentError,
    DeltaTableNotFoundError,
)
from pydelta.log.snapshot import Snapshot
from pydelta.spark.api.table_operations import DeltaTableOperations
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.engine import SparkEngine
from pydelta.spark.base.spark_errors import boundary_class, not_a_delta_table
from pydelta.spark.ddl.table_definition import IdentityGenerator, TableDefinition

__all__ = ["DeltaTableApi", "IdentityGenerator", "TableBuilderApi"]


def _check_clone_args(target: Any, is_shallow: Any, replace: Any, properties: Any) -> None:
    """delta-spark's _verify_clone_types."""
    for value, name, kind, label in ((target, "target", str, "a string"), (is_shallow, "isShallow", bool, "a boolean"),
                                     (replace, "replace", bool, "a boolean")):
        if not isinstance(value, kind):
            raise ValueError(f"{name} needs to be {label} but got '{type(value)}'.")
    if properties is not None:
        if not isinstance(properties, dict):
            raise ValueError(f"properties needs to be a dict but got '{type(properties)}'.")
        for key, value in properties.items():
            if not isinstance(key, str):
                raise ValueError(f"All property keys including {key} needs to be a string but got '{type(key)}'.")
            if not isinstance(value, str):
                raise ValueError(
                    f"All property values including {value} needs to be a string but got '{type(value)}'.")


@boundary_class
class DeltaTableApi(DeltaTableOperations):
    """A Delta table at a path, with the methods of delta-spark's `DeltaTable`.

    `pydelta.tables.DeltaTable` is the public class: it enables pydelta on the session first.
    """

    _builder_class: type[TableBuilderApi]  # set below the builder's definition

    # ---- construction --------------------------------------------------------------
    @classmethod
    def forPath(cls, sparkSession: SparkSession, path: str, hadoopConf: dict[str, str] | None = None) -> Self:
        """Open the Delta table stored at a path.

        The table must exist: a path holding no Delta table raises delta-spark's
        "not a Delta table" error.

        `hadoopConf` holds Hadoop file system options for this table only, as in
        delta-spark: the table's log is read and committed with them when it goes through
        Spark's Hadoop FileSystem (`hdfs://`, `viewfs://` and the other Hadoop-only schemes),
        and with their S3A settings translated (`fs.s3a.endpoint`, `fs.s3a.access.key`...,
        per-bucket `fs.s3a.bucket.<bucket>.*` too) for an `s3a://` table; an `fs.defaultFS`
        among them resolves a path given without a scheme, and every operation of the
        returned object (and the scans of `toDF()`) runs with them set on the session, so
        Spark's reads and writes of the data files see them. Options for a file system whose
        log pydelta reaches without Hadoop and without them (`fs.file.*` for a local table,
        `fs.gs.*` for a `gs://` table, `fs.azure.*`...) raise `DeltaNotImplementedError`,
        since they could not apply to the log.

        Args:
            sparkSession: The session to run the table's operations in.
            path: Where the table is: a local path, a `file:` URI or a storage URI
                (`s3a://bucket/t`, `hdfs://nn/t`, ...).
            hadoopConf: Hadoop options for this table's file system access; keys must
                start with `fs.` or `dfs.`.

        Returns:
            The table, bound to `sparkSession`.

        Raises:
            DeltaIllegalArgumentError: A `hadoopConf` key starts with neither `fs.` nor `dfs.`.
            DeltaNotImplementedError: A `hadoopConf` key configures a file system pydelta's log
                does not reach through Hadoop.

        Example:
            ```python
            events = DeltaTable.forPath(spark, "/data/events")
            mounted = DeltaTable.forPath(spark, "viewfs://cluster/events",
                                         hadoopConf={"fs.viewfs.mounttable.cluster.link./events":
                                                     "hdfs://nn1/warehouse/events"})
            ```
        """
        bad = {k: v for k, v in (hadoopConf or {}).items() if not k.startswith(("fs.", "dfs."))}
        if bad:
            raise DeltaIllegalArgumentError(
                "[DELTA_TABLE_FOR_PATH_UNSUPPORTED_HADOOP_CONF] Currently DeltaTable.forPath only supports hadoop "
                "configuration keys starting with [fs.,dfs.] but got "
                + ",".join(f"{k} -> {v}" for k, v in bad.items()))
        table = cls(sparkSession, path, None, hadoopConf)
        try:
            table.snapshot()  # fails now, as delta-spark does, when there is no table
        except DeltaTableNotFoundError:
            raise not_a_delta_table(path) from None
        return table

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str) -> Self:
        """Open the Delta table registered in the session's catalog under a name.

        Args:
            sparkSession: The session whose catalog resolves the name.
            tableOrViewName: A table name, optionally qualified by its database (`db.events`).

        Returns:
            The table at the name's location.

        Raises:
            DeltaTableNotFoundError: The name resolves to nothing, to a view, or to a table
                that is not a Delta table.

        Example:
            ```python
            events = DeltaTable.forName(spark, "analytics.events")
            ```
        """
        from pydelta.spark.base.catalog import delta_table_location

        location = delta_table_location(sparkSession, tableOrViewName)
        if location is None:
            parts = [p.strip("`").replace("`", "``") for p in re.findall(r"`[^`]*`|[^.]+", tableOrViewName)]
            shown = ".".join(f"`{p}`" for p in parts[-2:])  # DeltaTableIdentifier.quotedString
            raise DeltaTableNotFoundError(f"[DELTA_MISSING_DELTA_TABLE] {shown} is not a Delta table.")
        return cls.forPath(sparkSession, location)

    @classmethod
    def isDeltaTable(cls, sparkSession: SparkSession, identifier: str) -> bool:
        """Tell whether a directory is the root of a Delta table.

        A directory with a `_delta_log` that pydelta cannot fully read (an unsupported
        protocol, say) still counts as a Delta table.

        Args:
            sparkSession: The session (kept for delta-spark's signature).
            identifier: The directory to check.

        Returns:
            True when `identifier` holds a Delta table.

        Example:
            ```python
            if not DeltaTable.isDeltaTable(spark, "/data/events"):
                df.write.format("delta").save("/data/events")
            ```
        """
        log_dir = os.path.join(identifier, "_delta_log")
        if not os.path.isdir(log_dir):
            return False
        try:
            SparkEngine(sparkSession).load_snapshot(identifier, check_protocol=False)
            return True
        except DeltaTableNotFoundError:
            return False
        except DeltaError:
            return True  # it is a Delta table, even if pydelta cannot read it

    @classmethod
    def create(cls, sparkSession: SparkSession | None = None) -> TableBuilderApi:
        """Start defining a new table; `execute()` fails if the table already exists (SQL `CREATE TABLE`).

        Args:
            sparkSession: The session to create the table in; the active session when omitted.

        Returns:
            A builder: give it a name and/or location and columns, then call `execute()`.

        Example:
            ```python
            (DeltaTable.create(spark)
                .tableName("events")
                .addColumn("id", "BIGINT", nullable=False)
                .addColumn("day", "DATE")
                .partitionedBy("day")
                .execute())
            ```
        """
        return cls._builder_class(_session(sparkSession), "create")

    @classmethod
    def createIfNotExists(cls, sparkSession: SparkSession | None = None) -> TableBuilderApi:
        """Start defining a table that is created only when absent (SQL `CREATE TABLE IF NOT EXISTS`).

        When the table exists, `execute()` leaves it as it is and returns it.

        Args:
            sparkSession: The session to create the table in; the active session when omitted.

        Returns:
            A builder: give it a name and/or location and columns, then call `execute()`.

        Example:
            ```python
            events = (DeltaTable.createIfNotExists(spark)
                      .location("/data/events")
                      .addColumn("id", "BIGINT")
                      .execute())
            ```
        """
        return cls._builder_class(_session(sparkSession), "createIfNotExists")

    @classmethod
    def replace(cls, sparkSession: SparkSession | None = None) -> TableBuilderApi:
        """Start redefining an existing table (SQL `REPLACE TABLE`); `execute()` fails if there is none.

        The replacement is a new commit of the same table: its schema, partitioning and
        properties are the builder's, its previous data files are removed, and its history
        (time travel to earlier versions) remains.

        Args:
            sparkSession: The session to use; the active session when omitted.

        Returns:
            A builder: name the table and give its new columns, then call `execute()`.

        Example:
            ```python
            DeltaTable.replace(spark).tableName("events").addColumn("id", "BIGINT").execute()
            ```
        """
        return cls._builder_class(_session(sparkSession), "replace")

    @classmethod
    def createOrReplace(cls, sparkSession: SparkSession | None = None) -> TableBuilderApi:
        """Start defining a table that is created, or replaced when it exists (SQL `CREATE OR REPLACE TABLE`).

        Args:
            sparkSession: The session to use; the active session when omitted.

        Returns:
            A builder: name or locate the table and give its columns, then call `execute()`.

        Example:
            ```python
            (DeltaTable.createOrReplace(spark)
                .tableName("daily_totals")
                .addColumn("day", "DATE")
                .addColumn("total", "DOUBLE")
                .execute())
            ```
        """
        return cls._builder_class(_session(sparkSession), "createOrReplace")

    # ---- clones (pydelta.txn.clone) -----------------------------------------------------
    def clone(self, target: str, isShallow: bool = False, replace: bool = False,
              properties: dict[str, str] | None = None) -> DeltaTableApi:
        """Copy the table's latest version to a new table.

        A deep clone copies the data files; a shallow clone refers to the source's files
        where they are.

        Args:
            target: The new table: a path, or a name in the session's catalog.
            isShallow: Make a shallow clone instead of a deep one.
            replace: Replace a table already at `target` instead of failing.
            properties: Table properties to set on the clone, over the source's.

        Returns:
            The cloned table.

        Raises:
            ValueError: An argument has the wrong type.

        Example:
            ```python
            backup = events.clone("/backups/events", isShallow=False, replace=True)
            ```
        """
        _check_clone_args(target, isShallow, replace, properties)
        return self._clone(self.snapshot(), target, isShallow, replace, properties)

    def cloneAtVersion(self, version: int, target: str, isShallow: bool = False, replace: bool = False,
                       properties: dict[str, str] | None = None) -> DeltaTableApi:
        """Copy one version of the table to a new table.

        Args:
            version: The version to clone.
            target: The new table: a path, or a name in the session's catalog.
            isShallow: Make a shallow clone instead of a deep one.
            replace: Replace a table already at `target` instead of failing.
            properties: Table properties to set on the clone, over the source's.

        Returns:
            The cloned table.

        Raises:
            ValueError: An argument has the wrong type.

        Example:
            ```python
            events.cloneAtVersion(3, "events_v3", isShallow=True)
            ```
        """
        if not isinstance(version, int) or isinstance(version, bool):
            raise ValueError(f"version needs to be an int but got '{type(version)}'.")
        _check_clone_args(target, isShallow, replace, properties)
        source = self._engine.load_snapshot(self._path, version=version)
        return self._clone(source, target, isShallow, replace, properties)

    def cloneAtTimestamp(self, timestamp: str, target: str, isShallow: bool = False, replace: bool = False,
                         properties: dict[str, str] | None = None) -> DeltaTableApi:
        """Copy the version of the table current at a point in time to a new table.

        Args:
            timestamp: A date or timestamp string, read in the session's time zone.
            target: The new table: a path, or a name in the session's catalog.
            isShallow: Make a shallow clone instead of a deep one.
            replace: Replace a table already at `target` instead of failing.
            properties: Table properties to set on the clone, over the source's.

        Returns:
            The cloned table.

        Raises:
            ValueError: An argument has the wrong type.

        Example:
            ```python
            events.cloneAtTimestamp("2024-06-01", "/tmp/events_june", isShallow=True)
            ```
        """
        if not isinstance(timestamp, str):
            raise ValueError(f"timestamp needs to be a string but got '{type(timestamp)}'.")
        _check_clone_args(target, isShallow, replace, properties)
        from pydelta.spark.read.time_travel import parse_timestamp

        ms = int(parse_timestamp(self._spark, timestamp).timestamp() * 1000)
        source = self._engine.load_snapshot(self._path, timestamp=ms)
        return self._clone(source, target, isShallow, replace, properties)

    def _clone(self, source: Snapshot, target: str, shallow: bool, replace: bool,
               properties: dict[str, str] | None) -> DeltaTableApi:
        from pydelta.spark.base.catalog import default_location, delta_table_location, registered_while_created
        from pydelta.spark.base.transactions import engine_info
        from pydelta.spark.read.scan import reader_schema
        from pydelta.txn.clone import clone_table

        is_path = "/" in target or target.startswith("file:")
        existing = None if is_path else delta_table_location(self._spark, target)
        location = target if is_path else (existing or default_location(self._spark, target))
        new_name = None if is_path or existing is not None else target
        with registered_while_created(self._spark, new_name, location, reader_schema(source.schema)):
            clone_table(source, location, shallow=shallow, replace_existing=replace, properties=properties,
                        engine_info=engine_info(self._spark))
        return type(self)(self._spark, location)

    @classmethod
    def convertToDelta(cls, sparkSession: SparkSession, identifier: str, partitionSchema: Any = None) -> Self:
        """Turn a directory of Parquet files into a Delta table, in place.

        The files stay where they are; a Delta log listing them is written next to them.
        Stop other writers of the directory while it runs.

        Args:
            sparkSession: The session to run the conversion in.
            identifier: ``parquet.`/path/to/dir` ``, or the name of a Parquet table in the catalog.
            partitionSchema: The partition columns of a `col=value/` directory layout, as a
                DDL string (`"day DATE, region STRING"`) or a StructType.

        Returns:
            The converted table.

        Example:
            ```python
            logs = DeltaTable.convertToDelta(spark, "parquet.`/data/logs`", "day DATE")
            ```
        """
        from pydelta.spark.maintenance.convert import convert_to_delta

        converted = convert_to_delta(sparkSession, identifier, partitionSchema)
        if converted.name is not None:
            return cls.forName(sparkSession, converted.name)
        return cls.forPath(sparkSession, converted.path)


def _session(spark: SparkSession | None) -> SparkSession:
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession as PySparkSession

    active = PySparkSession.getActiveSession()
    if active is None:
        raise DeltaIllegalArgumentError("no active SparkSession: pass one to the builder")
    return active


@boundary_class
class TableBuilderApi(TableDefinition):
    """delta-spark's DeltaTableBuilder: define a table, then create or replace it with `execute()`.

    `pydelta.tables.DeltaTableBuilder` is the public class; get one from
    `DeltaTable.create`, `createIfNotExists`, `replace` or `createOrReplace`. Every method
    but `execute` returns the builder itself, so calls chain.
    """

    _table_class: type[DeltaTableApi] = DeltaTableApi

    def execute(self) -> DeltaTableApi:
        """Create or replace the table as defined, as one commit.

        Returns:
            The table.

        Raises:
            DeltaAnalysisError: Neither a name nor a location, or no column, was given.
            TableAlreadyExistsError: `create()` of a table that exists.

        Example:
            ```python
            events = (DeltaTable.createIfNotExists(spark)
                      .tableName("events")
                      .addColumn("id", "BIGINT")
                      .addColumn("payload", "STRING")
                      .property("delta.appendOnly", "true")
                      .execute())
            ```
        """
        from pydelta.spark.ddl.table_definition import create_table

        return self._table_class.forPath(self._spark, create_table(self))


DeltaTableApi._builder_class = TableBuilderApi
