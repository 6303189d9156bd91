"""A join with a Delta read over Spark Connect whose later filters skip each side's files.

`a.join(b, ...).filter(cond)`: a classic session's optimizer pushes `cond` into each scan; a
Connect client keeps the join's parts instead (each Delta side's lineage, the other
DataFrame, `on`, `how`, the filters above it). A filter is translated over each side that may
skip: one the join does not make null-supplying (the right of a left join, the left of a
right join, both of a full join) or hide (the right of a semi/anti join), since then every row
a skipped file holds is one the filter rejects anyway. A reference belongs to a side by its
DataFrame's plan id (`a.col`), its alias (`"a.col"` after `a.alias("a")`), or, unqualified,
by being no column of the other side. When a side's files shrink, the join is built again
over the pruned scans under the same plan ids, and the filters are replayed on top. A join
whose left side is not a Delta read is seen through a hook on Connect's DataFrame.join
(`connect_scan.install_join_hook`), which changes nothing unless the right side is one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pydelta.spark.read.connect_lineage import Lineage, Step, rebuild, set_plan_id

_PRESERVED = {  # how -> (left may skip, right may skip)
    "inner": (True, True), "cross": (True, True),
    "left": (True, False), "leftouter": (True, False),
    "right": (False, True), "rightouter": (False, True),
    "full": (False, False), "outer": (False, False), "fullouter": (False, False),
    "semi": (True, False), "leftsemi": (True, False), "anti": (True, False), "leftanti": (True, False),
}


@dataclass(frozen=True)
class JoinLineage:
    """What a join with a Delta read (and the filters above it) was built from."""

    left: Lineage | None  # the left side's, when it is a Delta read
    right: Lineage | None  # the right side's, when it is a Delta read
    left_df: Any  # the left DataFrame as given
    other: Any  # the right DataFrame as given
    on: Any
    how: str | None  # normalized (normalized_how)
    plan_id: int  # the join node's
    filters: tuple[Step, ...] = ()  # a Step of each filter above the join
    columns: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # each side's output columns, once asked

    def may_skip(self) -> tuple[bool, bool]:
        return _PRESERVED.get(self.how or "inner", (False, False))


def _plan_ids(lineage: Lineage) -> frozenset[int]:
    return frozenset([lineage.scan_id, *(step.plan_id for step in lineage.steps)])


def _pruned(lineage: Lineage, condition: Any, other_columns: tuple[str, ...], theirs: frozenset[int]) -> Lineage:
    """The side's lineage over the files `condition` leaves it (itself when none drop out)."""
    from pydelta.spark.read.connect_filters import translate_join_side

    predicate = translate_join_side(condition, lineage.schema(), lineage.alias, list(other_columns),
                                    (_plan_ids(lineage), theirs))
    return lineage.pruned(predicate)


def filter_join(join: JoinLineage, condition: Any, out: Any) -> tuple[Any, JoinLineage]:
    """`out` (the joined DataFrame's `filter(condition)`) over fewer files where the condition
    allows, and the join lineage that describes it."""
    join = replace(join, filters=join.filters + (Step("filter", (condition,), out._plan._plan_id),))
    if join.columns is None:  # two schema round trips, on the first filter only
        join = replace(join, columns=(tuple(join.left_df.columns), tuple(join.other.columns)))
    assert join.columns is not None
    left_skips, right_skips = join.may_skip()
    left_ids = _plan_ids(join.left) if join.left is not None else frozenset([join.left_df._plan._plan_id])
    right_ids = _plan_ids(join.right) if join.right is not None else frozenset([join.other._plan._plan_id])
    left, right = join.left, join.right
    if left_skips and left is not None:
        left = _pruned(left, condition, join.columns[1], right_ids)
    if right_skips and right is not None:
        right = _pruned(right, condition, join.columns[0], left_ids)
    if left is join.left and right is join.right:
        return out, join
    join = replace(join, left=left, right=right)
    return _rebuild_join(out.sparkSession, join), join


def _rebuild_join(spark: Any, join: JoinLineage) -> Any:
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    left = rebuild(spark, join.left) if join.left is not None else join.left_df
    right = rebuild(spark, join.right) if join.right is not None else join.other
    df: Any = ConnectDataFrame.join(left, right, join.on, join.how)
    set_plan_id(df, join.plan_id)
    for step in join.filters:
        df = ConnectDataFrame.filter(df, *step.args)
        set_plan_id(df, step.plan_id)
    return df


def normalized_how(how: str | None) -> str | None:
    return how.lower().replace("_", "") if isinstance(how, str) else how
