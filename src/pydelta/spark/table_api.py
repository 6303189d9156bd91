"""The delta-spark Python API (DeltaTable, DeltaTableBuilder) over pydelta's Spark wings, for a
session pydelta is already enabled on: the SQL statements use it as it is; `pydelta.tables`
adds enabling the session (its DeltaTable and DeltaTableBuilder are the public classes)."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any

from pydelta.errors import (
    DeltaAnalysisError,
    DeltaError,
    DeltaIllegalArgumentError,
    DeltaNotImplementedError,
    DeltaTableNotFoundError,
    TableAlreadyExistsError,
)
from pydelta.log.snapshot import Snapshot, load_snapshot
from pydelta.spark.spark_errors import boundary_class, cannot_replace_missing_table, not_a_delta_table
from pydelta.spark._typing import SparkSession


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


def _raise_type_error(msg: str, objs: Any) -> None:
    """delta-spark's DeltaTableBuilder._raise_type_error."""
    for obj in objs:
        msg += f" Found {obj} with type {type(obj)}"
    raise TypeError(msg)


@boundary_class
class DeltaTableApi:
    """A Delta table at a path, with the methods of delta-spark's `DeltaTable`."""

    _builder_class: type = None  # type: ignore[assignment] - TableBuilderApi, set below

    def __init__(self, spark: SparkSession, path: str, alias: str | None = None) -> None:
        self._spark = spark
        self._path = path
        self._alias = alias
        self._snapshot: Snapshot | None = None

    # ---- construction --------------------------------------------------------------
    @classmethod
    def forPath(cls, sparkSession: SparkSession, path: str, hadoopConf: dict[str, str] | None = None) -> "DeltaTableApi":
        bad = {k: v for k, v in (hadoopConf or {}).items() if not k.startswith(("fs.", "dfs."))}
        if bad:
            raise DeltaIllegalArgumentError(
                "[DELTA_TABLE_FOR_PATH_UNSUPPORTED_HADOOP_CONF] Currently DeltaTable.forPath only supports hadoop "
                "configuration keys starting with [fs.,dfs.] but got " + ",".join(f"{k} -> {v}" for k, v in bad.items()))
        table = cls(sparkSession, path)
        try:
            table.snapshot()  # fails now, as delta-spark does, when there is no table
        except DeltaTableNotFoundError:
            raise not_a_delta_table(path) from None
        return table

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str) -> "DeltaTableApi":
        from pydelta.spark.catalog import delta_table_location

        location = delta_table_location(sparkSession, tableOrViewName)
        if location is None:
            parts = [p.strip("`").replace("`", "``") for p in re.findall(r"`[^`]*`|[^.]+", tableOrViewName)]
            shown = ".".join(f"`{p}`" for p in parts[-2:])  # DeltaTableIdentifier.quotedString
            raise DeltaTableNotFoundError(f"[DELTA_MISSING_DELTA_TABLE] {shown} is not a Delta table.")
        return cls.forPath(sparkSession, location)

    @classmethod
    def isDeltaTable(cls, sparkSession: SparkSession, identifier: str) -> bool:
        log_dir = os.path.join(identifier, "_delta_log")
        if not os.path.isdir(log_dir):
            return False
        try:
            load_snapshot(identifier, check_protocol=False)
            return True
        except DeltaTableNotFoundError:
            return False
        except DeltaError:
            return True  # it is a Delta table, even if pydelta cannot read it

    @classmethod
    def create(cls, sparkSession: SparkSession = None) -> "TableBuilderApi":
        return cls._builder_class(_session(sparkSession), "create")

    @classmethod
    def createIfNotExists(cls, sparkSession: SparkSession = None) -> "TableBuilderApi":
        return cls._builder_class(_session(sparkSession), "createIfNotExists")

    @classmethod
    def replace(cls, sparkSession: SparkSession = None) -> "TableBuilderApi":
        return cls._builder_class(_session(sparkSession), "replace")

    @classmethod
    def createOrReplace(cls, sparkSession: SparkSession = None) -> "TableBuilderApi":
        return cls._builder_class(_session(sparkSession), "createOrReplace")

    # ---- state -----------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._path

    def snapshot(self) -> Snapshot:
        """The latest snapshot, updated incrementally on each call."""
        if self._snapshot is None:
            self._snapshot = load_snapshot(self._path)
        else:
            self._snapshot = self._snapshot.update()
        return self._snapshot

    def toDF(self) -> Any:
        from pydelta.spark.read.scan import read_snapshot

        df = read_snapshot(self._spark, self.snapshot())
        return df.alias(self._alias) if self._alias else df

    def alias(self, aliasName: str) -> "DeltaTableApi":
        table = type(self)(self._spark, self._path, aliasName)
        table._snapshot = self._snapshot
        return table

    def history(self, limit: int | None = None) -> Any:
        from pydelta.spark.read.table_info import history_dataframe

        return history_dataframe(self._spark, self.snapshot(), limit)

    def detail(self) -> Any:
        from pydelta.spark.read.table_info import detail_dataframe

        return detail_dataframe(self._spark, self.snapshot())

    # ---- DML (pydelta.spark.dml) ---------------------------------------------------------
    def delete(self, condition: Any = None) -> Any:
        from pydelta.spark.dml.delete import delete

        _check_condition(condition)
        return delete(self, condition)

    def update(self, condition: Any = None, set: Any = None) -> Any:  # noqa: A002
        from pydelta.spark.dml.update import update

        _check_mapping(set, "'set'")
        _check_condition(condition)
        return update(self, condition, set)

    def updateExpr(self, condition: Any = None, set: Any = None) -> Any:  # noqa: A002
        return self.update(condition, set)

    def merge(self, source: Any, condition: Any) -> Any:
        from pyspark.sql import DataFrame

        from pydelta.spark.dml.merge import DeltaMergeBuilder

        if source is None:
            raise ValueError("'source' in merge cannot be None")
        if not isinstance(source, DataFrame):
            raise TypeError("Type of 'source' in merge must be DataFrame.")
        if condition is None:
            raise ValueError("'condition' in merge cannot be None")
        _check_condition(condition)
        return DeltaMergeBuilder(self, source, condition)

    # ---- maintenance (pydelta.spark.maintenance) ------------------------------------------
    def vacuum(self, retentionHours: float | None = None) -> Any:
        from pydelta.spark.maintenance.vacuum import vacuum

        return vacuum(self, retentionHours)

    def optimize(self) -> Any:
        from pydelta.spark.maintenance.optimize import DeltaOptimizeBuilder

        return DeltaOptimizeBuilder(self)

    def restoreToVersion(self, version: int) -> Any:
        from pydelta.spark.maintenance.restore import restore

        if not isinstance(version, int):
            raise ValueError(f"version needs to be an int but got '{type(version)}'.")
        return restore(self, version=version)

    def restoreToTimestamp(self, timestamp: str) -> Any:
        from pydelta.spark.maintenance.restore import restore

        if not isinstance(timestamp, str):
            raise ValueError(f"timestamp needs to be a string but got '{type(timestamp)}'.")
        return restore(self, timestamp=timestamp)

    def upgradeTableProtocol(self, readerVersion: int, writerVersion: int) -> None:
        from pydelta.spark.maintenance.protocol_ops import upgrade_table_protocol

        if not isinstance(readerVersion, int):
            raise ValueError(f"The readerVersion needs to be an integer but got '{type(readerVersion)}'.")
        if not isinstance(writerVersion, int):
            raise ValueError(f"The writerVersion needs to be an integer but got '{type(writerVersion)}'.")
        upgrade_table_protocol(self, readerVersion, writerVersion)

    def addFeatureSupport(self, featureName: str) -> None:
        from pydelta.spark.maintenance.protocol_ops import add_feature_support

        if not isinstance(featureName, str):
            raise ValueError(f"featureName needs to be a string but got '{type(featureName)}'.")
        add_feature_support(self, featureName)

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        """Drop a table feature from the protocol (pydelta.txn.drop_feature has the rules)."""
        from pydelta.spark.maintenance.drop_feature import drop_feature_support

        if not isinstance(featureName, str):
            raise ValueError(f"featureName needs to be a string but got '{type(featureName)}'.")
        if truncateHistory is not None and not isinstance(truncateHistory, bool):
            raise ValueError(f"truncateHistory needs to be a boolean but got '{type(truncateHistory)}'.")
        drop_feature_support(self, featureName, bool(truncateHistory))

    def generate(self, mode: str) -> None:
        from pydelta.spark.maintenance.manifest import generate

        generate(self, mode)

    # ---- clones (pydelta.txn.clone) -----------------------------------------------------
    def clone(self, target: str, isShallow: bool = False, replace: bool = False,
              properties: dict[str, str] | None = None) -> "DeltaTableApi":
        """Clone the latest version to `target` (a path or a catalog name)."""
        _check_clone_args(target, isShallow, replace, properties)
        return self._clone(self.snapshot(), target, isShallow, replace, properties)

    def cloneAtVersion(self, version: int, target: str, isShallow: bool = False, replace: bool = False,
                       properties: dict[str, str] | None = None) -> "DeltaTableApi":
        if not isinstance(version, int) or isinstance(version, bool):
            raise ValueError(f"version needs to be an int but got '{type(version)}'.")
        _check_clone_args(target, isShallow, replace, properties)
        return self._clone(load_snapshot(self._path, version=version), target, isShallow, replace, properties)

    def cloneAtTimestamp(self, timestamp: str, target: str, isShallow: bool = False, replace: bool = False,
                         properties: dict[str, str] | None = None) -> "DeltaTableApi":
        if not isinstance(timestamp, str):
            raise ValueError(f"timestamp needs to be a string but got '{type(timestamp)}'.")
        _check_clone_args(target, isShallow, replace, properties)
        from pydelta.spark.maintenance.restore import _parse_timestamp

        ms = int(_parse_timestamp(self._spark, timestamp).timestamp() * 1000)
        return self._clone(load_snapshot(self._path, timestamp=ms), target, isShallow, replace, properties)

    def _clone(self, source: Snapshot, target: str, shallow: bool, replace: bool,
               properties: dict[str, str] | None) -> "DeltaTableApi":
        from pydelta.spark.catalog import default_location, delta_table_location, register_table
        from pydelta.spark.transactions import engine_info
        from pydelta.txn.clone import clone_table

        is_path = "/" in target or target.startswith("file:")
        location = target if is_path else (delta_table_location(self._spark, target)
                                           or default_location(self._spark, target))
        clone_table(source, location, shallow=shallow, replace_existing=replace, properties=properties,
                    engine_info=engine_info(self._spark))
        if not is_path and delta_table_location(self._spark, target) is None:
            register_table(self._spark, target, location, self._spark.read.format("delta").load(location).schema)
        return type(self)(self._spark, location)

    @classmethod
    def convertToDelta(cls, sparkSession: SparkSession, identifier: str, partitionSchema: Any = None) -> "DeltaTableApi":
        from pydelta.spark.maintenance.convert import convert_to_delta

        converted = convert_to_delta(sparkSession, identifier, partitionSchema)
        if converted.name is not None:
            return cls.forName(sparkSession, converted.name)
        return cls.forPath(sparkSession, converted.path)


def _session(spark: SparkSession) -> Any:
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is None:
        raise DeltaIllegalArgumentError("no active SparkSession: pass one to the builder")
    return active


@dataclass
class IdentityGenerator:
    """delta-spark's identity column specification (start, step) for DeltaTableBuilder.addColumn."""

    start: int = 1
    step: int = 1


@boundary_class
class TableBuilderApi:
    """delta-spark's DeltaTableBuilder: create / replace a table from a schema."""

    _table_class: type = DeltaTableApi

    def __init__(self, spark: SparkSession, kind: str) -> None:
        self._spark = spark
        self._kind = kind
        self._name: str | None = None
        self._location: str | None = None
        self._comment: str | None = None
        self._columns: list[Any] = []
        self._partitioned_by: list[str] = []
        self._cluster_by: list[str] | None = None
        self._properties: dict[str, str] = {}

    def tableName(self, identifier: str) -> "TableBuilderApi":
        if type(identifier) is not str:
            _raise_type_error("Identifier must be str.", [identifier])
        self._name = identifier
        return self

    def location(self, location: str) -> "TableBuilderApi":
        if type(location) is not str:
            _raise_type_error("Location must be str.", [location])
        self._location = location
        return self

    def comment(self, comment: str) -> "TableBuilderApi":
        if type(comment) is not str:
            _raise_type_error("Table comment must be str.", [comment])
        self._comment = comment
        return self

    def addColumn(
        self,
        colName: str,
        dataType: Any,
        nullable: bool = True,
        generatedAlwaysAs: "str | IdentityGenerator | None" = None,
        generatedByDefaultAs: "IdentityGenerator | None" = None,
        comment: str | None = None,
    ) -> "TableBuilderApi":
        from pyspark.sql.types import DataType, StructField, _parse_datatype_string

        if type(colName) is not str:
            _raise_type_error("Column name must be str.", [colName])
        if type(dataType) is not str and not isinstance(dataType, DataType):
            _raise_type_error("Column data type must be str or DataType.", [dataType])
        if type(nullable) is not bool:
            _raise_type_error("Column nullable must be bool.", [nullable])
        if generatedAlwaysAs is not None and generatedByDefaultAs is not None:
            raise ValueError("generatedByDefaultAs and generatedAlwaysAs cannot both be set.",
                             [generatedByDefaultAs, generatedAlwaysAs])
        identity = None
        if generatedAlwaysAs is not None:
            if isinstance(generatedAlwaysAs, IdentityGenerator):
                identity = generatedAlwaysAs
            elif type(generatedAlwaysAs) is not str:
                _raise_type_error("Generated always as expression must be str or IdentityGenerator.", [generatedAlwaysAs])
        elif generatedByDefaultAs is not None:
            if not isinstance(generatedByDefaultAs, IdentityGenerator):
                _raise_type_error("Generated by default expression must be IdentityGenerator.", [generatedByDefaultAs])
            identity = generatedByDefaultAs
        if identity is not None and identity.step == 0:
            raise ValueError("Column identity generation requires step to be non-zero.")
        if comment is not None and type(comment) is not str:
            _raise_type_error("Column comment must be str.", [comment])
        if isinstance(dataType, str):
            dataType = _parse_datatype_string(dataType)
        if not isinstance(dataType, DataType):
            raise DeltaIllegalArgumentError(f"addColumn: dataType must be a DataType or a DDL string, got {dataType!r}")
        if identity is not None and dataType.typeName() != "long":  # DeltaColumnBuilder.build
            json_name = dataType.jsonValue()
            type_name = json_name if isinstance(json_name, str) else dataType.typeName()
            raise DeltaNotImplementedError(f"[DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE] DataType {type_name} "
                                           "is not supported for IDENTITY columns.")
        metadata: dict[str, Any] = {}
        if identity is not None:
            from pydelta.protocol.identity import column_metadata

            metadata.update(column_metadata(identity.start, identity.step, generatedByDefaultAs is not None))
        elif generatedAlwaysAs is not None:
            metadata["delta.generationExpression"] = generatedAlwaysAs
        if comment is not None:
            metadata["comment"] = comment
        self._columns.append(StructField(colName, dataType, nullable, metadata))
        return self

    def addColumns(self, cols: Any) -> "TableBuilderApi":
        from pyspark.sql.types import StructField, StructType

        if isinstance(cols, list):
            for col in cols:
                if type(col) is not StructField:
                    _raise_type_error("Column in existing schema must be StructField.", [col])
            cols = StructType(cols)
        if type(cols) is not StructType:
            _raise_type_error("Schema must be StructType or a list of StructField.", [cols])
        self._columns.extend(cols.fields)
        return self

    def partitionedBy(self, *cols: str) -> "TableBuilderApi":
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        for c in cols:
            if type(c) is not str:
                _raise_type_error("Partitioning column must be str.", [c])
        self._partitioned_by = list(cols)
        return self

    def clusterBy(self, *cols: str) -> "TableBuilderApi":
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        for c in cols:
            if type(c) is not str:
                _raise_type_error("Clustering column must be str.", [c])
        self._cluster_by = list(cols)
        return self

    def property(self, key: str, value: str) -> "TableBuilderApi":
        if type(key) is not str or type(value) is not str:
            _raise_type_error("Key and value of property must be string.", [key, value])
        self._properties[key] = value
        return self

    def _name_existing(self, snapshot: Snapshot) -> DeltaTableApi:
        """CREATE TABLE name ... LOCATION of an existing Delta table: no commit; the definition given
        must match the table's (delta-spark's verifyTableMetadata), then the name is recorded."""
        from pyspark.sql.types import StructType as SparkStructType

        from pydelta.protocol.schema import parse_schema
        from pydelta.spark.catalog import register_table
        from pydelta.spark.ddl.existing_table import verify_definition
        from pydelta.spark.read.scan import spark_schema
        from pydelta.spark.write.options import checked_table_properties

        specified = parse_schema(SparkStructType(self._columns).json())
        verify_definition(self._spark, snapshot, schema=specified, partition_by=self._partitioned_by,
                          cluster_by=self._cluster_by, properties=checked_table_properties(self._spark, self._properties))
        register_table(self._spark, self._name, snapshot.table_root, spark_schema(snapshot.schema),  # type: ignore[arg-type]
                       self._comment if self._comment is not None else snapshot.metadata.description)
        return self._table_class.forPath(self._spark, snapshot.table_root)

    def execute(self) -> DeltaTableApi:
        from pyspark.sql.types import StructType as SparkStructType

        from pydelta.protocol.schema import parse_schema
        from pydelta.spark.catalog import lookup, register_table, table_location, unregister_table
        from pydelta.spark.write.data_files import file_rows_to_adds, remove_action
        from pydelta.spark.transactions import engine_info, try_load
        from pydelta.spark.write.dataframe import define_clustering, new_table_metadata
        from pydelta.spark.write.options import checked_table_properties, session_conf, with_table_defaults
        from pydelta.txn.commit_info import Operation
        from pydelta.txn.transaction import OptimisticTransaction

        if self._location is None and self._name is None:
            raise DeltaAnalysisError("[DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION] "
                                     "Table name or location has to be specified.")
        if not self._columns:
            raise DeltaAnalysisError("the table needs at least one column (addColumn / addColumns)")
        path = self._location or table_location(self._spark, self._name)  # type: ignore[arg-type]
        if self._name is not None and self._location is not None:
            entry = lookup(self._spark, self._name)
            if entry is not None and entry.location and os.path.normpath(entry.location) != os.path.normpath(os.path.abspath(path)):
                raise DeltaAnalysisError(
                    f"table {self._name} already exists at {entry.location}, not at the given location {path}"
                )
        snapshot = try_load(path)
        if snapshot is not None and self._kind in ("create", "createIfNotExists"):
            if self._name is not None and self._location is not None and lookup(self._spark, self._name) is None:
                return self._name_existing(snapshot)
            if self._kind == "createIfNotExists":
                return self._table_class.forPath(self._spark, path)
            if self._name is not None:
                raise TableAlreadyExistsError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] Table {self._name} already exists")
            raise TableAlreadyExistsError(f"[DELTA_TABLE_ALREADY_EXISTS] Table delta.`{path}` already exists.")
        if snapshot is None and self._kind == "replace":
            raise cannot_replace_missing_table(self._spark, self._name, self._location)
        schema = parse_schema(SparkStructType(self._columns).json())
        # create and replace both make a new table: the session's table defaults apply (delta-spark).
        properties = with_table_defaults(checked_table_properties(self._spark, self._properties),
                                         session_conf(self._spark))
        cluster_by = self._cluster_by
        if cluster_by is not None:
            from pydelta.protocol import clustering

            properties = {**properties, clustering.FEATURE_PROPERTY: "supported"}
        metadata = new_table_metadata(schema, self._partitioned_by, properties, description=self._comment)
        txn = OptimisticTransaction(path, snapshot, engine_info=engine_info(self._spark))
        txn.update_metadata(metadata)
        define_clustering(txn, snapshot, cluster_by)
        actions = []
        if snapshot is not None:
            txn.read_whole_table()
            now = int(time.time() * 1000)
            actions = [{"remove": remove_action(a, timestamp_ms=now)} for a in file_rows_to_adds(snapshot.files())]
        name = {"create": "CREATE TABLE", "createIfNotExists": "CREATE TABLE", "replace": "REPLACE TABLE",
                "createOrReplace": "CREATE OR REPLACE TABLE" if snapshot is not None else "CREATE TABLE"}[self._kind]
        operation = Operation.table_definition(name, is_managed=not self._location, description=self._comment,
                                               partition_by=metadata.partition_columns, properties=self._properties,
                                               cluster_by=cluster_by)
        registered = False
        if self._name is not None:  # the name resolves from now on: Spark's catalog records it
            registered = register_table(self._spark, self._name, path, SparkStructType(self._columns), self._comment)
        try:
            txn.commit(actions, operation)
        except BaseException:
            if registered:
                unregister_table(self._spark, self._name)
            raise
        return self._table_class.forPath(self._spark, path)


DeltaTableApi._builder_class = TableBuilderApi
