"""DeltaTable and DeltaTableBuilder: the delta-spark Python API, served by pydelta.

The API itself is implemented in `pydelta.spark.table_api`; the classes here add one thing:
creating one enables pydelta on the given SparkSession (idempotent), so the API works on any
session, as the delta-spark classes do on a session configured for Delta.
"""

from __future__ import annotations

from typing import Any

from pydelta.spark.session import enable
from pydelta.spark.table_api import (  # noqa: F401 - the public names of this module
    DeltaTableApi,
    IdentityGenerator,
    TableBuilderApi,
)

__all__ = ["DeltaTable", "DeltaTableBuilder", "IdentityGenerator"]


class DeltaTable(DeltaTableApi):
    """A Delta table at a path, with the methods of delta-spark's `DeltaTable`."""

    def __init__(self, spark: Any, path: str, alias: str | None = None) -> None:
        super().__init__(enable(spark), path, alias)


class DeltaTableBuilder(TableBuilderApi):
    """delta-spark's DeltaTableBuilder: create / replace a table from a schema."""

    _table_class = DeltaTable

    def __init__(self, spark: Any, kind: str) -> None:
        super().__init__(enable(spark), kind)


DeltaTable._builder_class = DeltaTableBuilder
