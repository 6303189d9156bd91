"""The measured operations, written once for both engines: Delta SQL and `format("delta")`
only, so pydelta (enabled on the session) and delta-spark (its session extension) run the
very same statements. Each workload prepares its table untimed and returns the seconds of
its timed part.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from typing import Any, Callable

ROWS = int(os.environ.get("BENCH_ROWS", "10000000"))
FILES = 100  # the base table: contiguous ids per file, so min/max stats skip by id


def _data(spark: Any, rows: int, files: int) -> Any:
    return spark.range(0, rows, 1, files).selectExpr(
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
        path = self.result_path = self._copy("small", lambda p: _data(self.spark, 1_000_000, 1000).write.format("delta").save(p))
        return self._timed(self._sql(f"OPTIMIZE delta.`{path}`"))

    def metadata_commit(self) -> float:
        """A metadata-only commit (a table property), median of 20."""
        path = self._template("base", self._base)
        times = []
        for i in range(20):
            times.append(self._timed(self._sql(
                f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('bench.n' = '{i}')")))
        return sorted(times)[len(times) // 2]

    def _snapshot_load(self, name: str) -> float:
        """DESCRIBE DETAIL (numFiles and size need the whole snapshot) of a fresh copy of a log the
        driver generated (`BENCH_SHARED`): no engine's snapshot cache helps. The table has no
        data files; loading its snapshot reads only the log."""
        source = os.path.join(os.environ["BENCH_SHARED"], name)
        path = self._fresh_path(name)
        shutil.copytree(source, path)
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


# Logs the driver generates for the snapshot workloads (bench_snapshot's table): name -> (files, checkpoint).
SHARED_LOGS = {"json-300000": (300_000, False), "checkpoint-300000": (300_000, True),
               "json-1000000": (1_000_000, False), "checkpoint-1000000": (1_000_000, True)}
SNAPSHOT_LOGS = {"snapshot_300k_json": "json-300000", "snapshot_300k_checkpoint": "checkpoint-300000",
                 "snapshot_1m_json": "json-1000000", "snapshot_1m_checkpoint": "checkpoint-1000000"}

NAMES = ["write", "write_partitioned", "full_scan", "selective_scan", "join_selective", "merge_upsert",
         "merge_upsert_dv", "merge_few_files", "merge_few_files_dv", "update_1pct", "update_1pct_dv",
         "delete_01pct", "delete_01pct_dv", "scan_with_dvs", "optimize_small_files", "metadata_commit",
         "snapshot_300k_json", "snapshot_300k_checkpoint"]  # snapshot_1m_* by name
