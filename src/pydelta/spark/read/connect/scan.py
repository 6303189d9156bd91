"""The DataFrame of a Delta read on a Spark Connect session, which skips files on `filter`.

On a classic session pydelta prunes a scan by replacing it inside Spark's analyzed plan
(through py4j). A Connect client cannot touch the server's plans, so the Delta read's
DataFrame keeps what it was built from instead: the snapshot, the files it reads, and the
filters applied to it so far. A filter that rules out files makes pydelta build the scan
again over fewer files and apply the same filters on top, each plan node keeping the plan
id of the node it replaces, so column references taken from the earlier DataFrames
(`df.id`, `df["p"]`) still resolve on the server.

The same holds through the row-preserving steps a query puts between the read and its filter:
`select`, `withColumn(s)`, `withColumnRenamed`, `drop` and `alias`. Each step is recorded and
replayed on a rebuild, and a later filter is translated only over the table columns that
still reach it unchanged (a column a step recomputes or renames is no longer the table's, so
conditions on it never skip). A join with another DataFrame keeps skipping on each side the
join lets skip (`connect_join`). Other steps that change which rows exist (limit, aggregate...)
end the Delta DataFrame: filters after them do not skip.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pyarrow as pa

from pydelta.log.snapshot import Snapshot
from pydelta.protocol.predicates import Predicate
from pydelta.spark.base._typing import DataFrame
from pydelta.spark.read.connect.lineage import Lineage, ScanBuilder, Step, rebuild

_CLASSES: dict[str, type[DataFrame]] = {}  # the Delta DataFrame classes, by the attribute they carry


def _plain_name(column: Any) -> str | None:
    """The column name of `select("a")` / `select(df.a)` (a reference, not an expression)."""
    expr: Any = getattr(column, "_expr", None)
    name = column if isinstance(column, str) else \
        expr._unparsed_identifier if type(expr).__name__ == "ColumnReference" else None
    return None if name is None or any(c in name for c in "*.`") else name


def _is_star(column: Any) -> bool:
    """`*` or `F.col("*")`, every column of the input (`t.*` too: the input has one relation)."""
    if isinstance(column, str):
        return column == "*" or column.endswith(".*")
    return type(getattr(column, "_expr", None)).__name__ == "UnresolvedStar"


def _output_name(column: Any) -> str | None:
    """The name an aliased expression produces; None when it is not known on the client."""
    expr: Any = getattr(column, "_expr", None)
    if type(expr).__name__ == "ColumnAlias" and len(expr._alias) == 1:
        return str(expr._alias[0])
    return _plain_name(column)


def _visible_after(lineage: Lineage, method: str, args: tuple[Any, ...]) -> frozenset[str]:
    """The table columns that reach past `method(*args)` unchanged."""
    names = lineage.names()
    columns = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    if method == "select":
        kept = {n.lower() for n in (_plain_name(c) for c in columns) if n is not None} & names
        if any(_is_star(c) for c in columns):
            outputs = [_output_name(c) for c in columns if not _is_star(c) and _plain_name(c) is None]
            if any(o is None for o in outputs):
                return frozenset()  # an expression of unknown name may shadow a table column
            kept |= names - {o.lower() for o in outputs if o is not None}
        return frozenset(kept)
    if method == "withColumn":
        return names - {str(args[0]).lower()}
    if method == "withColumns":
        return names - {str(k).lower() for mapping in args for k in mapping}
    if method == "withColumnRenamed":
        return names - {str(a).lower() for a in args[:2]}
    if method == "drop":
        return names - {c.lower() for c in columns if isinstance(c, str)}
    return names  # alias


def _dataframe_class() -> type[DataFrame]:
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    class DeltaScanConnectDataFrame(ConnectDataFrame):
        """A Delta read over Spark Connect. `filter`/`where` on it (also after select,
        withColumn(s), withColumnRenamed, drop, alias) skip files, by the log's partition
        values and min/max/nullCount stats."""

        _pydelta_lineage: Lineage

        @property
        def _pydelta_files(self) -> pa.Table:
            """The files this DataFrame's scan reads (after skipping)."""
            return self._pydelta_lineage.files

        def filter(self, condition: Any) -> Any:  # noqa: A003
            out: Any = super().filter(condition)
            lineage = self._pydelta_lineage
            lineage = replace(lineage, steps=(*lineage.steps, Step("filter", (condition,), out._plan._plan_id)))
            pruned = lineage.pruned(lineage.translate(condition))
            if pruned is not lineage:
                out = rebuild(self.sparkSession, pruned)
            return _wrap(out, pruned)

        def _step(self, method: str, args: tuple[Any, ...]) -> Any:
            out = getattr(ConnectDataFrame, method)(self, *args)
            lineage = self._pydelta_lineage
            return _wrap(out, replace(
                lineage, visible=_visible_after(lineage, method, args),
                alias=str(args[0]) if method == "alias" else lineage.alias,
                steps=(*lineage.steps, Step(method, args, out._plan._plan_id))))

        def select(self, *cols: Any) -> Any:
            return self._step("select", cols)

        def withColumn(self, colName: str, col: Any) -> Any:
            return self._step("withColumn", (colName, col))

        def withColumns(self, *colsMap: Any) -> Any:
            return self._step("withColumns", colsMap)

        def withColumnRenamed(self, existing: str, new: str) -> Any:
            return self._step("withColumnRenamed", (existing, new))

        def drop(self, *cols: Any) -> Any:
            return self._step("drop", cols)

        def alias(self, alias: str) -> Any:
            return self._step("alias", (alias,))

        def join(self, other: Any, on: Any = None, how: str | None = None) -> Any:
            from pydelta.spark.read.connect.join import JoinLineage, normalized_how

            out: Any = super().join(other, on, how)
            return wrap_join(out, JoinLineage(
                self._pydelta_lineage, side_of(other), self, other, on, normalized_how(how), out._plan._plan_id))

    return DeltaScanConnectDataFrame


def _join_dataframe_class() -> type[DataFrame]:
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    class DeltaJoinConnectDataFrame(ConnectDataFrame):
        """A join with a Delta read on either side over Connect: `filter`/`where` on it skip
        the files of each Delta side the join lets skip (see connect_join)."""

        _pydelta_join: Any

        def filter(self, condition: Any) -> Any:  # noqa: A003
            from pydelta.spark.read.connect.join import filter_join

            out, join = filter_join(self._pydelta_join, condition, super().filter(condition))
            return wrap_join(out, join)

        def join(self, other: Any, on: Any = None, how: str | None = None) -> Any:
            from pydelta.spark.read.connect.join import JoinLineage, normalized_how

            out: Any = super().join(other, on, how)
            return wrap_join(out, JoinLineage(
                self._pydelta_join, side_of(other), self, other, on, normalized_how(how), out._plan._plan_id))

    return DeltaJoinConnectDataFrame


def _wrap_as(df: Any, attribute: str, value: Any) -> DataFrame:
    """`df` as the Delta DataFrame class that carries `attribute` (each class made once: it
    subclasses Connect's DataFrame, imported on Connect sessions only)."""
    if attribute not in _CLASSES:
        make = {"_pydelta_lineage": _dataframe_class, "_pydelta_join": _join_dataframe_class}[attribute]
        _CLASSES[attribute] = make()
    out = _CLASSES[attribute](df._plan, df.sparkSession)
    setattr(out, attribute, value)
    return out


def _wrap(df: Any, lineage: Lineage) -> DataFrame:
    return _wrap_as(df, "_pydelta_lineage", lineage)


def wrap_join(df: Any, join: Any) -> Any:
    return _wrap_as(df, "_pydelta_join", join)


def lineage_of(df: Any) -> Lineage | None:
    """The lineage of a Delta read's DataFrame; None for any other DataFrame (whose attributes
    are its columns: getattr would give a Column)."""
    lineage: Lineage | None = vars(df).get("_pydelta_lineage")
    return lineage


def side_of(df: Any) -> Any:
    """What a join side was built from: a Delta read's lineage, a join's with one (JoinLineage),
    or None for any other DataFrame."""
    found = vars(df)
    return found.get("_pydelta_lineage") or found.get("_pydelta_join")


def skip_files(df: Any, conditions: tuple[str, ...], qualifier: str | None, alone: bool) -> Any:
    """`df` (a Delta read) over only the files that may hold rows meeting every condition (SQL
    text), with no filter added: for a query that applies those conditions itself. Beside other
    relations (`alone` false) only names qualified by `qualifier`, or unqualified, are the table's."""
    from pydelta.protocol.predicates import And
    from pydelta.spark.read.connect.expressions import translate_sql

    lineage = lineage_of(df)
    if lineage is None or not conditions:
        return df  # not a plain Delta scan (a change feed read)
    others: frozenset[str] | None = None if alone else frozenset()
    predicate: Predicate = translate_sql(conditions[0], lineage.schema(), qualifier, others)
    for condition in conditions[1:]:
        predicate = And(predicate, translate_sql(condition, lineage.schema(), qualifier, others))
    pruned = lineage.pruned(predicate)
    return df if pruned is lineage else _wrap(rebuild(df.sparkSession, pruned), pruned)


def wrap_scan(df: Any, snapshot: Snapshot, files: pa.Table, build: ScanBuilder) -> DataFrame:
    """`df` (a Connect DataFrame reading `files` of `snapshot`, made by `build`) as a Delta
    read whose filters skip files."""
    return _wrap(df, Lineage(snapshot, files, build, df._plan._plan_id))


def install_join_hook(dataframe_class: type) -> None:
    """Connect's DataFrame.join: a plain DataFrame joined with a Delta read or a join with one
    (on its right) becomes a join whose filters skip the Delta side's files."""
    if dataframe_class.__dict__.get("_pydelta_join_hooked", False):
        return
    # A deliberate patch (getattr/setattr: mypy knows no such attributes on `type`).
    original = getattr(dataframe_class, "join")  # noqa: B009 - see above

    def join(self: Any, other: Any, on: Any = None, how: str | None = None) -> Any:
        from pydelta.spark.read.connect.join import JoinLineage, normalized_how

        out = original(self, other, on, how)
        right = side_of(other)
        if right is None or side_of(self) is not None:
            return out  # no Delta read on the right, or a Delta left side (its own join does it)
        return wrap_join(out, JoinLineage(None, right, self, other, on, normalized_how(how), out._plan._plan_id))

    join.__doc__ = original.__doc__
    setattr(dataframe_class, "join", join)  # noqa: B010 - see above
    setattr(dataframe_class, "_pydelta_join_hooked", True)  # noqa: B010 - the marker checked above
