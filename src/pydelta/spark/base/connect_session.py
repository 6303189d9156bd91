"""Spark Connect sessions: telling them apart from classic ones, and their PySpark classes.

A Spark Connect session (`SparkSession.builder.remote("sc://host:port")`) has no py4j JVM on
the client: its DataFrames are plans sent over gRPC to a Spark server. pydelta serves it with
nothing installed on the server but pydelta's Python package (for the Python data source's
workers): the client reads and commits the log itself, and Spark reads and writes the data
files. PySpark keeps Connect's reader, writer and DataFrame in their own classes
(`pyspark.sql.connect.*`), so pydelta's hooks are installed on those as well.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, cast

from pydelta.spark.base._typing import DataFrame, SparkSession


def is_connect(spark: SparkSession) -> bool:
    """True for a Spark Connect session (no JVM on this side)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


@dataclass(frozen=True)
class ConnectClasses:
    """PySpark's Spark Connect classes that pydelta hooks, like their classic counterparts."""

    session: type
    reader: type
    writer: type
    writer_v2: type
    stream_writer: type
    stream_reader: type


# The modules PySpark's Connect client needs beyond classic PySpark (`pyspark[connect]`).
_CONNECT_DEPENDENCIES = ("grpc", "grpc_status", "google.rpc")


def connect_classes() -> ConnectClasses | None:
    """The Connect classes, or None where PySpark's Connect client cannot load (its extra
    dependencies, grpcio and friends, are not installed): then no session can be Connect.

    The dependencies are looked for before importing: PySpark's Connect package checks them on
    import and, in a process whose main module has no file (`python -c`, pytest-xdist workers),
    exits the process (SystemExit) instead of raising ImportError."""
    if not all(_installed(name) for name in _CONNECT_DEPENDENCIES):
        return None
    try:
        from pyspark.sql.connect.readwriter import DataFrameReader, DataFrameWriter, DataFrameWriterV2
        from pyspark.sql.connect.session import SparkSession as ConnectSession
        from pyspark.sql.connect.streaming.readwriter import DataStreamReader, DataStreamWriter
    except (ImportError, SystemExit):  # a dependency the list above does not name (zstandard on 4.2+)
        return None
    return ConnectClasses(ConnectSession, DataFrameReader, DataFrameWriter, DataFrameWriterV2, DataStreamWriter,
                          DataStreamReader)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package (google for google.rpc) is missing
        return False


def analyzed_plan(df: DataFrame) -> tuple[str, str] | None:
    """(schema line, top node line) of the server's analyzed plan of a Connect DataFrame, read
    from its explain text (a Connect client has no plan objects); None when the text does not
    read as expected."""
    lines = df._explain_string(extended=True).splitlines()  # type: ignore[operator]
    try:
        at = lines.index("== Analyzed Logical Plan ==")
        return lines[at + 1], lines[at + 2]
    except (ValueError, IndexError):
        return None


def reader_session(reader: Any) -> SparkSession:
    """The session behind a DataFrameReader (classic keeps it as `_spark`, Connect as `_client`)."""
    session: SparkSession = reader.__dict__.get("_spark") or reader._client
    return session


def writer_frame(writer: Any) -> DataFrame:
    """The DataFrame a DataFrameWriter writes (Connect's writer keeps only its plan)."""
    df = writer._df
    if hasattr(df, "sparkSession"):
        return cast("DataFrame", df)
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    return ConnectDataFrame(df, writer._spark)
