"""delta-spark 4.4 itself on DML that changes no row: no version recorded, zero metrics, so
pydelta's matching behaviour (tests/spark/test_dml_no_change.py) is checked against the reference
in the same run, with and without deletion vectors and the change data feed."""

from __future__ import annotations

import pytest

from tests.spark.test_dml_no_change import NO_CHANGE_SQL, PROPERTIES, versions

pytestmark = [pytest.mark.spark, pytest.mark.witness]


@pytest.mark.parametrize("kind", sorted(PROPERTIES))
def test_delta_spark_commits_nothing_for_dml_that_changes_no_row(spark, delta_spark, tmp_path, kind):
    path = tmp_path / "t"
    t = f"delta.`{path}`"
    delta_spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING delta {PROPERTIES[kind]}", collect=False)
    delta_spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')", collect=False)
    before = versions(path)
    for statement, metrics in NO_CHANGE_SQL:
        theirs = delta_spark.sql(statement.format(t=t))["rows"]
        assert theirs == [metrics], statement
        assert versions(path) == before, statement
        ours = [list(r) for r in spark.sql(statement.format(t=t)).collect()]  # pydelta on delta-spark's table
        assert ours == theirs, statement
        assert versions(path) == before, statement
