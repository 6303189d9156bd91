"""Helpers the witness tests share: read a table in both engines and compare.

pydelta's side runs in the test process (the `spark` fixture), delta-spark's in the witness
process (`ds`, see delta_spark.py); both come back in _canon's forms, so `==` compares them.
The two engines are separate processes, so their reads of many versions run at the same time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pydelta
from tests.witness import _canon
from tests.witness.delta_spark import canon

PYDELTA_ENGINE = "pydelta/"
DELTA_SPARK_ENGINE = "Delta-Lake/"


def read(spark: Any, path: Any, version: int | None = None) -> dict:
    """pydelta's read of the table (at `version`) in the witness's canonical form."""
    r = spark.read.format("delta")
    if version is not None:
        r = r.option("versionAsOf", version)
    return canon(r.load(str(path)))


def version(path: Any) -> int:
    return pydelta.load_snapshot(str(path)).version


def commits(path: Any) -> dict[int, list[dict]]:
    """Every commit file's actions, by version."""
    log = Path(path) / "_delta_log"
    return {int(p.stem): [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
            for p in sorted(log.glob("*.json")) if p.stem.isdigit()}


def commit_info(path: Any, v: int) -> dict:
    return next(a["commitInfo"] for a in commits(path)[v] if "commitInfo" in a)


def features(ds: Any, path: Any) -> set[str]:
    return set(ds.protocol(str(path))["tableFeatures"] or [])


def both(theirs: Callable[[], Any], ours: Callable[[], Any]) -> tuple[Any, Any]:
    """Run delta-spark's `theirs` (a witness call, in a thread) while pydelta runs `ours`."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = theirs()
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    th = threading.Thread(target=run)
    th.start()
    try:
        mine = ours()
    finally:
        th.join()
    if "error" in box:
        raise box["error"]
    return box["value"], mine


# DESCRIBE HISTORY columns both engines fill from the commitInfo (userId, job, notebook and
# clusterId are Databricks' and stay null in both).
HISTORY_COLUMNS = ("version", "timestamp", "operation", "operationParameters", "readVersion",
                   "isolationLevel", "isBlindAppend", "operationMetrics", "userMetadata", "engineInfo")


def _history(spark: Any, path: Any) -> list[dict]:
    df = spark.sql(f"DESCRIBE HISTORY delta.`{path}`")
    rows = [{k: _canon.value(v) for k, v in r.asDict().items()} for r in df.collect()]
    return json.loads(json.dumps(sorted(rows, key=lambda r: r["version"])))


def _same_history(theirs: list[dict], ours: list[dict]) -> None:
    assert [h["version"] for h in theirs] == [h["version"] for h in ours]
    for t, o in zip(theirs, ours, strict=True):
        for k in HISTORY_COLUMNS:
            assert o.get(k) == t.get(k), f"history column {k} at version {t['version']}"


def same_history(spark: Any, ds: Any, path: Any) -> list[dict]:
    """DESCRIBE HISTORY lists the same versions with the same commitInfo columns in both
    engines. Returns delta-spark's history."""
    theirs, ours = both(lambda: ds.history(str(path)), lambda: _history(spark, path))
    _same_history(theirs, ours)
    return theirs


def _same_versions(path: str, versions: list[int], theirs: list[dict], ours: list[dict], who: str) -> None:
    for v, t, o in zip(versions, theirs, ours, strict=True):
        assert o["schema"] == t["schema"], f"schema at version {v}{who}"
        assert o["rows"] == t["rows"], f"rows at version {v}{who}"


def same_versions(spark: Any, ds: Any, path: Any, versions: Iterable[int], who: str = "") -> list[dict]:
    """Both engines read the same rows and schema at each of `versions`, and DESCRIBE HISTORY
    lists the same versions with the same commitInfo columns. Returns delta-spark's history."""
    path = str(path)
    versions = list(versions)
    (theirs, their_history), (ours, our_history) = both(
        lambda: (ds.rows_many(path, versions), ds.history(path)),
        lambda: ([read(spark, path, v) for v in versions], _history(spark, path)))
    _same_versions(path, versions, theirs, ours, who)
    _same_history(their_history, our_history)
    return their_history


def same_at_every_version(spark: Any, ds: Any, path: Any, since: int = 0) -> int:
    """delta-spark and pydelta read the same rows and schema at every version of the
    table (from `since`), and DESCRIBE HISTORY lists the same versions with the same
    commitInfo columns. Returns the latest version."""
    latest = version(path)
    history = same_versions(spark, ds, path, range(since, latest + 1))
    assert [h["version"] for h in history] == list(range(latest + 1))
    return latest


def delta_spark_writes_then_pydelta_reads(spark: Any, ds: Any, path: Any, *statements: str) -> int:
    """delta-spark runs the statements; pydelta reads the rows and schema delta-spark
    reads afterwards, at every new version. Returns the latest version."""
    path = str(path)
    before = version(path)
    for s in statements:
        ds.sql(s.format(t=f"delta.`{path}`"), collect=False)
    latest = version(path)
    assert latest == before + len(statements)
    same_versions(spark, ds, path, range(before + 1, latest + 1), " written by delta-spark")
    for v in range(before + 1, latest + 1):
        assert DELTA_SPARK_ENGINE in (commit_info(path, v).get("engineInfo") or "")
    return latest


def pydelta_writes_then_delta_spark_reads(spark: Any, ds: Any, path: Any, *statements: str) -> int:
    """pydelta runs the statements (one commit each); delta-spark reads the rows and schema
    pydelta reads afterwards, at every new version (and the same history). Returns the
    latest version."""
    path = str(path)
    before = version(path)
    for s in statements:
        spark.sql(s.format(t=f"delta.`{path}`"))
    latest = version(path)
    assert latest == before + len(statements)
    same_versions(spark, ds, path, range(before + 1, latest + 1), " written by pydelta")
    for v in range(before + 1, latest + 1):
        assert (commit_info(path, v).get("engineInfo") or "").startswith(PYDELTA_ENGINE)
    return latest


ROW_TRACKING_READ = ("SELECT *, _metadata.row_id AS row_id, _metadata.row_commit_version AS row_commit_version "
                     "FROM delta.`{p}` VERSION AS OF {v}")


def same_row_tracking(spark: Any, ds: Any, path: str, since: int) -> None:
    """Both engines read the same rows and schema, each row with the same stable row ID and
    row commit version, at every version from `since`."""
    versions = range(since, version(path) + 1)
    theirs, ours = both(lambda: [ds.sql(ROW_TRACKING_READ.format(p=path, v=v)) for v in versions],
                        lambda: [canon(spark.sql(ROW_TRACKING_READ.format(p=path, v=v))) for v in versions])
    for v, t, o in zip(versions, theirs, ours, strict=True):
        assert o == t, f"rows and row IDs at version {v}"
        ids = [r[-2] for r in t["rows"]]
        assert len(ids) == len(set(ids)) and None not in ids, f"row IDs unique at version {v}"
