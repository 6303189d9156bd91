"""SELECT over Delta tables through spark.sql: joins, CTEs, subqueries, time travel, skipping."""

from __future__ import annotations

import pytest

import pydelta
from pydelta import errors

pytestmark = pytest.mark.spark


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture
def events(spark, tmp_path):
    """A partitioned table, one file per (part, batch), three versions."""
    path = str(tmp_path / "events")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, part INT, v STRING) USING delta PARTITIONED BY (part)")
    for batch in range(2):
        spark.range(batch * 100, batch * 100 + 100, numPartitions=1).selectExpr(
            "id", "CAST(id % 4 AS INT) AS part", "CAST(id AS STRING) AS v").repartition(4, "part") \
            .write.format("delta").mode("append").save(path)
    return path


def test_filters_prune_files_inside_sql(spark, events):
    total = pydelta.load_snapshot(events).num_files
    df = spark.sql(f"SELECT * FROM delta.`{events}` WHERE part = 1")
    assert len(df.inputFiles()) == total // 4 and df.count() == 50
    df = spark.sql(f"SELECT count(*) AS n FROM delta.`{events}` e WHERE e.id < 100 AND e.part = 2")
    assert len(df.inputFiles()) == 1 and df.first().n == 25
    df = spark.sql(f"SELECT * FROM delta.`{events}` WHERE id >= 150")  # min/max stats skip the first batch
    assert len(df.inputFiles()) == 4 and df.count() == 50


def test_joins_ctes_subqueries_and_several_tables(spark, events, tmp_path):
    dims = str(tmp_path / "dims")
    spark.sql(f"CREATE TABLE delta.`{dims}` USING delta AS "
              "SELECT * FROM VALUES (0, 'zero'), (1, 'one'), (2, 'two'), (3, 'three') AS t(part, label)")
    rows = _rows(spark.sql(f"""
        WITH small AS (SELECT * FROM delta.`{events}` WHERE id < 8)
        SELECT s.id, d.label FROM small s JOIN delta.`{dims}` d ON s.part = d.part
        WHERE d.label IN (SELECT label FROM delta.`{dims}` WHERE part < 2)"""))
    assert rows == [(0, "zero"), (1, "one"), (4, "zero"), (5, "one")]
    n = spark.sql(f"SELECT (SELECT count(*) FROM delta.`{dims}`) AS d, count(*) AS e FROM delta.`{events}`").first()
    assert (n.d, n.e) == (4, 200)


def test_time_travel_syntaxes(spark, events):
    t = f"delta.`{events}`"
    assert spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF 1").first()[0] == 100
    assert spark.sql(f"SELECT count(*) FROM {t}@v1").first()[0] == 100
    assert spark.sql(f"SELECT count(*) FROM {t}@v0 AS x").first()[0] == 0
    assert spark.sql(f"SELECT count(*) FROM {t} FOR VERSION AS OF 2").first()[0] == 200
    ts = pydelta.load_snapshot(events, version=1).timestamp
    ts_literal = spark.sql(f"SELECT CAST(timestamp_millis({ts}) AS STRING)").first()[0]  # session time zone
    assert spark.sql(f"SELECT count(*) FROM {t} TIMESTAMP AS OF '{ts_literal}'").first()[0] == 100
    with pytest.raises(errors.VersionNotFoundError):
        spark.sql(f"SELECT * FROM {t} VERSION AS OF 99")


def test_named_tables_views_and_passthrough(spark, events):
    try:
        spark.sql(f"CREATE TABLE q_events USING delta LOCATION '{events}'")
        assert spark.sql("SELECT count(*) FROM q_events WHERE part = 3").first()[0] == 50
        assert spark.sql("SELECT count(*) FROM default.q_events VERSION AS OF 1").first()[0] == 100
        spark.sql("CREATE OR REPLACE TEMP VIEW q_view AS SELECT id FROM q_events WHERE part = 0")
        assert spark.sql("SELECT count(*) FROM q_view").first()[0] == 50
        spark.createDataFrame([(1,)], "x INT").createOrReplaceTempView("q_events_shadow")
        assert spark.sql("SELECT * FROM q_events_shadow").collect()[0].x == 1
        assert spark.sql("SELECT 1 + 1 AS two").first().two == 2  # no Delta table: Spark untouched
    finally:
        spark.sql("DROP VIEW IF EXISTS q_view")
        spark.sql("DROP TABLE IF EXISTS q_events")


def test_unknown_table_is_sparks_error(spark):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("SELECT * FROM no_such_table_anywhere").collect()


def test_parameters_formatting_and_table_changes(spark, events):
    t = f"delta.`{events}`"
    assert spark.sql(f"SELECT count(*) FROM {t} WHERE part = :p", args={"p": 2}).first()[0] == 50
    assert spark.sql(f"SELECT count(*) FROM {t} WHERE id < ?", args=[10]).first()[0] == 10
    small = spark.createDataFrame([(1,), (2,)], "id BIGINT")
    assert spark.sql(f"SELECT count(*) FROM {t} e JOIN {{small}} s ON e.id = s.id", small=small).first()[0] == 2
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_MISSING_CHANGE_DATA"):
        spark.sql(f"SELECT * FROM table_changes_by_path('{events}', 0)")
    assert pydelta.load_snapshot(events).version == 2


def test_parameter_markers_in_delta_statements(spark, events, tmp_path):
    import datetime

    from pydelta.spark.sql.parameters import _markers

    text = "SELECT ':no', `a:b`, \"?\" -- ? :c\n/* :d ? */ x::int, :e, ?"
    assert [(text[s:e], n) for s, e, n in _markers(text)] == [(":e", "e"), ("?", None)]
    t = f"delta.`{events}`"
    before = spark.read.format("delta").load(events).count()
    result = spark.sql(f"DELETE FROM {t} WHERE id = :id OR v = :v", args={"id": 1, "v": "it's"}).first()
    assert result.num_affected_rows == 1
    spark.sql(f"UPDATE {t} SET v = ? WHERE id < ?", args=["two?", 3])
    assert {r.v for r in spark.sql(f"SELECT v FROM {t} WHERE id < 3").collect()} == {"two?"}
    spark.sql(f"INSERT INTO {t} VALUES (:id, :part, :v)", args={"id": 100_000, "v": "new", "part": 9})
    assert spark.read.format("delta").load(events).count() == before
    version = pydelta.load_snapshot(events).version
    spark.sql(f"DESCRIBE HISTORY {t} LIMIT :n", args={"n": 1})  # Delta's own statements too
    spark.sql(f"RESTORE TABLE {t} TO VERSION AS OF :v", args={"v": version - 1})
    assert spark.read.format("delta").load(events).count() == before - 1
    target = str(tmp_path / "params")
    spark.sql(f"CREATE TABLE delta.`{target}` USING delta TBLPROPERTIES ('delta.appendOnly' = 'true') AS "
              "SELECT :d AS d", args={"d": datetime.date(2024, 1, 2)})
    assert spark.read.format("delta").load(target).first().d == datetime.date(2024, 1, 2)
    with pytest.raises(errors.DeltaAnalysisError, match="UNBOUND_SQL_PARAMETER"):
        spark.sql(f"DELETE FROM {t} WHERE id = :missing", args={"id": 1})
    assert pydelta.load_snapshot(events).version == version + 1
