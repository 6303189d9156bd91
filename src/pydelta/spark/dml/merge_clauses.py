"""The WHEN clauses of a MERGE: as the builder collects them, checked, and as planning resolves
them into the action codes the rows of the merge's joins carry.

Rows carry a small integer code rather than a clause so Spark can pick a row's clause in a
CASE WHEN and count actions in an aggregation: COPY keeps a target row as it is, DROP writes
nothing, and every clause has its own code (negative for deletes, so `code >= 0` means "write").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydelta.errors import DeltaAnalysisError
from pydelta.protocol.identity import identity_columns
from pydelta.protocol.schema import StructType
from pydelta.spark.base._typing import Column, DataFrame
from pydelta.spark.dml.update import split_name
from pydelta.spark.read.conditions import Condition

#: The column of a merge join holding each row's action code.
ACTION = "__pydelta_merge_action"
#: The action code of a target row kept unchanged.
COPY = 0
#: The action code of a row that writes nothing (a deleted row, a source row no clause inserts).
DROP = -1

KIND_NAMES = {"matched": "MATCHED", "notMatched": "NOT MATCHED", "notMatchedBySource": "NOT MATCHED BY SOURCE"}
#: Where each kind's codes start: codes stay unique across kinds and clauses.
CODE_BASE = {"matched": 0, "notMatchedBySource": 10_000, "notMatched": 20_000}


@dataclass(frozen=True)
class MergeClause:
    """One `when...` call of the builder, as given."""

    kind: str  # "matched" | "notMatched" | "notMatchedBySource"
    action: str  # "update" | "delete" | "insert"
    condition: Column | None = None
    assignments: dict[str, Any] | None = None  # None with star=True: updateAll / insertAll
    star: bool = False

    @property
    def clause_name(self) -> str:
        return KIND_NAMES[self.kind] + f" {self.action.upper()}"


@dataclass
class ResolvedClause:
    """A clause analyzed against the merge's join: its action code, condition and values typed
    for the (evolved) target schema."""

    clause: MergeClause
    code: int
    cond: Condition | None
    values: dict[str, Column]  # target column -> typed Column (update / insert)

    @property
    def history(self) -> dict[str, str]:
        """The clause as commit history records it (no predicate for an unconditional clause)."""
        out = {"predicate": self.cond.sql} if self.cond is not None else {}
        out["actionType"] = self.clause.action
        return out

    def hit(self) -> Column:
        """Whether the clause's condition holds for a row (NULL counts as false)."""
        from pyspark.sql import functions as F

        if self.cond is None:
            return F.lit(True)
        return F.coalesce(self.cond.column, F.lit(False))


def clause_code(clause: MergeClause, position: int) -> int:
    """The action code of the `position`-th (from 1) clause of its kind."""
    base = CODE_BASE[clause.kind]
    return base + position if clause.action != "delete" else -(base + position + 1_000)


def outcome_codes(resolved: list[ResolvedClause]) -> dict[str, list[int]]:
    """The action codes behind each row count the merge reports (copies are COPY)."""

    def codes(kind: str | None, action: str) -> list[int]:
        return [r.code for r in resolved if (kind is None or r.clause.kind == kind) and r.clause.action == action]

    return {
        "inserted": codes(None, "insert"),
        "matched_updated": codes("matched", "update"),
        "by_source_updated": codes("notMatchedBySource", "update"),
        "matched_deleted": codes("matched", "delete"),
        "by_source_deleted": codes("notMatchedBySource", "delete"),
    }


# ---- checks before planning ------------------------------------------------------------------------


def check_clauses(clauses: list[MergeClause]) -> None:
    """delta-spark's rules: at least one clause; only the last clause of a kind may omit its condition."""
    if not clauses:
        raise DeltaAnalysisError(
            "[DELTA_MERGE_MISSING_WHEN] There must be at least one WHEN clause in a MERGE statement.")
    for kind, code, label in (
        ("matched", "DELTA_NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION", "MATCHED"),
        ("notMatched", "DELTA_NON_LAST_NOT_MATCHED_CLAUSE_OMIT_CONDITION", "NOT MATCHED"),
        ("notMatchedBySource", "DELTA_NON_LAST_NOT_MATCHED_BY_SOURCE_CLAUSE_OMIT_CONDITION", "NOT MATCHED BY SOURCE"),
    ):
        of_kind = [c for c in clauses if c.kind == kind]
        if len(of_kind) > 1 and any(c.condition is None for c in of_kind[:-1]):
            raise DeltaAnalysisError(
                f"[{code}] When there are more than one {label} clauses in a MERGE statement, only the last "
                f"{label} clause can omit the condition."
            )


def check_identity_assignments(schema: StructType, clauses: list[MergeClause], source: DataFrame) -> None:
    """MERGE into a table with identity columns: no clause may set a GENERATED ALWAYS one
    (UPDATE: DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED, INSERT: ..._EXPLICIT_INSERT_...)."""
    source_names = {c.lower() for c in source.columns}
    for spec in identity_columns(schema):
        if spec.allow_explicit_insert:
            continue
        for c in clauses:
            if c.action not in ("update", "insert"):
                continue
            keys = {split_name(k)[-1].lower() for k in (c.assignments or {})}
            if spec.name.lower() in keys or (c.star and spec.name.lower() in source_names):
                if c.action == "update":
                    raise DeltaAnalysisError(f"[DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED] UPDATE on IDENTITY "
                                             f"column {spec.name} is not supported.")
                raise DeltaAnalysisError(f"[DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED] Providing values "
                                         f"for GENERATED ALWAYS AS IDENTITY column {spec.name} is not supported.")
