"""A path without a Delta table fails as in delta-spark: same pyspark exception, error class and text.

Witness: delta-spark's source and tests. `DeltaTable.forPath` checks `DeltaTableUtils.isDeltaTable`
first and throws DeltaErrors.notADeltaTableException (DELTA_MISSING_DELTA_TABLE, "<tableName> is not a
Delta table.", the path in backticks) whether the path exists or not (DeltaTableSuite "forPath - with
non-Delta table path"). Reads (`spark.read.format("delta").load`, SQL on delta.`path`) fail in
DeltaTableV2.toBaseRelation: Spark's PATH_NOT_FOUND ("Path does not exist: <path>.") when nothing is
at the path (DeltaSuite "read via data source API when the directory doesn't exist"), else
DeltaErrors.nonExistentDeltaTable (DELTA_TABLE_NOT_FOUND, "Delta table <tableName> doesn't exist.").
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import AnalysisException

from pydelta import DeltaTable
from pydelta.errors import DeltaTableNotFoundError

pytestmark = pytest.mark.spark


@pytest.fixture
def not_tables(spark, tmp_path: Path) -> dict[str, str]:
    """Directories that exist but hold no Delta table."""
    empty = tmp_path / "empty"
    empty.mkdir()
    no_commits = tmp_path / "no_commits"
    (no_commits / "_delta_log").mkdir(parents=True)
    parquet = str(tmp_path / "parquet")
    spark.range(2).write.parquet(parquet)
    return {"empty": str(empty), "no_commits": str(no_commits), "parquet": parquet}


def _error(call) -> AnalysisException:
    with pytest.raises(AnalysisException) as info:
        call()
    assert isinstance(info.value, DeltaTableNotFoundError)  # pydelta's class too
    return info.value


def test_for_path_says_not_a_delta_table(spark, tmp_path, not_tables):
    for path in [str(tmp_path / "missing"), *not_tables.values()]:
        e = _error(lambda path=path: DeltaTable.forPath(spark, path))
        assert (e.getCondition(), e.getSqlState()) == ("DELTA_MISSING_DELTA_TABLE", "42P01")
        assert str(e) == f"[DELTA_MISSING_DELTA_TABLE] `{path}` is not a Delta table."
        assert DeltaTable.isDeltaTable(spark, path) is False


def test_reading_a_missing_path_says_it_does_not_exist(spark, tmp_path):
    path = str(tmp_path / "missing")
    for read in (lambda: spark.read.format("delta").load(path),
                 lambda: spark.read.format("delta").load(path + "/"),
                 lambda: spark.sql(f"SELECT * FROM delta.`{path}`")):
        e = _error(read)
        assert (e.getCondition(), e.getSqlState()) == ("PATH_NOT_FOUND", "42K03")
        assert str(e) == f"[PATH_NOT_FOUND] Path does not exist: {path}."
    assert not (tmp_path / "missing").exists()


def test_reading_a_directory_without_a_table_says_the_table_does_not_exist(spark, not_tables):
    for path in not_tables.values():
        for read in (lambda path=path: spark.read.format("delta").load(path),
                     lambda path=path: spark.read.format("delta").option("versionAsOf", 0).load(path),
                     lambda path=path: spark.sql(f"SELECT * FROM delta.`{path}`")):
            e = _error(read)
            assert (e.getCondition(), e.getSqlState()) == ("DELTA_TABLE_NOT_FOUND", "42P01")
            assert str(e) == f"[DELTA_TABLE_NOT_FOUND] Delta table `{path}` doesn't exist."
