"""VACUUM LITE's `_last_vacuum_info` between delta-spark and pydelta: each resumes from the
other's record once commit 0 is gone, and both write it in the same bytes."""

from __future__ import annotations

import pytest

from pydelta.log.last_vacuum_info import FILE_NAME
from tests.spark.test_vacuum_lite_resume import NO_CHECK, drop_commits_before, removed_paths

pytestmark = [pytest.mark.spark, pytest.mark.witness]


def _prepare(engine_sql, path) -> None:
    engine_sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta")                   # v0
    engine_sql(f"INSERT INTO delta.`{path}` SELECT id FROM range(10)")                   # v1
    engine_sql(f"DELETE FROM delta.`{path}` WHERE id < 3")                               # v2
    engine_sql(f"VACUUM delta.`{path}` LITE RETAIN 0 HOURS")                             # v3, v4


@pytest.mark.parametrize("first", ["delta-spark", "pydelta"])
def test_lite_resumes_from_the_other_engines_record(spark, delta_spark, tmp_path, first):
    path = tmp_path / "t"
    theirs = lambda s: delta_spark.sql(s, collect=False)  # noqa: E731
    ours = lambda s: spark.sql(s).collect()  # noqa: E731
    delta_spark.sql(f"SET {NO_CHECK} = false", collect=False)
    spark.conf.set(NO_CHECK, "false")
    try:
        recorder, resumer = (theirs, ours) if first == "delta-spark" else (ours, theirs)
        _prepare(recorder, path)
        assert (path / "_delta_log" / FILE_NAME).read_text() == '{"latestCommitVersionOutsideOfRetentionWindow":2}\n'
        vacuumed = removed_paths(path)
        resumer(f"INSERT INTO delta.`{path}` SELECT id FROM range(10, 20)")               # v5
        resumer(f"DELETE FROM delta.`{path}` WHERE id >= 15")                             # v6
        drop_commits_before(path, 1)
        fresh = removed_paths(path) - vacuumed
        assert fresh and all((path / p).exists() for p in fresh)
        resumer(f"VACUUM delta.`{path}` LITE RETAIN 0 HOURS")
        assert not any((path / p).exists() for p in fresh)
        assert (path / "_delta_log" / FILE_NAME).read_text() == '{"latestCommitVersionOutsideOfRetentionWindow":6}\n'
    finally:
        spark.conf.unset(NO_CHECK)
        delta_spark.sql(f"RESET {NO_CHECK}", collect=False)
    rows = delta_spark.rows(str(path))["rows"]
    assert sorted(r[0] for r in rows) == list(range(3, 15))
