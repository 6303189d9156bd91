"""A Python data source named "delta", so Spark's catalog accepts `USING delta` tables.

Spark refuses to create a catalog table whose provider it cannot find. pydelta has
no JVM data source, so it registers this Python one under the name "delta". It is
the catalog's anchor for batch work: pydelta serves every batch read and write of a
Delta table itself (through its hooks), and a batch scan that reaches this source
raises a clear error instead of returning anything wrong.

Streaming reads are different: `spark.readStream.format("delta")` has no pydelta hook,
so this source serves them (`streamReader`, implemented in pydelta.spark.streaming.source).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader

from pydelta.errors import DeltaNotImplementedError
from pydelta.spark.base._typing import SparkSession


class DeltaCatalogSource(DataSource):
    """Registered as "delta"; Delta tables are read and written by pydelta, not here."""

    @classmethod
    def name(cls) -> str:
        return "delta"

    def schema(self) -> Any:
        """The table's schema now as delta-spark shows it (a stream's schema is fixed at query start),
        plus the change-feed columns."""
        path = self.options.get("path")
        if path:
            from pydelta.log.snapshot import load_snapshot
            from pydelta.spark.read.scan import reader_schema
            from pydelta.spark.streaming.source_storage import carried

            # A stream's: this process has no Spark session, the driver's storage options came along.
            snapshot = load_snapshot(path, storage_options=carried(self.options))
            schema = reader_schema(snapshot.schema)
            if len(self.options) > 1:  # stream options: refuse bad ones at load(), before the query starts
                from pydelta.spark.streaming.source import StreamOptions

                opts = StreamOptions.parse(self.options)
                if opts.schema_tracking is not None:  # a stream reads with the schema its tracking log says
                    from pydelta.spark.streaming.schema_tracking import SchemaTrackingLog

                    tracked = SchemaTrackingLog(opts.schema_tracking, snapshot.metadata.id, opts.tracking_id).latest()
                    if tracked is not None:
                        schema = reader_schema(tracked.schema)
            if _change_feed(self.options):
                from pyspark.sql.types import LongType, StringType, TimestampType

                schema = (schema.add("_change_type", StringType()).add("_commit_version", LongType())
                          .add("_commit_timestamp", TimestampType()))
            return schema
        raise DeltaNotImplementedError("a Delta table needs a path (or a catalog entry with a location)")

    def streamReader(self, schema: Any) -> Any:
        """`spark.readStream.format("delta")`: delta-spark's streaming source (see streaming/source.py)."""
        from pydelta.spark.streaming import source

        if source.HAS_ADMISSION_CONTROL:
            return source.AdmissionControlledReader(self.options, schema)
        from pydelta.spark.streaming.source_paced import PacedStreamReader  # PySpark 4.0 / 4.1

        return PacedStreamReader(self.options, schema)

    def reader(self, schema: Any) -> DataSourceReader:
        raise DeltaNotImplementedError(
            "this Delta table was reached through Spark's data source lookup, which pydelta does not serve: "
            "read it with spark.table(name), spark.read.format('delta').load(path) or DeltaTable"
        )


def _change_feed(options: Any) -> bool:
    lowered = {str(k).lower(): str(v).strip().lower() for k, v in options.items()}
    return lowered.get("readchangefeed") == "true" or lowered.get("readchangedata") == "true"


_REGISTERED: set[int] = set()


def register(spark: SparkSession) -> None:
    """Register the "delta" source on `spark` (once per session: also serves readStream)."""
    from pydelta.spark.base.connect_session import is_connect

    key = id(spark) if is_connect(spark) else id(spark._jsparkSession)
    if key in _REGISTERED:
        return
    try:
        spark.dataSource.register(DeltaCatalogSource)
    except Exception as e:  # a session from newSession() sees its parent's sources: already there is done
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise
    _REGISTERED.add(key)
