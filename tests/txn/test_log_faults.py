"""Faults in a table's log that readers must survive (issue 44): a checkpoint that cannot be read
(truncated, overwritten, a V2 checkpoint's sidecar gone) and a torn commit file.

pydelta replays such a version from an older checkpoint or from the commits, as delta-spark
does (`replay_with_fallback`: at most two older checkpoints), and otherwise raises a named
error that names the file. Reading never changes the table: every file of the log is byte for
byte the same afterwards, and a writer can still commit on top.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import CorruptedLogError, MissingDataFileError
from pydelta.log.checkpoint_writer import write_checkpoint

from .writers import append, create_table, rows_of


def _table(root: str, configuration: dict[str, str] | None = None) -> list[tuple]:
    """Versions 0-12, checkpoints at 5 and 10 (and a checksum per version); returns its rows."""
    create_table(root, configuration={"delta.checkpointInterval": "5", **(configuration or {})})
    for i in range(1, 13):
        append(root, [{"id": i, "part": "a" if i % 2 else "b", "value": f"v{i}"}])
    return rows_of(root)


def _log(root: str) -> Path:
    return Path(root) / "_delta_log"


def _checkpoint(root: str, version: int) -> Path:
    (path,) = _log(root).glob(f"{version:020d}.checkpoint*.parquet")
    return path


def _fingerprint(root: str) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(_log(root).rglob("*")) if p.is_file()}


def _drop_checksums(root: str) -> None:
    for p in _log(root).glob("*.crc"):
        p.unlink()


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("checksums", [True, False], ids=["from-checksum", "replayed-at-load"])
def test_a_truncated_checkpoint_is_replaced_by_the_previous_one(tmp_path: Path, checksums: bool) -> None:
    """With checksums the snapshot starts from the `.crc` and replays on first use of its files;
    without, it replays at load: both fall back the same way."""
    root = str(tmp_path / "t")
    before = _table(root)
    if not checksums:
        _drop_checksums(root)
    _truncate(_checkpoint(root, 10))
    fingerprint = _fingerprint(root)

    snapshot = pydelta.load_snapshot(root)
    assert rows_of(root) == before
    assert snapshot.version == 12 and snapshot.num_files == 12
    snapshot.files()
    assert snapshot.segment.checkpoint is not None and snapshot.segment.checkpoint.version == 5
    assert rows_of(root, version=11) == [r for r in before if r[0] != 12]
    assert _fingerprint(root) == fingerprint  # reading changed nothing
    assert append(root, [{"id": 13, "part": "a", "value": "after"}]) == 13
    assert len(rows_of(root)) == len(before) + 1


def test_two_unreadable_checkpoints_fall_back_to_the_commits(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    before = _table(root)
    _drop_checksums(root)
    _checkpoint(root, 10).write_bytes(b"not parquet at all")
    _truncate(_checkpoint(root, 5))
    snapshot = pydelta.load_snapshot(root)
    assert snapshot.segment.checkpoint is None and snapshot.version == 12
    assert rows_of(root) == before


def test_an_unreadable_checkpoint_with_nothing_to_fall_back_on_is_a_named_error(tmp_path: Path) -> None:
    """The commits before it are cleaned up and no older checkpoint is left."""
    root = str(tmp_path / "t")
    _table(root)
    _drop_checksums(root)
    for v in range(0, 11):
        (_log(root) / f"{v:020d}.json").unlink()
    _checkpoint(root, 5).unlink()
    bad = _checkpoint(root, 10)
    _truncate(bad)
    fingerprint = _fingerprint(root)
    with pytest.raises(CorruptedLogError, match=bad.name):
        pydelta.load_snapshot(root)
    with pytest.raises(CorruptedLogError, match=bad.name):
        pydelta.load_snapshot(root, version=11)
    assert _fingerprint(root) == fingerprint


def test_a_missing_sidecar_falls_back_to_the_commits(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.checkpointInterval": "1000", "delta.checkpointPolicy": "v2"})
    for i in range(1, 6):
        append(root, [{"id": i, "part": "a", "value": f"v{i}"}])
    before = rows_of(root)
    write_checkpoint(pydelta.load_snapshot(root), parts=2)  # a top-level file and its sidecars
    _drop_checksums(root)
    sidecars = sorted((_log(root) / "_sidecars").iterdir())
    assert sidecars  # (files go to sidecars by their path's hash: five may all land in one)
    sidecars[0].unlink()

    snapshot = pydelta.load_snapshot(root)
    assert snapshot.segment.checkpoint is None
    assert rows_of(root) == before
    # (delta-rs refuses this table: it does not fall back from a checkpoint it cannot read.)

    for v in range(0, 5):  # now nothing else can give version 5
        (_log(root) / f"{v:020d}.json").unlink()
    with pytest.raises(MissingDataFileError, match=sidecars[0].name):
        pydelta.load_snapshot(root)


def test_a_torn_commit_is_a_named_error_and_the_version_before_it_reads(tmp_path: Path) -> None:
    """A non-atomic writer died half-way through version 13's file (pydelta's own writer never
    leaves one: it creates the commit whole, or not at all)."""
    root = str(tmp_path / "t")
    before = _table(root)
    whole = b'{"commitInfo":{"timestamp":1,"operation":"WRITE"}}\n{"add":{"path":"x.parquet","partitionValues":{},'
    torn = _log(root) / f"{13:020d}.json"
    torn.write_bytes(whole)
    fingerprint = _fingerprint(root)
    with pytest.raises(CorruptedLogError, match=torn.name):
        pydelta.load_snapshot(root)
    assert rows_of(root, version=12) == before
    assert _fingerprint(root) == fingerprint
    assert os.path.getsize(torn) == len(whole)
