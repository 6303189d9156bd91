"""VACUUM LITE resumes from `_delta_log/_last_vacuum_info`, as delta-spark's does.

A LITE run records the latest commit outside its retention window; the next LITE run reads
only the commits after it, so it still works once log cleanup removed the commits before.
A full VACUUM records none (delta-spark's behaviour), after which LITE on a log without commit
0 is refused (DELTA_CANNOT_VACUUM_LITE). tests/witness/test_dml_no_change_witness.py has
delta-spark resume from pydelta's record and the other way round.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pydelta
from pydelta import DeltaTable
from pydelta.log.last_vacuum_info import FILE_NAME, read_watermark
from pydelta.log.storage import LocalStorage

pytestmark = pytest.mark.spark

NO_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


def removed_paths(path: Path) -> set[str]:
    return {json.loads(line)["remove"]["path"] for f in (path / "_delta_log").glob("*.json")
            for line in f.read_text().splitlines() if '"remove"' in line}


def drop_commits_before(path: Path, version: int) -> None:
    """What metadata cleanup does: a checkpoint at `version`, the commits before it gone."""
    from pydelta.log.checkpoint_writer import write_checkpoint

    write_checkpoint(pydelta.load_snapshot(str(path), version=version))
    for v in range(version):
        (path / "_delta_log" / f"{v:020d}.json").unlink(missing_ok=True)


@pytest.fixture
def no_retention_check(spark):
    spark.conf.set(NO_CHECK, "false")
    yield
    spark.conf.unset(NO_CHECK)


def test_lite_records_its_watermark_and_resumes_after_log_cleanup(spark, tmp_path, no_retention_check):
    path = tmp_path / "t"
    spark.range(0, 10, 1, 2).write.format("delta").save(str(path))                   # v0
    table = DeltaTable.forPath(spark, str(path))
    table.delete("id < 3")                                                             # v1
    spark.sql(f"VACUUM delta.`{path}` LITE RETAIN 0 HOURS")                           # v2, v3
    watermark = read_watermark(LocalStorage(), str(path))
    assert watermark == 1  # the VACUUM START commit came after the cutoff
    assert (path / "_delta_log" / FILE_NAME).read_text() == '{"latestCommitVersionOutsideOfRetentionWindow":1}\n'
    vacuumed = removed_paths(path)
    assert not any((path / p).exists() for p in vacuumed)

    spark.range(10, 20, 1, 2).write.format("delta").mode("append").save(str(path))   # v4
    table.delete("id >= 15")                                                           # v5
    drop_commits_before(path, 1)  # commit 0 gone; the log still holds every commit after the watermark
    newly_removed = removed_paths(path) - vacuumed
    assert newly_removed and all((path / p).exists() for p in newly_removed)
    spark.sql(f"VACUUM delta.`{path}` LITE RETAIN 0 HOURS")  # would be DELTA_CANNOT_VACUUM_LITE without the record
    assert not any((path / p).exists() for p in newly_removed)
    assert read_watermark(LocalStorage(), str(path)) == 5
    assert sorted(r.id for r in spark.read.format("delta").load(str(path)).collect()) == list(range(3, 15))
    drop_commits_before(path, 7)  # cleanup past the watermark (5): LITE may miss files now
    with pytest.raises(Exception, match="DELTA_CANNOT_VACUUM_LITE"):
        spark.sql(f"VACUUM delta.`{path}` LITE RETAIN 0 HOURS")


def test_full_vacuum_records_no_watermark_so_lite_needs_the_whole_log(spark, tmp_path, no_retention_check):
    path = tmp_path / "t"
    spark.range(0, 10, 1, 2).write.format("delta").save(str(path))
    DeltaTable.forPath(spark, str(path)).delete("id < 3")
    spark.sql(f"VACUUM delta.`{path}` LITE RETAIN 0 HOURS")
    spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS")  # FULL
    assert (path / "_delta_log" / FILE_NAME).read_text() == "{}\n"
    spark.range(10, 12).write.format("delta").mode("append").save(str(path))
    drop_commits_before(path, 5)
    with pytest.raises(Exception, match="DELTA_CANNOT_VACUUM_LITE"):
        spark.sql(f"VACUUM delta.`{path}` LITE RETAIN 0 HOURS")
