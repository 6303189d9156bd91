"""Identity columns: GENERATED ALWAYS / BY DEFAULT AS IDENTITY through SQL and the builder.

Checked: values are unique, `start + k * step`, beyond the high-water mark, which the commit
records; explicit values only BY DEFAULT; overflow fails the write; concurrent writers never
commit duplicates; deltalake reads the tables.
"""

from __future__ import annotations

import json
import threading

import pytest
from pyspark.errors import UnsupportedOperationException

import pydelta
from pydelta import DeltaTable, errors
from pydelta.tables import IdentityGenerator

pytestmark = pytest.mark.spark

LONG_MAX = 2**63 - 1


def _id_metadata(path: str, column: str = "id") -> dict:
    schema = json.loads(pydelta.load_snapshot(path).metadata.schema_string)
    return next(f for f in schema["fields"] if f["name"] == column)["metadata"]


def _ids(spark, path: str) -> list[int]:
    return sorted(r.id for r in spark.read.format("delta").load(path).select("id").collect())


def _version(path: str) -> int:
    return pydelta.load_snapshot(path).version


def test_generated_always_through_sql(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5), v STRING) "
              "USING delta")
    snap = pydelta.load_snapshot(path)
    assert snap.protocol.min_writer_version == 6 and snap.protocol.has_feature("identityColumns")
    assert _id_metadata(path) == {"delta.identity.start": 10, "delta.identity.step": 5,
                                  "delta.identity.allowExplicitInsert": False}
    spark.sql(f"INSERT INTO {t} (v) VALUES ('a'), ('b'), ('c')")
    first = _ids(spark, path)
    assert len(set(first)) == 3 and all(i >= 10 and (i - 10) % 5 == 0 for i in first)
    assert _id_metadata(path)["delta.identity.highWaterMark"] == max(first)
    spark.range(0, 50, numPartitions=4).selectExpr("CAST(id AS STRING) AS v").write.format("delta") \
        .mode("append").save(path)
    ids = _ids(spark, path)
    assert len(ids) == len(set(ids)) == 53
    assert min(set(ids) - set(first)) > max(first)  # new values go beyond the old mark
    assert all((i - 10) % 5 == 0 for i in ids)
    assert _id_metadata(path)["delta.identity.highWaterMark"] == max(ids)
    before = _version(path)
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED"):
        spark.sql(f"INSERT INTO {t} VALUES (1, 'x')")
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED"):
        spark.sql(f"UPDATE {t} SET id = 0 WHERE v = 'a'")
    assert _version(path) == before
    spark.sql(f"UPDATE {t} SET v = 'A' WHERE v = 'a'")  # other columns update; ids stay
    assert _ids(spark, path) == ids
    import deltalake

    assert sorted(deltalake.DeltaTable(path).to_pyarrow_table().column("id").to_pylist()) == ids


def test_generated_by_default_with_a_negative_step(spark, tmp_path):
    path = str(tmp_path / "t")
    (DeltaTable.create(spark).location(path)
     .addColumn("id", "BIGINT", generatedByDefaultAs=IdentityGenerator(start=-1, step=-2))
     .addColumn("v", "STRING").execute())
    assert _id_metadata(path)["delta.identity.allowExplicitInsert"] is True
    spark.range(0, 20, numPartitions=3).selectExpr("CAST(id AS STRING) AS v").write.format("delta") \
        .mode("append").save(path)
    generated = _ids(spark, path)
    assert len(set(generated)) == 20 and all(i <= -1 and (i + 1) % 2 == 0 for i in generated)
    mark = _id_metadata(path)["delta.identity.highWaterMark"]
    assert mark == min(generated)
    spark.createDataFrame([(1000, "explicit")], "id BIGINT, v STRING").write.format("delta").mode("append").save(path)
    assert 1000 in _ids(spark, path)
    assert _id_metadata(path)["delta.identity.highWaterMark"] == mark  # explicit values leave the mark alone
    spark.createDataFrame([("next",)], "v STRING").write.format("delta").mode("append").save(path)
    new = min(_ids(spark, path))
    assert new < mark and (new + 1) % 2 == 0 and _id_metadata(path)["delta.identity.highWaterMark"] == new


def test_overflow_fails_the_write_and_commits_nothing(spark, tmp_path):
    path = str(tmp_path / "t")
    (DeltaTable.create(spark).location(path)
     .addColumn("id", "BIGINT", generatedAlwaysAs=IdentityGenerator(start=LONG_MAX - 1, step=1))
     .addColumn("v", "STRING").execute())
    before = _version(path)
    with pytest.raises(errors.InvariantViolationError, match="DELTA_IDENTITY_COLUMNS_VALUE_OVERFLOW"):
        spark.range(3).selectExpr("CAST(id AS STRING) AS v").coalesce(1).write.format("delta") \
            .mode("append").save(path)
    assert _version(path) == before
    spark.range(2).selectExpr("CAST(id AS STRING) AS v").coalesce(1).write.format("delta").mode("append").save(path)
    assert _ids(spark, path) == [LONG_MAX - 1, LONG_MAX]


def test_concurrent_writers_never_commit_duplicates(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT GENERATED ALWAYS AS IDENTITY, w INT) USING delta")
    failures: list[BaseException] = []
    start = threading.Barrier(4)

    def writer(w: int) -> None:
        start.wait()
        for _ in range(3):
            try:
                spark.range(5).selectExpr(f"{w} AS w").write.format("delta").mode("append").save(path)
            except errors.DeltaConcurrentModificationException as e:
                failures.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    ids = _ids(spark, path)
    assert len(ids) == len(set(ids))  # never a duplicate, whoever won
    assert len(ids) == 5 * (12 - len(failures))  # every commit that succeeded is there whole
    assert all(isinstance(e, errors.MetadataChangedException) for e in failures)


def test_invalid_identity_definitions_and_merge_updates(spark, tmp_path):
    with pytest.raises(ValueError, match="step to be non-zero"):
        DeltaTable.create(spark).addColumn("id", "BIGINT", generatedAlwaysAs=IdentityGenerator(step=0))
    bad = str(tmp_path / "bad")
    with pytest.raises(UnsupportedOperationException, match="DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE"):
        spark.sql(f"CREATE TABLE delta.`{bad}` (id INT GENERATED ALWAYS AS IDENTITY, v STRING) USING delta")
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_IDENTITY_COLUMNS_PARTITION_NOT_SUPPORTED"):
        spark.sql(f"CREATE TABLE delta.`{bad}` (id BIGINT GENERATED ALWAYS AS IDENTITY, v STRING) USING delta "
                  "PARTITIONED BY (id)")
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT GENERATED ALWAYS AS IDENTITY, v STRING) USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` (v) VALUES ('a')")
    source = spark.createDataFrame([("a", "b")], "v STRING, nv STRING")
    dt = DeltaTable.forPath(spark, path)
    dt.alias("t").merge(source.alias("s"), "t.v = s.v").whenMatchedUpdate(set={"v": "s.nv"}).execute()
    assert [r.v for r in spark.read.format("delta").load(path).collect()] == ["b"]
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED"):
        dt.alias("t").merge(spark.createDataFrame([(9, "z")], "id BIGINT, v STRING").alias("s"), "t.v = s.v") \
            .whenNotMatchedInsertAll().execute()


@pytest.mark.parametrize("cdf", [False, True])
def test_merge_inserts_get_identity_values(spark, tmp_path, cdf):
    path = str(tmp_path / "t")
    props = "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')" if cdf else ""
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 10), "
              f"k INT, v STRING) USING delta {props}")
    spark.sql(f"INSERT INTO delta.`{path}` (k, v) VALUES (1, 'a'), (2, 'b')")
    before = {r.k: r.id for r in spark.read.format("delta").load(path).collect()}
    source = spark.range(1, 6, numPartitions=3).selectExpr("CAST(id AS INT) AS k", "concat('s', id) AS v")
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.k = s.k")
     .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll().execute())
    rows = {r.k: (r.id, r.v) for r in spark.read.format("delta").load(path).collect()}
    assert {k: rows[k][0] for k in before} == before  # updated rows keep their identity values
    ids = [i for i, _ in rows.values()]
    assert len(ids) == len(set(ids)) == 5 and all((i - 100) % 10 == 0 for i in ids)
    assert min(rows[k][0] for k in (3, 4, 5)) > max(before.values())
    assert _id_metadata(path)["delta.identity.highWaterMark"] >= max(ids)
    if cdf:  # the change feed shows the same generated values as the table
        changes = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2)
                   .load(path).where("_change_type = 'insert'").collect())
        assert sorted((r.k, r.id) for r in changes) == sorted((k, rows[k][0]) for k in (3, 4, 5))


def test_sync_identity_moves_the_mark_past_explicit_values(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT GENERATED BY DEFAULT AS IDENTITY (START WITH 3 INCREMENT BY 4), "
              "v STRING) USING delta")
    spark.sql(f"INSERT INTO {t} (v) VALUES ('a'), ('b')")
    mark = _id_metadata(path)["delta.identity.highWaterMark"]
    spark.sql(f"INSERT INTO {t} VALUES (100, 'explicit')")  # BY DEFAULT: kept, mark unchanged
    assert _id_metadata(path)["delta.identity.highWaterMark"] == mark < 100
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id SYNC IDENTITY")
    assert _id_metadata(path)["delta.identity.highWaterMark"] == 103  # 3 + 25 * 4: the first value >= 100
    ops = [r.operation for r in DeltaTable.forPath(spark, path).history().orderBy("version").collect()]
    assert ops[-1] == "CHANGE COLUMN"
    spark.sql(f"INSERT INTO {t} (v) VALUES ('c')")
    assert max(_ids(spark, path)) == 107 and len(set(_ids(spark, path))) == 4
    # The mark never moves back by default; it does when delta-spark's conf allows it.
    spark.sql(f"DELETE FROM {t} WHERE id >= 100")
    spark.sql(f"ALTER TABLE {t} CHANGE COLUMN id SYNC IDENTITY")
    assert _id_metadata(path)["delta.identity.highWaterMark"] == 107
    spark.conf.set("spark.databricks.delta.identity.allowSyncIdentityToLowerHighWaterMark.enabled", "true")
    try:
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN id SYNC IDENTITY")
    finally:
        spark.conf.unset("spark.databricks.delta.identity.allowSyncIdentityToLowerHighWaterMark.enabled")
    assert _id_metadata(path)["delta.identity.highWaterMark"] == max(_ids(spark, path)) < 100
    before = _version(path)
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_IDENTITY_COLUMNS_ALTER_NON_IDENTITY_COLUMN"):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN v SYNC IDENTITY")
    assert _version(path) == before
    import deltalake

    assert sorted(deltalake.DeltaTable(path).to_pyarrow_table().column("id").to_pylist()) == _ids(spark, path)


def test_synced_mark_rounds_to_the_sequence():
    from pydelta.protocol.identity import IdentitySpec, synced_high_water_mark

    up = IdentitySpec("id", 3, 4, True, 7)
    assert synced_high_water_mark(up, 100) == 103 and synced_high_water_mark(up, 103) == 103
    assert synced_high_water_mark(up, 5) == 7  # not lowered
    assert synced_high_water_mark(up, 5, allow_lowering=True) == 7  # 3 + 4: first value >= 5
    down = IdentitySpec("id", -1, -2, True, -5)
    assert synced_high_water_mark(down, -10) == -11 and synced_high_water_mark(down, 0) == -5
    assert synced_high_water_mark(IdentitySpec("id", 1, 1, True, None), 42) == 42
