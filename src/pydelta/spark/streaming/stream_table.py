"""`spark.readStream.table(name)` for Delta tables in the catalog.

Spark hands a Python streaming data source no catalog location, so a Delta table's name
is resolved here (one catalog round trip) and the stream loads the table's location with
the reader's options; names of other tables go to Spark unchanged.
"""

from __future__ import annotations

from typing import Any

_ORIGINAL: dict[str, Any] = {}


def install() -> None:
    """Hook DataStreamReader.table once per process."""
    from pyspark.sql.streaming.readwriter import DataStreamReader

    from pydelta.spark.base.spark_errors import boundary

    if getattr(DataStreamReader, "_pydelta_table_hooked", False):
        return
    _ORIGINAL["table"] = DataStreamReader.table
    DataStreamReader.table = boundary(_table)  # type: ignore[method-assign]  # a deliberate patch
    # the marker checked above (setattr: mypy knows no such attribute on PySpark's class)
    setattr(DataStreamReader, "_pydelta_table_hooked", True)  # noqa: B010 - see above


def _table(self: Any, tableName: str) -> Any:  # noqa: N803 - PySpark's parameter name
    from pydelta.spark.base.catalog import delta_table_location

    location = delta_table_location(self._spark, tableName) if isinstance(tableName, str) else None
    if location is None:
        return _ORIGINAL["table"](self, tableName)
    return self.format("delta").load(location)
