"""What a Delta read's DataFrame over Spark Connect was built from, and how to build it again.

A Connect client cannot touch the server's plans: to skip files after the fact, pydelta keeps
the scan's snapshot and files plus each step applied above it, and rebuilds the same DataFrame
over fewer files, every node under the plan id it had (so column references taken from the
earlier DataFrames still resolve). Used by connect_scan (single reads) and connect_join.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from pydelta.log.data_skipping import FileSkipper
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.predicates import Predicate
from pydelta.protocol.schema import StructType

ScanBuilder = Callable[[Any, Snapshot, pa.Table], Any]


@dataclass(frozen=True)
class Step:
    """One DataFrame method applied above the scan, replayed on a rebuild under its plan id."""

    method: str
    args: tuple[Any, ...]
    plan_id: int


@dataclass(frozen=True)
class Lineage:
    """What a Delta DataFrame was built from: the scan, and the steps above it."""

    snapshot: Snapshot
    files: pa.Table  # the files the scan reads
    build: ScanBuilder  # builds the scan over given files
    scan_id: int  # plan id of the scan's root node
    steps: tuple[Step, ...] = ()
    visible: frozenset[str] | None = None  # lower-case table columns still reaching here unchanged (None: all)
    alias: str | None = None

    def schema(self) -> StructType:
        """The table columns a condition here may be translated over."""
        fields = self.snapshot.schema.fields
        if self.visible is None:
            return self.snapshot.schema
        return StructType(tuple(f for f in fields if f.name.lower() in self.visible))

    def names(self) -> frozenset[str]:
        if self.visible is not None:
            return self.visible
        return frozenset(f.name.lower() for f in self.snapshot.schema.fields)

    def pruned(self, predicate: Predicate) -> Lineage:
        """This lineage over the files `predicate` may hold rows of (itself when none drop out)."""
        files = FileSkipper.for_metadata(self.files, self.snapshot.metadata).prune(predicate)
        return self if files.num_rows == self.files.num_rows else replace(self, files=files)

    def translate(self, condition: Any) -> Predicate:
        from pydelta.spark.read.connect.expressions import translate_column, translate_sql

        if isinstance(condition, str):
            return translate_sql(condition, self.schema(), self.alias)
        return translate_column(condition._expr, self.schema(), self.alias)


def set_plan_id(df: Any, plan_id: int) -> None:
    df._plan._root_plan_id = plan_id


def rebuild(spark: Any, lineage: Lineage) -> Any:
    """The scan over the lineage's files (at least one: the filters drop its rows when none may
    match, and the scan keeps the table's schema and hidden columns), with its steps on top."""
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    files = lineage.files if lineage.files.num_rows else lineage.snapshot.files().slice(0, 1)
    df = lineage.build(spark, lineage.snapshot, files)
    set_plan_id(df, lineage.scan_id)
    for step in lineage.steps:
        df = getattr(ConnectDataFrame, step.method)(df, *step.args)
        set_plan_id(df, step.plan_id)
    return df
