"""A Python data source named "delta", so Spark's catalog accepts `USING delta` tables.

Spark refuses to create a catalog table whose provider it cannot find. pydelta has
no JVM data source, so it registers this Python one under the name "delta". It is
only the catalog's anchor: pydelta serves every read and write of a Delta table
itself (through its hooks), and a scan that reaches this source raises a clear
error instead of returning anything wrong.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader

from pydelta.errors import DeltaNotImplementedError


class DeltaCatalogSource(DataSource):
    """Registered as "delta"; Delta tables are read and written by pydelta, not here."""

    @classmethod
    def name(cls) -> str:
        return "delta"

    def schema(self) -> Any:
        path = self.options.get("path")
        if path:
            from pydelta.log.snapshot import load_snapshot
            from pydelta.spark.read import spark_schema

            return spark_schema(load_snapshot(path).schema)
        raise DeltaNotImplementedError("a Delta table needs a path (or a catalog entry with a location)")

    def reader(self, schema: Any) -> DataSourceReader:
        raise DeltaNotImplementedError(
            "this Delta table was reached through Spark's data source lookup, which pydelta does not serve: "
            "read it with spark.table(name), spark.read.format('delta').load(path) or DeltaTable"
        )


def register(spark: Any) -> None:
    """Register the "delta" anchor source on `spark` (idempotent per session)."""
    spark.dataSource.register(DeltaCatalogSource)
