"""pydelta and delta-spark committing to one table at the same time.

Writers: delta-spark (threads inside the witness process), pydelta through Spark (threads in
this test process) and pydelta without Spark (a separate OS process, _pydelta_appender.py).
- Blind appends from all of them at once: every commit lands once, at contiguous versions,
  each commit's engineInfo names its writer, and the rows are exactly the appended ones as
  pydelta, delta-spark and deltalake read them.
- Conflicting DML on the same files: a DELETE/UPDATE that read a version another engine then
  rewrote fails on either side with a concurrent-modification error and commits nothing;
  under a retry loop, both engines' UPDATEs of the same rows all land (a missed conflict
  would lose an update or resurrect a deleted row, and the exact final rows would differ).

A Python UDF in the losing statement's condition (a "gate") holds it after it read the
table and before it commits, until the other engine has committed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import pydelta
from pydelta import errors
from pydelta.errors import DeltaConcurrentModificationException
from tests.witness._compare import commit_info, commits, read, version
from tests.witness.delta_spark import WitnessError

pytestmark = [pytest.mark.spark, pytest.mark.witness, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
N = 5  # commits per writer


def _wait_for(path: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear in {timeout} s"
        time.sleep(0.05)


# pydelta's concurrent-modification exceptions and delta-spark's conditions for them
PYDELTA_CONDITION = {
    errors.ConcurrentAppendException: "DELTA_CONCURRENT_APPEND",
    errors.ConcurrentDeleteReadException: "DELTA_CONCURRENT_DELETE_READ",
    errors.ConcurrentDeleteDeleteException: "DELTA_CONCURRENT_DELETE_DELETE",
    errors.ConcurrentTransactionException: "DELTA_CONCURRENT_TRANSACTION",
    errors.MetadataChangedException: "DELTA_METADATA_CHANGED",
    errors.ProtocolChangedException: "DELTA_PROTOCOL_CHANGED",
    errors.ConcurrentWriteException: "DELTA_CONCURRENT_WRITE",
}


def _writer(info: dict) -> str:
    engine = info.get("engineInfo") or ""
    if "Delta-Lake/" in engine:
        return "delta-spark"
    if engine.startswith("pydelta/") and "appender-" in engine:
        return "pydelta-process"
    if engine.startswith("pydelta/"):
        return "pydelta-spark"
    return f"unknown: {engine!r}"


def _deltalake_rows(path: str, columns: list[str]) -> list[list]:
    """The rows as deltalake (delta-rs) reads them: its query engine applies deletion vectors."""
    import deltalake
    import pyarrow as pa

    table = pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
                     .execute(f"SELECT {', '.join(columns)} FROM t").read_all())
    data = {c: table.column(c).to_pylist() for c in columns}
    return sorted([data[c][i] for c in columns] for i in range(table.num_rows))


# -- delta-spark's side: threads inside the witness process --------------------------------
DS_APPENDS = """
import os, threading, time
def run(t):
    while not os.path.exists(req['go']):
        time.sleep(0.02)
    for i in range(req['n']):
        spark.sql(f"INSERT INTO delta.`{req['path']}` VALUES "
                  + ", ".join(f"({5000 + t * 1000 + i * 10 + k}, 'ds', 'ds{t}-{i}')" for k in range(3)))
state['appenders'] = []
for t in range(2):
    th = threading.Thread(target=run, args=(t,), daemon=True)
    th.start()
    state['appenders'].append(th)
"""
DS_JOIN = """
for th in state.pop(req['key']):
    th.join(600)
    assert not th.is_alive()
result = state.pop(req['key'] + '-errors', [])
"""


def test_blind_appends_from_both_engines_at_once(spark, delta_spark, tmp_path):
    path = str(tmp_path / "t")
    go = tmp_path / "go"
    delta_spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, part STRING, value STRING) USING delta "
                    "PARTITIONED BY (part)", collect=False)                                    # v0
    delta_spark.exec(DS_APPENDS, path=path, go=str(go), n=N)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    appender = subprocess.Popen([sys.executable, "-m", "tests.witness._pydelta_appender", path, "1", str(N), str(go)],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    errors: list[BaseException] = []

    def pydelta_spark_appends():
        try:
            _wait_for(go)
            for i in range(N):
                spark.sql(f"INSERT INTO delta.`{path}` VALUES "
                          + ", ".join(f"({9000 + i * 10 + k}, 'pyspark', 'pys-{i}')" for k in range(3)))
        except BaseException as e:  # reported below
            errors.append(e)

    ours = threading.Thread(target=pydelta_spark_appends)
    ours.start()
    try:
        go.touch()  # all writers start together
        ours.join(600)
        out, err = appender.communicate(timeout=600)
    finally:
        if appender.poll() is None:
            appender.kill()
    assert appender.returncode == 0, err[-3000:]
    assert not errors, errors
    delta_spark.exec(DS_JOIN, key="appenders")

    total = 4 * N
    assert sorted(json.loads(out.strip().splitlines()[-1])["versions"]) == \
        [v for v in range(1, total + 1) if _writer(commit_info(path, v)) == "pydelta-process"]
    log = commits(path)
    assert sorted(log) == list(range(total + 1)), "contiguous versions, one commit file each"
    writers = [_writer(commit_info(path, v)) for v in range(1, total + 1)]
    assert sorted(writers) == sorted(["delta-spark"] * 2 * N + ["pydelta-process"] * N + ["pydelta-spark"] * N)
    for v in range(1, total + 1):
        info = commit_info(path, v)
        assert info["isBlindAppend"] is True and info["readVersion"] < v, (v, info)
        assert len([a for a in log[v] if "add" in a]) >= 1 and not [a for a in log[v] if "remove" in a]
    retried = [v for v in range(1, total + 1) if commit_info(path, v)["readVersion"] < v - 1]
    print(f"{len(retried)} of {total} commits landed above a version they had not read: {retried}")

    expected = sorted([5000 + t * 1000 + i * 10 + k, "ds", f"ds{t}-{i}"]
                      for t in range(2) for i in range(N) for k in range(3))
    expected += sorted([1000 + i * 10 + k, "py", f"py1-{i}"] for i in range(N) for k in range(3))
    expected += sorted([9000 + i * 10 + k, "pyspark", f"pys-{i}"] for i in range(N) for k in range(3))
    expected.sort()
    assert sorted(read(spark, path)["rows"]) == expected
    assert sorted(delta_spark.rows(path)["rows"]) == expected
    assert _deltalake_rows(path, ["id", "part", "value"]) == expected
    assert pydelta.load_snapshot(path).version == total


# -- conflicting DML ----------------------------------------------------------------------------
DS_GATE = """
import os, time
ready, go = req['ready'], req['go']
def gate(x):
    if not os.path.exists(go):
        open(ready, 'w').close()
        deadline = time.time() + 300
        while not os.path.exists(go) and time.time() < deadline:
            time.sleep(0.02)
    return True
spark.udf.register(req['name'], gate, 'boolean')
"""


def _py_gate(spark, name: str, ready: Path, go: Path) -> None:
    ready_s, go_s = str(ready), str(go)

    def gate(x):
        import os
        import time

        if not os.path.exists(go_s):
            open(ready_s, "w").close()
            deadline = time.time() + 300
            while not os.path.exists(go_s) and time.time() < deadline:
                time.sleep(0.02)
        return True

    spark.udf.register(name, gate, "boolean")


def _condition(error: WitnessError) -> str | None:
    """delta-spark's error condition, without its subclass (`DELTA_CONCURRENT_APPEND`): delta's
    io.delta.exceptions reach Python as Py4JJavaErrors, their condition only in the text."""
    found = error.error_class or next(iter(re.findall(r"\[(DELTA_[A-Z_]+)[.\]]", str(error))), None)
    return found.split(".")[0] if found else None


def _in_thread(fn, *args) -> tuple[threading.Thread, list]:
    box: list = []

    def run():
        try:
            box.append(("ok", fn(*args)))
        except BaseException as e:
            box.append(("error", e))

    th = threading.Thread(target=run)
    th.start()
    return th, box


def _delta_spark_loses(spark, ds, path: str, sync: Path, name: str, theirs: str, ours: str) -> str:
    """delta-spark runs `theirs` (gated: held after its read), pydelta commits `ours`
    meanwhile; delta-spark's commit must fail. Returns delta-spark's error class."""
    ready, go = sync / f"{name}.ready", sync / f"{name}.go"
    ds.exec(DS_GATE, name=name, ready=str(ready), go=str(go))
    before = version(path)
    th, box = _in_thread(ds.sql, theirs.format(t=f"delta.`{path}`", gate=name), False)
    try:
        _wait_for(ready)
        spark.sql(ours.format(t=f"delta.`{path}`"))
    finally:
        go.touch()
        th.join(600)
    assert version(path) == before + 1, "delta-spark's statement committed nothing"
    assert _writer(commit_info(path, before + 1)) == "pydelta-spark"
    ((status, error),) = box
    assert status == "error" and isinstance(error, WitnessError), box
    assert _condition(error) in PYDELTA_CONDITION.values(), error
    return _condition(error)


def _pydelta_loses(spark, ds, path: str, sync: Path, name: str, ours: str, theirs: str) -> type:
    """pydelta runs `ours` (gated), delta-spark commits `theirs` meanwhile; pydelta's commit
    must fail. Returns pydelta's exception type."""
    ready, go = sync / f"{name}.ready", sync / f"{name}.go"
    _py_gate(spark, name, ready, go)
    before = version(path)
    th, box = _in_thread(spark.sql, ours.format(t=f"delta.`{path}`", gate=name))
    try:
        _wait_for(ready)
        ds.sql(theirs.format(t=f"delta.`{path}`"), collect=False)
    finally:
        go.touch()
        th.join(600)
    assert version(path) == before + 1, "pydelta's statement committed nothing"
    assert _writer(commit_info(path, before + 1)) == "delta-spark"
    ((status, error),) = box
    assert status == "error" and isinstance(error, DeltaConcurrentModificationException), box
    return type(error)


DS_UPDATES = """
import os, threading, time
def run():
    done, conflicts = 0, 0
    while not os.path.exists(req['go']):
        time.sleep(0.02)
    while done < req['n']:
        try:
            spark.sql(f"UPDATE delta.`{req['path']}` SET b = b + 1 WHERE id < 10")
            done += 1
        except Exception as e:
            if 'CONCURRENT' not in str(getattr(e, 'getCondition', lambda: '')() or e).upper():
                state['updaters-errors'].append(repr(e)[:2000])
                return
            conflicts += 1
    state['updaters-errors'].append({'done': done, 'conflicts': conflicts})
state['updaters-errors'] = []
th = threading.Thread(target=run, daemon=True)
th.start()
state['updaters'] = [th]
"""


@pytest.mark.parametrize("dvs", [True, False], ids=["deletion-vectors", "copy-on-write"])
def test_conflicting_dml_is_detected_on_both_sides(spark, delta_spark, tmp_path, dvs):
    path = str(tmp_path / "t")
    sync = tmp_path / "sync"
    sync.mkdir()
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, a INT, b INT) USING delta "
              f"TBLPROPERTIES ('delta.enableDeletionVectors' = '{str(dvs).lower()}')")            # v0
    spark.range(0, 20, 1, 1).selectExpr("id", "0 AS a", "0 AS b").write.format("delta").mode("append").save(path)  # v1
    rows = {i: [0, 0] for i in range(20)}

    # Each case both ways round: the engine held after its read loses, with the same
    # conflict as the other engine reports in its place.
    # delta-spark's UPDATE read version 1; pydelta's UPDATE of the same file commits first
    theirs = _delta_spark_loses(spark, delta_spark, path, sync, "ds_gate1",
                                "UPDATE {t} SET b = b + 1 WHERE id < 10 AND {gate}(id)",
                                "UPDATE {t} SET a = a + 1 WHERE id < 10")                        # v2
    for i in range(10):
        rows[i][0] += 1
    # pydelta's UPDATE read version 2; delta-spark's UPDATE of the same rows commits first
    ours = _pydelta_loses(spark, delta_spark, path, sync, "py_gate1",
                          "UPDATE {t} SET a = a + 1 WHERE id < 10 AND {gate}(id)",
                          "UPDATE {t} SET b = b + 1 WHERE id < 10")                              # v3
    for i in range(10):
        rows[i][1] += 1
    assert PYDELTA_CONDITION[ours] == theirs
    # DELETE against DELETE of the same row
    theirs = _delta_spark_loses(spark, delta_spark, path, sync, "ds_gate2",
                                "DELETE FROM {t} WHERE id = 3 AND {gate}(id)", "DELETE FROM {t} WHERE id = 3")  # v4
    del rows[3]
    ours = _pydelta_loses(spark, delta_spark, path, sync, "py_gate2",
                          "DELETE FROM {t} WHERE id = 4 AND {gate}(id)", "DELETE FROM {t} WHERE id = 4")  # v5
    del rows[4]
    assert PYDELTA_CONDITION[ours] == theirs
    # an UPDATE held over a concurrent DELETE of a row it would rewrite: no resurrection
    theirs = _delta_spark_loses(spark, delta_spark, path, sync, "ds_gate3",
                                "UPDATE {t} SET b = b + 1 WHERE id >= 5 AND {gate}(id)",
                                "DELETE FROM {t} WHERE id = 15")                                 # v6
    del rows[15]
    ours = _pydelta_loses(spark, delta_spark, path, sync, "py_gate3",
                          "UPDATE {t} SET a = a + 1 WHERE id >= 5 AND {gate}(id)",
                          "DELETE FROM {t} WHERE id = 16")                                       # v7
    del rows[16]
    assert PYDELTA_CONDITION[ours] == theirs
    assert version(path) == 7
    expected = sorted([i, a, b] for i, (a, b) in rows.items())
    assert sorted(read(spark, path)["rows"]) == sorted(delta_spark.rows(path)["rows"]) == expected

    # Both engines UPDATE the same rows over and over at once, retrying when they lose.
    go = sync / "go"
    delta_spark.exec(DS_UPDATES, path=path, go=str(go), n=N)
    done, conflicts = 0, 0
    go.touch()
    try:
        while done < N:
            try:
                spark.sql(f"UPDATE delta.`{path}` SET a = a + 1 WHERE id < 10")
                done += 1
            except DeltaConcurrentModificationException:
                conflicts += 1
    finally:
        (theirs,) = delta_spark.exec(DS_JOIN, key="updaters")
    assert theirs["done"] == N, theirs
    print(f"retry loop: pydelta lost {conflicts} times, delta-spark {theirs['conflicts']} times")
    for i in rows:
        if i < 10:
            rows[i][0] += N
            rows[i][1] += N
    expected = sorted([i, a, b] for i, (a, b) in rows.items())
    assert version(path) == 7 + 2 * N, "contiguous versions, no lost or extra commit"
    assert sorted(read(spark, path)["rows"]) == expected
    assert sorted(delta_spark.rows(path)["rows"]) == expected
    assert _deltalake_rows(path, ["id", "a", "b"]) == expected
    writers = [_writer(commit_info(path, v)) for v in range(8, 8 + 2 * N)]
    assert sorted(writers) == ["delta-spark"] * N + ["pydelta-spark"] * N
    assert sorted(commits(path)) == list(range(8 + 2 * N))
