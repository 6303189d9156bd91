"""pydelta over Spark Connect on tables at paths URIs escape (space, `%`, `#`, `+`, `?`, unicode,
a literal `%20`): the client hands the server decoded paths, as a classic session does."""

from __future__ import annotations

import pytest

from pydelta import DeltaTable
from tests.spark.test_odd_paths import ALL, _deltalake_rows

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("partitioned", [False, True], ids=["plain", "partitioned"])
def test_odd_path_over_connect(spark, tmp_path, partitioned):
    path = tmp_path / ALL / "t"
    t = f"delta.`{path}`"
    by = "PARTITIONED BY (part) " if partitioned else ""
    spark.sql(f"CREATE TABLE {t} (id BIGINT, part STRING) USING delta {by}"
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")                         # v0
    spark.range(0, 30, 1, 2).selectExpr("id", "CAST(id % 3 AS STRING) AS part") \
        .write.format("delta").mode("append").save(str(path))                                  # v1
    model = {i: str(i % 3) for i in range(30)}
    spark.sql(f"DELETE FROM {t} WHERE id = 4")                                                 # v2
    spark.sql(f"UPDATE {t} SET part = 'u' WHERE id = 5")                                       # v3
    source = spark.createDataFrame([(6, "m"), (100, "n")], "id BIGINT, part STRING")
    (DeltaTable.forPath(spark, str(path)).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())                              # v4
    del model[4]
    model.update({5: "u", 6: "m", 100: "n"})
    df = spark.read.format("delta").load(str(path))
    assert sorted(tuple(r) for r in df.collect()) == sorted(model.items())
    assert sorted(r.id for r in df.where("part = '2'").collect()) == sorted(i for i, p in model.items() if p == "2")
    v1 = spark.read.format("delta").option("versionAsOf", 1).load(str(path))
    assert v1.count() == 30
    assert sorted(tuple(r) for r in spark.sql(f"SELECT id, part FROM {t} WHERE id > 99").collect()) == [(100, "n")]
    assert _deltalake_rows(path, "id", "part") == sorted(model.items())
