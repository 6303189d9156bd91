"""delta-spark (in its own process, see delta_spark.py) reads the tables pydelta writes
with each table feature: the same rows and schema at every version, DESCRIBE HISTORY and
DESCRIBE DETAIL work; then delta-spark writes to them (DELETE/UPDATE/INSERT) and pydelta
reads what delta-spark left. Where the two disagree the tests assert delta-spark's answer.
"""

from __future__ import annotations

import datetime as dt

import pytest

from pydelta import DeltaTable
from tests.witness import _compare
from tests.witness.delta_spark import WitnessError, canon

pytestmark = [pytest.mark.spark, pytest.mark.witness]


# -- helpers (shared with the other witness tests, see _compare.py) ------------------------
_read = _compare.read
_version = _compare.version
_commits = _compare.commits
_commit_info = _compare.commit_info
_features = _compare.features
same_at_every_version = _compare.same_at_every_version
delta_spark_writes_then_pydelta_reads = _compare.delta_spark_writes_then_pydelta_reads


# -- tests -------------------------------------------------------------------------------
def test_witness_is_delta_spark(delta_spark):
    assert delta_spark.info["pyspark"].startswith("4.2")
    assert any(j.startswith("delta-spark_") for j in delta_spark.info["jars"])
    extensions = delta_spark.exec("result = spark.conf.get('spark.sql.extensions')")
    assert extensions == "io.delta.sql.DeltaSparkSessionExtension"


def test_deletion_vectors(spark, delta_spark, tmp_path):
    path = str(tmp_path / "dv")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING delta "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")                      # v0
    spark.range(0, 20, 1, 1).selectExpr("id", "CAST(id AS STRING) AS v") \
        .write.format("delta").mode("append").save(path)                                   # v1
    spark.sql(f"DELETE FROM {t} WHERE id % 3 = 0")                                          # v2
    adds = [a["add"] for a in _commits(path)[2] if "add" in a]
    assert any(a.get("deletionVector") for a in adds), "pydelta's DELETE wrote a deletion vector"
    assert "deletionVectors" in _features(delta_spark, path)
    same_at_every_version(spark, delta_spark, path)
    delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "DELETE FROM {t} WHERE id = 1",
        "UPDATE {t} SET v = 'x' WHERE id % 2 = 0",
        "INSERT INTO {t} VALUES (100, 'new')")
    spark.sql(f"DELETE FROM {t} WHERE id = 2")  # pydelta again, on delta-spark's DVs
    same_at_every_version(spark, delta_spark, path)


def test_column_mapping_name_mode_after_rename(spark, delta_spark, tmp_path):
    path = str(tmp_path / "cm")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, v STRING, p INT) USING delta PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")                         # v0
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 0), (2, 'b', 1)")                           # v1
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN v TO label")                                  # v2
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN p TO part")                                   # v3
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c', 1)")                                        # v4
    spark.sql(f"ALTER TABLE {t} DROP COLUMN label")                                         # v5
    assert "columnMapping" in _features(delta_spark, path)
    same_at_every_version(spark, delta_spark, path)
    delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "ALTER TABLE {t} ADD COLUMN label STRING",
        "INSERT INTO {t} VALUES (4, 0, 'd')",
        "UPDATE {t} SET label = 'u' WHERE id < 3",
        "ALTER TABLE {t} RENAME COLUMN label TO name",
        "DELETE FROM {t} WHERE id = 3")
    assert _read(spark, path)["schema"] == [["id", "int", True], ["part", "int", True], ["name", "string", True]]


def test_change_data_feed(spark, delta_spark, tmp_path):
    path = str(tmp_path / "cdf")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, v STRING) USING delta "
              "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")                        # v0
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")                       # v1
    spark.sql(f"UPDATE {t} SET v = 'B' WHERE id = 2")                                       # v2
    spark.sql(f"DELETE FROM {t} WHERE id = 1")                                              # v3
    spark.sql(f"MERGE INTO {t} t USING (SELECT * FROM VALUES (3, 'C'), (4, 'd') AS s(id, v)) s "
              "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")  # v4
    same_at_every_version(spark, delta_spark, path)

    def ours_changes(start):
        df = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", start)
              .load(path).drop("_commit_timestamp"))
        return canon(df)

    assert ours_changes(0) == delta_spark.changes(path, start=0)
    delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "UPDATE {t} SET v = 'x' WHERE id = 4",
        "DELETE FROM {t} WHERE id = 2")
    assert ours_changes(5) == delta_spark.changes(path, start=5)
    assert ours_changes(0) == delta_spark.changes(path, start=0)


def test_type_widening_int_to_long(spark, delta_spark, tmp_path):
    path = str(tmp_path / "tw")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, v SMALLINT) USING delta "
              "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")                          # v0
    spark.sql(f"INSERT INTO {t} VALUES (1, 1S), (2, 2S)")                                  # v1
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT")                               # v2
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN v TYPE INT")                                   # v3
    spark.sql(f"INSERT INTO {t} VALUES (5000000000, 100000)")                               # v4
    assert {"typeWidening", "typeWidening-preview"} & _features(delta_spark, path)
    same_at_every_version(spark, delta_spark, path)
    assert delta_spark.rows(path)["schema"] == [["id", "bigint", True], ["v", "int", True]]
    delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "UPDATE {t} SET id = id + 10000000000 WHERE id < 3",
        "DELETE FROM {t} WHERE v = 2")


def test_check_constraints(spark, delta_spark, tmp_path):
    path = str(tmp_path / "ck")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, v STRING) USING delta")                          # v0
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")                                 # v1
    spark.sql(f"ALTER TABLE {t} ADD CONSTRAINT positive CHECK (id > 0)")                    # v2
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c')")                                           # v3
    same_at_every_version(spark, delta_spark, path)
    detail = delta_spark.detail(path)
    assert dict(detail["properties"]).get("delta.constraints.positive") == "id > 0"
    assert "checkConstraints" in _features(delta_spark, path) or detail["minWriterVersion"] >= 3
    with pytest.raises(WitnessError) as e:  # delta-spark enforces pydelta's constraint
        delta_spark.sql(f"INSERT INTO {t} VALUES (-1, 'neg')", collect=False)
    assert "DELTA_VIOLATE_CONSTRAINT" in (e.value.error_class or str(e.value))
    with pytest.raises(WitnessError):
        delta_spark.sql(f"UPDATE {t} SET id = -id WHERE id = 1", collect=False)
    assert _version(path) == 3
    delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "UPDATE {t} SET id = id + 10 WHERE id = 1",
        "ALTER TABLE {t} ADD CONSTRAINT short CHECK (length(v) < 5)")
    with pytest.raises(Exception, match=r"(?i)constraint|violat"):  # pydelta enforces delta-spark's
        spark.sql(f"INSERT INTO {t} VALUES (7, 'too long')")
    assert _version(path) == 5


def test_generated_columns(spark, delta_spark, tmp_path):
    path = str(tmp_path / "gen")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, d DATE, y INT GENERATED ALWAYS AS (year(d)), "
              "up STRING GENERATED ALWAYS AS (upper(CAST(id AS STRING)))) USING delta")      # v0
    spark.sql(f"INSERT INTO {t} (id, d) VALUES (1, DATE'2020-05-01'), (2, DATE'2024-01-02')")  # v1
    same_at_every_version(spark, delta_spark, path)
    assert delta_spark.rows(path)["rows"] == [[1, "date:2020-05-01", 2020, "1"], [2, "date:2024-01-02", 2024, "2"]]
    assert "generatedColumns" in _features(delta_spark, path) or delta_spark.protocol(path)["minWriterVersion"] >= 4
    with pytest.raises(WitnessError):  # delta-spark checks pydelta's generation expression
        delta_spark.sql(f"INSERT INTO {t} VALUES (3, DATE'2021-01-01', 1999, '3')", collect=False)
    delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} (id, d) VALUES (3, DATE'2021-07-07')",
        "UPDATE {t} SET d = DATE'1999-12-31' WHERE id = 1")
    assert _read(spark, path)["rows"] == [[1, "date:1999-12-31", 1999, "1"], [2, "date:2024-01-02", 2024, "2"],
                                         [3, "date:2021-07-07", 2021, "3"]]


def test_timestamp_ntz(spark, delta_spark, tmp_path):
    path = str(tmp_path / "ntz")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, ntz TIMESTAMP_NTZ, ts TIMESTAMP) USING delta")    # v0
    spark.sql(f"INSERT INTO {t} VALUES (1, TIMESTAMP_NTZ'2024-03-10 02:30:00', TIMESTAMP'2024-03-10 02:30:00Z'), "
              "(2, TIMESTAMP_NTZ'1969-12-31 23:59:59.123456', NULL), (3, NULL, TIMESTAMP'2000-01-01 00:00:00Z')")  # v1
    assert "timestampNtz" in _features(delta_spark, path)
    same_at_every_version(spark, delta_spark, path)
    assert delta_spark.rows(path)["schema"][1] == ["ntz", "timestamp_ntz", True]
    delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "UPDATE {t} SET ntz = ntz + INTERVAL 1 DAY WHERE id = 1",
        "INSERT INTO {t} VALUES (4, TIMESTAMP_NTZ'2999-12-31 23:59:59.999999', TIMESTAMP'2999-12-31 23:59:59Z')",
        "DELETE FROM {t} WHERE id = 3")


def test_in_commit_timestamps(spark, delta_spark, tmp_path):
    path = str(tmp_path / "ict")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT) USING delta "
              "TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')")                    # v0
    for i in range(1, 4):
        spark.sql(f"INSERT INTO {t} VALUES ({i})")                                         # v1..v3
    assert "inCommitTimestamp" in _features(delta_spark, path)
    same_at_every_version(spark, delta_spark, path)

    def ict(v):
        ms = _commit_info(path, v)["inCommitTimestamp"]
        return dt.datetime.fromtimestamp(ms // 1000).replace(microsecond=(ms % 1000) * 1000)

    history = delta_spark.history(path)
    assert [h["timestamp"] for h in history] == [f"ts:{ict(v).isoformat()}" for v in range(4)]
    assert [ict(v) for v in range(4)] == sorted(ict(v) for v in range(4))
    # TIMESTAMP AS OF resolves through the in-commit timestamps
    at = ict(2).strftime("%Y-%m-%d %H:%M:%S.%f")
    assert delta_spark.rows(path, timestamp=at)["rows"] == [[1], [2]]
    delta_spark_writes_then_pydelta_reads(spark, delta_spark, path, "INSERT INTO {t} VALUES (9)",
                                          "DELETE FROM {t} WHERE id = 1")
    assert all("inCommitTimestamp" in _commit_info(path, v) for v in (4, 5))
    ours = {r["version"]: r["timestamp"] for r in DeltaTable.forPath(spark, path).history().collect()}
    assert {v: ict(v) for v in range(6)} == ours


def test_liquid_clustering(spark, delta_spark, tmp_path):
    path = str(tmp_path / "lc")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, k INT, v STRING) USING delta CLUSTER BY (k)")  # v0
    spark.sql(f"INSERT INTO {t} SELECT id, CAST(id % 5 AS INT), CAST(id AS STRING) FROM range(50)")  # v1
    spark.sql(f"INSERT INTO {t} SELECT id, CAST(id % 7 AS INT), 'b' FROM range(50, 80)")    # v2
    spark.sql(f"OPTIMIZE {t}")                                                              # v3
    assert "clustering" in _features(delta_spark, path)
    assert delta_spark.detail(path)["clusteringColumns"] == ["k"]
    same_at_every_version(spark, delta_spark, path)
    delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "UPDATE {t} SET v = 'u' WHERE k = 3",
        "DELETE FROM {t} WHERE id < 10",
        "ALTER TABLE {t} CLUSTER BY (k, id)",
        "OPTIMIZE {t}")
    assert delta_spark.detail(path)["clusteringColumns"] == ["k", "id"]
    spark.sql(f"INSERT INTO {t} VALUES (1000, 1, 'z')")  # pydelta again, after delta-spark's OPTIMIZE
    same_at_every_version(spark, delta_spark, path)
