"""A snapshot of a version with a checksum file starts from it: protocol, metadata, counts, size
and the in-commit timestamp without a replay; the files replay on first use and must agree."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from pydelta.errors import ChecksumMismatchError
from pydelta.log import snapshot as snapshot_module
from pydelta.log.checksum import validate_checksum
from pydelta.log.snapshot import load_snapshot
from tests.golden_paths import DELTA_RS


@pytest.fixture
def table(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    shutil.copytree(DELTA_RS / "cdc_ict_table", root)  # Delta-Lake 4.3.1, checksums at every version
    return root


def test_the_latest_version_answers_from_its_checksum_without_a_replay(table: Path) -> None:
    snap = load_snapshot(str(table))
    crc = json.loads((table / "_delta_log/00000000000000000003.crc").read_text())
    assert not snap.replayed
    assert snap.version == 3
    assert snap.metadata.id == crc["metadata"]["id"]
    assert snap.protocol.min_writer_version == 7
    assert (snap.num_files, snap.size_in_bytes) == (crc["numFiles"], crc["tableSizeBytes"])
    assert snap.timestamp == crc["inCommitTimestampOpt"]
    assert not snap.replayed  # all of that came from the checksum
    files = snap.files()
    assert snap.replayed and files.num_rows == crc["numFiles"]
    assert sum(files.column("size").to_pylist()) == crc["tableSizeBytes"]


def test_it_answers_as_a_replay_does(table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = load_snapshot(str(table), version=2)
    monkeypatch.setattr(snapshot_module, "_USE_CHECKSUMS", False)
    eager = load_snapshot(str(table), version=2)
    assert eager.replayed and not lazy.replayed
    for name in ("version", "num_files", "size_in_bytes", "timestamp", "transactions", "domain_metadata"):
        assert getattr(lazy, name) == getattr(eager, name), name
    assert lazy.metadata.to_dict() == eager.metadata.to_dict()
    assert lazy.protocol == eager.protocol


def test_a_checksum_whose_metadata_the_log_contradicts_gives_way_to_the_log(table: Path, caplog) -> None:
    crc = table / "_delta_log/00000000000000000003.crc"
    body = json.loads(crc.read_text())
    logged_id = body["metadata"]["id"]
    body["metadata"]["id"] = "00000000-0000-0000-0000-000000000000"
    crc.write_text(json.dumps(body) + "\n")
    snap = load_snapshot(str(table))
    assert snap.metadata.id == "00000000-0000-0000-0000-000000000000"  # what the checksum says
    with caplog.at_level(logging.WARNING, logger="pydelta.log.snapshot"):
        snap.files()
    assert snap.metadata.id == logged_id  # the replay wins
    assert "DELTA_TXN_LOG_FAILED_INTEGRITY" in caplog.text and "metadata" in caplog.text
    with pytest.raises(ChecksumMismatchError, match="DELTA_TXN_LOG_FAILED_INTEGRITY"):
        validate_checksum(snap)  # what a checkpoint checks first


def test_an_old_writers_checksum_without_metadata_means_a_replay(tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(DELTA_RS / "COVID-19_NYT", root)  # {"tableSizeBytes", "numFiles", ...} only
    snap = load_snapshot(str(root), version=0)
    assert snap.replayed


def test_a_checkpoint_removed_before_the_replay_is_read_around(tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(DELTA_RS / "table_with_deletion_logs", root)
    snap = load_snapshot(str(root), version=12)
    assert not snap.replayed and snap.segment.checkpoint is not None
    expected = snap.num_files  # the checksum's count
    for checkpoint in (root / "_delta_log").glob("*.checkpoint.parquet"):
        checkpoint.unlink()  # e.g. replaced by another writer's
    assert snap.files().num_rows == expected
