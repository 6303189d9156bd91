"""`held_session_conf`: the two settings Spark reads from the session only are held, never
restored under a concurrent operation of the same session."""

from __future__ import annotations

import threading

import pytest

from pydelta.spark.base.conf import held_session_conf

pytestmark = pytest.mark.spark

KEY = "spark.pydelta.test.heldConf"


def test_the_last_holder_restores_the_sessions_own_value(spark):
    spark.conf.set(KEY, "mine")
    try:
        first = held_session_conf(spark, KEY, "held")
        second = held_session_conf(spark, KEY, "held")
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert spark.conf.get(KEY) == "held"  # the second holder still needs it
        second.__exit__(None, None, None)
        assert spark.conf.get(KEY) == "mine"
    finally:
        spark.conf.unset(KEY)
    with held_session_conf(spark, KEY, "held"):
        assert spark.conf.get(KEY) == "held"
    assert spark.conf.get(KEY, None) is None  # unset before: unset after


def test_a_hold_of_another_value_waits_for_the_first_to_end(spark):
    order: list[str] = []
    entered = threading.Event()
    release = threading.Event()

    def other_value() -> None:
        entered.wait()
        with held_session_conf(spark, KEY, "false"):
            order.append(f"second sees {spark.conf.get(KEY)}")

    thread = threading.Thread(target=other_value)
    thread.start()
    with held_session_conf(spark, KEY, "true"):
        entered.set()
        release.wait(0.5)  # the other thread is blocked meanwhile
        order.append(f"first sees {spark.conf.get(KEY)}")
    thread.join(30)
    assert order == ["first sees true", "second sees false"]
    assert spark.conf.get(KEY, None) is None


def test_concurrent_writes_of_one_session_keep_timestamp_statistics(spark, tmp_path):
    """Writes in threads of one session: each file has timestamp statistics (written as micros),
    and the session's own INT96 comes back when the last write ends (each write saving and
    restoring it by itself could leave the value another had set)."""
    import json

    import pydelta

    paths = [str(tmp_path / f"t{i}") for i in range(4)]
    before = spark.conf.get("spark.sql.parquet.outputTimestampType", None)
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    errors: list[BaseException] = []

    def write(path: str) -> None:
        try:
            for _ in range(3):
                spark.range(5) \
                    .selectExpr("id", "TIMESTAMP'2024-01-01 00:00:00' + make_interval(0,0,0,0,0,0,id) AS ts") \
                    .write.format("delta").mode("append").save(path)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(p,)) for p in paths]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    after = spark.conf.get("spark.sql.parquet.outputTimestampType")
    if before is None:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    else:
        spark.conf.set("spark.sql.parquet.outputTimestampType", before)
    assert not errors
    assert after == "INT96"
    for path in paths:
        stats = [json.loads(s) for s in pydelta.load_snapshot(path).files().column("stats").to_pylist()]
        assert len(stats) >= 3 and all("ts" in s["minValues"] and "ts" in s["maxValues"] for s in stats)
