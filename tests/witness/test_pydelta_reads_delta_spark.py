"""The reverse direction of test_delta_spark_reads_pydelta.py: delta-spark (in its own
process, see delta_spark.py) WRITES each table feature with SQL; pydelta reads every version
as delta-spark reads it (rows, schema, DESCRIBE HISTORY); then pydelta writes on top (an
INSERT and DML) and delta-spark reads pydelta's result at every version. Where the two
disagree, the tests assert delta-spark's answer (found here: `_metadata.row_id` and friends
typed nullable and in another order; variant tables not writable, and Spark 4.1+ shredding
variants a table without variantShredding may not hold).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import pydelta
from pydelta.spark.base.pyspark_compat import pyspark_before
from tests.witness._compare import (
    DELTA_SPARK_ENGINE,
    PYDELTA_ENGINE,
    commit_info,
    commits,
    delta_spark_writes_then_pydelta_reads,
    features,
    pydelta_writes_then_delta_spark_reads,
    read,
    same_at_every_version,
    same_history,
    same_row_tracking,
    version,
)
from tests.witness.delta_spark import WitnessError, canon

pytestmark = [pytest.mark.spark, pytest.mark.witness]


def _ds_writes(ds, path: str, *statements: str) -> int:
    """delta-spark runs the statements (one commit each); returns the latest version."""
    before = version(path) if (Path(path) / "_delta_log").is_dir() else -1
    for s in statements:
        ds.sql(s.format(t=f"delta.`{path}`"), collect=False)
    latest = version(path)
    assert latest == before + len(statements)
    return latest


def _adds(path: str, v: int) -> list[dict]:
    return [a["add"] for a in commits(path)[v] if "add" in a]


def _field_metadata(path: str, name: str) -> dict:
    schema = json.loads(pydelta.load_snapshot(path).metadata.schema_string)
    return next(f for f in schema["fields"] if f["name"] == name)["metadata"]


# -- tests -------------------------------------------------------------------------------
def test_deletion_vector_dml(spark, delta_spark, tmp_path):
    path = str(tmp_path / "dv")
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id BIGINT, v STRING) USING delta "
               "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
               "INSERT INTO {t} SELECT id, CAST(id AS STRING) FROM range(0, 30, 1, 1)",             # v1
               "DELETE FROM {t} WHERE id % 3 = 0",                                                   # v2
               "UPDATE {t} SET v = 'u' WHERE id % 5 = 1",                                            # v3
               "DELETE FROM {t} WHERE id = 2",                                                       # v4 (a second DV)
               "MERGE INTO {t} t USING (SELECT id, 'm' AS v FROM range(25, 35)) s ON t.id = s.id "
               "WHEN MATCHED AND t.id % 2 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
               "WHEN NOT MATCHED THEN INSERT *")                                                     # v5
    for v in (2, 3, 4, 5):
        assert any(a.get("deletionVector") for a in _adds(path, v)), f"delta-spark wrote a DV at version {v}"
    assert "deletionVectors" in features(delta_spark, path)
    same_at_every_version(spark, delta_spark, path)
    latest = pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} VALUES (100, 'new')",
        "DELETE FROM {t} WHERE id IN (4, 7)",                     # on delta-spark's DVs
        "UPDATE {t} SET v = 'p' WHERE id % 5 = 3",
        "MERGE INTO {t} t USING (SELECT id, 'pm' AS v FROM range(0, 12)) s ON t.id = s.id "
        "WHEN MATCHED AND t.id = 8 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    assert any(a.get("deletionVector") for a in _adds(path, latest - 2)), "pydelta's DELETE wrote a DV"
    ours = {r[0]: r[1] for r in read(spark, path)["rows"]}
    assert 8 not in ours and ours[4] == ours[0] == "pm" and ours[100] == "new" and ours[13] == "p"


def test_type_widening(spark, delta_spark, tmp_path):
    path = str(tmp_path / "tw")
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id INT, s SMALLINT, f FLOAT, d DECIMAL(5, 2), day DATE, st STRUCT<x: BYTE>) "
               "USING delta TBLPROPERTIES ('delta.enableTypeWidening' = 'true', "
               "'delta.feature.timestampNtz' = 'supported')",
               "INSERT INTO {t} VALUES (1, 1S, 1.5, 1.25, DATE'2024-01-02', named_struct('x', 1Y)), "
               "(2, NULL, NULL, NULL, NULL, NULL)",                                                  # v1
               "ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT",                                        # v2
               "ALTER TABLE {t} ALTER COLUMN s TYPE INT",                                            # v3
               "ALTER TABLE {t} ALTER COLUMN f TYPE DOUBLE",                                         # v4
               "ALTER TABLE {t} ALTER COLUMN d TYPE DECIMAL(10, 4)",                                 # v5
               "ALTER TABLE {t} ALTER COLUMN day TYPE TIMESTAMP_NTZ",                                # v6
               "ALTER TABLE {t} ALTER COLUMN st.x TYPE INT",                                         # v7
               "INSERT INTO {t} VALUES (5000000000, 100000, 1e300, 123456.7891, "
               "TIMESTAMP_NTZ'2024-05-06 07:08:09', named_struct('x', 70000))")                      # v8
    assert {"typeWidening", "typeWidening-preview"} & features(delta_spark, path)
    assert "delta.typeChanges" in _field_metadata(path, "id")
    same_at_every_version(spark, delta_spark, path)
    assert read(spark, path)["schema"] == [
        ["id", "bigint", True], ["s", "int", True], ["f", "double", True], ["d", "decimal(10,4)", True],
        ["day", "timestamp_ntz", True], ["st", "struct<x:int>", True]]
    pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} VALUES (6000000000, 200000, 2.5e300, 999999.9999, TIMESTAMP_NTZ'1999-01-01 00:00:00', "
        "named_struct('x', 80000))",
        "UPDATE {t} SET id = id + 10000000000, st = named_struct('x', 90000) WHERE id < 3",
        "DELETE FROM {t} WHERE s = 100000")
    # pydelta's commits keep delta-spark's type-change history on every widened field
    assert _field_metadata(path, "id")["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_renamed_and_dropped_columns(spark, delta_spark, tmp_path, mode):
    path = str(tmp_path / f"cm-{mode}")
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id INT, v STRING, p INT, s STRUCT<a: INT, b: STRING>) USING delta "
               f"PARTITIONED BY (p) TBLPROPERTIES ('delta.columnMapping.mode' = '{mode}')",
               "INSERT INTO {t} VALUES (1, 'a', 0, named_struct('a', 1, 'b', 'x')), (2, 'b', 1, NULL)",  # v1
               "ALTER TABLE {t} RENAME COLUMN v TO label",                                              # v2
               "ALTER TABLE {t} RENAME COLUMN p TO part",                                               # v3
               "ALTER TABLE {t} RENAME COLUMN s.a TO alpha",                                            # v4
               "INSERT INTO {t} VALUES (3, 'c', 1, named_struct('alpha', 3, 'b', 'z'))",                 # v5
               "ALTER TABLE {t} DROP COLUMN label",                                                     # v6
               "ALTER TABLE {t} ADD COLUMN label STRING",                                               # v7: new column
               "INSERT INTO {t} VALUES (4, 0, named_struct('alpha', 4, 'b', 'w'), 'new')")              # v8
    assert "columnMapping" in features(delta_spark, path)
    same_at_every_version(spark, delta_spark, path)
    assert read(spark, path)["rows"] == [[1, 0, {"alpha": 1, "b": "x"}, None], [2, 1, None, None],
                                         [3, 1, {"alpha": 3, "b": "z"}, None], [4, 0, {"alpha": 4, "b": "w"}, "new"]]
    pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} VALUES (5, 1, named_struct('alpha', 5, 'b', 'v'), 'py')",
        "UPDATE {t} SET label = 'u', s = named_struct('alpha', -1, 'b', 'u') WHERE id < 3",
        "ALTER TABLE {t} RENAME COLUMN label TO name",
        "ALTER TABLE {t} DROP COLUMN s",
        "DELETE FROM {t} WHERE id = 3")
    assert delta_spark.rows(path)["rows"] == [[1, 0, "u"], [2, 1, "u"], [4, 0, "new"], [5, 1, "py"]]


def test_liquid_clustering(spark, delta_spark, tmp_path):
    path = str(tmp_path / "lc")
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id BIGINT, k INT, v STRING) USING delta CLUSTER BY (k)",
               "INSERT INTO {t} SELECT id, CAST(id % 5 AS INT), CAST(id AS STRING) FROM range(0, 40, 1, 2)",   # v1
               "INSERT INTO {t} SELECT id, CAST(id % 7 AS INT), 'b' FROM range(40, 60, 1, 2)",                 # v2
               "OPTIMIZE {t}",                                                                                 # v3
               "ALTER TABLE {t} CLUSTER BY (k, id)",                                                           # v4
               "INSERT INTO {t} VALUES (100, 1, 'c')")                                                         # v5
    assert "clustering" in features(delta_spark, path)
    assert any(a.get("clusteringProvider") == "liquid" for a in _adds(path, 3))
    same_at_every_version(spark, delta_spark, path)
    ours = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert ours["clusteringColumns"] == delta_spark.detail(path)["clusteringColumns"] == ["k", "id"]
    latest = pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} SELECT id, CAST(id % 3 AS INT), 'p' FROM range(200, 220)",
        "UPDATE {t} SET v = 'u' WHERE k = 2",
        "OPTIMIZE {t}")
    assert any(a.get("clusteringProvider") == "liquid" for a in _adds(path, latest)), "pydelta's OPTIMIZE clustered"
    delta_spark_writes_then_pydelta_reads(spark, delta_spark, path, "INSERT INTO {t} VALUES (300, 4, 'd')",
                                          "OPTIMIZE {t}")


def test_row_tracking(spark, delta_spark, tmp_path):
    path = str(tmp_path / "rt")
    ds_latest = _ds_writes(
        delta_spark, path,
        "CREATE TABLE {t} (id BIGINT, v STRING) USING delta TBLPROPERTIES ("
        "'delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true')",
        "INSERT INTO {t} SELECT id, 'a' FROM range(0, 10, 1, 2)",                        # v1
        "INSERT INTO {t} SELECT id, 'b' FROM range(10, 15)",                              # v2
        "UPDATE {t} SET v = 'u' WHERE id % 4 = 0",                                        # v3
        "DELETE FROM {t} WHERE id = 5",                                                   # v4
        "MERGE INTO {t} t USING (SELECT id FROM range(12, 18)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = 'm' WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 'n')",  # v5
        "OPTIMIZE {t}")                                                                   # v6
    assert {"rowTracking", "domainMetadata"} <= features(delta_spark, path)
    # the hidden _metadata struct: delta-spark's fields, in its order, with its nullability
    theirs = delta_spark.exec("result = [[f.name, f.dataType.simpleString(), f.nullable] for f in "
                              "spark.read.format('delta').load(req['path']).select('_metadata.*').schema]", path=path)
    ours = [[f.name, f.dataType.simpleString(), f.nullable]
            for f in spark.read.format("delta").load(path).select("_metadata.*").schema]
    assert ours == theirs
    assert [f[0] for f in ours[-4:]] == ["row_id", "base_row_id", "default_row_commit_version", "row_commit_version"]
    same_row_tracking(spark, delta_spark, path, since=1)
    for statement in ("INSERT INTO {t} VALUES (100, 'p')",                                # v7
                      "UPDATE {t} SET v = 'pu' WHERE id IN (1, 100)",                     # v8
                      "MERGE INTO {t} t USING (SELECT id FROM range(16, 20)) s ON t.id = s.id "
                      "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 'pn')",  # v9
                      "OPTIMIZE {t}"):                                                    # v10
        spark.sql(statement.format(t=f"delta.`{path}`"))
    _ds_writes(delta_spark, path, "UPDATE {t} SET v = 'last' WHERE id = 100")              # v11
    same_row_tracking(spark, delta_spark, path, since=ds_latest + 1)
    assert [_writer(commit_info(path, v)) for v in range(1, 12)] == (
        ["delta-spark"] * 6 + ["pydelta"] * 4 + ["delta-spark"])
    same_history(spark, delta_spark, path)


def _writer(info: dict) -> str:
    engine = info.get("engineInfo") or ""
    return "pydelta" if engine.startswith(PYDELTA_ENGINE) else "delta-spark" if DELTA_SPARK_ENGINE in engine else engine


def test_identity_columns(spark, delta_spark, tmp_path):
    path = str(tmp_path / "ident")
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5), v STRING, "
               "d BIGINT GENERATED BY DEFAULT AS IDENTITY (START WITH -1 INCREMENT BY -2)) USING delta",
               "INSERT INTO {t} (v) VALUES ('a'), ('b'), ('c')",                                 # v1
               "INSERT INTO {t} (v, d) VALUES ('explicit', 1000)")                               # v2
    assert "identityColumns" in features(delta_spark, path) or delta_spark.protocol(path)["minWriterVersion"] >= 6
    same_at_every_version(spark, delta_spark, path)
    mark = _field_metadata(path, "id")["delta.identity.highWaterMark"]
    pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} (v) VALUES ('p1'), ('p2')",
        "UPDATE {t} SET v = 'pu' WHERE v = 'a'")
    delta_spark_writes_then_pydelta_reads(spark, delta_spark, path, "INSERT INTO {t} (v) VALUES ('after')")
    rows = {r[1]: (r[0], r[2]) for r in delta_spark.rows(path)["rows"]}
    ids = [i for i, _ in rows.values()]
    assert len(ids) == len(set(ids)) == 7 and all(i >= 10 and (i - 10) % 5 == 0 for i in ids)
    assert rows["p1"][0] > mark and rows["p2"][0] > mark, "pydelta continues past delta-spark's high-water mark"
    assert rows["after"][0] > max(rows["p1"][0], rows["p2"][0]), "and delta-spark past pydelta's"
    assert _field_metadata(path, "id")["delta.identity.highWaterMark"] == max(ids)
    ds_d = [d for v, (_, d) in rows.items() if v != "explicit"]
    assert rows["explicit"][1] == 1000 and len(set(ds_d)) == 6 and all(d <= -1 and (d + 1) % 2 == 0 for d in ds_d)
    with pytest.raises(Exception, match="DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED"):
        spark.sql(f"INSERT INTO delta.`{path}` (id, v) VALUES (1, 'x')")


def test_generated_columns(spark, delta_spark, tmp_path):
    path = str(tmp_path / "gen")
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id INT, d DATE, y INT GENERATED ALWAYS AS (year(d)), "
               "up STRING GENERATED ALWAYS AS (upper(CAST(id AS STRING)) || 'x')) USING delta PARTITIONED BY (y)",
               "INSERT INTO {t} (id, d) VALUES (1, DATE'2020-05-01'), (2, DATE'2024-01-02')")     # v1
    assert "generatedColumns" in features(delta_spark, path) or delta_spark.protocol(path)["minWriterVersion"] >= 4
    same_at_every_version(spark, delta_spark, path)
    pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} (id, d) VALUES (3, DATE'2021-07-07')",
        "UPDATE {t} SET d = DATE'1999-12-31' WHERE id = 1",
        "DELETE FROM {t} WHERE y = 2024")
    assert delta_spark.rows(path)["rows"] == [[1, "date:1999-12-31", 1999, "1x"], [3, "date:2021-07-07", 2021, "3x"]]
    before = version(path)
    with pytest.raises(Exception, match=r"(?i)generat|constraint|violat"):  # pydelta checks delta-spark's expression
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (4, DATE'2021-01-01', 1999, '4x')")
    assert version(path) == before


def test_check_constraints(spark, delta_spark, tmp_path):
    path = str(tmp_path / "ck")
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id INT, v STRING) USING delta",
               "INSERT INTO {t} VALUES (1, 'a'), (2, 'b')",                                        # v1
               "ALTER TABLE {t} ADD CONSTRAINT positive CHECK (id > 0)")                           # v2
    same_at_every_version(spark, delta_spark, path)
    for bad in ("INSERT INTO {t} VALUES (-1, 'neg')", "UPDATE {t} SET id = -id WHERE id = 1",
                "MERGE INTO {t} t USING (SELECT 2 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = 0"):
        with pytest.raises(Exception, match="DELTA_VIOLATE_CONSTRAINT"):  # pydelta enforces delta-spark's
            spark.sql(bad.format(t=f"delta.`{path}`"))
    assert version(path) == 2
    pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} VALUES (3, 'c')",
        "UPDATE {t} SET id = id + 10 WHERE id = 1",
        "ALTER TABLE {t} ADD CONSTRAINT short CHECK (length(v) < 5)")
    assert dict(delta_spark.detail(path)["properties"]).get("delta.constraints.short") == "length(v) < 5"
    with pytest.raises(WitnessError) as e:  # delta-spark enforces pydelta's
        delta_spark.sql(f"INSERT INTO delta.`{path}` VALUES (7, 'too long')", collect=False)
    assert "DELTA_VIOLATE_CONSTRAINT" in (e.value.error_class or str(e.value))
    assert version(path) == 5


def _cdf(spark, path: str, start: int = 0) -> dict:
    df = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", start)
          .load(path).drop("_commit_timestamp"))
    return canon(df)


def test_change_data_feed(spark, delta_spark, tmp_path):
    path = str(tmp_path / "cdf")
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id INT, v STRING, p INT) USING delta PARTITIONED BY (p) "
               "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')",
               "INSERT INTO {t} VALUES (1, 'a', 0), (2, 'b', 1), (3, 'c', 1)",                   # v1
               "UPDATE {t} SET v = 'B' WHERE id = 2",                                             # v2
               "DELETE FROM {t} WHERE id = 1",                                                    # v3
               "MERGE INTO {t} t USING (SELECT * FROM VALUES (3, 'C', 1), (4, 'd', 0) AS s(id, v, p)) s "
               "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",      # v4
               "DELETE FROM {t} WHERE p = 0")                                                     # v5: whole partition
    assert any("cdc" in a for a in commits(path)[2]), "delta-spark wrote change files"
    same_at_every_version(spark, delta_spark, path)
    assert _cdf(spark, path) == delta_spark.changes(path, start=0)
    pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} VALUES (5, 'e', 0)",
        "UPDATE {t} SET v = 'x' WHERE id = 3",
        "MERGE INTO {t} t USING (SELECT 2 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert delta_spark.changes(path, start=6) == _cdf(spark, path, 6)
    assert delta_spark.changes(path, start=0) == _cdf(spark, path, 0)


def _checkpoints(path: str) -> list[str]:
    return sorted(p.name for p in (Path(path) / "_delta_log").iterdir() if ".checkpoint" in p.name)


def test_v2_checkpoints(spark, delta_spark, tmp_path):
    path = str(tmp_path / "v2")
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id INT, v STRING) USING delta TBLPROPERTIES ("
               "'delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '3')",
               "INSERT INTO {t} VALUES (1, 'a')",                                                  # v1
               "INSERT INTO {t} VALUES (2, 'b')",                                                  # v2
               "INSERT INTO {t} VALUES (3, 'c')",                                                  # v3: checkpoint
               "DELETE FROM {t} WHERE id = 1")                                                     # v4
    # a checkpoint of version 4 with a Parquet top-level file (delta-spark's default is JSON),
    # forced through delta-spark's DeltaLog
    delta_spark.exec(
        "spark.conf.set('spark.databricks.delta.checkpointV2.topLevelFileFormat', 'parquet')\n"
        "try:\n"
        "    spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, req['path']).checkpoint()\n"
        "finally:\n"
        "    spark.conf.unset('spark.databricks.delta.checkpointV2.topLevelFileFormat')\n", path=path)
    assert "v2Checkpoint" in features(delta_spark, path)
    names = _checkpoints(path)
    assert any(n.startswith(f"{3:020d}.checkpoint.") and n.endswith(".json") for n in names), names
    assert any(n.startswith(f"{4:020d}.checkpoint.") and n.endswith(".parquet") for n in names), names
    assert any((Path(path) / "_delta_log" / "_sidecars").iterdir())
    snap = pydelta.load_snapshot(path)
    assert snap.version == 4 and pydelta.load_snapshot(path, version=3).version == 3
    same_at_every_version(spark, delta_spark, path)
    # pydelta reads from the checkpoint alone: the commits before it are gone
    for v in range(4):
        (Path(path) / "_delta_log" / f"{v:020d}.json").rename(Path(path) / "_delta_log" / f"{v:020d}.json.bak")
    try:
        assert read(spark, path)["rows"] == [[2, "b"], [3, "c"]]
    finally:
        for v in range(4):
            (Path(path) / "_delta_log" / f"{v:020d}.json.bak").rename(Path(path) / "_delta_log" / f"{v:020d}.json")
    pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} VALUES (5, 'e')",                                                         # v5
        "UPDATE {t} SET v = 'x' WHERE id = 2")                                                     # v6: checkpoint
    names = _checkpoints(path)
    assert any(re.fullmatch(f"{6:020d}" + r"\.checkpoint\.[0-9a-f-]{36}\.(json|parquet)", n) for n in names), \
        f"pydelta wrote a V2 checkpoint: {names}"
    # delta-spark, with its cached log dropped, starts from pydelta's checkpoint
    delta_spark.exec("spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()")
    latest = delta_spark_writes_then_pydelta_reads(spark, delta_spark, path, "INSERT INTO {t} VALUES (7, 'g')")
    assert delta_spark.rows(path)["rows"] == read(spark, path)["rows"] == [[2, "x"], [3, "c"], [5, "e"], [7, "g"]]
    same_at_every_version(spark, delta_spark, path)
    assert latest == 7


def test_in_commit_timestamps(spark, delta_spark, tmp_path):
    path = str(tmp_path / "ict")
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id INT) USING delta TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')",
               "INSERT INTO {t} VALUES (1)",
               "INSERT INTO {t} VALUES (2)")
    assert "inCommitTimestamp" in features(delta_spark, path)

    def ict(v: int) -> dt.datetime:
        ms = commit_info(path, v)["inCommitTimestamp"]
        return dt.datetime.fromtimestamp(ms // 1000).replace(microsecond=(ms % 1000) * 1000)

    same_at_every_version(spark, delta_spark, path)
    pydelta_writes_then_delta_spark_reads(spark, delta_spark, path, "INSERT INTO {t} VALUES (3)",
                                          "DELETE FROM {t} WHERE id = 1")
    assert version(path) == 4
    stamps = [ict(v) for v in range(5)]
    assert stamps == sorted(stamps) and len(set(stamps)) == 5
    assert [h["timestamp"] for h in delta_spark.history(path)] == [f"ts:{s.isoformat()}" for s in stamps]
    at = stamps[3].strftime("%Y-%m-%d %H:%M:%S.%f")  # TIMESTAMP AS OF resolves through pydelta's ICTs
    assert delta_spark.rows(path, timestamp=at)["rows"] == [[1], [2], [3]]
    assert read(spark, path, 3)["rows"] == [[1], [2], [3]]


def test_timestamp_ntz(spark, delta_spark, tmp_path):
    path = str(tmp_path / "ntz")
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id INT, ntz TIMESTAMP_NTZ, ts TIMESTAMP, pn TIMESTAMP_NTZ) USING delta "
               "PARTITIONED BY (pn)",
               "INSERT INTO {t} VALUES (1, TIMESTAMP_NTZ'2024-03-10 02:30:00', TIMESTAMP'2024-03-10 02:30:00Z', "
               "TIMESTAMP_NTZ'2024-03-10 02:30:00'), (2, TIMESTAMP_NTZ'1969-12-31 23:59:59.123456', NULL, NULL), "
               "(3, NULL, TIMESTAMP'2000-01-01 00:00:00Z', TIMESTAMP_NTZ'0001-01-01 00:00:00')")
    assert "timestampNtz" in features(delta_spark, path)
    same_at_every_version(spark, delta_spark, path)
    pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} VALUES (4, TIMESTAMP_NTZ'2999-12-31 23:59:59.999999', TIMESTAMP'2999-12-31 23:59:59Z', "
        "TIMESTAMP_NTZ'2999-12-31 23:59:59.999999')",
        "UPDATE {t} SET ntz = ntz + INTERVAL 1 DAY WHERE id = 1",
        "DELETE FROM {t} WHERE pn = TIMESTAMP_NTZ'0001-01-01 00:00:00'")
    assert [r[0] for r in delta_spark.rows(path)["rows"]] == [1, 2, 4]


def test_variant(spark, delta_spark, tmp_path):
    path = str(tmp_path / "variant")
    if pyspark_before(4, 1):
        # Spark 4.2 (the witness) marks variant columns with Parquet's VARIANT logical type, which
        # Spark 4.0's Parquet reader cannot parse (NPE in LogicalType): no Delta client on Spark 4.0
        # reads such files (NOTES, PySpark range). Here the witness writes them unannotated.
        delta_spark.sql("SET spark.sql.parquet.variant.annotateLogicalType.enabled = false", collect=False)
    try:
        _variant_both_ways(spark, delta_spark, path, str(tmp_path / "ours"))
    finally:
        delta_spark.sql("RESET spark.sql.parquet.variant.annotateLogicalType.enabled", collect=False)


def _variant_both_ways(spark, delta_spark, path: str, ours: str) -> None:
    _ds_writes(delta_spark, path,
               "CREATE TABLE {t} (id INT, v VARIANT, a ARRAY<VARIANT>) USING delta",
               "INSERT INTO {t} SELECT 1, parse_json('{{\"a\": 1, \"b\": [true, null, 2.5]}}'), "
               "array(parse_json('\"s\"'), NULL)",
               "INSERT INTO {t} SELECT 2, NULL, NULL",
               "UPDATE {t} SET v = parse_json('[1, 2]') WHERE id = 2")
    assert "variantType" in features(delta_spark, path) or "variantType-preview" in features(delta_spark, path)
    same_at_every_version(spark, delta_spark, path)
    pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} SELECT 3, parse_json('{{\"z\": {{\"nested\": \"x\"}}, \"n\": -1}}'), array(parse_json('7'))",
        "UPDATE {t} SET v = parse_json('null') WHERE id = 1",
        "DELETE FROM {t} WHERE id = 2")
    got = delta_spark.sql(f"SELECT id, to_json(v), v:z.nested::string FROM delta.`{path}` ORDER BY id")["rows"]
    assert got == [[1, "null", None], [3, '{"n":-1,"z":{"nested":"x"}}', "x"]]
    # Spark 4.1+ would shred the objects pydelta wrote; a table without variantShredding gets
    # them unshredded (PROTOCOL.md): a struct of exactly `value` and `metadata`.
    for v in range(4, version(path) + 1):
        for add in _adds(path, v):
            variant = pq.read_schema(Path(path) / add["path"]).field("v").type
            assert sorted(variant[i].name for i in range(variant.num_fields)) == ["metadata", "value"], add["path"]
    # a table pydelta creates with a variant column gets delta-spark's protocol
    spark.sql(f"CREATE TABLE delta.`{ours}` (id INT, v VARIANT) USING delta")
    spark.sql(f"INSERT INTO delta.`{ours}` SELECT 1, parse_json('{{\"k\": [1, 2]}}')")
    assert delta_spark.protocol(ours) == delta_spark.protocol(path)
    assert delta_spark.sql(f"SELECT v:k[1]::int FROM delta.`{ours}`")["rows"] == [[2]]
