"""A join with a Delta read over Spark Connect whose later filters skip each side's files.

`a.join(b, ...).filter(cond)`: a classic session's optimizer pushes `cond` into each scan; a
Connect client keeps the join's parts instead (each Delta side's lineage, the other
DataFrame, `on`, `how`, the filters above it). A filter is translated over each side that may
skip: one the join does not make null-supplying (the right of a left join, the left of a
right join, both of a full join) or hide (the right of a semi/anti join), since then every row
a skipped file holds is one the filter rejects anyway. A reference belongs to a side by its
DataFrame's plan id (`a.col`), its alias (`"a.col"` after `a.alias("a")`), or, unqualified,
by being no column of any other relation in the join. A side may itself be such a join
(`a.join(b).join(c)`): the filter is then translated over each of its sides that both joins
let skip. When a side's files shrink, the join is built again over the pruned scans under the
same plan ids, and the filters are replayed on top. A join whose left side is not a Delta read
is seen through a hook on Connect's DataFrame.join (`connect_scan.install_join_hook`), which
changes nothing unless the right side is one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pydelta.spark.read.connect.lineage import Lineage, Step, rebuild, set_plan_id

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

    left: Side  # the left side's lineage, when it is a Delta read or such a join
    right: Side  # the right side's
    left_df: Any  # the left DataFrame as given
    other: Any  # the right DataFrame as given
    on: Any
    how: str | None  # normalized (normalized_how)
    plan_id: int  # the join node's
    filters: tuple[Step, ...] = ()  # a Step of each filter above the join
    columns: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # each side's output columns, once asked

    def may_skip(self) -> tuple[bool, bool]:
        return _PRESERVED.get(self.how or "inner", (False, False))


Side = Lineage | JoinLineage | None  # a Delta read, a join with one, or any other DataFrame


def _side_ids(side: Side, df: Any) -> frozenset[int]:
    """The plan ids a column reference taken from a side's DataFrames may carry."""
    if isinstance(side, Lineage):
        return frozenset([side.scan_id, *(step.plan_id for step in side.steps)])
    if isinstance(side, JoinLineage):
        return (_side_ids(side.left, side.left_df) | _side_ids(side.right, side.other)
                | frozenset([side.plan_id, *(step.plan_id for step in side.filters)]))
    return frozenset([df._plan._plan_id])


def _with_columns(join: JoinLineage) -> JoinLineage:
    if join.columns is None:  # two schema round trips, on the first filter only
        return replace(join, columns=(tuple(join.left_df.columns), tuple(join.other.columns)))
    return join


def _pruned_side(side: Side, condition: Any, other_columns: tuple[str, ...], theirs: frozenset[int]) -> Side:
    """The side over the files `condition` leaves it (itself when none drop out)."""
    if isinstance(side, JoinLineage):
        return _pruned_join(side, condition, other_columns, theirs)
    if side is None:
        return None
    from pydelta.spark.read.connect.expressions import translate_join_side

    predicate = translate_join_side(condition, side.schema(), side.alias, list(other_columns),
                                    (_side_ids(side, None), theirs))
    return side.pruned(predicate)


def _pruned_join(join: JoinLineage, condition: Any, outer_columns: tuple[str, ...],
                 outer_ids: frozenset[int]) -> JoinLineage:
    """`join` with each side it lets skip over the files `condition` leaves it; the columns and
    plan ids of the relations joined around it (`outer_*`) are the other side's too."""
    join = _with_columns(join)
    assert join.columns is not None
    left_skips, right_skips = join.may_skip()
    left_ids, right_ids = _side_ids(join.left, join.left_df), _side_ids(join.right, join.other)
    left, right = join.left, join.right
    if left_skips:
        left = _pruned_side(left, condition, join.columns[1] + outer_columns, right_ids | outer_ids)
    if right_skips:
        right = _pruned_side(right, condition, join.columns[0] + outer_columns, left_ids | outer_ids)
    if left is join.left and right is join.right:
        return join
    return replace(join, left=left, right=right)


def filter_join(join: JoinLineage, condition: Any, out: Any) -> tuple[Any, JoinLineage]:
    """`out` (the joined DataFrame's `filter(condition)`) over fewer files where the condition
    allows, and the join lineage that describes it."""
    join = _with_columns(replace(join, filters=(*join.filters, Step("filter", (condition,), out._plan._plan_id))))
    pruned = _pruned_join(join, condition, (), frozenset())
    if pruned is join:
        return out, join
    return _rebuild_join(out.sparkSession, pruned), pruned


def _rebuilt_side(spark: Any, side: Side, df: Any) -> Any:
    if isinstance(side, JoinLineage):
        return _rebuild_join(spark, side)
    return rebuild(spark, side) if side is not None else df


def _rebuild_join(spark: Any, join: JoinLineage) -> Any:
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    left = _rebuilt_side(spark, join.left, join.left_df)
    right = _rebuilt_side(spark, join.right, join.other)
    df: Any = ConnectDataFrame.join(left, right, join.on, join.how)
    set_plan_id(df, join.plan_id)
    for step in join.filters:
        df = ConnectDataFrame.filter(df, *step.args)
        set_plan_id(df, step.plan_id)
    return df


def normalized_how(how: str | None) -> str | None:
    return how.lower().replace("_", "") if isinstance(how, str) else how
