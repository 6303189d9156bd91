"""DeltaTable and DeltaTableBuilder: the delta-spark Python API, served by pydelta.

The API itself is implemented in `pydelta.spark.api.delta_table`; the classes here add one thing:
creating one enables pydelta on the given SparkSession (idempotent), so the API works on any
session, as the delta-spark classes do on a session configured for Delta.
"""

from __future__ import annotations

from pydelta.spark.api.delta_table import (  # noqa: F401 - the public names of this module
    DeltaTableApi,
    IdentityGenerator,
    TableBuilderApi,
)
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.session import enable

__all__ = ["DeltaTable", "DeltaTableBuilder", "IdentityGenerator"]


class DeltaTable(DeltaTableApi):
    """A Delta table, with the methods of delta-spark's `delta.tables.DeltaTable`.

    Open one with `forPath` or `forName`, or make a new table with `create` (and its
    siblings) or `convertToDelta`. Reading is `toDF()`; changing rows is `delete`,
    `update` and `merge`; `history`, `detail`, `vacuum`, `optimize`, `restoreToVersion`,
    the protocol and clone methods complete it. The methods run on the session the table
    was opened with, which pydelta enables for Delta first.

    Example:
        ```python
        from pydelta.tables import DeltaTable

        events = DeltaTable.forPath(spark, "/data/events")
        events.delete("day < '2023-01-01'")
        events.toDF().groupBy("day").count().show()
        ```
    """

    def __init__(self, spark: SparkSession, path: str, alias: str | None = None,
                 hadoopConf: dict[str, str] | None = None) -> None:
        """Bind a table path to a session; prefer `forPath`, which also checks that a table is there.

        Args:
            spark: The session to run the table's operations in (pydelta is enabled on it).
            path: The table's location.
            alias: A SQL alias for the table, as `alias()` sets.
            hadoopConf: Hadoop options for this table's file system access, as `forPath` takes.
        """
        super().__init__(enable(spark), path, alias, hadoopConf)


class DeltaTableBuilder(TableBuilderApi):
    """delta-spark's `DeltaTableBuilder`: define a table, then `execute()` to create or replace it.

    Get one from `DeltaTable.create`, `createIfNotExists`, `replace` or `createOrReplace`;
    set a name and/or a location, the columns, and optionally partitioning or clustering,
    a comment and table properties. Each setter returns the builder.

    Example:
        ```python
        from pydelta.tables import DeltaTable

        events = (DeltaTable.create(spark)
                  .tableName("events")
                  .addColumn("id", "BIGINT", nullable=False)
                  .addColumn("day", "DATE")
                  .partitionedBy("day")
                  .property("delta.enableChangeDataFeed", "true")
                  .execute())
        ```
    """

    _table_class = DeltaTable

    def __init__(self, spark: SparkSession, kind: str) -> None:
        """Start a definition; use the `DeltaTable.create...` class methods instead.

        Args:
            spark: The session to create the table in (pydelta is enabled on it).
            kind: `"create"`, `"createIfNotExists"`, `"replace"` or `"createOrReplace"`.
        """
        super().__init__(enable(spark), kind)


DeltaTable._builder_class = DeltaTableBuilder
