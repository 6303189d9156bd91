"""Hooks on DataFrameWriterV2 (`df.writeTo(name)`) so Delta tables are written by pydelta.

`using("delta")` or a target that is already a Delta table routes append,
overwrite, overwritePartitions, create, replace and createOrReplace to pydelta,
with delta-spark's semantics; every other table stays Spark's.

Classic PySpark keeps the writer's settings in the JVM, so they are recorded on the Python
object as they are made; Spark Connect's writer keeps them in its own `_write` message. Both
become one `_V2Write` the terminals run on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from pydelta.spark.base._typing import DataFrame
from pydelta.spark.base.spark_errors import boundary
from pydelta.spark.datasource import register as register_source

_STATE = "_pydelta_v2"


def _state(writer: Any) -> dict[str, Any]:
    st: dict[str, Any] | None = writer.__dict__.get(_STATE)
    if st is None:
        st = {"provider": None, "options": {}, "properties": {}, "partition_by": None, "cluster_by": None}
        writer.__dict__[_STATE] = st
    return st


def _column_name(col: Any) -> str:
    if isinstance(col, str):
        return col
    node = col._jc.node()
    if node.getClass().getSimpleName() != "UnresolvedAttribute":
        from pydelta.errors import DeltaNotImplementedError

        raise DeltaNotImplementedError(f"partitionedBy({node.sql()}): Delta tables are partitioned by columns only")
    from pydelta.spark.base.jplan import seq

    return ".".join(str(p) for p in seq(node.nameParts()))


def _recorder(name: str, original: Any) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        st = _state(self)
        if name == "using":
            st["provider"] = args[0]
        elif name == "option":
            st["options"][args[0]] = args[1]
        elif name == "options":
            st["options"].update(kwargs)
        elif name == "tableProperty":
            st["properties"][args[0]] = str(args[1])
        elif name == "partitionedBy":
            st["partition_by"] = [_column_name(c) for c in args]
        elif name == "clusterBy":
            st["cluster_by"] = list(args)
        if name == "using" and str(args[0]).lower() == "delta":
            return self  # Spark cannot resolve "delta"; pydelta writes it
        return original(self, *args, **kwargs)

    return method


@dataclass
class _V2Write:
    """One writeTo call: the session, the data, the table name and its parts, the settings."""

    spark: Any
    df: DataFrame
    table: str
    parts: list[str]
    settings: dict[str, Any]

    def target(self) -> Any:
        from pydelta.spark.sql.targets import resolve

        return resolve(self.spark, self.parts)

    def is_delta(self) -> bool:
        provider = self.settings["provider"]
        if provider is not None:
            return str(provider).lower() == "delta"
        # No using(): Delta when the table exists as a Delta table (create() then makes Spark's default source).
        return self.target() is not None


def _classic_write(writer: Any) -> _V2Write:
    from pydelta.spark.base.jplan import seq

    table = writer.__dict__["_pydelta_table"]
    parser = writer._spark._jsparkSession.sessionState().sqlParser()
    parts = [str(p) for p in seq(parser.parseMultipartIdentifier(table))]
    return _V2Write(writer._spark, writer._df, table, parts, _state(writer))


def _connect_write(writer: Any) -> _V2Write:
    from pydelta.spark.base.catalog import name_parts
    from pydelta.spark.base.connect_session import writer_frame

    w = writer._write
    settings = {"provider": w.provider, "options": {k: v for k, v in w.options.items() if v is not None},
                "properties": {k: str(v) for k, v in w.table_properties.items() if v is not None},
                "partition_by": [_connect_column_name(c) for c in w.partitioning_columns] or None,
                "cluster_by": list(w.clustering_columns) or None}
    return _V2Write(writer._spark, writer_frame(writer), writer._table_name, name_parts(writer._table_name), settings)


def _connect_column_name(col: Any) -> str:
    from pyspark.sql.connect.expressions import ColumnReference

    if isinstance(col._expr, ColumnReference):
        return str(col._expr._unparsed_identifier)
    from pydelta.errors import DeltaNotImplementedError

    raise DeltaNotImplementedError(f"partitionedBy({col}): Delta tables are partitioned by columns only")


def _write_existing(write: _V2Write, mode: str, options: dict[str, Any]) -> None:
    from pydelta.errors import DeltaTableNotFoundError
    from pydelta.spark.write.dataframe import write_dataframe

    target = write.target()
    if target is None:
        raise DeltaTableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] table {write.table} does not exist")
    write_dataframe(write.df, target.path, mode, None, {**write.settings["options"], **options})


def _as_select(write: _V2Write, kind: str) -> None:
    from pydelta.spark.ddl.table_as_select import table_as_select
    from pydelta.spark.sql.targets import target_for_create

    st = write.settings
    register_source(write.spark)  # the new table's provider is `delta`
    target = target_for_create(write.spark, write.parts)
    existing = write.target()
    path = existing.path if existing is not None else target.path
    table_as_select(write.df, path, name=target.name, kind=kind, partition_by=st["partition_by"],
                    properties=st["properties"], options=st["options"], cluster_by=st["cluster_by"])


# The terminal methods and what each runs on a Delta table.
_TERMINALS: dict[str, Callable[..., None]] = {
    "append": lambda w: _write_existing(w, "append", {}),
    "overwrite": lambda w, cond: _write_existing(w, "overwrite", {"replaceWhere": _condition_sql(w.df, cond)}),
    "overwritePartitions": lambda w: _write_existing(w, "overwrite", {"partitionOverwriteMode": "dynamic"}),
    "create": lambda w: _as_select(w, "create"),
    "replace": lambda w: _as_select(w, "replace"),
    "createOrReplace": lambda w: _as_select(w, "createOrReplace"),
}


def _hook_terminals(writer_class: Any, describe: Callable[[Any], _V2Write]) -> None:
    for name, run in _TERMINALS.items():
        original = getattr(writer_class, name)

        def method(self: Any, *args: Any, _original: Callable[..., None] = original,
                   _run: Callable[..., None] = run) -> None:
            write = describe(self)
            if not write.is_delta():
                return _original(self, *args)
            return _run(write, *args)

        method.__name__ = name
        setattr(writer_class, name, boundary(method))


def _install_connect() -> None:
    """Connect's DataFrameWriterV2: its settings are read from its `_write` message."""
    from pydelta.spark.base.connect_session import connect_classes

    connect = connect_classes()
    if connect is None or connect.writer_v2.__dict__.get("_pydelta_hooked", False):
        return
    _hook_terminals(connect.writer_v2, _connect_write)
    setattr(connect.writer_v2, "_pydelta_hooked", True)  # noqa: B010 - the marker checked above; mypy: not on type


def install() -> None:
    """Patch DataFrameWriterV2 once per process (Connect's: see _install_connect)."""
    from pyspark.sql.readwriter import DataFrameWriterV2

    _install_connect()

    if getattr(DataFrameWriterV2, "_pydelta_hooked", False):
        return
    original_init = DataFrameWriterV2.__init__

    def __init__(self: Any, df: DataFrame, table: str) -> None:
        original_init(self, df, table)
        self.__dict__["_pydelta_table"] = table

    DataFrameWriterV2.__init__ = __init__  # type: ignore[method-assign]  # a deliberate patch
    for name in ("using", "option", "options", "tableProperty", "partitionedBy", "clusterBy"):
        setattr(DataFrameWriterV2, name, _recorder(name, getattr(DataFrameWriterV2, name)))

    _hook_terminals(DataFrameWriterV2, _classic_write)
    setattr(DataFrameWriterV2, "_pydelta_hooked", True)  # noqa: B010 - the marker checked above; mypy: not on the class


def _condition_sql(df: DataFrame, condition: Any) -> str:
    """The SQL text of an overwrite condition, resolved against the written DataFrame."""
    if isinstance(condition, str):
        return condition
    from pydelta.spark.base.connect_session import is_connect

    if is_connect(df.sparkSession):
        from pyspark.sql.connect.expressions import SQLExpression

        if isinstance(condition._expr, SQLExpression):  # F.expr("..."): its text
            return str(condition._expr._expr)
        from pydelta.errors import DeltaNotImplementedError

        raise DeltaNotImplementedError("writeTo(...).overwrite(condition) over Spark Connect takes the condition as "
                                       "a SQL string or F.expr(...) (a Connect client cannot render a Column as SQL)")
    from pydelta.spark.base.predicates import filter_condition

    return cast(str, filter_condition(df._jdf, condition._jc).sql())
