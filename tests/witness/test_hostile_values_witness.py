"""delta-spark and pydelta on tables partitioned by values statements could trip on (issue 44):
quotes, backticks, dots, spaces, `=`, `/`, `%`, `#`, a newline, non-ASCII, SQL-injection-like
strings, a long value, null. Each engine writes such a table and runs DML whose predicates and
partition values carry them; the other reads every version with the same rows and history.
See tests/spark/test_hostile_values.py for every statement on pydelta alone.
"""

from __future__ import annotations

import pytest

from tests.spark.test_hostile_values import VALUES, sql_string
from tests.witness import _compare

pytestmark = [pytest.mark.spark, pytest.mark.witness]

# The empty string is left out: both engines write it as null (Hive's default partition), which
# tests/spark/test_hostile_values.py checks; here each value must come back as itself.
HOSTILE = [v for v in VALUES if v != ""]
ROWS = [(i, v, f"v{i}") for i, v in enumerate(HOSTILE)]  # row i holds HOSTILE[i]
QUOTE, BACKTICK, HASH, INJECTION = HOSTILE[0], HOSTILE[2], HOSTILE[9], HOSTILE[14]
assert (QUOTE, BACKTICK, HASH, INJECTION) == ("it's", "back`tick", "#tag", "' OR '1'='1")

# DML naming hostile values in predicates and in the values written (one commit each).
STATEMENTS = [
    f"INSERT INTO {{t}} VALUES (100, {sql_string(QUOTE)}, 'ins'), (101, {sql_string(INJECTION)}, 'ins')",
    f"DELETE FROM {{t}} WHERE p = {sql_string(BACKTICK)}",
    f"UPDATE {{t}} SET v = 'upd' WHERE p = {sql_string(HASH)} OR p IS NULL",
    f"UPDATE {{t}} SET p = {sql_string(INJECTION)} WHERE p = {sql_string(QUOTE)} AND id = 0",
    "MERGE INTO {t} t USING (SELECT 1L AS id, " + sql_string(HASH) + " AS p, 'merged' AS v UNION ALL "
    "SELECT 102L, " + sql_string(BACKTICK) + ", 'new') s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
]


def _partition_values(ds, path: str) -> set:
    rows = ds.sql(f"SELECT DISTINCT p FROM delta.`{path}`")["rows"]
    return {r[0] for r in rows}


def test_delta_spark_reads_what_pydelta_wrote(spark, delta_spark, tmp_path):
    path = str(tmp_path / "by-pydelta")
    spark.createDataFrame(ROWS, "id long, p string, v string").write.format("delta") \
        .partitionBy("p").option("delta.enableDeletionVectors", "true").save(path)          # v0
    assert _partition_values(delta_spark, path) == set(HOSTILE)
    _compare.same_at_every_version(spark, delta_spark, path)  # v0; each helper below compares its own versions
    latest_version = _compare.pydelta_writes_then_delta_spark_reads(spark, delta_spark, path, *STATEMENTS)
    _compare.same_at_every_version(spark, delta_spark, path, since=latest_version)  # and a whole history
    # The rows each statement named, and only those, changed (delta-spark's reading).
    latest = {r[0]: (r[1], r[2]) for r in delta_spark.rows(path)["rows"]}
    assert not [i for i, (p, _) in latest.items() if p == BACKTICK and i != 102]
    assert latest[0] == (INJECTION, "v0") and latest[1] == (HASH, "merged") and latest[102] == (BACKTICK, "new")
    assert latest[9][1] == "upd" and all(v == "upd" for p, v in latest.values() if p is None)


def test_pydelta_reads_what_delta_spark_wrote(spark, delta_spark, tmp_path):
    path = str(tmp_path / "by-delta-spark")
    delta_spark.exec(
        "spark.createDataFrame(req['rows'], 'id long, p string, v string').write.format('delta')"
        ".partitionBy('p').option('delta.enableDeletionVectors', 'true').save(req['path'])",
        rows=[list(r) for r in ROWS], path=path)                                             # v0
    written = {a["add"]["partitionValues"]["p"] for a in _compare.commits(path)[0] if "add" in a}
    assert written == set(HOSTILE)  # delta-spark's own partition values, as the log holds them
    _compare.same_at_every_version(spark, delta_spark, path)  # v0; each helper below compares its own versions
    _compare.delta_spark_writes_then_pydelta_reads(spark, delta_spark, path, *STATEMENTS)
    # pydelta writes on top of delta-spark's files and deletion vectors; delta-spark reads it.
    latest_version = _compare.pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        f"DELETE FROM {{t}} WHERE p = {sql_string(HOSTILE[5])}",
        f"UPDATE {{t}} SET v = 'again' WHERE p = {sql_string(INJECTION)}")
    _compare.same_at_every_version(spark, delta_spark, path, since=latest_version)  # and a whole history
