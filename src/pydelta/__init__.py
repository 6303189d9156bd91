"""pydelta: Delta Lake tables for PySpark, implemented in Python.

The log core (`pydelta.load_snapshot`) needs no JVM; the Spark entry points
(`enable`, `configure_spark`, `DeltaTable`) import PySpark only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydelta.errors import DeltaError
from pydelta.version import __version__

if TYPE_CHECKING:
    from pydelta.log.snapshot import Snapshot
    from pydelta.log.storage import Storage
    from pydelta.spark.base._typing import DataFrame, SparkSession

__all__ = ["DeltaError", "DeltaTable", "__version__", "configure_spark", "configure_spark_with_delta_pip", "enable",
           "load_snapshot", "remote_session", "write"]


def load_snapshot(path: str, version: int | None = None, timestamp: object | None = None,
                  storage_options: dict[str, str] | None = None, storage: Storage | None = None) -> Snapshot:
    """Read a Delta table's state from its log, without Spark (and without a JVM).

    The snapshot holds the table's version, protocol, metadata (schema, partitioning,
    properties) and its active files; reading the data itself is up to the caller.

    Args:
        path: The table's location: a local path, a `file:` URI, or an object-store URI
            (`s3://bucket/table`, `gs://...`, `abfss://...`).
        version: Load this version instead of the latest.
        timestamp: Load the version that was current at this time (a `datetime`, an ISO-8601
            string, or epoch milliseconds) instead of the latest; not with `version`.
        storage_options: Credentials and endpoint of an object store, as obstore names them
            (`aws_access_key_id`, `aws_endpoint`, ...); the environment's when omitted.
        storage: A `pydelta.log.storage.Storage` to read through instead of the one the
            path's scheme selects.

    Returns:
        The table's state (`pydelta.log.snapshot.Snapshot`).

    Raises:
        DeltaTableNotFoundError: `path` holds no Delta table.
        VersionNotFoundError: `version` or `timestamp` is outside the table's history.

    Example:
        ```python
        import pydelta

        snap = pydelta.load_snapshot("/data/events")
        print(snap.version, snap.schema, snap.files().num_rows)
        first = pydelta.load_snapshot("/data/events", version=0)
        ```
    """
    from pydelta.log.snapshot import load_snapshot as _load

    return _load(path, version=version, timestamp=timestamp, storage_options=storage_options, storage=storage)


def enable(spark: SparkSession) -> SparkSession:
    """Make an existing SparkSession read and write Delta tables through pydelta.

    After it, `format("delta")` reads and writes, Delta SQL and `DeltaTable` work on the
    session. Calling it again does nothing more. `DeltaTable` enables its session itself.

    A session built for delta-spark (`spark.sql.catalog.spark_catalog` set to delta-spark's
    `DeltaCatalog`) is taken over: pydelta unsets that catalog, which without delta-spark's jars
    fails every statement, and says so in one `DeltaSparkConfWarning`.

    Args:
        spark: A classic SparkSession, or a Spark Connect one (`SparkSession.builder.remote(...)`):
            over Connect the server needs no jar and no setting, only pydelta in its Python
            environment; this client reads and commits the log, so it must reach the table's
            storage too.

    Returns:
        The same session.

    Example:
        ```python
        import pydelta
        from pyspark.sql import SparkSession

        spark = pydelta.enable(SparkSession.builder.getOrCreate())
        spark.range(3).write.format("delta").save("/tmp/numbers")
        ```
    """
    from pydelta.spark.session import enable as _enable

    return _enable(spark)


def remote_session(url: str | None = None, app_name: str = "pydelta") -> SparkSession:
    """A Spark Connect session to `url` with pydelta enabled.

    The server needs no Delta jar and no configuration: only pydelta installed in its Python
    environment (its Python workers run pydelta's streaming source). This client reads and
    commits the Delta log itself, so it must reach the tables' storage (a path shared with
    the server, or an object store).

    Args:
        url: The server, `sc://host:port`; default `$SPARK_REMOTE`.
        app_name: The application name the server shows.

    Returns:
        The Connect session, Delta-capable.

    Example:
        ```python
        import pydelta

        spark = pydelta.remote_session("sc://spark-server:15002")
        spark.range(3).write.format("delta").save("/shared/numbers")
        ```
    """
    from pydelta.spark.session import remote_session as _remote

    return _remote(url, app_name)


def configure_spark(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Add pydelta's settings to a SparkSession builder, before the session exists.

    It also checks that Java is there for Spark. The builder's `getOrCreate()` then returns
    a session with pydelta enabled (see `enable`).

    Args:
        builder: `SparkSession.builder`, possibly already configured.

    Returns:
        The builder, with pydelta's settings added.

    Example:
        ```python
        import pydelta
        from pyspark.sql import SparkSession

        spark = pydelta.configure_spark(SparkSession.builder.appName("etl")).getOrCreate()
        ```
    """
    from pydelta.spark.session import configure_spark as _configure

    return _configure(builder)


def configure_spark_with_delta_pip(spark_session_builder: SparkSession.Builder,
                                   extra_packages: list[str] | None = None) -> SparkSession.Builder:
    """delta-spark's `configure_spark_with_delta_pip`, for programs moving to pydelta.

    delta-spark's version adds its jars to `spark.jars.packages`; pydelta needs none, so this one
    takes delta-spark's settings off the builder instead: its session extension
    (`spark.sql.extensions`), its session catalog (`spark.sql.catalog.spark_catalog`) and any
    `io.delta:*` jars in `spark.jars.packages`, with one `DeltaSparkConfWarning` saying what it
    removed. Then it adds pydelta's settings (`configure_spark`), so `getOrCreate()` returns a
    session with pydelta enabled.

    Args:
        spark_session_builder: `SparkSession.builder`, as the program configured it for delta-spark.
        extra_packages: Maven coordinates to add to `spark.jars.packages` (as delta-spark's
            version takes them: connectors such as `org.apache.hadoop:hadoop-aws:3.4.1`).

    Returns:
        The builder.

    Example:
        ```python
        from pydelta import configure_spark_with_delta_pip  # was: from delta import ...
        from pyspark.sql import SparkSession

        builder = (SparkSession.builder.appName("app")
                   .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                   .config("spark.sql.catalog.spark_catalog",
                           "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
        spark = configure_spark_with_delta_pip(builder).getOrCreate()
        ```
    """
    from pydelta.spark.session import configure_spark_with_delta_pip as _configure

    return _configure(spark_session_builder, extra_packages)


def write(
    df: DataFrame,
    path: str,
    mode: str = "errorifexists",
    partition_by: list[str] | None = None,
    **options: Any,
) -> int | None:
    """Write a DataFrame to the Delta table at a path, as `df.write.format("delta")` does.

    The table is created when it does not exist. Unlike the DataFrameWriter, this
    returns the version the write committed.

    Args:
        df: The rows to write; pydelta is enabled on their session.
        path: The table's location.
        mode: `"errorifexists"` (fail if a table is there), `"append"`, `"overwrite"` or
            `"ignore"` (do nothing if a table is there).
        partition_by: Partition columns of a table the write creates.
        **options: Delta writer options, as `.option(...)` takes them (`mergeSchema`,
            `overwriteSchema`, `replaceWhere`, `txnAppId`/`txnVersion`, `delta.*` table
            properties for a new table...).

    Returns:
        The committed version, or None when nothing was committed (`"ignore"` on an
        existing table, or a `txnAppId`/`txnVersion` pair already applied).

    Example:
        ```python
        import pydelta

        version = pydelta.write(df, "/data/events", mode="append", mergeSchema="true")
        ```
    """
    from pydelta.spark.session import enable as _enable
    from pydelta.spark.write.dataframe import write_dataframe

    _enable(df.sparkSession)
    return write_dataframe(df, path, mode, partition_by, options)


def __getattr__(name: str) -> Any:
    if name == "DeltaTable":
        from pydelta.tables import DeltaTable

        return DeltaTable
    raise AttributeError(name)
