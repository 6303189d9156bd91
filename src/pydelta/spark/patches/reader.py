"""Hooks on PySpark's reader and writer so `format("delta")` goes to pydelta.

PySpark keeps the chosen format and options only in the JVM; we record them
on the Python objects too, then intercept `load` / `save` for "delta" and
leave every other format untouched.
"""

from __future__ import annotations

from typing import Any

from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.connect_session import connect_classes, reader_session
from pydelta.spark.base.spark_errors import boundary
from pydelta.spark.base.writer_state import _is_delta, _record_format, _record_option, _record_options, _state
from pydelta.spark.read.time_travel import at_suffix


def _reader_load(original: Any) -> Any:
    def load(self: Any, path: Any=None, format: Any=None, schema: Any=None, **options: Any) -> Any:  # noqa: A002
        st = _state(self)
        if format is not None:
            st["format"] = format
        if not _is_delta(st["format"]):
            return original(self, path, format, schema, **options)
        if schema is not None:
            from pydelta.errors import DeltaAnalysisError

            raise DeltaAnalysisError("a user-specified schema is not supported when reading Delta tables")
        opts = {**st["options"], **options}
        if path is None:
            path = opts.pop("path", None)
        if path is None or isinstance(path, (list, tuple)):
            from pydelta.errors import DeltaIllegalArgumentError

            raise DeltaIllegalArgumentError("reading a Delta table needs exactly one path")
        from pydelta.spark.read.options import read_delta

        return read_delta(reader_session(self), path, opts)

    return load


def _delta_location(spark: SparkSession, name: str) -> tuple[str | None, str]:
    """(location of the Delta table `name` names, time-travel suffix): `t@v5` and
    `t@yyyyMMddHHmmssSSS` name table `t` at a version or timestamp, as in delta-spark."""
    from pydelta.spark.base.catalog import delta_table_location

    location = delta_table_location(spark, name)
    if location is not None:
        return location, ""
    base, suffix = at_suffix(name) if isinstance(name, str) else (name, "")
    if not suffix:
        return None, ""
    return delta_table_location(spark, base), suffix


def _reader_table(original: Any) -> Any:
    def table(self: Any, tableName: Any) -> Any:
        location, at = _delta_location(reader_session(self), tableName)
        if location is None:
            return original(self, tableName)
        from pydelta.spark.read.options import read_delta

        return read_delta(reader_session(self), location + at, dict(_state(self)["options"]))

    return table


def _session_table(original: Any) -> Any:
    def table(self: Any, tableName: Any) -> Any:
        if _delta_location(self, tableName)[0] is not None:
            return self.read.table(tableName)
        return original(self, tableName)

    return table


def install() -> None:
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
    from pyspark.sql.session import SparkSession

    connect = connect_classes()
    _install_reader(DataFrameReader, SparkSession)
    if connect is not None:
        _install_reader(connect.reader, connect.session)
        from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

        from pydelta.spark.read.connect.scan import install_join_hook

        install_join_hook(ConnectDataFrame)

    from pydelta.spark.patches import writer as write_hooks
    from pydelta.spark.read import plan_pruning

    write_hooks.install(DataFrameWriter)
    if connect is not None:
        write_hooks.install(connect.writer)
    plan_pruning.install()


def _install_reader(reader_class: Any, session_class: Any) -> None:
    """Hook one DataFrameReader class (classic or Connect) and its session's `table`, once."""
    if reader_class.__dict__.get("_pydelta_hooked", False):
        return
    # Deliberate patches of PySpark's methods.
    reader_class.format = _record_format(reader_class.format)
    reader_class.option = _record_option(reader_class.option)
    reader_class.options = _record_options(reader_class.options)
    reader_class.load = boundary(_reader_load(reader_class.load), not_found="DELTA_PATH_DOES_NOT_EXIST")
    reader_class.table = boundary(_reader_table(reader_class.table))
    session_class.table = boundary(_session_table(session_class.table))
    reader_class._pydelta_hooked = True  # the marker checked above
