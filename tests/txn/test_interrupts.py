"""Writers stopped in the middle (issue 44): kill -9 during VACUUM, Ctrl-C (SIGINT) and SIGTERM
while a commit is being written. The table reads exactly as before (or, for VACUUM, exactly
the same: it deletes only what no version needs), nothing half-written is visible, and the
next operation completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pydelta
from pydelta.log.vacuum_plan import execute_plan, plan_vacuum
from pydelta.txn.transaction import Operation, OptimisticTransaction

from .writers import append, create_table, deltalake_rows, remove_action, rows_of, wait_for

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals")


def _spawn(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "tests.txn.writers", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _when_frozen(proc: subprocess.Popen, signal_file: Path) -> str:
    if not wait_for(str(signal_file), 60):
        proc.kill()
        raise AssertionError(f"the child never got there:\n{proc.communicate()[1][-3000:]}")
    time.sleep(0.05)  # (the signal file is written just before the freeze)
    return signal_file.read_text()


def _old(paths: list[Path]) -> None:
    past = time.time() - 30 * 86_400
    for p in paths:
        os.utime(p, (past, past))


def test_kill_9_during_vacuum_then_vacuum_again(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    for i in range(4):
        append(root, [{"id": i, "part": "a", "value": f"v{i}"}])
    snapshot = pydelta.load_snapshot(root)  # every file removed, one added after: four for VACUUM
    removes = [remove_action({"path": f["path"], "partitionValues": dict(f["partition_values"] or {}),
                              "size": f["size"]}) for f in snapshot.files().to_pylist()]
    OptimisticTransaction(root, snapshot).commit(removes, Operation.delete([]))
    append(root, [{"id": 9, "part": "b", "value": "live"}])
    _old([p for p in Path(root).rglob("*.parquet")])
    before = rows_of(root)

    signal_file = tmp_path / "frozen"
    proc = _spawn("vacuum-crash", root, str(signal_file), "2")
    _when_frozen(proc, signal_file)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert rows_of(root) == before == [(9, "b", "live")]
    left = plan_vacuum(pydelta.load_snapshot(root), now_ms=int(time.time() * 1000) + 30 * 86_400_000)
    assert len(left.files) == 2  # four removed files, two deleted before the kill
    execute_plan(left)
    assert rows_of(root) == before
    assert deltalake_rows(root) == (pydelta.load_snapshot(root).version, before)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_commit_interrupted_before_it_is_in_place_is_not_in_the_table(tmp_path: Path, sig: int) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    before = rows_of(root)
    signal_file = tmp_path / "frozen"
    proc = _spawn("commit-interrupt", root, str(signal_file))
    target = _when_frozen(proc, signal_file)
    assert target.endswith(f"{2:020d}.json")
    os.kill(proc.pid, sig)
    proc.wait(timeout=30)
    assert proc.returncode != 0
    log = sorted(os.listdir(Path(root) / "_delta_log"))
    assert f"{2:020d}.json" not in log
    if sig == signal.SIGINT:  # Python unwinds: the commit's temporary file is gone too
        assert not [n for n in log if n.endswith(".tmp")]
    assert rows_of(root) == before
    assert append(root, [{"id": 2, "part": "a", "value": "y"}]) == 2
    assert [r[0] for r in rows_of(root)] == [1, 2]


def test_kill_9_in_the_post_commit_hooks_keeps_the_commit(tmp_path: Path) -> None:
    """Killed while writing the version's checksum (the first post-commit step): the commit is in
    the table, the version has no checksum (readers replay it), and the next commit writes a
    checksum that agrees with the replayed state."""
    from pydelta.log.checksum import read_checksum

    root = str(tmp_path / "t")
    create_table(root)
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    signal_file = tmp_path / "frozen"
    proc = _spawn("checksum-crash", root, str(signal_file))
    assert _when_frozen(proc, signal_file).endswith(f"{2:020d}.crc")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    snapshot = pydelta.load_snapshot(root)
    assert snapshot.version == 2 and read_checksum(snapshot.storage, root, 2) is None
    assert [r[0] for r in rows_of(root)] == [1, 9_000_000]
    assert append(root, [{"id": 2, "part": "a", "value": "y"}]) == 3
    checksum = read_checksum(snapshot.storage, root, 3)
    latest = pydelta.load_snapshot(root)
    latest.files()  # replayed, and checked against the checksum it started from
    assert checksum is not None and checksum.num_files == latest.num_files == 3
    assert deltalake_rows(root) == (3, rows_of(root))
