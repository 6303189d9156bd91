"""Hooks on DataFrameWriterV2 (`df.writeTo(name)`) so Delta tables are written by pydelta.

`using("delta")` or a target that is already a Delta table routes append,
overwrite, overwritePartitions, create, replace and createOrReplace to pydelta,
with delta-spark's semantics; every other table stays Spark's.
"""

from __future__ import annotations

from typing import Any

from pydelta.spark.spark_errors import boundary
from pydelta.spark._typing import DataFrame

_STATE = "_pydelta_v2"


def _state(writer: Any) -> dict[str, Any]:
    st = writer.__dict__.get(_STATE)
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
    from pydelta.spark.sql.jplan import seq

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


def _target(writer: Any) -> Any:
    from pydelta.spark.sql.targets import resolve

    return resolve(writer._spark, _name_parts(writer))


def _name_parts(writer: Any) -> list[str]:
    from pydelta.spark.sql.jplan import seq

    parser = writer._spark._jsparkSession.sessionState().sqlParser()
    return [str(p) for p in seq(parser.parseMultipartIdentifier(writer.__dict__["_pydelta_table"]))]


def _is_delta(writer: Any) -> bool:
    st = _state(writer)
    if st["provider"] is not None:
        return str(st["provider"]).lower() == "delta"
    # No using(): Delta when the table exists as a Delta table (create() then makes Spark's default source).
    return _target(writer) is not None


def _write_existing(writer: Any, mode: str, options: dict[str, Any]) -> None:
    from pydelta.errors import DeltaTableNotFoundError
    from pydelta.spark.write.dataframe import write_dataframe

    target = _target(writer)
    if target is None:
        raise DeltaTableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] table {writer.__dict__['_pydelta_table']} does not exist")
    write_dataframe(writer._df, target.path, mode, None, {**_state(writer)["options"], **options})


def _as_select(writer: Any, kind: str) -> None:
    from pydelta.spark.sql.targets import target_for_create
    from pydelta.spark.ddl.table_as_select import table_as_select

    st = _state(writer)
    target = target_for_create(writer._spark, _name_parts(writer))
    existing = _target(writer)
    path = existing.path if existing is not None else target.path
    table_as_select(writer._df, path, name=target.name, kind=kind, partition_by=st["partition_by"],
                    properties=st["properties"], options=st["options"], cluster_by=st["cluster_by"])


_TERMINALS = ("append", "overwrite", "overwritePartitions", "create", "replace", "createOrReplace")


def _install_connect() -> None:
    """Connect's DataFrameWriterV2: writing a Delta table through it is refused (not served yet)."""
    from pydelta.spark.connect import connect_classes

    connect = connect_classes()
    if connect is None or connect.writer_v2.__dict__.get("_pydelta_hooked", False):
        return
    writer_class: Any = connect.writer_v2
    original_using = writer_class.using

    def using(self: Any, provider: str) -> Any:
        self.__dict__["_pydelta_provider"] = provider
        return original_using(self, provider)

    def refusing(name: str) -> Any:
        original = getattr(writer_class, name)

        def method(self: Any, *args: Any) -> Any:
            from pydelta.spark.catalog import delta_table_location

            provider = str(self.__dict__.get("_pydelta_provider") or "").lower()
            if provider == "delta" or (not provider and delta_table_location(self._spark, self._table_name)):
                from pydelta.errors import DeltaNotImplementedError

                raise DeltaNotImplementedError(
                    f"df.writeTo(...).{name}() on a Delta table over Spark Connect is not supported by pydelta yet: "
                    "use df.write.format('delta') (save, saveAsTable) on this session")
            return original(self, *args)

        method.__name__ = name
        return method

    setattr(writer_class, "using", using)
    for name in _TERMINALS:
        setattr(writer_class, name, boundary(refusing(name)))
    setattr(writer_class, "_pydelta_hooked", True)


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

    def terminal(name: str, run: Any) -> None:
        original = getattr(DataFrameWriterV2, name)

        def method(self: Any, *args: Any) -> None:
            if not _is_delta(self):
                return original(self, *args)
            return run(self, *args)

        setattr(DataFrameWriterV2, name, boundary(method))

    terminal("append", lambda w: _write_existing(w, "append", {}))
    terminal("overwrite", lambda w, cond: _write_existing(w, "overwrite", {"replaceWhere": _condition_sql(w._df, cond)}))
    terminal("overwritePartitions",
             lambda w: _write_existing(w, "overwrite", {"partitionOverwriteMode": "dynamic"}))
    terminal("create", lambda w: _as_select(w, "create"))
    terminal("replace", lambda w: _as_select(w, "replace"))
    terminal("createOrReplace", lambda w: _as_select(w, "createOrReplace"))
    setattr(DataFrameWriterV2, "_pydelta_hooked", True)  # the marker checked above


def _condition_sql(df: DataFrame, condition: Any) -> str:
    """The SQL text of an overwrite condition, resolved against the written DataFrame."""
    if isinstance(condition, str):
        return condition
    from pydelta.spark.predicates import filter_condition

    return filter_condition(df._jdf, condition._jc).sql()
