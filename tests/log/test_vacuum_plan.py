"""Tests for pydelta.log.vacuum_plan (which files VACUUM deletes; no Spark).

Logs are written by hand (TableBuilder); files on disk get their ages with os.utime and
tombstones their deletionTimestamp, so every rule of delta-spark's VacuumCommand is hit
on its own: live files, tombstones inside / outside retention, untracked files, hidden
paths, partition directories, deletion vector files, empty directories.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.log.deletion_vector_files import write_deletion_vector_file
from pydelta.log.snapshot import load_snapshot
from pydelta.log.vacuum_plan import (
    check_retention,
    execute_plan,
    is_hidden,
    plan_vacuum,
    retention_hours_to_ms,
)
from tests.log.test_checkpoint_writer import DAY_MS, NOW_MS, TableBuilder, add, field, remove

HOUR_MS = 3_600_000
OLD = NOW_MS - 30 * DAY_MS  # well outside the default 7 day retention
RECENT = NOW_MS - HOUR_MS  # inside it


def touch(root: Path, rel: str, mtime_ms: int, content: bytes = b"x") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(content)
    os.utime(p, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return p


def rels(root: Path, paths: list[str]) -> set[str]:
    return {os.path.relpath(p, root) for p in paths}


# ---- rules in isolation ------------------------------------------------------------------------


def test_hidden_names_follow_delta_spark():
    parts = ["_p", "q"]
    assert is_hidden("_delta_log", parts)
    assert is_hidden(".hidden", parts)
    assert is_hidden("_tmp_path_dir", parts)
    assert is_hidden("_p_other=1", parts)
    assert not is_hidden("_p=1", parts)  # partition directory of a column named _p
    assert not is_hidden("_change_data", parts)
    assert not is_hidden("_delta_index", parts)
    assert not is_hidden("q=1", parts)
    assert not is_hidden("part-0000.parquet", parts)


@pytest.mark.parametrize("hours, ms",
                         [(0, 0), (1, HOUR_MS), (0.4, 0), (0.5, HOUR_MS), (167.5, 168 * HOUR_MS), (None, None)])
def test_retention_hours_round_half_up(hours, ms):
    assert retention_hours_to_ms(hours) == ms


def test_retention_check_refuses_short_retention_with_delta_spark_message():
    week = 7 * 24 * HOUR_MS
    with pytest.raises(DeltaIllegalArgumentError,
                       match="Are you sure you would like to vacuum files with such a low retention period") as e:
        check_retention(HOUR_MS, week)
    assert 'not less than "168 hours"' in str(e.value)
    assert "spark.databricks.delta.retentionDurationCheck.enabled = false" in str(e.value)
    check_retention(HOUR_MS, week, check_enabled=False)  # switched off: allowed
    check_retention(week, week)
    check_retention(None, week)
    with pytest.raises(DeltaIllegalArgumentError, match="can't be less than 0"):
        check_retention(-HOUR_MS, week, check_enabled=False)


def test_retention_hours_must_be_numbers():
    with pytest.raises(DeltaIllegalArgumentError):
        retention_hours_to_ms("a day")  # type: ignore[arg-type]
    with pytest.raises(DeltaIllegalArgumentError):
        retention_hours_to_ms(float("nan"))


# ---- planning on a table ------------------------------------------------------------------------


@pytest.fixture
def table(tmp_path: Path):
    """A partitioned table (column `_p`, partition dirs hidden-looking) with every kind of file."""
    root = tmp_path / "t"
    t = TableBuilder(root, [field("id", "long"), field("_p", "string")], ["_p"])
    files = {
        "live": "_p=a/live.parquet",
        "live_space": "_p=a b/live space.parquet",
        "tomb_recent": "_p=a/tomb_recent.parquet",
        "tomb_old": "_p=a/tomb_old.parquet",
        "tomb_old_but_new_file": "_p=b/tomb_old_new_mtime.parquet",
        "untracked_old": "_p=b/untracked_old.parquet",
        "untracked_recent": "_p=b/untracked_recent.parquet",
        "root_untracked_old": "stray.parquet",
        "hidden_file": "_p=a/.hidden.parquet",
        "hidden_dir": "_tmp/leftover.parquet",
        "change_data": "_change_data/cdc-old.parquet",
    }
    for key, rel in files.items():
        mtime = RECENT if key in ("untracked_recent", "tomb_old_but_new_file") else OLD
        touch(root, rel, mtime)
    t.commit([
        add("_p=a/live.parquet", {"_p": "a"}),
        add("_p=a%20b/live%20space.parquet", {"_p": "a b"}),
        add("_p=a/tomb_recent.parquet", {"_p": "a"}),
        add("_p=a/tomb_old.parquet", {"_p": "a"}),
        add("_p=b/tomb_old_new_mtime.parquet", {"_p": "b"}),
    ])
    t.commit([
        remove("_p=a/tomb_recent.parquet", RECENT),
        remove("_p=a/tomb_old.parquet", OLD),
        remove("_p=b/tomb_old_new_mtime.parquet", OLD),
    ])
    (root / "_p=empty").mkdir()
    (root / "nested" / "empty").mkdir(parents=True)
    return root, files


def test_plan_with_default_retention(table):
    root, files = table
    plan = plan_vacuum(load_snapshot(str(root)), now_ms=NOW_MS)
    assert plan.delete_before_ms == NOW_MS - 7 * DAY_MS
    deleted = rels(root, [f.path for f in plan.files])
    assert deleted == {
        files["tomb_old"],
        files["untracked_old"],
        files["root_untracked_old"],
        files["change_data"],
    }
    # empty directories (deepest first); a directory whose only file is deleted now stays for the next run
    assert rels(root, plan.dirs) == {"_p=empty", "nested/empty", "nested"}
    assert plan.dirs.index(str(root / "nested" / "empty")) < plan.dirs.index(str(root / "nested"))
    assert plan.size_to_delete == 4
    # dirs listed: _p=a, _p=a b, _p=b, _change_data, _p=empty, nested, nested/empty; + the root
    assert plan.num_dirs == 8
    assert plan.paths[: len(plan.files)] == [f.path for f in plan.files]


def test_execute_deletes_exactly_the_plan(table):
    root, files = table
    plan = plan_vacuum(load_snapshot(str(root)), now_ms=NOW_MS)
    (root / "_p=b" / ".untracked_old.parquet.crc").write_bytes(b"crc")
    assert execute_plan(plan) == len(plan.files) + len(plan.dirs)
    for key, rel in files.items():
        exists = (root / rel).exists()
        assert exists == (key not in ("tomb_old", "untracked_old", "root_untracked_old", "change_data")), key
    assert not (root / "_p=b" / ".untracked_old.parquet.crc").exists()  # its Hadoop checksum went too
    assert not (root / "nested").exists() and not (root / "_p=empty").exists()
    assert (root / "_delta_log").is_dir() and len(list((root / "_delta_log").iterdir())) == 3
    # a second run now finds the directory emptied by the first one; nothing else
    again = plan_vacuum(load_snapshot(str(root)), now_ms=NOW_MS)
    assert again.files == [] and rels(root, again.dirs) == {"_change_data"}


def test_zero_retention_deletes_every_unneeded_file(table):
    root, files = table
    plan = plan_vacuum(load_snapshot(str(root)), 0, now_ms=NOW_MS, check_enabled=False)
    deleted = rels(root, [f.path for f in plan.files])
    assert deleted == {
        files["tomb_old"], files["tomb_recent"], files["tomb_old_but_new_file"], files["untracked_old"],
        files["untracked_recent"], files["root_untracked_old"], files["change_data"],
    }
    with pytest.raises(DeltaIllegalArgumentError, match="low retention period"):
        plan_vacuum(load_snapshot(str(root)), 0, now_ms=NOW_MS)


def test_table_property_sets_the_retention(tmp_path: Path):
    root = tmp_path / "t"
    t = TableBuilder(root, [field("id", "long")],
                     configuration={"delta.deletedFileRetentionDuration": "interval 2 hours"})
    touch(root, "gone.parquet", NOW_MS - 3 * HOUR_MS)
    touch(root, "tomb.parquet", NOW_MS - 3 * HOUR_MS)
    t.commit([add("tomb.parquet")])
    t.commit([remove("tomb.parquet", NOW_MS - 3 * HOUR_MS)])
    plan = plan_vacuum(load_snapshot(str(root)), now_ms=NOW_MS)
    assert plan.configured_retention_ms == 2 * HOUR_MS
    assert rels(root, [f.path for f in plan.files]) == {"gone.parquet", "tomb.parquet"}
    # a retention shorter than the table's is refused, a longer one accepted
    with pytest.raises(DeltaIllegalArgumentError, match='not less than "2 hours"'):
        plan_vacuum(load_snapshot(str(root)), 1, now_ms=NOW_MS)
    assert plan_vacuum(load_snapshot(str(root)), 4, now_ms=NOW_MS).files == []


def test_deletion_vector_files_follow_their_data_files(tmp_path: Path):
    root = tmp_path / "t"
    t = TableBuilder(
        root, [field("id", "long")],
        protocol={"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                  "writerFeatures": ["deletionVectors"]},
    )
    touch(root, "a.parquet", OLD)
    touch(root, "b.parquet", OLD)
    dv_live = write_deletion_vector_file(str(root), [0])
    dv_old = write_deletion_vector_file(str(root), [1])
    dv_stray = write_deletion_vector_file(str(root), [2])
    for d in (dv_live, dv_old, dv_stray):
        p = Path(d.absolute_path(str(root)))
        os.utime(p, ns=(OLD * 1_000_000, OLD * 1_000_000))
    t.commit([add("a.parquet", deletionVector=dv_live.to_dict()), add("b.parquet", deletionVector=dv_old.to_dict())])
    t.commit([remove("b.parquet", OLD, deletionVector=dv_old.to_dict())])
    plan = plan_vacuum(load_snapshot(str(root)), now_ms=NOW_MS)
    assert rels(root, [f.path for f in plan.files]) == {
        "b.parquet",
        os.path.basename(dv_old.absolute_path(str(root))),
        os.path.basename(dv_stray.absolute_path(str(root))),
    }


def test_files_outside_the_table_and_missing_files_are_ignored(tmp_path: Path):
    root = tmp_path / "t"
    outside = tmp_path / "elsewhere.parquet"
    touch(tmp_path, "elsewhere.parquet", OLD)
    t = TableBuilder(root, [field("id", "long")])
    t.commit([add(str(outside)), add("missing.parquet")])
    t.commit([remove(str(outside), OLD)])
    plan = plan_vacuum(load_snapshot(str(root)), now_ms=NOW_MS)
    assert plan.files == [] and plan.dirs == []
    execute_plan(plan)
    assert outside.exists()
