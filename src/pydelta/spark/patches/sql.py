"""`spark.sql` routed through pydelta: the patches of SparkSession.sql, classic and Connect.

Classic sessions go to `sql.router.run_sql`, Connect sessions to `connect.router.run_connect_sql`
(Connect's SQL front). Each statement first makes sure the session serves the `delta` source
(CREATE TABLE ... USING delta names it), as `enable()` does.
"""

from __future__ import annotations

from typing import Any

from pydelta.spark.datasource import register as register_source
from pydelta.spark.sql.router import _ParametersNeedBinding, run_sql


def install() -> None:
    """Route SparkSession.sql through pydelta (idempotent, process-wide), classic and Connect."""
    from pyspark.sql.session import SparkSession

    from pydelta.spark.base.connect_session import connect_classes

    _install_classic(SparkSession)
    connect = connect_classes()
    if connect is not None:
        _install_connect(connect.session)


def _install_connect(session_class: Any) -> None:
    if session_class.__dict__.get("_pydelta_sql_hooked", False):
        return
    original_sql = session_class.sql

    def sql(self: Any, sqlQuery: str, args: Any = None, **kwargs: Any) -> Any:
        if not isinstance(sqlQuery, str) or args or kwargs:
            return original_sql(self, sqlQuery, args, **kwargs)
        from pydelta.spark.connect.router import run_connect_sql

        register_source(self)
        return run_connect_sql(self, sqlQuery, lambda text: original_sql(self, text))

    from pydelta.spark.base.spark_errors import boundary

    session_class._pydelta_original_sql = original_sql
    session_class.sql = boundary(sql)  # patched on purpose, like the classic session's
    session_class._pydelta_sql_hooked = True


def _install_classic(session_class: Any) -> None:
    if getattr(session_class, "_pydelta_sql_hooked", False):
        return
    original_sql = session_class.sql

    def sql(self: Any, sqlQuery: str, args: Any = None, **kwargs: Any) -> Any:
        if not isinstance(sqlQuery, str):
            return original_sql(self, sqlQuery, args, **kwargs)
        if kwargs:  # {name} placeholders: format as PySpark does (DataFrames become temp views)
            from pyspark.sql.sql_formatter import SQLStringFormatter

            formatter = SQLStringFormatter(self)
            try:
                return sql(self, formatter.format(sqlQuery, **kwargs), args)
            finally:
                formatter.clear()
        register_source(self)
        if not args:
            return run_sql(self, sqlQuery, lambda text: original_sql(self, text))
        try:
            return run_sql(self, sqlQuery, lambda text: original_sql(self, text, args), has_args=True)
        except _ParametersNeedBinding:
            from pydelta.spark.sql.parameters import bind_parameters

            bound = bind_parameters(self, sqlQuery, args)
            return run_sql(self, bound, lambda text: original_sql(self, text))

    from pydelta.spark.base.spark_errors import boundary

    # patched on purpose; DeltaErrors leave spark.sql as delta-spark's pyspark exceptions
    session_class._pydelta_original_sql = original_sql
    session_class.sql = boundary(sql)
    session_class._pydelta_sql_hooked = True
