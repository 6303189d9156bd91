"""Auto compaction (delta-spark's post-commit hook): which settings turn it on, which partitions it
compacts, what it records. Files and rows are counted with deltalake (delta-rs) and read from the
log's JSON, never with pydelta's own reader alone."""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

from pydelta import errors

pytestmark = pytest.mark.spark

ENABLED = "spark.databricks.delta.autoCompact.enabled"
MIN_NUM_FILES = "spark.databricks.delta.autoCompact.minNumFiles"


def _commits(path: str) -> list[dict]:
    """Every commitInfo of the log, oldest first."""
    out = []
    for f in sorted((Path(path) / "_delta_log").glob("*.json")):
        out.extend(json.loads(line)["commitInfo"] for line in f.read_text().splitlines() if "commitInfo" in line)
    return out


def _files_per_partition(path: str, column: str = "p") -> dict[str, int]:
    out: dict[str, int] = {}
    for add in pa.table(deltalake.DeltaTable(path).get_add_actions(flatten=True)).to_pylist():
        key = str(add.get(f"partition.{column}"))
        out[key] = out.get(key, 0) + 1
    return out


def _ids(path: str) -> list[int]:
    """The `id` column as delta-rs's SQL engine reads it (column mapping and DVs included)."""
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
    return sorted(pa.table(query.execute("SELECT id FROM t").read_all()).column("id").to_pylist())


def _small_files(spark, n: int, start: int = 0):
    """`n` rows in `n` input partitions: `n` data files on an unpartitioned table."""
    return spark.range(start, start + n, 1, n)


@pytest.fixture
def conf(spark):
    """Set session confs for one test and unset them after it."""
    keys: list[str] = []

    def set_conf(key: str, value: str) -> None:
        keys.append(key)
        spark.conf.set(key, value)

    yield set_conf
    for key in keys:
        spark.conf.unset(key)


def test_table_property_compacts_the_files_a_write_made(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING DELTA "
              "TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'true')")
    _small_files(spark, 6).write.format("delta").mode("append").save(path)
    ops = [(c["operation"], c["operationParameters"].get("auto")) for c in _commits(path)]
    assert ops == [("CREATE TABLE", None), ("WRITE", None), ("OPTIMIZE", True)]
    last = _commits(path)[-1]
    assert last["operationParameters"]["predicate"] == "[]"
    assert last["operationMetrics"]["numRemovedFiles"] == "6" and last["operationMetrics"]["numAddedFiles"] == "1"
    assert _files_per_partition(path, "none") == {"None": 1}
    assert _ids(path) == list(range(6))


def test_off_by_default_and_when_the_property_is_false(spark, tmp_path):
    plain = str(tmp_path / "plain")
    _small_files(spark, 4).write.format("delta").save(plain)
    assert [c["operation"] for c in _commits(plain)] == ["WRITE"]
    off = str(tmp_path / "off")
    spark.sql(f"CREATE TABLE delta.`{off}` (id BIGINT) USING DELTA "
              "TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'false')")
    _small_files(spark, 4).write.format("delta").mode("append").save(off)
    assert [c["operation"] for c in _commits(off)] == ["CREATE TABLE", "WRITE"]
    assert len(deltalake.DeltaTable(off).file_uris()) == 4


def test_session_conf_wins_over_the_table_property(spark, tmp_path, conf):
    on = str(tmp_path / "on")
    off = str(tmp_path / "off")
    spark.sql(f"CREATE TABLE delta.`{off}` (id BIGINT) USING DELTA "
              "TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'true')")
    conf(ENABLED, "TRUE")  # delta-spark lower-cases the value
    _small_files(spark, 4).write.format("delta").save(on)
    assert [c["operation"] for c in _commits(on)] == ["WRITE", "OPTIMIZE"]
    conf(ENABLED, "false")
    _small_files(spark, 4).write.format("delta").mode("append").save(off)
    assert [c["operation"] for c in _commits(off)] == ["CREATE TABLE", "WRITE"]
    assert _ids(on) == list(range(4)) and _ids(off) == list(range(4))


def test_legacy_auto_optimize_property_turns_it_on(spark, tmp_path):
    path = str(tmp_path / "legacy")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING DELTA TBLPROPERTIES ('delta.autoOptimize' = 'true')")
    _small_files(spark, 3).write.format("delta").mode("append").save(path)
    assert [c["operation"] for c in _commits(path)][-1] == "OPTIMIZE"
    assert len(deltalake.DeltaTable(path).file_uris()) == 1


def test_only_partitions_the_commit_wrote_to_are_compacted(spark, tmp_path):
    path = str(tmp_path / "parts")
    spark.range(0, 40, 1, 4).selectExpr("id", "CAST(id % 2 AS STRING) AS p") \
        .write.format("delta").partitionBy("p").save(path)
    assert _files_per_partition(path) == {"0": 4, "1": 4}
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'true')")
    spark.range(100, 103, 1, 3).selectExpr("id", "'1' AS p").write.format("delta").mode("append").save(path)
    assert _files_per_partition(path) == {"0": 4, "1": 1}
    last = _commits(path)[-1]
    assert last["operation"] == "OPTIMIZE" and last["operationParameters"]["auto"] is True
    assert json.loads(last["operationParameters"]["predicate"]) == ["('p <=> cast(1 as string))"]
    assert _ids(path) == [*range(40), 100, 101, 102]


def test_a_write_to_more_partitions_than_allowed_compacts_some_of_them_nulls_included(spark, tmp_path, conf):
    """maxNumModifiedPartitions picks among the partitions written, a null partition value among
    them (picking sorts them: None beside strings must not break it)."""
    path = str(tmp_path / "many")
    rows = spark.range(0, 12, 1, 4).selectExpr(
        "id", "CASE WHEN id % 3 = 0 THEN NULL ELSE CAST(id % 3 AS STRING) END AS p")
    rows.write.format("delta").partitionBy("p").save(path)
    conf(ENABLED, "true")
    conf(MIN_NUM_FILES, "2")
    conf("spark.databricks.delta.autoCompact.maxNumModifiedPartitions", "2")
    rows.write.format("delta").mode("append").save(path)
    last = _commits(path)[-1]
    assert last["operation"] == "OPTIMIZE"
    (predicate,) = json.loads(last["operationParameters"]["predicate"])
    assert predicate.count("<=>") == 2  # two of the three partitions
    assert _ids(path) == sorted(list(range(12)) * 2)


def test_once_compacted_a_partition_waits_for_min_num_files(spark, tmp_path, conf):
    path = str(tmp_path / "min")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING DELTA "
              "TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'true')")
    _small_files(spark, 3).write.format("delta").mode("append").save(path)
    assert len(deltalake.DeltaTable(path).file_uris()) == 1
    _small_files(spark, 2, 10).write.format("delta").mode("append").save(path)  # 3 small files < 50
    assert [c["operation"] for c in _commits(path)][-1] == "WRITE"
    assert len(deltalake.DeltaTable(path).file_uris()) == 3
    conf(MIN_NUM_FILES, "4")
    _small_files(spark, 1, 20).write.format("delta").mode("append").save(path)  # 4 small files
    assert [c["operation"] for c in _commits(path)][-1] == "OPTIMIZE"
    assert len(deltalake.DeltaTable(path).file_uris()) == 1
    assert _ids(path) == [0, 1, 2, 10, 11, 20]


def test_dml_rewrites_are_compacted_and_optimize_is_not_followed_by_another(spark, tmp_path):
    path = str(tmp_path / "dml")
    _small_files(spark, 5).write.format("delta").save(path)
    spark.sql(f"OPTIMIZE delta.`{path}`")
    assert [(c["operation"], c["operationParameters"].get("auto")) for c in _commits(path)] == [
        ("WRITE", None), ("OPTIMIZE", False)]
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` SELECT /*+ REPARTITION(3) */ id FROM range(100, 103)")
    write, compaction = _commits(path)[-2:]
    assert (write["operation"], compaction["operation"]) == ("WRITE", "OPTIMIZE")
    assert write["operationMetrics"]["numFiles"] == "3"  # the hint inside INSERT ... SELECT is honoured
    assert len(deltalake.DeltaTable(path).file_uris()) == 1
    from pydelta.tables import DeltaTable

    DeltaTable.forPath(spark, path).update("id >= 100", {"id": "id + 1000"})  # one file in, one out
    assert [c["operation"] for c in _commits(path)][-1] == "UPDATE"
    assert _ids(path) == [0, 1, 2, 3, 4, 1100, 1101, 1102]


def test_merge_output_files_are_compacted(spark, tmp_path):
    path = str(tmp_path / "merge")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING DELTA "
              "TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'true')")
    from pydelta.tables import DeltaTable

    source = spark.range(0, 8, 1, 4).selectExpr("id", "'new' AS v").repartition(4)
    DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id") \
        .whenNotMatchedInsertAll().execute()
    ops = [c["operation"] for c in _commits(path)]
    assert ops[:2] == ["CREATE TABLE", "MERGE"] and ops[-1] == "OPTIMIZE"
    assert len(deltalake.DeltaTable(path).file_uris()) == 1
    assert _ids(path) == list(range(8))


def test_column_mapped_partition_predicate(spark, tmp_path):
    path = str(tmp_path / "mapped")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, `part col` DATE) USING DELTA PARTITIONED BY (`part col`) "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.autoOptimize.autoCompact' = 'true')")
    spark.range(0, 4, 1, 4).selectExpr("id", "DATE'2024-02-29' AS `part col`") \
        .write.format("delta").mode("append").save(path)
    assert [c["operation"] for c in _commits(path)][-1] == "OPTIMIZE"
    assert len(deltalake.DeltaTable(path).file_uris()) == 1
    assert _ids(path) == [0, 1, 2, 3]


def test_invalid_values_are_refused_and_commit_nothing(spark, tmp_path, conf):
    path = str(tmp_path / "bad")
    with pytest.raises(errors.DeltaIllegalArgumentError, match=r"delta\.autoOptimize\.autoCompact"):
        spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING DELTA "
                  "TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'sometimes')")
    assert not (Path(path) / "_delta_log").exists()
    _small_files(spark, 2).write.format("delta").save(path)
    conf(ENABLED, "sometimes")
    with pytest.raises(errors.DeltaIllegalArgumentError, match="DELTA_INVALID_AUTO_COMPACT_TYPE"):
        _small_files(spark, 2).write.format("delta").mode("append").save(path)
    with pytest.raises(errors.DeltaIllegalArgumentError, match="DELTA_INVALID_AUTO_COMPACT_TYPE"):
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 0")
    assert [c["operation"] for c in _commits(path)] == ["WRITE"]
