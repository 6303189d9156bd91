"""delta-spark and pydelta on tables at paths URIs escape (space, `%`, `#`, `+`, `?`, unicode, a
literal `%20`), partitioned and not, both ways: each reads every version the other wrote, with
the same history. See tests/spark/test_odd_paths.py for every operation on such paths.
"""

from __future__ import annotations

import pytest

from tests.spark.test_odd_paths import ALL
from tests.witness import _compare

pytestmark = [pytest.mark.spark, pytest.mark.witness]


@pytest.mark.parametrize("partitioned", [False, True], ids=["plain", "partitioned"])
def test_delta_spark_reads_and_writes_pydelta_tables_at_odd_paths(spark, delta_spark, tmp_path, partitioned):
    path = tmp_path / ALL / "t"
    by = "PARTITIONED BY (part) " if partitioned else ""
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, part STRING) USING delta {by}"
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")                    # v0
    spark.range(0, 30, 1, 2).selectExpr("id", "CAST(id % 3 AS STRING) AS part") \
        .write.format("delta").mode("append").save(str(path))                            # v1
    _compare.pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "DELETE FROM {t} WHERE id = 4",
        "UPDATE {t} SET part = 'u' WHERE id = 5",
        "MERGE INTO {t} t USING (SELECT 6L AS id, 'm' AS part UNION ALL SELECT 100L, 'n') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    _compare.delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} VALUES (200, 'x'), (201, '1')",
        "DELETE FROM {t} WHERE id = 7",
        "UPDATE {t} SET part = 'v' WHERE id = 8")
    spark.sql(f"OPTIMIZE delta.`{path}`")  # pydelta compacts delta-spark's files and DVs
    _compare.same_at_every_version(spark, delta_spark, path)


def test_pydelta_reads_a_partitioned_table_delta_spark_made_at_an_odd_path(spark, delta_spark, tmp_path):
    path = tmp_path / ALL / "by delta-spark"
    delta_spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, part STRING) USING delta PARTITIONED BY (part)",
                    collect=False)
    _compare.delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} SELECT id, CAST(id % 3 AS STRING) FROM range(20)",
        "DELETE FROM {t} WHERE id = 3")
    assert sorted(r.id for r in spark.read.format("delta").load(str(path)).where("part = '0'").collect()) == \
        [0, 6, 9, 12, 15, 18]
