"""The Delta streaming sink from a Spark Connect client: each micro-batch runs as a foreachBatch
function in the server's Python worker and commits with txn(query id, batch id), so output is
exactly once across restarts and a kill -9 of the client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import deltalake
import pytest
from pyspark.sql import SparkSession

from pydelta.errors import DeltaNotImplementedError
from pydelta.spark.base.pyspark_compat import pyspark_before
from pydelta.spark.streaming import trigger_marks

pytestmark = pytest.mark.spark


def _ids(path) -> list[int]:
    return sorted(deltalake.DeltaTable(str(path)).to_pyarrow_table(columns=["id"]).column("id").to_pylist())


def _history(path) -> list[dict]:
    return list(reversed(deltalake.DeltaTable(str(path)).history()))


def test_append_complete_partitioned_and_to_table(spark, tmp_path):
    src, out = str(tmp_path / "src"), tmp_path / "out"
    spark.range(0, 6).selectExpr("id", "id % 2 AS p").write.format("delta").save(src)
    stream = spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(src)
    query = (stream.writeStream.format("delta").partitionBy("p").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start(str(out)))
    query.awaitTermination(300)
    spark.range(6, 9).selectExpr("id", "id % 2 AS p").write.format("delta").mode("append").save(src)
    query = (stream.writeStream.format("delta").partitionBy("p").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start(str(out)))
    query.awaitTermination(300)
    assert _ids(out) == list(range(9))
    history = _history(out)
    assert {h["operation"] for h in history} == {"STREAMING UPDATE"}
    assert {h["operationParameters"]["outputMode"] for h in history} == {"Append"}
    assert deltalake.DeltaTable(str(out)).metadata().partition_columns == ["p"]
    log = [json.loads(line) for line in (out / "_delta_log" / "00000000000000000000.json").read_text().splitlines()]
    txn = [a["txn"] for a in log if "txn" in a]
    assert txn and txn[0]["version"] == 0 and txn[0]["appId"] == history[0]["operationParameters"]["queryId"]

    counts = (spark.readStream.format("delta").load(src).groupBy("p").count().writeStream.format("delta")
              .outputMode("complete").option("checkpointLocation", str(tmp_path / "ck2")).trigger(availableNow=True)
              .toTable("connect_stream_counts"))
    try:
        counts.awaitTermination(300)
        assert sorted(tuple(r) for r in spark.table("connect_stream_counts").collect()) == [(0, 5), (1, 4)]
    finally:
        spark.sql("DROP TABLE IF EXISTS connect_stream_counts")


def test_trigger_once_over_a_rate_limited_source(spark, tmp_path):
    """Trigger.Once ignores maxFilesPerTrigger, as in delta-spark. Before PySpark 4.2 a Connect
    client cannot tell the server's source its trigger (trigger_marks.py): refused by name."""
    src, out = str(tmp_path / "src"), tmp_path / "out"
    spark.range(0, 6, 1, 3).write.format("delta").save(src)
    stream = spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(src)
    assert trigger_marks.reads_rate_limited_delta(stream._plan)
    assert not trigger_marks.reads_rate_limited_delta(spark.readStream.format("delta").load(src)._plan)
    writer = (stream.selectExpr("id * 2 AS id").writeStream.format("delta")
              .option("checkpointLocation", str(tmp_path / "ck")).trigger(once=True))
    if pyspark_before(4, 2):
        with pytest.raises(DeltaNotImplementedError, match=r"needs PySpark 4\.2 or newer over Spark Connect"):
            writer.start(str(out))
        assert not out.exists()
        return
    writer.start(str(out)).awaitTermination(300)
    assert _ids(out) == [0, 2, 4, 6, 8, 10]
    assert len(_history(out)) == 1  # one batch


CLIENT = textwrap.dedent("""
    import sys, time
    import pydelta
    url, src, out, checkpoint = sys.argv[1:5]
    spark = pydelta.remote_session(url)
    query = (spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(src).writeStream
             .format("delta").option("checkpointLocation", checkpoint).trigger(processingTime="1 second").start(out))
    print(spark.session_id, query.id, flush=True)
    while True:
        time.sleep(1)
""")


def test_exactly_once_across_a_client_kill(spark, connect_server, tmp_path):
    src, out, checkpoint = str(tmp_path / "src"), tmp_path / "out", tmp_path / "ck"
    for start in range(0, 40, 10):  # four commits: the stream takes one file per batch
        spark.range(start, start + 10).write.format("delta").mode("append").save(src)
    client = subprocess.Popen([sys.executable, "-c", CLIENT, connect_server.url, src, str(out), str(checkpoint)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        session_id, query_id = client.stdout.readline().split()
        deadline = time.time() + 240
        while not (out / "_delta_log" / "00000000000000000001.json").exists():
            assert time.time() < deadline and client.poll() is None, "the stream never committed twice"
            time.sleep(0.5)
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    # The client is gone; its query ran on in the server. Stop it from the client's own session.
    orphan = SparkSession.builder.remote(f"{connect_server.url}/;session_id={session_id}").create()
    orphan.streams.get(query_id).stop()
    # Forget the last batch the checkpoint says was committed, as if the kill had come between the
    # Delta commit and Spark's own record of it: the restart runs that batch again.
    commits = sorted((checkpoint / "commits").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1)
    last = [p for p in commits if p.name.isdigit()][-1]
    last.unlink()
    (last.parent / f".{last.name}.crc").unlink(missing_ok=True)  # Hadoop's checksum: a rewrite refuses to overwrite it
    version_before = deltalake.DeltaTable(str(out)).version()
    query = (spark.readStream.format("delta").load(src).writeStream.format("delta")
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start(str(out)))
    query.awaitTermination(300)
    assert _ids(out) == list(range(40))  # every row once: the replayed batch's txn was already there
    history = _history(out)
    assert len({h["operationParameters"]["epochId"] for h in history}) == len(history)
    assert {h["operationParameters"]["queryId"] for h in history} == {query_id}
    assert deltalake.DeltaTable(str(out)).version() >= version_before
