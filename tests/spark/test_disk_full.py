"""A full disk under Spark's data writes (issue 44): an append and an UPDATE on a tmpfs filled to
the last byte fail with a named pydelta error that says why, commit nothing, leave no staged
file behind, and the table reads as before; with room again the next write takes the next
version."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pydelta.errors import DeltaError, StorageAccessError
from tests.faults.disk import fill, small_disk

pytestmark = pytest.mark.spark


def test_a_full_disk_fails_writes_by_name_and_commits_nothing(spark, tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", size="8m") as disk:
        path = str(disk / "t")
        spark.range(0, 100).selectExpr("id", "id % 3 AS g").write.format("delta").save(path)
        log_before = sorted(os.listdir(Path(path) / "_delta_log"))
        filler = fill(disk)
        with pytest.raises(StorageAccessError, match=r"TASK_WRITE_FAILED.*No space left on device") as failed:
            spark.range(0, 300_000).selectExpr("id", "id % 3 AS g").write.format("delta").mode("append").save(path)
        assert isinstance(failed.value, DeltaError)
        with pytest.raises(StorageAccessError, match="No space left on device"):
            spark.sql(f"UPDATE delta.`{path}` SET g = g + 10 WHERE id < 50")
        assert sorted(os.listdir(Path(path) / "_delta_log")) == log_before
        assert not (Path(path) / "_pydelta_staging").exists() or not any((Path(path) / "_pydelta_staging").iterdir())
        assert spark.read.format("delta").load(path).count() == 100
        filler.unlink()
        spark.range(100, 110).selectExpr("id", "id % 3 AS g").write.format("delta").mode("append").save(path)
        assert spark.read.format("delta").load(path).count() == 110
        assert sorted(os.listdir(Path(path) / "_delta_log"))[-1] == f"{1:020d}.json"
