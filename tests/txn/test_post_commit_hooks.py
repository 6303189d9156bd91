"""The transaction's one list of post-commit steps (issue 42): the checksum, the checkpoint, then
an engine's hooks, each seeing the steps before it done; a failing engine hook leaves the commit
standing and says so, and never as a concurrent modification (which a caller would take for its
own commit's conflict and clean up after)."""

from __future__ import annotations

from pathlib import Path

import pytest

import pydelta
from pydelta.errors import ConcurrentAppendException, DeltaConcurrentModificationException, DeltaError
from pydelta.txn.transaction import Operation, OptimisticTransaction, PostCommitHook

from .writers import create_table, rows_of, write_data_file


def _commit(root: str, hooks: list[PostCommitHook], ident: int) -> int:
    add = write_data_file(root, [{"id": ident, "part": "a", "value": "x"}])
    txn = OptimisticTransaction(root, pydelta.load_snapshot(root), engine_hooks=hooks)
    return txn.commit([add], Operation.write("Append", []))


def test_engine_hooks_run_after_the_checksum_and_the_checkpoint(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.checkpointInterval": "2"})
    seen: list[tuple[str, int, bool, bool, int]] = []

    def observe(txn: OptimisticTransaction, version: int, actions) -> None:
        log = Path(root) / "_delta_log"
        seen.append(("first", version, (log / f"{version:020d}.crc").exists(),
                     (log / f"{version:020d}.checkpoint.parquet").exists(), len(actions)))

    hooks = [PostCommitHook("first", observe), PostCommitHook("second", lambda txn, v, a: seen.append(("second",)))]
    assert _commit(root, hooks, 1) == 1
    assert _commit(root, hooks, 2) == 2
    assert seen == [("first", 1, True, False, 1), ("second",), ("first", 2, True, True, 1), ("second",)]


def test_a_failing_hook_leaves_the_commit_and_is_never_a_conflict(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)

    def conflicting(txn, version, actions) -> None:  # e.g. auto compaction losing its own race
        raise ConcurrentAppendException("[DELTA_CONCURRENT_APPEND] the hook's own commit lost")

    with pytest.raises(DeltaError, match=r"DELTA_POST_COMMIT_HOOK_FAILED.*version 1.*compact") as failed:
        _commit(root, [PostCommitHook("compact", conflicting)], 1)
    assert not isinstance(failed.value, DeltaConcurrentModificationException)
    assert isinstance(failed.value.__cause__, ConcurrentAppendException)
    assert pydelta.load_snapshot(root).version == 1 and [r[0] for r in rows_of(root)] == [1]
