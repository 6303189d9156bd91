"""The measured operations, written once for both engines: Delta SQL, `format("delta")` and
the standard Structured Streaming API only, so pydelta (enabled on the session) and
delta-spark (its session extension) run the very same statements. Each workload prepares its
table untimed and returns the seconds of its timed part.

Inputs too slow to build per engine (1M-file logs, a 1000-commit table) are written once by
the driver (`SHARED`, `SHARED_FOR`; run.py puts them under `BENCH_SHARED`) and copied fresh
before every run, so both engines read the very same files and no snapshot cache helps.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

ROWS = int(os.environ.get("BENCH_ROWS", "10000000"))
FILES = 100  # the base table: contiguous ids per file, so min/max stats skip by id
MANY_FILES = 1000  # the Z-order and clustering inputs: ROWS // 10 rows in 1000 files
COMMIT_FILE = re.compile(r"\d{20}\.json")  # a published commit (not a temporary file)


def _data(spark: Any, rows: int, files: int, start: int = 0) -> Any:
    return spark.range(start, start + rows, 1, files).selectExpr(
        "id", "rand(7) * 1000 AS x", "CAST(id % 97 AS INT) AS k", "CAST(id % 10 AS INT) AS p",
        "concat('s', CAST(id % 1000 AS STRING)) AS s")


class Workloads:
    """One engine's side: a Spark session and a scratch directory of its own tables."""

    def __init__(self, spark: Any, base: str) -> None:
        self.spark = spark
        self.base = base
        self._templates: dict[str, str] = {}
        self.result_path: str | None = None  # the table the last workload wrote, for `checksum`
        self.detail: list[int] | None = None  # (numFiles, sizeInBytes) the last snapshot load saw

    # -- tables ------------------------------------------------------------------------
    def _fresh_path(self, name: str) -> str:
        return os.path.join(self.base, f"{name}-{uuid.uuid4().hex[:8]}")

    def _template(self, name: str, build: Callable[[str], None]) -> str:
        """A table this engine wrote once; DML runs on copies of it (a copied Delta table is valid)."""
        if name not in self._templates:
            path = self._fresh_path(f"template-{name}")
            build(path)
            self._templates[name] = path
        return self._templates[name]

    def _copy(self, name: str, build: Callable[[str], None]) -> str:
        path = self._fresh_path(name)
        shutil.copytree(self._template(name, build), path)
        return path

    def _base(self, path: str, dvs: bool = False) -> None:
        key = "spark.databricks.delta.properties.defaults.enableDeletionVectors"  # both engines honour it
        self.spark.conf.set(key, "true" if dvs else "false")
        try:
            _data(self.spark, ROWS, FILES).write.format("delta").save(path)
        finally:
            self.spark.conf.unset(key)

    def _base_dv(self, path: str) -> None:
        self._base(path, dvs=True)

    def checksum(self) -> list[int] | None:
        """Rows and a hash of every value of the table the last workload wrote (None if it wrote
        none): the driver checks both engines ended with the same table."""
        path, self.result_path = self.result_path, None
        if self.detail is not None:
            detail, self.detail = self.detail, None
            return detail
        if path is None:
            return None
        row = self.spark.read.format("delta").load(path).selectExpr("count(*)", "sum(CAST(hash(*) AS BIGINT))").first()
        return [int(row[0]), int(row[1] or 0)]

    def _timed(self, fn: Callable[[], Any]) -> float:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    def _read_all(self, path: str) -> None:
        """Every row and column read (delta-spark refuses a noop sink over a DV table's file index)."""
        self.spark.read.format("delta").load(path).selectExpr("sum(hash(*))").collect()

    def _sql(self, text: str) -> Callable[[], Any]:
        return lambda: self.spark.sql(text).collect()

    def _shared_copy(self, name: str) -> str:
        """A fresh copy of an input the driver generated once for both engines."""
        path = self._fresh_path(name)
        shutil.copytree(os.path.join(os.environ["BENCH_SHARED"], name), path)
        return path

    def _many(self, path: str) -> None:
        _data(self.spark, ROWS // 10, MANY_FILES).write.format("delta").save(path)

    def _clustered(self, path: str) -> None:
        """A liquid-clustered table, then the same rows as `_many` appended (unclustered) in 1000 files."""
        self.spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, x DOUBLE, k INT, p INT, s STRING) "
                       "USING delta CLUSTER BY (k)").collect()
        _data(self.spark, ROWS // 10, MANY_FILES).write.format("delta").mode("append").save(path)

    # -- workloads ---------------------------------------------------------------------
    def write(self) -> float:
        path = self.result_path = self._fresh_path("write")
        return self._timed(lambda: _data(self.spark, ROWS, 16).write.format("delta").save(path))

    def write_partitioned(self) -> float:
        path = self.result_path = self._fresh_path("write-part")
        return self._timed(lambda: _data(self.spark, ROWS, 16).write.format("delta").partitionBy("p").save(path))

    def full_scan(self) -> float:
        path = self._template("base", self._base)
        return self._timed(lambda: self._read_all(path))

    def selective_scan(self) -> float:
        """1% of the files by their id stats."""
        path = self._template("base", self._base)
        lo = ROWS // 2
        return self._timed(lambda: self.spark.read.format("delta").load(path)
                           .where(f"id >= {lo} AND id < {lo + ROWS // FILES}").agg({"x": "sum"}).collect())

    def join_selective(self) -> float:
        """A join of two Delta tables with a selective filter on the small one."""
        fact = self._template("base", self._base)
        dim = self._template("dim", lambda p: self.spark.range(0, 97).selectExpr(
            "CAST(id AS INT) AS k", "concat('name', id) AS name").write.format("delta").save(p))
        query = (f"SELECT d.name, count(*), sum(f.x) FROM delta.`{fact}` f JOIN delta.`{dim}` d ON f.k = d.k "
                 f"WHERE d.name IN ('name3', 'name5') AND f.id < {ROWS // 10} GROUP BY d.name")
        return self._timed(self._sql(query))

    def _merge(self, dvs: bool, source_sql: str) -> float:
        path = self.result_path = self._copy("base-dv" if dvs else "base", self._base_dv if dvs else self._base)
        self.spark.sql(source_sql).createOrReplaceTempView("bench_source")
        return self._timed(self._sql(
            f"MERGE INTO delta.`{path}` t USING bench_source s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"))

    @staticmethod
    def _upsert_source() -> str:
        """1M source rows for 10M, half of them matching (ids spread over every file)."""
        return f"SELECT id * 20 + 5 AS id, -1.0 AS x, 0 AS k, 0 AS p, 'new' AS s FROM range({ROWS // 10})"

    @staticmethod
    def _few_files_source() -> str:
        """Source rows whose ids fall in 1% of the files."""
        lo = ROWS // 2
        return f"SELECT id, -1.0 AS x, 0 AS k, 0 AS p, 'new' AS s FROM range({lo}, {lo + ROWS // FILES}, 7)"

    def merge_upsert(self) -> float:
        return self._merge(False, self._upsert_source())

    def merge_upsert_dv(self) -> float:
        return self._merge(True, self._upsert_source())

    def merge_few_files(self) -> float:
        return self._merge(False, self._few_files_source())

    def merge_few_files_dv(self) -> float:
        return self._merge(True, self._few_files_source())

    def _dml(self, dvs: bool, statement: str) -> float:
        path = self.result_path = self._copy("base-dv" if dvs else "base", self._base_dv if dvs else self._base)
        return self._timed(self._sql(statement.format(t=f"delta.`{path}`")))

    def update_1pct(self) -> float:
        return self._dml(False, "UPDATE {t} SET x = -1 WHERE k = 3")

    def update_1pct_dv(self) -> float:
        return self._dml(True, "UPDATE {t} SET x = -1 WHERE k = 3")

    def delete_01pct(self) -> float:
        return self._dml(False, "DELETE FROM {t} WHERE id % 1000 = 0")

    def delete_01pct_dv(self) -> float:
        return self._dml(True, "DELETE FROM {t} WHERE id % 1000 = 0")

    def scan_with_dvs(self) -> float:
        """A full scan of a table with deletion vectors on 10% of its files."""
        def build(path: str) -> None:
            self._base_dv(path)
            self.spark.sql(f"DELETE FROM delta.`{path}` WHERE id < {ROWS // 10} AND id % 10 = 0").collect()
        path = self._template("dv10", build)
        return self._timed(lambda: self._read_all(path))

    def optimize_small_files(self) -> float:
        """OPTIMIZE of 1000 small files."""
        path = self.result_path = self._copy(
            "small", lambda p: _data(self.spark, 1_000_000, 1000).write.format("delta").save(p))
        return self._timed(self._sql(f"OPTIMIZE delta.`{path}`"))

    def metadata_commit(self) -> float:
        """A metadata-only commit (a table property), median of 20."""
        path = self._template("base", self._base)
        times = []
        for i in range(20):
            times.append(self._timed(self._sql(
                f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('bench.n' = '{i}')")))
        return sorted(times)[len(times) // 2]

    def zorder(self) -> float:
        """OPTIMIZE ZORDER BY (k, x) of ROWS / 10 rows in 1000 files (at 10M rows: the table
        optimize_small_files compacts, so the two figures differ by the Z-order alone)."""
        path = self.result_path = self._copy("many", self._many)
        return self._timed(self._sql(f"OPTIMIZE delta.`{path}` ZORDER BY (k, x)"))

    def liquid_clustering(self) -> float:
        """OPTIMIZE of a table CLUSTER BY (k) whose ROWS / 10 rows were appended in 1000 files."""
        path = self.result_path = self._copy("clustered", self._clustered)
        return self._timed(self._sql(f"OPTIMIZE delta.`{path}`"))

    def stream_latency(self, appends: int = 5) -> float:
        """Delta -> Delta stream, default trigger, already running and idle: from the return of
        one small append to the source until the sink's next commit file is listed. Median of
        `appends` appends per run (one append is noisy: the trigger polls the source)."""
        src, sink = self._fresh_path("stream-src"), self._fresh_path("stream-sink")
        _data(self.spark, 10, 1).write.format("delta").save(src)
        query = (self.spark.readStream.format("delta").load(src).writeStream.format("delta")
                 .option("checkpointLocation", sink + "-checkpoint").start(sink))
        times = []
        try:
            query.processAllAvailable()  # the first batch is in the sink, the query idle
            for i in range(1, appends + 1):
                before = _commits(sink)
                _data(self.spark, 10, 1, start=1000 * i).write.format("delta").mode("append").save(src)
                t = time.perf_counter()
                while _commits(sink) == before:
                    if time.perf_counter() - t > 120:
                        raise TimeoutError(f"no sink commit 120 s after append {i}: {query.exception()}")
                    time.sleep(0.005)
                times.append(time.perf_counter() - t)
        finally:
            query.stop()
        self.result_path = sink
        return statistics.median(times)

    def stream_drain_1000(self) -> float:
        """AvailableNow Delta -> Delta stream over 1000 commits of one small file each (from
        version 0, so the source reads every commit rather than one snapshot)."""
        src = self._shared_copy("commits-1000")
        sink = self.result_path = self._fresh_path("drain-sink")
        return self._timed(lambda: self.spark.readStream.format("delta").option("startingVersion", "0").load(src)
                           .writeStream.format("delta").option("checkpointLocation", sink + "-checkpoint")
                           .trigger(availableNow=True).start(sink).awaitTermination())

    def checkpoint_1m(self) -> float:
        """A metadata-only commit that makes the engine checkpoint a 1M-file table: the log ends
        at version 99, the commit is version 100 and the default delta.checkpointInterval is 10.
        Both engines write that checkpoint inside the commit (delta-spark in a post-commit hook,
        pydelta in Transaction.commit), so the commit's time is the checkpoint's. The property
        set asks for stats_parsed/partitionValues_parsed, which delta-spark writes by default and
        pydelta only when asked: the same checkpoint content on both. The snapshot is loaded
        untimed first (DESCRIBE DETAIL)."""
        path = self._shared_copy("checkpoint-due-1000000")
        self.spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()
        seconds = self._timed(self._sql(
            f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.checkpoint.writeStatsAsStruct' = 'true')"))
        log = os.path.join(path, "_delta_log")
        with open(os.path.join(log, "_last_checkpoint")) as f:
            last = json.load(f)
        checkpoint = os.path.join(log, f"{100:020d}.checkpoint.parquet")
        if last["version"] != 100 or not os.path.exists(checkpoint):
            raise RuntimeError(f"no single-file checkpoint at version 100; _last_checkpoint: {last}")
        add = self.spark.read.parquet(checkpoint).schema["add"].dataType
        self.detail = [100, int(last["size"]), int("stats_parsed" in add.fieldNames())]  # the same on both
        shutil.rmtree(path)
        return seconds

    def _snapshot_load(self, name: str) -> float:
        """DESCRIBE DETAIL (numFiles and size need the whole snapshot) of a fresh copy of a log the
        driver generated (`BENCH_SHARED`): no engine's snapshot cache helps. The table has no
        data files; loading its snapshot reads only the log."""
        path = self._shared_copy(name)
        rows: list[Any] = []
        seconds = self._timed(lambda: rows.extend(self.spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()))
        self.detail = [int(rows[0]["numFiles"]), int(rows[0]["sizeInBytes"])]
        shutil.rmtree(path)
        return seconds

    def snapshot_300k_json(self) -> float:
        """Snapshot load of a 300k-file log, JSON commits only."""
        return self._snapshot_load("json-300000")

    def snapshot_300k_checkpoint(self) -> float:
        """Snapshot load of a 300k-file log: a checkpoint and 100 commits after it."""
        return self._snapshot_load("checkpoint-300000")

    def snapshot_1m_json(self) -> float:
        return self._snapshot_load("json-1000000")

    def snapshot_1m_checkpoint(self) -> float:
        return self._snapshot_load("checkpoint-1000000")


def _commits(path: str) -> int:
    """Published commits of a table, from one directory listing (cheap enough to poll)."""
    try:
        return sum(1 for n in os.listdir(os.path.join(path, "_delta_log")) if COMMIT_FILE.fullmatch(n))
    except FileNotFoundError:
        return 0


def _snapshot_log(files: int, checkpoint: bool, commits: int = 100) -> Callable[[str], None]:
    """bench_snapshot's log: `files` adds at version 0 (checkpointed or not), then `commits` commits."""
    def build(root: str) -> None:
        from benchmarks.bench_snapshot import generate

        generate(root, files, n_commits=commits, checkpoint=checkpoint)
    return build


def _small_commits(root: str, commits: int = 1000, rows: int = 10) -> None:
    """A table of `commits` commits adding one `rows`-row Parquet file each (with stats), written
    with pyarrow and hand-written commit JSON: seconds instead of 1000 engine writes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}}
                                           for n, t in (("id", "long"), ("x", "double"), ("s", "string"))]}
    log = os.path.join(root, "_delta_log")
    os.makedirs(log)
    for v in range(commits):
        ids = list(range(v * rows, (v + 1) * rows))
        xs, ss = [i * 0.5 for i in ids], [f"s{i % 1000}" for i in ids]
        name = f"part-00000-{uuid.UUID(int=v)}-c000.snappy.parquet"
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "x": xs, "s": ss}), os.path.join(root, name))
        stats = {"numRecords": rows, "minValues": {"id": ids[0], "x": xs[0], "s": min(ss)},
                 "maxValues": {"id": ids[-1], "x": xs[-1], "s": max(ss)}, "nullCount": {"id": 0, "x": 0, "s": 0}}
        actions: list[dict[str, Any]] = [{"commitInfo": {"timestamp": 1_700_000_000_000 + v, "operation": "WRITE"}}]
        if v == 0:
            actions += [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
                        {"metaData": {"id": str(uuid.UUID(int=1)), "format": {"provider": "parquet", "options": {}},
                                      "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {},
                                      "createdTime": 1_700_000_000_000}}]
        actions.append({"add": {"path": name, "partitionValues": {}, "size": os.path.getsize(os.path.join(root, name)),
                                "modificationTime": 1_700_000_000_000 + v, "dataChange": True,
                                "stats": json.dumps(stats)}})
        with open(os.path.join(log, f"{v:020d}.json"), "w") as f:
            f.write("".join(json.dumps(a) + "\n" for a in actions))


# Inputs the driver writes once for both engines (name -> builder of that directory), and the
# workloads that copy them.
SHARED: dict[str, Callable[[str], None]] = {
    "json-300000": _snapshot_log(300_000, False), "checkpoint-300000": _snapshot_log(300_000, True),
    "json-1000000": _snapshot_log(1_000_000, False), "checkpoint-1000000": _snapshot_log(1_000_000, True),
    "checkpoint-due-1000000": _snapshot_log(1_000_000, False, commits=99),  # versions 0..99: commit 100 checkpoints
    "commits-1000": _small_commits,
}
SHARED_FOR = {"snapshot_300k_json": "json-300000", "snapshot_300k_checkpoint": "checkpoint-300000",
              "snapshot_1m_json": "json-1000000", "snapshot_1m_checkpoint": "checkpoint-1000000",
              "checkpoint_1m": "checkpoint-due-1000000", "stream_drain_1000": "commits-1000"}

NAMES = ["write", "write_partitioned", "full_scan", "selective_scan", "join_selective", "merge_upsert",
         "merge_upsert_dv", "merge_few_files", "merge_few_files_dv", "update_1pct", "update_1pct_dv",
         "delete_01pct", "delete_01pct_dv", "scan_with_dvs", "optimize_small_files", "metadata_commit",
         "snapshot_300k_json", "snapshot_300k_checkpoint"]  # snapshot_1m_* by name
