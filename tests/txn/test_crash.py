"""A writer killed with SIGKILL at the worst moments leaves a readable table with the same rows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pydelta
from pydelta.log.last_checkpoint import make_last_checkpoint

from .writers import BLOCK_ENV, append, create_table, deltalake_rows, rows_of, wait_for

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")]


def spawn(args: list[str], extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **(extra_env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.txn.writers", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def commit_files(root: str) -> list[str]:
    return sorted(p.name for p in (Path(root) / "_delta_log").iterdir()
                  if p.name.endswith(".json") and not p.name.startswith("."))


def test_kill_after_data_file_before_commit(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    append(root, [{"id": 1, "part": "a", "value": "x"}, {"id": 2, "part": "b", "value": "y"}])
    append(root, [{"id": 3, "part": "a", "value": "z"}])
    before_rows = rows_of(root)
    before_log = commit_files(root)

    gate = str(tmp_path / "never-created")
    proc = spawn(["append", root, "1"], {BLOCK_ENV: gate})
    try:
        assert wait_for(gate + ".ready", 60), proc.stderr.read() if proc.poll() is not None else "child not ready"
    finally:
        kill(proc)
    orphan = Path(root) / Path(gate + ".ready").read_text()
    assert orphan.exists(), "the child wrote its data file before it was killed"

    assert commit_files(root) == before_log
    snap = pydelta.load_snapshot(root)
    assert snap.version == 2
    assert rows_of(root) == before_rows
    assert deltalake_rows(root) == (2, before_rows)
    assert str(orphan.relative_to(root)) not in {f["path"] for f in snap.files().to_pylist()}

    # The table is still writable and the next commit takes the next version.
    assert append(root, [{"id": 4, "part": "b", "value": "after"}]) == 3
    assert len(rows_of(root)) == len(before_rows) + 1


def log_names(root: str) -> list[str]:
    return sorted(os.listdir(Path(root) / "_delta_log"))


@pytest.mark.parametrize("freeze_at", [1, 2], ids=["before-checkpoint-file", "before-last-checkpoint-hint"])
def test_kill_during_checkpoint_write(tmp_path: Path, freeze_at: int) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.checkpointInterval": "2"})
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    before_rows = rows_of(root)
    signal_file = str(tmp_path / "checkpoint-frozen")
    proc = spawn(["checkpoint-crash", root, signal_file, str(freeze_at)])
    try:
        frozen = wait_for(signal_file, 60)
        if not frozen:
            proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            kill(proc)
    assert frozen, "the checkpoint writer published fewer files than this crash point needs"
    frozen_at = Path(Path(signal_file).read_text()).name

    # Version 2 was committed before its checkpoint started: visible and intact.
    expected = sorted([*before_rows, (7_000_000, "cp", "checkpointed")], key=repr)
    snap = pydelta.load_snapshot(root)
    assert snap.version == 2
    assert rows_of(root) == expected
    assert deltalake_rows(root) == (2, expected)
    if freeze_at == 1:
        assert frozen_at not in log_names(root), "the checkpoint file must not be visible yet"
    # Writing goes on, and the next checkpoint (version 4) is written normally.
    assert append(root, [{"id": 8, "part": "a", "value": "after-3"}]) == 3
    assert append(root, [{"id": 9, "part": "a", "value": "after-4"}]) == 4
    final = pydelta.load_snapshot(root)
    assert final.segment.checkpoint is not None and final.segment.checkpoint.version == 4
    assert deltalake_rows(root) == (4, rows_of(root))
    assert len(rows_of(root)) == len(expected) + 2


def _half_parquet() -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"x": list(range(100))}), sink)
    data = sink.getvalue().to_pybytes()
    return data[: len(data) // 2]


def test_partial_multipart_checkpoint_with_stale_hint(tmp_path: Path) -> None:
    """A writer killed while writing a 2-part checkpoint at version 20: part 1 truncated, part 2
    only a hidden temp file, and `_last_checkpoint` still naming the previous checkpoint (or absent)."""
    root = str(tmp_path / "t")
    create_table(root)  # default interval: the real checkpoint writer (if any) checkpoints version 10
    for i in range(1, 22):
        append(root, [{"id": i, "part": "a" if i % 2 else "b", "value": f"v{i}"}])
    log = Path(root) / "_delta_log"
    hint_before = (log / "_last_checkpoint").read_bytes() if (log / "_last_checkpoint").exists() else None
    for name in os.listdir(log):  # forget checkpoint 20 if the real writer made one
        if name.startswith(f"{20:020d}.checkpoint"):
            os.unlink(log / name)
    if hint_before is not None and json.loads(hint_before)["version"] == 20:
        (log / "_last_checkpoint").write_text(make_last_checkpoint(10, 12).to_json())
    before_rows = rows_of(root)

    (log / f"{20:020d}.checkpoint.{1:010d}.{2:010d}.parquet").write_bytes(_half_parquet())
    (log / f".{20:020d}.checkpoint.{2:010d}.{2:010d}.parquet.0f0f.tmp").write_bytes(_half_parquet())

    snap = pydelta.load_snapshot(root)
    assert snap.version == 21
    assert snap.segment.checkpoint is None or snap.segment.checkpoint.version == 10
    assert rows_of(root) == before_rows
    assert deltalake_rows(root) == (21, before_rows)
    assert rows_of(root, version=20) == [r for r in before_rows if r[0] != 21]
    assert append(root, [{"id": 22, "part": "a", "value": "after"}]) == 22
    assert len(rows_of(root)) == len(before_rows) + 1


def test_hint_naming_an_incomplete_checkpoint_falls_back_to_listing(tmp_path: Path) -> None:
    """Only a non-atomic writer leaves this; pydelta lists the log instead of trusting the hint.
    (delta-rs refuses such a table: "Had a _last_checkpoint hint but didn't find any checkpoints".)"""
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.checkpointInterval": "1000"})
    for i in range(1, 12):
        append(root, [{"id": i, "part": "a", "value": f"v{i}"}])
    before_rows = rows_of(root)
    log = Path(root) / "_delta_log"
    (log / f"{10:020d}.checkpoint.{1:010d}.{3:010d}.parquet").write_bytes(_half_parquet())
    (log / "_last_checkpoint").write_text(make_last_checkpoint(10, 12, parts=3).to_json())
    snap = pydelta.load_snapshot(root)
    assert snap.version == 11 and snap.segment.checkpoint is None
    assert rows_of(root) == before_rows
    (log / "_last_checkpoint").write_text(json.dumps({"version": 50, "size": 3}))  # past the log
    assert pydelta.load_snapshot(root).version == 11
    assert rows_of(root) == before_rows
