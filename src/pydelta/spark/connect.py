"""Spark Connect sessions: telling them apart from classic ones, and their PySpark classes.

A Spark Connect session (`SparkSession.builder.remote("sc://host:port")`) has no py4j JVM on
the client: its DataFrames are plans sent over gRPC to a Spark server. pydelta serves it with
nothing installed on the server but pydelta's Python package (for the Python data source's
workers): the client reads and commits the log itself, and Spark reads and writes the data
files. PySpark keeps Connect's reader, writer and DataFrame in their own classes
(`pyspark.sql.connect.*`), so pydelta's hooks are installed on those as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydelta.spark._typing import DataFrame, SparkSession


def is_connect(spark: SparkSession) -> bool:
    """True for a Spark Connect session (no JVM on this side)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def is_connect_frame(df: Any) -> bool:
    """True for a Spark Connect DataFrame."""
    return type(df).__module__.startswith("pyspark.sql.connect") or any(
        c.__module__.startswith("pyspark.sql.connect") for c in type(df).__mro__)


@dataclass(frozen=True)
class ConnectClasses:
    """PySpark's Spark Connect classes that pydelta hooks, like their classic counterparts."""

    session: type
    dataframe: type
    reader: type
    writer: type
    writer_v2: type
    stream_reader: type
    stream_writer: type
    catalog: type


def connect_classes() -> ConnectClasses | None:
    """The Connect classes, or None where PySpark's Connect client cannot load (its extra
    dependencies, grpcio and friends, are not installed): then no session can be Connect."""
    try:
        from pyspark.sql.connect.catalog import Catalog
        from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
        from pyspark.sql.connect.readwriter import DataFrameReader, DataFrameWriter, DataFrameWriterV2
        from pyspark.sql.connect.session import SparkSession as ConnectSession
        from pyspark.sql.connect.streaming.readwriter import DataStreamReader, DataStreamWriter
    except ImportError:
        return None
    return ConnectClasses(ConnectSession, ConnectDataFrame, DataFrameReader, DataFrameWriter,
                          DataFrameWriterV2, DataStreamReader, DataStreamWriter, Catalog)


def reader_session(reader: Any) -> SparkSession:
    """The session behind a DataFrameReader (classic keeps it as `_spark`, Connect as `_client`)."""
    return reader.__dict__.get("_spark") or reader._client


def writer_frame(writer: Any) -> DataFrame:
    """The DataFrame a DataFrameWriter writes (Connect's writer keeps only its plan)."""
    df = writer._df
    if hasattr(df, "sparkSession"):
        return df
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    return ConnectDataFrame(df, writer._spark)
