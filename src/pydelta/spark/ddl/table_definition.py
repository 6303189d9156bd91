"""The definition half of delta-spark's DeltaTableBuilder: name, location, comment, columns,
partitioning or clustering and properties of a table to create or replace.

`TableDefinition.create()` creates or replaces the table so defined: SQL's CREATE TABLE runs it,
and `pydelta.spark.api.delta_table.TableBuilderApi.execute()` returns the table it made (and
`pydelta.tables.DeltaTableBuilder` enables the session first).
"""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass
from typing import Any, Self

from pydelta.errors import (
    DeltaAnalysisError,
    DeltaIllegalArgumentError,
    DeltaNotImplementedError,
    TableAlreadyExistsError,
)
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.action_types import Action, as_remove
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.engine import try_table_snapshot
from pydelta.spark.base.spark_errors import boundary_class, cannot_replace_missing_table
from pydelta.spark.base.unity_catalogs import unity_catalog_of
from pydelta.spark.ddl.unity_catalog_tables import create_in_unity_catalog
from pydelta.txn.commit_checks import replacing_metadata
from pydelta.txn.unity_catalog import UnityCatalog


def _column_names(cols: tuple[Any, ...], what: str) -> list[str]:
    """Column names given one by one or as one list; delta-spark's TypeError for anything else."""
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    for c in cols:
        if type(c) is not str:
            _raise_type_error(f"{what} column must be str.", [c])
    return list(cols)


def _raise_type_error(msg: str, objs: Any) -> None:
    """delta-spark's DeltaTableBuilder._raise_type_error."""
    for obj in objs:
        msg += f" Found {obj} with type {type(obj)}"
    raise TypeError(msg)



@dataclass
class IdentityGenerator:
    """An identity column's numbering for `DeltaTableBuilder.addColumn`.

    Pass it as `generatedAlwaysAs` (values always generated) or `generatedByDefaultAs`
    (generated unless a write supplies them). The column must be BIGINT.

    Attributes:
        start: The first value.
        step: The increment between values; not zero, negative to count down.

    Example:
        ```python
        builder.addColumn("id", "BIGINT", generatedAlwaysAs=IdentityGenerator(start=1000, step=1))
        ```
    """

    start: int = 1
    step: int = 1



@boundary_class
class TableDefinition:
    """What a table builder collects before `execute()`: each method checks its arguments as
    delta-spark does, records them, and returns the builder itself, so calls chain."""

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

    def tableName(self, identifier: str) -> Self:
        """Name the table in the session's catalog.

        Without a `location`, the table is a managed one in the warehouse directory.

        Args:
            identifier: The name, optionally qualified by its database (`db.events`).

        Returns:
            This builder.

        Raises:
            TypeError: `identifier` is not a string.

        Example:
            ```python
            DeltaTable.create(spark).tableName("analytics.events").addColumn("id", "BIGINT").execute()
            ```
        """
        if type(identifier) is not str:
            _raise_type_error("Identifier must be str.", [identifier])
        self._name = identifier
        return self

    def location(self, location: str) -> Self:
        """Store the table at a path (an external table when it also has a name).

        Args:
            location: The table's directory: a local path or a storage URI.

        Returns:
            This builder.

        Raises:
            TypeError: `location` is not a string.

        Example:
            ```python
            DeltaTable.create(spark).location("/data/events").addColumn("id", "BIGINT").execute()
            ```
        """
        if type(location) is not str:
            _raise_type_error("Location must be str.", [location])
        self._location = location
        return self

    def comment(self, comment: str) -> Self:
        """Describe the table (its metadata's description).

        Args:
            comment: The description.

        Returns:
            This builder.

        Raises:
            TypeError: `comment` is not a string.

        Example:
            ```python
            builder.comment("One row per click, deduplicated")
            ```
        """
        if type(comment) is not str:
            _raise_type_error("Table comment must be str.", [comment])
        self._comment = comment
        return self

    def addColumn(
        self,
        colName: str,
        dataType: Any,
        nullable: bool = True,
        generatedAlwaysAs: str | IdentityGenerator | None = None,
        generatedByDefaultAs: IdentityGenerator | None = None,
        comment: str | None = None,
    ) -> Self:
        """Add a column to the table's schema (columns keep the order they are added in).

        Args:
            colName: The column's name.
            dataType: Its type: a Spark `DataType` or a DDL type string (`"BIGINT"`,
                `"ARRAY<STRING>"`, `"DECIMAL(10,2)"`...).
            nullable: Whether the column may hold nulls.
            generatedAlwaysAs: A SQL expression over other columns that computes the
                column's value on every write (a generated column), or an
                `IdentityGenerator` for an identity column whose values are always generated.
            generatedByDefaultAs: An `IdentityGenerator` for an identity column whose values
                are generated unless a write gives them.
            comment: The column's description.

        Returns:
            This builder.

        Raises:
            TypeError: An argument has the wrong type.
            ValueError: Both `generatedAlwaysAs` and `generatedByDefaultAs` are given, or an
                identity step is zero.
            DeltaNotImplementedError: An identity column whose type is not BIGINT.

        Example:
            ```python
            (DeltaTable.create(spark).tableName("orders")
                .addColumn("id", "BIGINT", nullable=False, generatedAlwaysAs=IdentityGenerator())
                .addColumn("placed_at", "TIMESTAMP")
                .addColumn("day", "DATE", generatedAlwaysAs="CAST(placed_at AS DATE)")
                .addColumn("amount", "DECIMAL(10,2)", comment="in EUR")
                .execute())
            ```
        """
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
                _raise_type_error("Generated always as expression must be str or IdentityGenerator.",
                                  [generatedAlwaysAs])
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

    def _default_last_column(self, sql: str) -> None:
        """DEFAULT `sql` on the column added last: CREATE TABLE's column DEFAULT for the SQL fronts
        (delta-spark's builder has no such argument; the caller checks the expression)."""
        from pydelta.protocol.schema import CURRENT_DEFAULT_KEY

        self._columns[-1].metadata[CURRENT_DEFAULT_KEY] = sql

    def addColumns(self, cols: Any) -> Self:
        """Add several columns at once, e.g. the schema of an existing DataFrame.

        Args:
            cols: A Spark `StructType` or a list of `StructField`s.

        Returns:
            This builder.

        Raises:
            TypeError: `cols` is neither.

        Example:
            ```python
            DeltaTable.create(spark).location("/data/copy").addColumns(df.schema).execute()
            ```
        """
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

    def partitionedBy(self, *cols: str) -> Self:
        """Partition the table's files by some columns (replacing earlier partition columns).

        Args:
            *cols: The partition columns, as names or as one list of names.

        Returns:
            This builder.

        Raises:
            TypeError: A column is not given by its name.

        Example:
            ```python
            builder.partitionedBy("region", "day")
            ```
        """
        self._partitioned_by = _column_names(cols, "Partitioning")
        return self

    def clusterBy(self, *cols: str) -> Self:
        """Cluster the table's data by some columns (liquid clustering) instead of partitioning it.

        Args:
            *cols: The clustering columns, as names or as one list of names.

        Returns:
            This builder.

        Raises:
            TypeError: A column is not given by its name.

        Example:
            ```python
            builder.clusterBy("user_id", "day")
            ```
        """
        self._cluster_by = _column_names(cols, "Clustering")
        return self

    def property(self, key: str, value: str) -> Self:
        """Set a table property (`delta.*` properties configure Delta features).

        Args:
            key: The property's name, e.g. `"delta.enableChangeDataFeed"`.
            value: Its value, as a string.

        Returns:
            This builder.

        Raises:
            TypeError: `key` or `value` is not a string.

        Example:
            ```python
            builder.property("delta.enableDeletionVectors", "true")
            ```
        """
        if type(key) is not str or type(value) is not str:
            _raise_type_error("Key and value of property must be string.", [key, value])
        self._properties[key] = value
        return self


def _name_existing(definition: TableDefinition, snapshot: Snapshot, name: str) -> str:
    """CREATE TABLE name ... LOCATION of an existing Delta table: no commit; the definition given
    must match the table's (delta-spark's verifyTableMetadata), then the name is recorded."""
    from pyspark.sql.types import StructType as SparkStructType

    from pydelta.protocol.schema import parse_schema
    from pydelta.spark.base.catalog import register_table
    from pydelta.spark.ddl.existing_table import verify_definition
    from pydelta.spark.read.scan import spark_schema
    from pydelta.spark.write.options import checked_table_properties

    specified = parse_schema(SparkStructType(definition._columns).json())
    verify_definition(definition._spark, snapshot, schema=specified, partition_by=definition._partitioned_by,
                      cluster_by=definition._cluster_by,
                      properties=checked_table_properties(definition._spark, definition._properties))
    register_table(definition._spark, name, snapshot.table_root, spark_schema(snapshot.schema),
                   definition._comment if definition._comment is not None else snapshot.metadata.description)
    return snapshot.table_root


def _table_path(definition: TableDefinition) -> str:
    """Where the table goes: the location given, else the name's catalog (or managed) location."""
    from pydelta.spark.base.catalog import table_location

    if definition._location:
        return definition._location
    if definition._name is None:
        raise _missing_name_or_location()
    return table_location(definition._spark, definition._name)


def create_table(definition: TableDefinition) -> str:
    """Create or replace the table as defined, as one commit (or none: an existing table named,
    or kept by createIfNotExists); returns the table's path. Both fronts run it: `execute()`
    of the DeltaTable builder, and SQL's CREATE / REPLACE TABLE."""
    from pyspark.sql.types import StructType as SparkStructType

    from pydelta.protocol.schema import parse_schema
    from pydelta.spark.base.catalog import lookup, register_table, unregister_table
    from pydelta.spark.base.transactions import open_transaction
    from pydelta.spark.write.data_files import file_rows_to_adds, remove_action
    from pydelta.spark.write.dataframe import define_clustering, new_table_metadata
    from pydelta.spark.write.options import checked_table_properties, session_conf, with_table_defaults
    from pydelta.txn.commit_info import Operation

    if definition._location is None and definition._name is None:
        raise _missing_name_or_location()
    if not definition._columns:
        raise DeltaAnalysisError("the table needs at least one column (addColumn / addColumns)")
    catalog = unity_catalog_of(definition._spark, definition._name)
    if catalog is not None:
        return _create_in_unity_catalog(definition, catalog)
    path = _table_path(definition)
    if definition._name is not None and definition._location is not None:
        entry = lookup(definition._spark, definition._name)
        if (entry is not None and entry.location
                and os.path.normpath(entry.location) != os.path.normpath(os.path.abspath(path))):
            raise DeltaAnalysisError(
                f"table {definition._name} already exists at {entry.location}, not at the given location {path}"
            )
    snapshot = try_table_snapshot(definition._spark, path)
    if snapshot is not None and definition._kind in ("create", "createIfNotExists"):
        if (definition._name is not None and definition._location is not None
                and lookup(definition._spark, definition._name) is None):
            return _name_existing(definition, snapshot, definition._name)
        if definition._kind == "createIfNotExists":
            return path
        if definition._name is not None:
            raise TableAlreadyExistsError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] Table {definition._name} already exists")
        raise TableAlreadyExistsError(f"[DELTA_TABLE_ALREADY_EXISTS] Table delta.`{path}` already exists.")
    if snapshot is None and definition._kind == "replace":
        raise cannot_replace_missing_table(definition._spark, definition._name, definition._location)
    schema = parse_schema(SparkStructType(definition._columns).json())
    # create and replace both make a new table: the session's table defaults apply (delta-spark).
    properties = with_table_defaults(checked_table_properties(definition._spark, definition._properties),
                                     session_conf(definition._spark))
    cluster_by = definition._cluster_by
    if cluster_by is not None:
        from pydelta.protocol import clustering

        properties = {**properties, clustering.FEATURE_PROPERTY: "supported"}
    metadata = new_table_metadata(schema, definition._partitioned_by, properties, description=definition._comment)
    if snapshot is not None:
        metadata = replacing_metadata(snapshot.metadata, metadata)
    txn = open_transaction(definition._spark, snapshot, path)
    txn.update_metadata(metadata)
    define_clustering(txn, snapshot, cluster_by)
    actions: list[Action] = []
    if snapshot is not None:
        txn.read_whole_table()
        now = int(time.time() * 1000)
        actions = [as_remove(remove_action(a, timestamp_ms=now)) for a in file_rows_to_adds(snapshot.files())]
    name = {"create": "CREATE TABLE", "createIfNotExists": "CREATE TABLE", "replace": "REPLACE TABLE",
            "createOrReplace": "CREATE OR REPLACE TABLE" if snapshot is not None else "CREATE TABLE"}[definition._kind]
    operation = Operation.table_definition(name, is_managed=not definition._location, description=definition._comment,
                                           partition_by=metadata.partition_columns, properties=definition._properties,
                                           cluster_by=cluster_by)
    registered_name = None
    # the name resolves from now on: Spark's catalog records it
    if definition._name is not None and register_table(
            definition._spark, definition._name, path, SparkStructType(definition._columns), definition._comment):
        registered_name = definition._name
    try:
        txn.commit(actions, operation)
    except BaseException:
        if registered_name is not None:
            unregister_table(definition._spark, registered_name)
        raise
    return path


def _create_in_unity_catalog(definition: TableDefinition, catalog: UnityCatalog) -> str:
    """The definition's table created in Unity Catalog: version 0 is this definition, at the
    catalog's location, with the properties the catalog requires."""
    assert definition._name is not None

    def write(location: str, required: dict[str, str]) -> None:
        at_location = copy.copy(definition)
        # Creates at a new staging location; replaces at an existing table's (REPLACE TABLE).
        at_location._name, at_location._location, at_location._kind = None, location, "createOrReplace"
        at_location._properties = {**definition._properties, **required}
        create_table(at_location)

    location, _ = create_in_unity_catalog(definition._spark, catalog, definition._name, definition._kind,
                                          definition._location, write, definition._comment)
    return location


def _missing_name_or_location() -> DeltaAnalysisError:
    return DeltaAnalysisError("[DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION] "
                              "Table name or location has to be specified.")
