"""A write killed with SIGKILL leaves staged data under `_pydelta_staging`; VACUUM removes it.

A child process starts a partitioned write whose last task is slow and is killed (the
Python driver and its JVM) while Spark has staged files. Nothing is committed; the staged
files are untracked data, which VACUUM deletes under delta-spark's rule for untracked
files: only once they are older than the retention period.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pydelta.log.vacuum_plan import STAGING_DIR
from pydelta.tables import DeltaTable
from tests.spark.test_maintenance_support import commit_infos, latest_version, now_ms, set_mtime

pytestmark = [pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")]

ROOT = Path(__file__).resolve().parents[2]
DAY_MS = 86_400_000
CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"

CHILD = r'''
import sys, time
from pydelta.spark.session import local_session

table = sys.argv[1]
spark = local_session("killed-write-child", cores=2, hive=False)
print("JVM", spark._jvm.java.lang.ProcessHandle.current().pid(), flush=True)

def slow(batches):
    for batch in batches:
        if batch["id"].max() >= 90:
            time.sleep(600)  # the last partition never finishes: the parent kills us first
        yield batch

df = spark.range(0, 100, numPartitions=4).selectExpr("id", "id % 3 AS part")
df = df.mapInPandas(slow, "id LONG, part LONG")
print("WRITING", flush=True)
df.write.format("delta").mode("append").partitionBy("part").save(table)
print("FINISHED", flush=True)
'''


def _staged_files(table: Path) -> list[Path]:
    return [p for p in (table / STAGING_DIR).rglob("*") if p.is_file()]


def _kill_mid_write(tmp_path: Path, table: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    with open(tmp_path / "child.err", "w") as err:  # the child keeps its own copy of the handle
        proc = subprocess.Popen([sys.executable, str(script), str(table)], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=err, text=True)
    jvm = int(proc.stdout.readline().split()[1])
    deadline = time.time() + 240
    while not any(p.suffix == ".parquet" for p in _staged_files(table)):
        assert proc.poll() is None and time.time() < deadline, "the child never staged a data file"
        time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    os.kill(jvm, signal.SIGKILL)
    proc.wait(timeout=60)


def test_vacuum_removes_what_a_killed_write_staged(spark, tmp_path: Path):
    table = tmp_path / "t"
    spark.range(0, 5).selectExpr("id", "id % 3 AS part").write.format("delta").partitionBy("part").save(str(table))
    _kill_mid_write(tmp_path, table)
    staged = _staged_files(table)
    assert staged, "the killed write left staged files behind"
    assert latest_version(table) == 0  # the killed write committed nothing

    dt = DeltaTable.forPath(spark, str(table))
    dt.vacuum()  # default retention: the staged files are fresh, so they stay
    assert all(p.exists() for p in staged)

    for p in staged:
        set_mtime(p, now_ms() - 8 * DAY_MS)
    dt.vacuum()
    assert not any(p.exists() for p in staged)
    metrics = commit_infos(table)[latest_version(table)]["operationMetrics"]
    assert int(metrics["numDeletedFiles"]) >= len(staged)
    dt.vacuum()  # as in delta-spark, directories go once nothing is listed under them
    assert not (table / STAGING_DIR).exists()
    assert sorted(r.id for r in dt.toDF().collect()) == list(range(5))


def test_a_failed_write_cleans_its_staging(spark, tmp_path: Path):
    from pyspark.errors import PythonException

    table = tmp_path / "t"
    spark.range(0, 5).write.format("delta").save(str(table))

    def boom(batches):
        for batch in batches:
            if batch["id"].max() >= 50:
                raise ValueError("task failure")
            yield batch

    df = spark.range(0, 100, numPartitions=4).mapInPandas(boom, "id LONG")
    with pytest.raises(PythonException):
        df.write.format("delta").mode("append").save(str(table))
    assert not (table / STAGING_DIR).exists()
    assert latest_version(table) == 0
