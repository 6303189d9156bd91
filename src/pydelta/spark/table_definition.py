"""The definition half of delta-spark's DeltaTableBuilder: name, location, comment, columns,
partitioning or clustering and properties of a table to create or replace.

`pydelta.spark.table_api.TableBuilderApi` adds `execute()`, which creates or replaces the table
so defined (and `pydelta.tables.DeltaTableBuilder` enables the session first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from pydelta.errors import DeltaIllegalArgumentError, DeltaNotImplementedError
from pydelta.spark.spark_errors import boundary_class
from pydelta.spark._typing import SparkSession


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
