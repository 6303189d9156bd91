"""Helpers the witness tests share: read a table in both engines and compare.

pydelta's side runs in the test process (the `spark` fixture), delta-spark's in the witness
process (`ds`, see delta_spark.py); both come back in _canon's forms, so `==` compares them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydelta
from tests.witness import _canon
from tests.witness.delta_spark import canon

PYDELTA_ENGINE = "pydelta/"
DELTA_SPARK_ENGINE = "Delta-Lake/"


def read(spark: Any, path: str, version: int | None = None) -> dict:
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


# DESCRIBE HISTORY columns both engines fill from the commitInfo (userId, job, notebook and
# clusterId are Databricks' and stay null in both).
HISTORY_COLUMNS = ("version", "timestamp", "operation", "operationParameters", "readVersion",
                   "isolationLevel", "isBlindAppend", "operationMetrics", "userMetadata", "engineInfo")


def _history_rows(df: Any) -> list[dict]:
    rows = [{k: _canon.value(v) for k, v in r.asDict().items()} for r in df.collect()]
    return sorted(rows, key=lambda r: r["version"])


def same_history(spark: Any, ds: Any, path: Any) -> list[dict]:
    """DESCRIBE HISTORY lists the same versions, each with the same commitInfo columns, in
    both engines. Returns delta-spark's history."""
    theirs = ds.history(str(path))
    ours = _history_rows(spark.sql(f"DESCRIBE HISTORY delta.`{path}`"))
    assert [h["version"] for h in theirs] == [h["version"] for h in ours]
    for t, o in zip(theirs, ours):
        for k in HISTORY_COLUMNS:
            assert json.loads(json.dumps(o.get(k))) == t.get(k), f"history column {k} at version {t['version']}"
    return theirs


def same_at_every_version(spark: Any, ds: Any, path: Any, since: int = 0) -> int:
    """delta-spark and pydelta read the same rows and schema at every version of the
    table (from `since`), and DESCRIBE HISTORY lists the same versions with the same
    commitInfo columns. Returns the latest version."""
    path = str(path)
    latest = version(path)
    for v in range(since, latest + 1):
        theirs = ds.rows(path, version=v)
        ours = read(spark, path, v)
        assert ours["schema"] == theirs["schema"], f"schema at version {v}"
        assert ours["rows"] == theirs["rows"], f"rows at version {v}"
    history = same_history(spark, ds, path)
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
    for v in range(before + 1, latest + 1):
        assert read(spark, path, v) == ds.rows(path, version=v), f"version {v} written by delta-spark"
    assert DELTA_SPARK_ENGINE in (commit_info(path, latest).get("engineInfo") or "")
    return latest


def pydelta_writes_then_delta_spark_reads(spark: Any, ds: Any, path: Any, *statements: str) -> int:
    """pydelta runs the statements (one commit each); delta-spark reads the rows and schema
    pydelta reads afterwards, at every new version. Returns the latest version."""
    path = str(path)
    before = version(path)
    for s in statements:
        spark.sql(s.format(t=f"delta.`{path}`"))
    latest = version(path)
    assert latest == before + len(statements)
    for v in range(before + 1, latest + 1):
        assert ds.rows(path, version=v) == read(spark, path, v), f"version {v} written by pydelta"
        assert (commit_info(path, v).get("engineInfo") or "").startswith(PYDELTA_ENGINE)
    return latest
