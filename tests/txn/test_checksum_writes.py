"""Every commit leaves its version checksum (`<v>.crc`), derived from the previous one; the
checksum never overwrites a file nor fails a commit, and one that disagrees with the replay
stops the checkpoint of its version (DELTA_TXN_LOG_FAILED_INTEGRITY)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import ChecksumMismatchError
from pydelta.log.checksum import (
    checksum_mismatches,
    checksum_path,
    compute_checksum,
    read_checksum,
    validate_checksum,
)
from pydelta.log.storage import LocalStorage
from pydelta.txn.commit_info import Operation
from pydelta.txn.transaction import OptimisticTransaction

from .writers import append, create_table, remove_action, write_data_file


def _agrees(root: str, version: int) -> None:
    written = read_checksum(LocalStorage(), root, version)
    assert written is not None, f"no checksum for version {version}"
    snapshot = pydelta.load_snapshot(root, version=version)
    computed = compute_checksum(snapshot)
    assert checksum_mismatches(written, computed) == []
    assert written.txn_id  # the transaction that made the version
    if written.all_files is not None:
        assert sorted(f["path"] for f in written.all_files) == sorted(f["path"] for f in computed.all_files or [])


def test_each_commit_leaves_a_checksum_that_agrees_with_the_replay(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.enableInCommitTimestamps": "true",
                                      "delta.feature.domainMetadata": "supported"})
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    append(root, [{"id": 2, "part": "b", "value": "y"}, {"id": 3, "part": "b", "value": "z"}])
    snapshot = pydelta.load_snapshot(root)
    first = next(f for f in snapshot.files().to_pylist() if f["partition_values"] == [("part", "a")])
    txn = OptimisticTransaction(root, snapshot)
    add = {"path": first["path"], "partitionValues": {"part": "a"}, "size": first["size"],
           "modificationTime": first["modification_time"], "dataChange": True}
    txn.commit([remove_action(add)], Operation("DELETE", {"predicate": "[]"}))
    txn = OptimisticTransaction(root, pydelta.load_snapshot(root))
    txn.set_app_transaction("stream-1", 7)
    txn.add_domain_metadata("pydelta.test", '{"k":1}')
    txn.commit([write_data_file(root, [{"id": 4, "part": "c", "value": "w"}])], Operation.write("Append", []))
    for version in range(5):
        _agrees(root, version)
    last = read_checksum(LocalStorage(), root, 4)
    assert last is not None and last.num_files == 2
    assert last.in_commit_timestamp == pydelta.load_snapshot(root).timestamp
    assert [(t.app_id, t.version) for t in last.set_transactions or []] == [("stream-1", 7)]
    assert [d.domain for d in last.domain_metadata or []] == ["pydelta.test"]
    assert last.file_size_histogram is not None and sum(last.file_size_histogram.counts) == 2
    text = Path(checksum_path(root, 4)).read_text()
    assert text.endswith("}\n") and text.count("\n") == 1


def test_a_remove_without_its_size_is_recomputed_from_the_snapshot(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    append(root, [{"id": 2, "part": "a", "value": "y"}])
    snapshot = pydelta.load_snapshot(root)
    path = snapshot.files().column("path")[0].as_py()
    txn = OptimisticTransaction(root, snapshot)
    txn.commit([{"remove": {"path": path, "dataChange": True, "deletionTimestamp": 1}}], Operation("DELETE"))
    _agrees(root, 3)
    assert read_checksum(LocalStorage(), root, 3).num_files == 1


def test_without_the_previous_checksum_the_next_is_computed(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    Path(checksum_path(root, 1)).unlink()  # e.g. written by a client that leaves none
    append(root, [{"id": 2, "part": "b", "value": "y"}])
    _agrees(root, 2)


def test_an_existing_checksum_is_never_overwritten(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    Path(checksum_path(root, 1)).write_text("left by someone else\n")
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    assert Path(checksum_path(root, 1)).read_text() == "left by someone else\n"
    assert pydelta.load_snapshot(root).version == 1


def test_a_failed_checksum_write_leaves_the_commit_standing(tmp_path: Path, caplog) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    Path(checksum_path(root, 1)).mkdir()  # the checksum cannot be written there
    with caplog.at_level(logging.WARNING, logger="pydelta.txn.transaction"):
        assert append(root, [{"id": 1, "part": "a", "value": "x"}]) == 1
    assert pydelta.load_snapshot(root).num_files == 1
    append(root, [{"id": 2, "part": "a", "value": "y"}])
    _agrees(root, 2)  # the next one is computed from the snapshot instead


def test_checksums_can_be_left_out(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, write_checksum=False)
    append(root, [{"id": 1, "part": "a", "value": "x"}], write_checksum=False)
    assert not list((Path(root) / "_delta_log").glob("*.crc"))


def _tamper(root: str, version: int) -> None:
    path = Path(checksum_path(root, version))
    body = json.loads(path.read_text())
    body["numFiles"] += 5
    path.write_text(json.dumps(body) + "\n")


def test_a_wrong_checksum_stops_the_checkpoint_of_its_version(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.checkpointInterval": "3"})
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    _tamper(root, 1)  # version 2 derives from it: wrong as well
    append(root, [{"id": 2, "part": "a", "value": "y"}])
    append(root, [{"id": 3, "part": "a", "value": "z"}])  # version 3: checkpoint time
    assert not (Path(root) / "_delta_log" / "_last_checkpoint").exists()
    with pytest.raises(ChecksumMismatchError, match=r"(?s)DELTA_TXN_LOG_FAILED_INTEGRITY.*Number of files") as e:
        validate_checksum(pydelta.load_snapshot(root))
    assert e.value.error_class == "DELTA_TXN_LOG_FAILED_INTEGRITY"
    assert validate_checksum(pydelta.load_snapshot(root), fatal=False)  # reported, not raised


def test_a_wrong_checksum_only_warns_when_mismatches_are_not_fatal(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.checkpointInterval": "2"})
    _tamper(root, 0)
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    append(root, [{"id": 2, "part": "a", "value": "y"}], checksum_mismatch_fatal=False)
    assert (Path(root) / "_delta_log" / "_last_checkpoint").exists()
