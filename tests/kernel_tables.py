"""delta-kernel-rs's `cdf-table-with-dv` (tests/data/delta-kernel-rs, README there) and what it holds.

The expected changes are delta-kernel-rs's own (kernel/tests/integration/features/cdf.rs,
`cdf_with_deletion_vector`); the rows of each version follow from them.
"""

from __future__ import annotations

from pathlib import Path

CDF_WITH_DV = Path(__file__).resolve().parent / "data" / "delta-kernel-rs" / "cdf-table-with-dv"

# (value, _change_type, _commit_version), as delta-kernel-rs's test expects them.
CDF_WITH_DV_CHANGES = sorted(
    [(v, "insert", 0) for v in range(10)]
    + [(0, "delete", 1), (9, "delete", 1), (0, "insert", 2), (9, "insert", 2)]
    + [(v, "delete", 3) for v in (0, 1, 4, 5)]
    + [(1, "insert", 4), (4, "insert", 4)]
    + [(3, "delete", 5), (0, "insert", 5), (5, "insert", 5), (3, "insert", 6)]
)
CDF_WITH_DV_LATEST = 6


def cdf_with_dv_values(version: int) -> list[int]:
    """The table's values at `version`: the expected changes up to it, replayed."""
    live: set[int] = set()
    for value, change, v in sorted(CDF_WITH_DV_CHANGES, key=lambda c: c[2]):
        if v <= version:
            (live.add if change == "insert" else live.discard)(value)
    return sorted(live)
