"""A full disk and a read-only directory under the log (issue 44): the commit fails with a named
error, leaves no partial or temporary file in `_delta_log`, the table reads exactly as before,
and the next commit once there is room takes the next version."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import DeltaError, StorageAccessError
from pydelta.txn.transaction import Operation, OptimisticTransaction
from tests.faults.disk import fill, read_only, small_disk

from .writers import append, create_table, rows_of, write_data_file


def _log_files(root: str) -> list[str]:
    return sorted(os.listdir(Path(root) / "_delta_log"))


def test_a_full_disk_fails_the_commit_and_leaves_the_log_as_it_was(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk") as disk:
        root = str(disk / "t")
        create_table(root)
        append(root, [{"id": 1, "part": "a", "value": "x"}])
        before, log_before = rows_of(root), _log_files(root)
        add = write_data_file(root, [{"id": 2, "part": "a", "value": "y"}])  # the data made it
        filler = fill(disk)
        snapshot = pydelta.load_snapshot(root)
        with pytest.raises(StorageAccessError, match=r"00000000000000000002\.json.*[Nn]o space") as failed:
            OptimisticTransaction(root, snapshot).commit([add], Operation.write("Append", []))
        assert isinstance(failed.value, DeltaError)
        assert _log_files(root) == log_before  # no commit, no temporary file
        assert rows_of(root) == before
        filler.unlink()
        assert append(root, [{"id": 3, "part": "b", "value": "z"}]) == 2
        assert [r[0] for r in rows_of(root)] == [1, 3]


def test_a_read_only_log_directory_fails_the_commit_by_name(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    log = Path(root) / "_delta_log"
    before, log_before = rows_of(root), _log_files(root)
    add = write_data_file(root, [{"id": 2, "part": "a", "value": "y"}])
    with read_only(log), pytest.raises(StorageAccessError, match=r"00000000000000000002\.json.*[Rr]ead-only"):
        OptimisticTransaction(root, pydelta.load_snapshot(root)).commit([add], Operation.write("Append", []))
    assert _log_files(root) == log_before
    assert rows_of(root) == before
    assert append(root, [{"id": 3, "part": "b", "value": "z"}]) == 2
