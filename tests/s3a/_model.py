"""The s3a workload's operations (workload.py runs them in Spark SQL) and a plain-Python model
of what each leaves in its table, which the tests compare Spark's, deltalake's and delta-spark's
rows with. The SQL conditions and the Python predicates below say the same thing."""

from __future__ import annotations

T_ROWS = 300  # table t: id 0..299, p = id % 3, s = str(id); three files of 100 ids each
SKIP_BELOW = 50  # the filtered read: id < 50
T_DELETE, T_DELETE_PY = "id % 10 = 0", (lambda i: i % 10 == 0)
T_UPDATE, T_UPDATE_PY = "id BETWEEN 100 AND 119", (lambda i: 100 <= i <= 119)
T_MERGE_IDS = (290, 310)  # source: s = 'm'; matched: update s, not matched: insert

DV_ROWS = 200  # table dv (deletion vectors): id 0..199, p = id % 4, s = str(id)
DV_DELETE, DV_DELETE_PY = "id % 7 = 0", (lambda i: i % 7 == 0)
DV_UPDATE, DV_UPDATE_PY = "id < 30", (lambda i: i < 30)
DV_MERGE_IDS = (190, 210)  # source: s = 'm'; matched: delete, not matched: insert

EVENT_BATCHES = ((0, 50), (50, 100), (100, 150))  # events: appended in three writes, s = 'e<id>'


def table_t() -> list[list]:
    rows = {i: [i, i % 3, str(i)] for i in range(T_ROWS)}
    rows = {i: r for i, r in rows.items() if not T_DELETE_PY(i)}
    for i, r in rows.items():
        if T_UPDATE_PY(i):
            r[2] = "u"
    for i in range(*T_MERGE_IDS):
        if i in rows:
            rows[i][2] = "m"
        else:
            rows[i] = [i, i % 3, "m"]
    return sorted(rows.values())


def table_dv() -> list[list]:
    rows = {i: [i, i % 4, str(i)] for i in range(DV_ROWS) if not DV_DELETE_PY(i)}
    for i, r in rows.items():
        if DV_UPDATE_PY(i):
            r[2] = "u"
    for i in range(*DV_MERGE_IDS):
        if i in rows:
            del rows[i]
        else:
            rows[i] = [i, i % 4, "m"]
    return sorted(rows.values())


def events() -> list[list]:
    return sorted([i, f"e{i}"] for start, stop in EVENT_BATCHES for i in range(start, stop))


def first_events() -> list[list]:
    return sorted([i, f"e{i}"] for start, stop in EVENT_BATCHES[:2] for i in range(start, stop))
