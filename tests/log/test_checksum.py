"""Version checksum files against the ones real writers left (delta-spark and Databricks, in the
golden tables): pydelta's replay agrees with each, its JSON is delta-spark's byte for byte, and
deriving a version's checksum from the previous one and the commit gives the writer's own."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from pydelta.log.checksum import (
    DELETED_RECORD_BINS,
    FILE_SIZE_BINS,
    VersionChecksum,
    checksum_mismatches,
    compute_checksum,
    derive_checksum,
    read_checksum,
)
from pydelta.log.snapshot import load_snapshot
from pydelta.log.storage import LocalStorage
from tests.golden_paths import DELTA_RS

WITH_CHECKSUMS = sorted(p.parent.parent for p in DELTA_RS.glob("*/_delta_log/*.crc") if p.name[0] != ".")
TABLES = sorted(set(WITH_CHECKSUMS))


def _versions(table: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in (table / "_delta_log").glob("*.crc") if p.name[0] != ".")


def _commit_actions(table: Path, version: int) -> list[dict]:
    text = (table / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_standard_bins_are_every_writers():
    crc = json.loads((DELTA_RS / "cdc_ict_table/_delta_log/00000000000000000003.crc").read_text())
    assert tuple(crc["fileSizeHistogram"]["sortedBinBoundaries"]) == FILE_SIZE_BINS
    assert len(FILE_SIZE_BINS) == 95 and len(DELETED_RECORD_BINS) == 10


@pytest.mark.parametrize("table", TABLES, ids=lambda p: p.name)
def test_the_replay_agrees_with_every_checksum_a_real_writer_left(table):
    checked = 0
    for version in _versions(table):
        written = read_checksum(LocalStorage(), str(table), version)
        assert written is not None, f"{table.name} v{version}: a real writer's checksum did not parse"
        if written.metadata is None:  # an old writer's checksum: counts only
            assert written.protocol is None
        computed = compute_checksum(load_snapshot(str(table), version=version))
        assert checksum_mismatches(written, computed) == [], f"{table.name} v{version}"
        if written.all_files is not None:
            key = lambda f: f["path"]  # noqa: E731
            assert sorted(computed.all_files or [], key=key) == sorted(written.all_files, key=key)
        checked += 1
    assert checked == len(_versions(table))


def _ordered(text: str) -> list:
    """A JSON object as (key, value) pairs in file order, feature lists as sets (pydelta keeps a
    protocol's features as a set; their order means nothing)."""
    def walk(value):
        if isinstance(value, dict):
            return [(k, sorted(v) if k.endswith("Features") else walk(v)) for k, v in value.items()]
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(json.loads(text))


def test_the_json_is_delta_sparks():
    """Delta-Lake 4.3.1's checksum of an UPDATE on a table with in-commit timestamps: same fields in
    the same order with the same values, one line and a newline."""
    table = DELTA_RS / "cdc_ict_table"
    text = (table / "_delta_log/00000000000000000003.crc").read_text()
    computed = compute_checksum(load_snapshot(str(table), version=3), txn_id=json.loads(text)["txnId"]).to_json()
    assert _ordered(computed) == _ordered(text)
    assert "\n" not in computed and text.endswith("}\n")
    assert _ordered(VersionChecksum.from_json(text).to_json()) == _ordered(text)


@pytest.mark.parametrize("table", TABLES, ids=lambda p: p.name)
def test_each_checksum_derives_from_the_previous_one_and_the_commit(table):
    storage = LocalStorage()
    versions = _versions(table)
    derived_any = 0
    for previous_version, version in itertools.pairwise(versions):
        if version != previous_version + 1:
            continue
        previous = read_checksum(storage, str(table), previous_version)
        written = read_checksum(storage, str(table), version)
        assert previous is not None and written is not None
        actions = _commit_actions(table, version)
        operation = next(a["commitInfo"].get("operation", "") for a in actions if "commitInfo" in a)
        derived = derive_checksum(previous, actions, operation=operation)
        if previous.metadata is None or previous.file_size_histogram is None:
            assert derived is None  # nothing to derive from: delta-spark recomputes too
            continue
        assert derived is not None
        assert checksum_mismatches(written, derived) == [], f"{table.name} v{version}"
        if written.all_files is not None and derived.all_files is not None:
            assert sorted(f["path"] for f in derived.all_files) == sorted(f["path"] for f in written.all_files)
        derived_any += 1
    if table.name in ("cdc_ict_table", "checkpoint-v2-table", "table_with_deletion_logs"):
        assert derived_any >= 2


def test_a_malformed_or_missing_checksum_is_no_checksum(tmp_path):
    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / "00000000000000000000.crc").write_text("malformed")
    storage = LocalStorage()
    assert read_checksum(storage, str(tmp_path), 0) is None
    assert read_checksum(storage, str(tmp_path), 1) is None
