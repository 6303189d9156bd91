"""Real OS processes racing for the same table: every commit lands exactly once, nothing is lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pydelta

from .writers import append, create_table, deltalake_rows, rows_of, touch, wait_for

ROOT = Path(__file__).resolve().parents[2]
WORKERS = 8
APPENDS = 25

pytestmark = pytest.mark.slow


def spawn(*args: str) -> subprocess.Popen:
    """A writer process running tests.txn.writers (importable from the project root)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.txn.writers", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def result_of(proc: subprocess.Popen, timeout: float = 120) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"writer failed ({proc.returncode}):\n{err}"
    return json.loads(out.strip().splitlines()[-1])


def test_parallel_blind_appends_all_land_exactly_once(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    started = time.monotonic()
    procs = [spawn("append-loop", root, str(w), str(APPENDS)) for w in range(WORKERS)]
    results = [result_of(p) for p in procs]
    elapsed = time.monotonic() - started

    total = WORKERS * APPENDS
    versions = [v for r in results for v in r["versions"]]
    assert sorted(versions) == list(range(1, total + 1)), "every commit got its own version"
    for r in results:
        assert r["versions"] == sorted(r["versions"]), "a worker's commits are ordered"

    log = Path(root) / "_delta_log"
    commits = sorted(p.name for p in log.iterdir() if p.name.endswith(".json") and not p.name.startswith("."))
    assert commits == [f"{v:020d}.json" for v in range(total + 1)]
    seen_paths: set[str] = set()
    for v in range(1, total + 1):
        lines = [json.loads(x) for x in (log / f"{v:020d}.json").read_text().splitlines() if x.strip()]
        assert "commitInfo" in lines[0]
        adds = [a["add"] for a in lines if "add" in a]
        assert len(adds) == 1 and adds[0]["path"] not in seen_paths
        seen_paths.add(adds[0]["path"])
        assert lines[0]["commitInfo"]["isBlindAppend"] is True
        assert lines[0]["commitInfo"]["readVersion"] < v

    snap = pydelta.load_snapshot(root)
    assert snap.version == total
    assert snap.num_files == total
    assert sum(snap.files().column("num_records").to_pylist()) == total * 3
    rows = rows_of(root)
    assert len(rows) == total * 3
    assert len({r[0] for r in rows}) == total * 3  # every row exactly once
    expected_ids = {w * 100_000 + i * 10 + k for w in range(WORKERS) for i in range(APPENDS) for k in range(3)}
    assert {r[0] for r in rows} == expected_ids

    import deltalake

    dt = deltalake.DeltaTable(root)
    assert dt.version() == total
    assert dt.to_pyarrow_table().num_rows == total * 3
    assert deltalake_rows(root)[1] == rows
    print(f"{total} commits from {WORKERS} processes in {elapsed:.1f}s")


def test_concurrent_overwrite_of_one_partition_has_one_winner(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    append(root, [{"id": 1, "part": "a", "value": "old-a1"}])
    append(root, [{"id": 2, "part": "a", "value": "old-a2"}])
    append(root, [{"id": 3, "part": "b", "value": "keep-b"}])
    sync = tmp_path / "sync"
    sync.mkdir()
    procs = [spawn("overwrite-partition", root, "a", str(sync), str(w)) for w in (1, 2)]
    try:
        for w in (1, 2):
            assert wait_for(str(sync / f"ready-{w}"), 60), "writer did not get ready"
        touch(str(sync / "go"))  # both read version 3; now both commit at once
        results = sorted((result_of(p) for p in procs), key=lambda r: r["status"])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()

    loser, winner = results  # "conflict" sorts before "ok"
    assert winner["status"] == "ok" and loser["status"] == "conflict", results
    assert winner["read_version"] == loser["read_version"] == 3
    assert winner["version"] == 4
    # delta-spark checks appends first: the winner's new file is in the partition the loser read.
    assert loser["error"] == "ConcurrentAppendException", loser
    assert "committed at version 4" in loser["message"] and "[part=a]" in loser["message"]

    snap = pydelta.load_snapshot(root)
    assert snap.version == 4, "the loser must not have committed anything"
    w = winner["worker"]
    expected = {(9_000_000 + w * 10, "a", f"overwrite-by-{w}"), (9_000_000 + w * 10 + 1, "a", f"overwrite-by-{w}"),
                (3, "b", "keep-b")}
    assert set(rows_of(root)) == expected
    version, dl_rows = deltalake_rows(root)
    assert version == 4 and set(dl_rows) == expected
    live = {f["path"] for f in snap.files().to_pylist()}
    assert winner["data_file"] in live and loser["data_file"] not in live
