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


def _commit_params(path) -> list[tuple]:
    import json

    out = []
    for f in sorted((path / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                info = action["commitInfo"]
                out.append((info["operation"], info["operationParameters"].get("partitionBy")))
    return out


_WRITES = """
df = spark.range(4).selectExpr('id', 'CAST(id % 2 AS INT) AS part')
df.write.format('delta').partitionBy('part').save(req['p'])
df.write.format('delta').mode('append').save(req['p'])
df.write.format('delta').mode('append').partitionBy('part').save(req['p'])
df.write.format('delta').mode('overwrite').save(req['p'])
spark.sql(f"INSERT INTO delta.`{req['p']}` VALUES (9, 1)")
df.writeTo(f"delta.`{req['p']}`").append()
result = 1
"""


def test_write_records_the_writers_partition_by_as_delta_spark(spark, delta_spark, tmp_path):
    """commitInfo's partitionBy for WRITE is what the writer was given, not the table's partitioning."""
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    delta_spark.exec(_WRITES, p=str(theirs))
    exec(_WRITES, {"spark": spark, "req": {"p": str(ours)}})
    assert _commit_params(ours) == _commit_params(theirs)
    assert _commit_params(ours)[1] == ("WRITE", "[]")


_IDEMPOTENT_DML = """
t = f"delta.`{req['p']}`"
spark.sql(f"CREATE TABLE {t} (id BIGINT) USING delta")
spark.sql(f"INSERT INTO {t} VALUES (1), (2), (3)")
for stmt in (f"DELETE FROM {t} WHERE id = 1", f"DELETE FROM {t} WHERE id = 2", f"UPDATE {t} SET id = 30 WHERE id = 3"):
    spark.conf.set('spark.databricks.delta.write.txnAppId', 'nightly')
    spark.conf.set('spark.databricks.delta.write.txnVersion', '5' if 'UPDATE' not in stmt else '6')
    spark.sql(stmt)
spark.conf.unset('spark.databricks.delta.write.txnAppId')
spark.conf.unset('spark.databricks.delta.write.txnVersion')
result = sorted(r.id for r in spark.read.format('delta').load(req['p']).collect())
"""


def test_dml_honours_the_idempotent_write_session_confs_as_delta_spark(spark, delta_spark, tmp_path):
    """txnAppId/txnVersion session confs make DML idempotent: a second DELETE with the same pair is skipped."""
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    their_rows = delta_spark.exec(_IDEMPOTENT_DML, p=str(theirs))
    env = {"spark": spark, "req": {"p": str(ours)}}
    exec(_IDEMPOTENT_DML, env)
    assert env["result"] == their_rows == [2, 30]
    assert versions(ours) == versions(theirs)
    assert pydelta_txn(ours) == ("nightly", 6)


def pydelta_txn(path) -> tuple:
    import pydelta

    return ("nightly", pydelta.load_snapshot(str(path)).transactions["nightly"])
