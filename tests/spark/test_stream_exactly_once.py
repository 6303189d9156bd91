"""A streaming query into Delta, killed with SIGKILL around its commit, restarts without loss or duplicates.

A child Python process runs `readStream.json(src) -> writeStream.format("delta")` with a
checkpoint. In the child only, pydelta's commit step is patched to SIGKILL the process
(a) after the micro-batch's data files are written but before the commit, and (b) right
after the commit returns, before Spark records the batch as done. A fresh child then
restarts from the same checkpoint: Spark re-runs the unfinished batch, and the sink must
write it once (case a) or skip it (case b) thanks to txn(appId=query id, version=batch id).

The first test's source is a directory of JSON files; the second streams Delta table A
into Delta table B while another process keeps appending to A.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")]

ROOT = Path(__file__).resolve().parents[2]

CHILD = r'''
import os, signal, sys

src, table, ckpt, crash = sys.argv[1:5]

from pydelta.spark.session import local_session
from pydelta.txn.transaction import OptimisticTransaction

spark = local_session("exactly-once-child", cores=1, hive=False)
print("JVM", spark._jvm.java.lang.ProcessHandle.current().pid(), flush=True)

original_commit = OptimisticTransaction.commit


def commit(self, actions, operation, *args, **kwargs):
    """Die around the first streaming commit of this run (test child only)."""
    streaming = getattr(operation, "name", None) == "STREAMING UPDATE"
    if streaming and crash == "before":
        print("KILL before commit, data files:", sum(1 for a in actions if "add" in a), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    version = original_commit(self, actions, operation, *args, **kwargs)
    if streaming and crash == "after":
        print("KILL after commit", version, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    return version


OptimisticTransaction.commit = commit
q = (spark.readStream.schema("id LONG, batch STRING").json(src)
     .writeStream.format("delta").option("checkpointLocation", ckpt)
     .trigger(availableNow=True).start(table))
q.awaitTermination()
print("DONE", q.id, flush=True)
spark.stop()
'''


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(ROOT) + os.pathsep
            + os.environ.get("PYTHONPATH", ""),
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def run_child(tmp: Path, src: Path, table: Path, ckpt: Path, crash: str, *, child: str = CHILD) -> str:
    script = tmp / "child.py"
    script.write_text(child)
    proc = subprocess.run([sys.executable, str(script), str(src), str(table), str(ckpt), crash],
                          cwd=tmp, env=_env(), capture_output=True, text=True, timeout=300)
    out = proc.stdout
    jvm = [int(line.split()[1]) for line in out.splitlines() if line.startswith("JVM ")]
    if crash == "none":
        assert proc.returncode == 0 and "DONE" in out, out + proc.stderr[-3000:]
    else:
        assert proc.returncode == -signal.SIGKILL, out + proc.stderr[-3000:]
        assert f"KILL {crash}" in out, out
    if jvm:  # the JVM exits when its Python driver dies; wait so two never share the checkpoint
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                os.kill(jvm[0], 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
    return out


def add_file(src: Path, name: str, ids: range) -> None:
    tmp = src / f".{name}.tmp"
    tmp.write_text("".join(json.dumps({"id": i, "batch": name}) + "\n" for i in ids))
    tmp.rename(src / f"{name}.json")


def test_killed_around_commit_restarts_exactly_once(tmp_path: Path) -> None:
    import deltalake

    src, table, ckpt = tmp_path / "src", tmp_path / "table", tmp_path / "ckpt"
    src.mkdir()
    add_file(src, "f1", range(0, 3))
    run_child(tmp_path, src, table, ckpt, "none")  # batch 0 -> version 0

    add_file(src, "f2", range(3, 6))
    run_child(tmp_path, src, table, ckpt, "before")  # batch 1 written, killed before its commit
    log = table / "_delta_log"
    assert sorted(p.name for p in log.glob("*.json")) == ["00000000000000000000.json"]
    assert (ckpt / "offsets" / "1").exists() and not (ckpt / "commits" / "1").exists()

    run_child(tmp_path, src, table, ckpt, "after")  # batch 1 re-run and committed, killed before Spark notes it
    assert not (ckpt / "commits" / "1").exists()

    add_file(src, "f3", range(6, 9))
    run_child(tmp_path, src, table, ckpt, "none")  # batch 1 replayed (skipped by its txn), then batch 2

    commits = {}
    for path in sorted(log.glob("*.json")):
        commits[int(path.name[:20])] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert sorted(commits) == [0, 1, 2]
    infos = [next(a["commitInfo"] for a in commits[v] if "commitInfo" in a) for v in (0, 1, 2)]
    txns = [[a["txn"] for a in commits[v] if "txn" in a] for v in (0, 1, 2)]
    query_id = json.loads((ckpt / "metadata").read_text())["id"]
    assert [[(t["appId"], t["version"]) for t in tx] for tx in txns] == [
        [(query_id, 0)], [(query_id, 1)], [(query_id, 2)]]
    assert [i["operationParameters"]["epochId"] for i in infos] == ["0", "1", "2"]
    assert {i["operationParameters"]["queryId"] for i in infos} == {query_id}

    dt = deltalake.DeltaTable(str(table))
    got = dt.to_pyarrow_table()
    assert sorted(got.column("id").to_pylist()) == list(range(9))
    assert sorted(zip(got.column("batch").to_pylist(), got.column("id").to_pylist(), strict=True)) == sorted(
        [("f1", i) for i in range(3)] + [("f2", i) for i in range(3, 6)] + [("f3", i) for i in range(6, 9)])
    assert dt.version() == 2

    import pydelta

    assert pydelta.load_snapshot(str(table)).transactions == {query_id: 2}


# The same child, reading Delta table A instead of JSON files (one file per micro-batch, so
# the kills land between batches of a stream that has more to do).
DELTA_CHILD = CHILD.replace(
    """q = (spark.readStream.schema("id LONG, batch STRING").json(src)""",
    """q = (spark.readStream.format("delta").option("maxFilesPerTrigger", "1").load(src)""")

APPENDER = r'''
import sys, time
from tests.txn.writers import append

table, start, commits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for c in range(commits):
    append(table, [{"id": start + c * 5 + i, "part": str(c % 2), "value": "a"} for i in range(5)])
    time.sleep(2.0)  # spread over the first restarts of the stream
print("APPENDED", flush=True)
'''


def test_delta_to_delta_with_concurrent_appends_killed_around_commit(tmp_path: Path) -> None:
    """Stream A -> B; a second process appends to A throughout; kill -9 before and after a
    sink commit, restart: B holds every row of A exactly once."""
    import deltalake

    import pydelta
    from tests.txn.writers import append, create_table

    src, table, ckpt = tmp_path / "a", tmp_path / "b", tmp_path / "ckpt"
    create_table(str(src))
    append(str(src), [{"id": i, "part": "x", "value": "a"} for i in range(5)])
    script = tmp_path / "appender.py"
    script.write_text(APPENDER)
    appender = subprocess.Popen([sys.executable, str(script), str(src), "100", "12"], cwd=ROOT, env=_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_child(tmp_path, src, table, ckpt, "before", child=DELTA_CHILD)
        run_child(tmp_path, src, table, ckpt, "after", child=DELTA_CHILD)
        run_child(tmp_path, src, table, ckpt, "before", child=DELTA_CHILD)
    finally:
        out, err = appender.communicate(timeout=120)
    assert appender.returncode == 0 and "APPENDED" in out, err[-2000:]
    run_child(tmp_path, src, table, ckpt, "none", child=DELTA_CHILD)  # drains A to its end

    source_ids = sorted(deltalake.DeltaTable(str(src)).to_pyarrow_table().column("id").to_pylist())
    assert source_ids == list(range(5)) + list(range(100, 160))
    sink_ids = sorted(deltalake.DeltaTable(str(table)).to_pyarrow_table().column("id").to_pylist())
    assert sink_ids == source_ids  # each row of A once: nothing lost, nothing doubled
    query_id = json.loads((ckpt / "metadata").read_text())["id"]
    versions = pydelta.load_snapshot(str(table)).transactions[query_id]
    assert versions == pydelta.load_snapshot(str(table)).version  # one commit per batch, txn = batch id
