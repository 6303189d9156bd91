"""Tests for pydelta.log.cleanup (metadata cleanup; no Spark).

File ages are set with os.utime; the cutoff is midnight UTC of (now - retention), so the
"old" files here are well before it and the "recent" ones well after.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pydelta.errors import VersionNotFoundError
from pydelta.log.checkpoint_writer import write_checkpoint
from pydelta.log.cleanup import cleanup_expired_logs
from pydelta.log.snapshot import Snapshot, load_snapshot
from tests.log.test_checkpoint_writer import (
    DAY_MS,
    NOW_MS,
    V2_PROTOCOL,
    TableBuilder,
    add,
    assert_same_state,
    field,
    num_stats,
    remove,
)

OLD_MS = NOW_MS - 40 * DAY_MS
RECENT_MS = NOW_MS - DAY_MS // 2


def set_mtime(path: Path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def age_version(root: Path, version: int, ms: int) -> None:
    """Give every log file of `version` (commit, crc, checkpoint parts) the time `ms`."""
    for p in (root / "_delta_log").glob(f"{version:020d}.*"):
        if ".compacted." not in p.name:
            set_mtime(p, ms)


def log_names(root: Path) -> set[str]:
    return {p.name for p in (root / "_delta_log").iterdir() if p.is_file()}


def build(root: Path, versions: int, checkpoints: dict[int, dict], configuration: dict | None = None,
          protocol: dict | None = None) -> TableBuilder:
    """Versions 0..`versions` (each adds a file, some remove one), a .crc per version, checkpoints."""
    t = TableBuilder(root, [field("id", "long")], configuration=configuration, protocol=protocol)
    for v in range(1, versions + 1):
        actions = [add(f"f{v}.parquet", stats=num_stats(1, v, v))]
        if v % 3 == 0:
            actions.append(remove(f"f{v - 1}.parquet", NOW_MS))
        if v == 2:
            actions.append({"txn": {"appId": "app", "version": v}})
        t.commit(actions)
    for v in range(versions + 1):
        (root / "_delta_log" / f"{v:020d}.crc").write_text("{}")
    for v, kind in checkpoints.items():
        write_checkpoint(load_snapshot(str(root), version=v), now_ms=NOW_MS, **kind)
    return t


def states(root: Path, versions: range) -> dict[int, Snapshot]:
    return {v: load_snapshot(str(root), version=v) for v in versions}


def age(root: Path, old_through: int, last: int) -> None:
    """Versions 0..old_through are 40 days old (one minute apart), the rest recent."""
    for v in range(last + 1):
        age_version(root, v, OLD_MS + v * 60_000 if v <= old_through else RECENT_MS + v * 60_000)


def test_deletes_everything_before_the_cutoff_checkpoint(tmp_path: Path) -> None:
    build(tmp_path, 12, {4: {}, 8: {"parts": 2}, 11: {}})
    log = tmp_path / "_delta_log"
    (log / f"{2:020d}.{3:020d}.compacted.json").write_text(
        (log / f"{2:020d}.json").read_text() + (log / f"{3:020d}.json").read_text()
    )
    (log / f"{9:020d}.{10:020d}.compacted.json").write_text(
        (log / f"{9:020d}.json").read_text().split("\n", 1)[1] + (log / f"{10:020d}.json").read_text().split("\n", 1)[1]
    )
    age(tmp_path, old_through=9, last=12)
    for p in log.glob("*.compacted.json"):
        set_mtime(p, OLD_MS)
    expected = states(tmp_path, range(8, 13))
    hint = (log / "_last_checkpoint").read_bytes()
    names = log_names(tmp_path)

    deleted = cleanup_expired_logs(load_snapshot(str(tmp_path)), now_ms=NOW_MS)

    doomed = {f"{v:020d}.json" for v in range(8)} | {f"{v:020d}.crc" for v in range(8)}
    doomed |= {f"{4:020d}.checkpoint.parquet", f"{2:020d}.{3:020d}.compacted.json"}
    assert {os.path.basename(p) for p in deleted} == doomed
    assert all(os.path.dirname(p) == str(log) for p in deleted)
    assert log_names(tmp_path) == names - doomed
    assert (log / f"{8:020d}.json").exists() and (log / f"{9:020d}.{10:020d}.compacted.json").exists()
    assert (log / "_last_checkpoint").read_bytes() == hint
    for v, snap in expected.items():
        assert_same_state(snap, load_snapshot(str(tmp_path), version=v))
    with pytest.raises(VersionNotFoundError):
        load_snapshot(str(tmp_path), version=7)
    assert cleanup_expired_logs(load_snapshot(str(tmp_path)), now_ms=NOW_MS) == []


def test_nothing_without_an_old_enough_checkpoint(tmp_path: Path) -> None:
    build(tmp_path, 8, {7: {}})
    age(tmp_path, old_through=5, last=8)  # the only checkpoint (7) is recent
    before = log_names(tmp_path)
    assert cleanup_expired_logs(load_snapshot(str(tmp_path)), now_ms=NOW_MS) == []
    assert log_names(tmp_path) == before


def test_nothing_when_no_checkpoint_at_all(tmp_path: Path) -> None:
    build(tmp_path, 5, {})
    age(tmp_path, old_through=5, last=5)
    assert cleanup_expired_logs(load_snapshot(str(tmp_path)), now_ms=NOW_MS) == []
    assert len(list((tmp_path / "_delta_log").glob("*.json"))) == 6


def test_checkpoint_at_the_cutoff_commit_keeps_its_commit(tmp_path: Path) -> None:
    build(tmp_path, 6, {5: {}})
    age(tmp_path, old_through=5, last=6)
    deleted = cleanup_expired_logs(load_snapshot(str(tmp_path)), now_ms=NOW_MS)
    assert len(deleted) == 10  # versions 0..4: commit + crc
    assert sorted(p.name for p in (tmp_path / "_delta_log").glob("*.json")) == [f"{5:020d}.json", f"{6:020d}.json"]
    assert load_snapshot(str(tmp_path), version=5).version == 5


def test_disabled_by_table_property(tmp_path: Path) -> None:
    build(tmp_path, 6, {3: {}}, configuration={"delta.enableExpiredLogCleanup": "false"})
    age(tmp_path, old_through=6, last=6)
    assert cleanup_expired_logs(load_snapshot(str(tmp_path)), now_ms=NOW_MS) == []


def test_log_retention_property(tmp_path: Path) -> None:
    build(tmp_path, 6, {3: {}}, configuration={"delta.logRetentionDuration": "interval 10 days"})
    log = tmp_path / "_delta_log"
    for v in range(7):
        age_version(tmp_path, v, NOW_MS - (15 - v) * DAY_MS if v <= 4 else RECENT_MS)
    deleted = cleanup_expired_logs(load_snapshot(str(tmp_path)), now_ms=NOW_MS)
    assert {os.path.basename(p) for p in deleted} == {f"{v:020d}.{e}" for v in range(3) for e in ("json", "crc")}
    # With the default 30 days, the same files would all be kept.
    build(tmp_path / "default", 6, {3: {}})
    for v in range(7):
        age_version(tmp_path / "default", v, NOW_MS - (15 - v) * DAY_MS if v <= 4 else RECENT_MS)
    assert cleanup_expired_logs(load_snapshot(str(tmp_path / "default")), now_ms=NOW_MS) == []
    assert (log / f"{3:020d}.json").exists()


def test_commit_times_are_made_monotonic(tmp_path: Path) -> None:
    build(tmp_path, 7, {2: {}, 4: {}})
    age(tmp_path, old_through=7, last=7)
    age_version(tmp_path, 3, RECENT_MS)  # a recent commit 3 makes every later commit recent too
    deleted = cleanup_expired_logs(load_snapshot(str(tmp_path)), now_ms=NOW_MS)
    assert {os.path.basename(p) for p in deleted} == {f"{v:020d}.{e}" for v in range(2) for e in ("json", "crc")}
    assert (tmp_path / "_delta_log" / f"{4:020d}.checkpoint.parquet").exists()


def test_time_travel_snapshot_only_cleans_up_to_its_version(tmp_path: Path) -> None:
    build(tmp_path, 9, {3: {}, 6: {}})
    age(tmp_path, old_through=9, last=9)
    deleted = cleanup_expired_logs(load_snapshot(str(tmp_path), version=4), now_ms=NOW_MS)
    assert {os.path.basename(p) for p in deleted} == {f"{v:020d}.{e}" for v in range(3) for e in ("json", "crc")}


def test_old_temp_files_of_crashed_writers_are_removed(tmp_path: Path) -> None:
    build(tmp_path, 4, {2: {}})
    age(tmp_path, old_through=4, last=4)
    log = tmp_path / "_delta_log"
    old_tmp = log / f".{3:020d}.checkpoint.parquet.{uuid.uuid4().hex}.tmp"
    new_tmp = log / f".{4:020d}.checkpoint.parquet.{uuid.uuid4().hex}.tmp"
    old_tmp.write_bytes(b"half")
    new_tmp.write_bytes(b"half")
    set_mtime(old_tmp, OLD_MS)
    deleted = cleanup_expired_logs(load_snapshot(str(tmp_path)), now_ms=NOW_MS)
    assert str(old_tmp) in deleted and not old_tmp.exists() and new_tmp.exists()


def _sidecar(root: Path, name: str, ms: int) -> Path:
    path = root / "_delta_log" / "_sidecars" / name
    pq.write_table(pa.table({"add": pa.nulls(0, pa.struct([("path", pa.string())]))}), path)
    set_mtime(path, ms)
    return path


def test_unreferenced_old_sidecars_are_removed(tmp_path: Path) -> None:
    config = {"delta.checkpointPolicy": "v2"}
    build(tmp_path, 10, {3: {}, 8: {}}, configuration=config, protocol=V2_PROTOCOL)
    age(tmp_path, old_through=9, last=10)
    log = tmp_path / "_delta_log"
    sidecars = {p.name for p in (log / "_sidecars").iterdir()}
    assert len(sidecars) == 2
    for p in (log / "_sidecars").iterdir():
        set_mtime(p, OLD_MS)  # both checkpoints' sidecars are old
    (top3,) = [p for p in log.glob(f"{3:020d}.checkpoint.*")]
    referenced_by_3 = {r["path"] for r in pq.read_table(top3).column("sidecar").drop_null().to_pylist()}
    orphan_old = _sidecar(tmp_path, f"{uuid.uuid4()}.parquet", OLD_MS)
    orphan_new = _sidecar(tmp_path, f"{uuid.uuid4()}.parquet", RECENT_MS)
    expected = states(tmp_path, range(8, 11))

    deleted = {os.path.basename(p) for p in cleanup_expired_logs(load_snapshot(str(tmp_path)), now_ms=NOW_MS)}

    assert top3.name in deleted
    assert referenced_by_3 | {orphan_old.name} <= deleted
    left = {p.name for p in (log / "_sidecars").iterdir()}
    assert left == (sidecars - referenced_by_3) | {orphan_new.name}
    for v, snap in expected.items():
        assert_same_state(snap, load_snapshot(str(tmp_path), version=v))


def test_table_keeps_working_after_cleanup(tmp_path: Path) -> None:
    t = build(tmp_path, 6, {4: {}})
    age(tmp_path, old_through=6, last=6)
    cleanup_expired_logs(load_snapshot(str(tmp_path)), now_ms=NOW_MS)
    t.commit([add("after.parquet")])
    snap = load_snapshot(str(tmp_path))
    assert snap.version == 7 and "after.parquet" in snap.files().column("path").to_pylist()
    write_checkpoint(snap)
    assert load_snapshot(str(tmp_path)).segment.checkpoint.version == 7
