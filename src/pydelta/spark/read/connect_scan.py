"""The DataFrame of a Delta read on a Spark Connect session, which skips files on `filter`.

On a classic session pydelta prunes a scan by replacing it inside Spark's analyzed plan
(through py4j). A Connect client cannot touch the server's plans, so the Delta read's
DataFrame keeps what it was built from instead: the snapshot, the files it reads, and the
filters applied to it so far. A filter that rules out files makes pydelta build the scan
again over fewer files and apply the same filters on top, each plan node keeping the plan
id of the node it replaces, so column references taken from the earlier DataFrames
(`df.id`, `df["p"]`) still resolve on the server.
"""

from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa

from pydelta.log.data_skipping import FileSkipper
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.predicates import Predicate

ScanBuilder = Callable[[Any, Snapshot, pa.Table], Any]

_CLASS: type | None = None


def _translate(condition: Any, snapshot: Snapshot) -> Predicate:
    from pydelta.spark.read.connect_filters import translate_column, translate_sql

    if isinstance(condition, str):
        return translate_sql(condition, snapshot.schema)
    return translate_column(condition._expr, snapshot.schema)


def _dataframe_class() -> type:
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    class DeltaScanConnectDataFrame(ConnectDataFrame):
        """A Delta read over Spark Connect. `filter`/`where` on it also skip files, by the
        log's partition values and min/max/nullCount stats."""

        _pydelta_snapshot: Snapshot
        _pydelta_files: pa.Table  # the files this DataFrame's scan reads
        _pydelta_build: ScanBuilder  # builds the scan over given files
        _pydelta_scan_id: int  # plan id of the scan's root node
        _pydelta_filters: tuple[tuple[Any, int], ...]  # (condition, plan id of its Filter node)

        def filter(self, condition: Any) -> Any:  # noqa: A003
            out: Any = super().filter(condition)
            filters = self._pydelta_filters + ((condition, out._plan._plan_id),)
            snapshot, files = self._pydelta_snapshot, self._pydelta_files
            pruned = FileSkipper.for_metadata(files, snapshot.metadata).prune(_translate(condition, snapshot))
            if pruned.num_rows < files.num_rows:
                out = _rebuild(self.sparkSession, self._pydelta_build, snapshot, pruned,
                               self._pydelta_scan_id, filters)
            else:
                pruned = files
            return _wrap(out, snapshot, pruned, self._pydelta_build, self._pydelta_scan_id, filters)

    return DeltaScanConnectDataFrame


def _set_plan_id(df: Any, plan_id: int) -> None:
    df._plan._root_plan_id = plan_id


def _rebuild(spark: Any, build: ScanBuilder, snapshot: Snapshot, files: pa.Table, scan_id: int,
             filters: tuple[tuple[Any, int], ...]) -> Any:
    """The scan over `files` (at least one: the filters drop its rows when none may match,
    and the scan keeps the table's schema and hidden columns), with `filters` on top."""
    df = build(spark, snapshot, files if files.num_rows else snapshot.files().slice(0, 1))
    _set_plan_id(df, scan_id)
    for condition, plan_id in filters:
        df = df.filter(condition)
        _set_plan_id(df, plan_id)
    return df


def _wrap(df: Any, snapshot: Snapshot, files: pa.Table, build: ScanBuilder, scan_id: int,
          filters: tuple[tuple[Any, int], ...]) -> Any:
    global _CLASS
    if _CLASS is None:
        _CLASS = _dataframe_class()
    out = _CLASS(df._plan, df.sparkSession)
    out._pydelta_snapshot = snapshot
    out._pydelta_files = files
    out._pydelta_build = build
    out._pydelta_scan_id = scan_id
    out._pydelta_filters = filters
    return out


def wrap_scan(df: Any, snapshot: Snapshot, files: pa.Table, build: ScanBuilder) -> Any:
    """`df` (a Connect DataFrame reading `files` of `snapshot`, made by `build`) as a Delta
    read whose filters skip files."""
    return _wrap(df, snapshot, files, build, df._plan._plan_id, ())
