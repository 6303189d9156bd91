"""Log segment discovery: checkpoints (classic, multi-part, V2), `_last_checkpoint` as a hint only."""

from __future__ import annotations

import json
import os
import shutil

import pytest

import pydelta
from pydelta import errors
from pydelta.log.last_checkpoint import canonicalize, checksum, make_last_checkpoint, parse_last_checkpoint
from tests.golden_paths import DELTA_SPARK as DS


def test_checksum_test_vector_from_protocol():
    doc = json.loads(
        '{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], '
        '{"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}'
    )
    assert canonicalize(doc) == (
        '"k0"="%27v%200%27","k1"+"k2"=2,"k1"+"k3"+0="v3","k1"+"k3"+1+0=1,"k1"+"k3"+1+1=2,'
        '"k1"+"k3"+2+"k4"="v4","k1"+"k3"+2+"k5"+0="v5","k1"+"k3"+2+"k5"+1="v6","k1"+"k3"+2+"k5"+2="v7"'
    )
    assert checksum(doc) == "6a92d155a59bf2eecbd4b4ec7fd1f875"


def test_real_last_checkpoint_checksums_validate():
    files = list(DS.glob("*/delta/_delta_log/_last_checkpoint"))
    with_sum = [f for f in files if b"checksum" in f.read_bytes()]
    assert with_sum
    for f in with_sum:
        assert parse_last_checkpoint(f.read_bytes()) is not None, f


@pytest.mark.parametrize(
    "content",
    [b"", b"   ", b"{not json", b'{"version": 10, "size": 3, "checksum": "00000000000000000000000000000000"}',
     b'{"version": 1, "version": 2, "size": 1}', b'["a"]'],
)
def test_bad_hints_are_ignored(content):
    assert parse_last_checkpoint(content) is None


def test_written_hint_round_trips():
    hint = make_last_checkpoint(12, 40, parts=3, sizeInBytes=1000, numOfAddFiles=30)
    parsed = parse_last_checkpoint(hint.to_json().encode())
    assert parsed is not None and parsed.version == 12 and parsed.parts == 3


def _copy(tmp_path, name):
    dst = tmp_path / name
    shutil.copytree(DS / name / "delta", dst)
    return dst


@pytest.mark.parametrize("hint", [b"", b"garbage", b'{"version":99,"size":1}', b'{"version":3,"size":1}'])
def test_stale_or_corrupt_hint_falls_back_to_listing(tmp_path, hint):
    table = _copy(tmp_path, "checkpoint")
    expected = pydelta.load_snapshot(str(table))
    (table / "_delta_log" / "_last_checkpoint").write_bytes(hint)
    snap = pydelta.load_snapshot(str(table))
    assert snap.version == expected.version == 14
    assert snap.segment.checkpoint.version == 10
    assert snap.files().column("path").to_pylist() == expected.files().column("path").to_pylist()


def test_missing_hint_and_incomplete_multipart_checkpoint(tmp_path):
    table = _copy(tmp_path, "multi-part-checkpoint")
    log = table / "_delta_log"
    expected = sorted(pydelta.load_snapshot(str(table)).files().column("path").to_pylist())
    part2 = sorted(log.glob("*.checkpoint.0000000002.0000000002.parquet"))[0]
    part2.unlink()  # now incomplete: must not be used
    snap = pydelta.load_snapshot(str(table))
    assert snap.segment.checkpoint is None
    assert sorted(snap.files().column("path").to_pylist()) == expected
    (log / "_last_checkpoint").unlink()
    assert sorted(pydelta.load_snapshot(str(table)).files().column("path").to_pylist()) == expected


def test_time_travel_below_checkpoint_uses_commits(tmp_path):
    table = _copy(tmp_path, "checkpoint")
    for v in range(0, 15):
        snap = pydelta.load_snapshot(str(table), version=v)
        assert snap.version == v
        assert snap.segment.checkpoint is None or snap.segment.checkpoint.version <= v


def test_gap_after_checkpoint_is_an_error(tmp_path):
    table = _copy(tmp_path, "checkpoint")
    os.unlink(table / "_delta_log" / f"{12:020d}.json")
    with pytest.raises(errors.LogNotContiguousError, match="12"):
        pydelta.load_snapshot(str(table))


def test_not_a_table(tmp_path):
    with pytest.raises(errors.DeltaTableNotFoundError):
        pydelta.load_snapshot(str(tmp_path))
    (tmp_path / "_delta_log").mkdir()
    with pytest.raises(errors.DeltaTableNotFoundError):
        pydelta.load_snapshot(str(tmp_path))


def test_invalid_arguments():
    with pytest.raises(errors.DeltaIllegalArgumentError):
        pydelta.load_snapshot(str(DS / "checkpoint" / "delta"), version=-1)
    with pytest.raises(errors.DeltaIllegalArgumentError):
        pydelta.load_snapshot(str(DS / "checkpoint" / "delta"), version=1, timestamp=1)


def test_incremental_update_reads_only_new_commits(tmp_path):
    table = _copy(tmp_path, "checkpoint")
    log = table / "_delta_log"
    moved = tmp_path / "later"
    moved.mkdir()
    for v in (13, 14):
        os.rename(log / f"{v:020d}.json", moved / f"{v:020d}.json")
    (log / "_last_checkpoint").unlink()
    old = pydelta.load_snapshot(str(table))
    assert old.version == 12
    for v in (13, 14):
        os.rename(moved / f"{v:020d}.json", log / f"{v:020d}.json")
    # Make the checkpoint unreadable: an incremental update must not need it.
    for cp in log.glob("*.checkpoint.parquet"):
        cp.write_bytes(b"corrupt")
    new = old.update()
    assert new.version == 14
    assert new.num_files == 1


def test_reader_feature_refusal_names_feature():
    rs = DS.parent / "delta-rs" / "simple_table_features"
    with pytest.raises(errors.UnsupportedFeatureError, match="blahabl"):
        pydelta.load_snapshot(str(rs))


def test_struct_only_stats_fill_num_records():
    snap = pydelta.load_snapshot(str(DS.parent / "delta-rs" / "delta-1.2.1-only-struct-stats"))
    counts = snap.files().column("num_records").to_pylist()
    assert counts and all(c == 1 for c in counts)


def test_in_commit_timestamps_drive_time_travel(tmp_path):
    from pydelta.log.storage import LocalStorage
    from pydelta.log.timestamps import commit_timestamps

    table = tmp_path / "ict"
    shutil.copytree(DS.parent / "delta-rs" / "cdc_ict_table", table)
    for f in (table / "_delta_log").glob("*.json"):
        os.utime(f, (1, 1))  # file times are now meaningless: only ICT can be right
    snap = pydelta.load_snapshot(str(table))
    stamps = commit_timestamps(LocalStorage(), str(table), 0)
    icts = []
    for v in range(snap.version + 1):
        with open(table / "_delta_log" / f"{v:020d}.json") as fh:
            icts.append(json.loads(fh.readline())["commitInfo"]["inCommitTimestamp"])
    assert [s.timestamp for s in stamps] == icts
    assert snap.timestamp == icts[-1]
    assert pydelta.load_snapshot(str(table), timestamp=icts[2]).version == 2


def test_log_compaction_file_is_used(tmp_path):
    table = _copy(tmp_path, "checkpoint")
    log = table / "_delta_log"
    (log / "_last_checkpoint").unlink()
    for cp in log.glob("*.checkpoint.parquet"):
        cp.unlink()
    expected = sorted(pydelta.load_snapshot(str(table)).files().column("path").to_pylist())
    # Compact versions 1..3 into one file, then make 2.json unreadable: only the compaction can serve.
    actions: dict[str, str] = {}
    meta = []
    for v in (1, 2, 3):
        for line in (log / f"{v:020d}.json").read_text().splitlines():
            a = json.loads(line)
            if "add" in a or "remove" in a:
                body = a.get("add") or a.get("remove")
                actions[body["path"]] = line
            elif "commitInfo" not in a:
                meta.append(line)
    (log / f"{1:020d}.{3:020d}.compacted.json").write_text("\n".join(meta + list(actions.values())) + "\n")
    (log / f"{2:020d}.json").write_text("not json at all\n")
    snap = pydelta.load_snapshot(str(table))
    assert [c.start for c in snap.segment.compactions] == [1]
    assert sorted(snap.files().column("path").to_pylist()) == expected
