"""Two Spark sessions of one process, side by side: each operation runs with its own session's
settings (Hadoop file systems, commit user metadata, time zone), whichever was enabled last.

PySpark allows one SparkContext per process but many sessions over it (`newSession()`), each
with its own SQL conf; a session-level Hadoop setting (here a viewfs mount table, only in one
session's conf) reaches only that session's file system.
"""

from __future__ import annotations

import itertools
import json
import os

import deltalake
import pytest

import pydelta

pytestmark = pytest.mark.spark

_names = itertools.count()


def _mount(session, tmp_path, label: str) -> tuple[str, str, str]:
    """(viewfs URI of a table, its local directory, the conf key): a mount table in `session`'s conf only."""
    name = f"two{label}{next(_names)}{os.getpid()}"
    disk = tmp_path / f"disk_{label}"
    disk.mkdir()
    key = f"fs.viewfs.mounttable.{name}.link./data"
    session.conf.set(key, f"file://{disk}")
    return f"viewfs://{name}/data/t", str(disk / "t"), key


def _user_metadata(local: str, version: int) -> str | None:
    with open(os.path.join(local, "_delta_log", f"{version:020d}.json")) as f:
        for line in f:
            action = json.loads(line)
            if "commitInfo" in action:
                return action["commitInfo"].get("userMetadata")
    return None


def test_two_sessions_keep_their_own_settings(spark, tmp_path):
    first = spark
    second = pydelta.enable(spark.newSession())  # enabled last
    uri_a, local_a, key_a = _mount(first, tmp_path, "a")
    uri_b, local_b, key_b = _mount(second, tmp_path, "b")
    first.conf.set("spark.databricks.delta.commitInfo.userMetadata", "from-first")
    second.conf.set("spark.databricks.delta.commitInfo.userMetadata", "from-second")
    try:
        first.range(0, 5).write.format("delta").save(uri_a)
        second.range(10, 13).write.format("delta").save(uri_b)
        pydelta.DeltaTable.forPath(first, uri_a).delete("id = 0")
        second.sql(f"UPDATE delta.`{uri_b}` SET id = id + 100 WHERE id = 10")
        assert sorted(r.id for r in first.read.format("delta").load(uri_a).collect()) == [1, 2, 3, 4]
        assert sorted(r.id for r in second.read.format("delta").load(uri_b).collect()) == [11, 12, 110]
        assert pydelta.DeltaTable.forPath(first, uri_a).history().count() == 2
        # each table is a plain Delta table on its own disk, and each commit names its own session's metadata
        assert sorted(deltalake.DeltaTable(local_a).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 4]
        assert sorted(deltalake.DeltaTable(local_b).to_pyarrow_table().column("id").to_pylist()) == [11, 12, 110]
        assert [_user_metadata(local_a, v) for v in (0, 1)] == ["from-first"] * 2
        assert [_user_metadata(local_b, v) for v in (0, 1)] == ["from-second"] * 2
    finally:
        first.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
        first.conf.unset(key_a)
        second.conf.unset(key_b)
