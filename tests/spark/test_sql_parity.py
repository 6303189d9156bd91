"""delta-spark's SQL on Delta tables, statement by statement: TRUNCATE TABLE, SHOW PARTITIONS,
ANALYZE TABLE (refused as Spark refuses it on v2 tables)."""

from __future__ import annotations

import pytest

import pydelta
from pydelta import DeltaTable, errors
from tests.helpers import last_commit_actions

pytestmark = pytest.mark.spark


@pytest.fixture
def partitioned(spark, tmp_path):
    path = str(tmp_path / "p")
    (spark.range(12, numPartitions=2).selectExpr("id", "CAST(id % 3 AS INT) AS p",
                                                  "IF(id % 4 = 0, NULL, CAST(id % 2 AS STRING)) AS s")
     .write.format("delta").partitionBy("p", "s").save(path))
    return path


def test_truncate_table(spark, partitioned, tmp_path):
    t = f"delta.`{partitioned}`"
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED"):
        spark.sql(f"TRUNCATE TABLE {t} PARTITION (p = 1)")
    files = pydelta.load_snapshot(partitioned).num_files
    spark.sql(f"TRUNCATE TABLE {t}")
    actions = last_commit_actions(partitioned)
    removes = [a["remove"] for a in actions if "remove" in a]
    assert len(removes) == files and all(r["dataChange"] for r in removes)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "TRUNCATE" and info["operationParameters"] == {}
    assert set(info["operationMetrics"]) == {"numRemovedFiles", "executionTimeMs"}
    assert info["operationMetrics"]["numRemovedFiles"] == str(files)
    version = pydelta.load_snapshot(partitioned).version
    spark.sql(f"TRUNCATE TABLE {t}")  # nothing left: no commit
    assert pydelta.load_snapshot(partitioned).version == version
    appends = str(tmp_path / "append_only")
    spark.range(3).write.format("delta").option("delta.appendOnly", "true").save(appends)
    with pytest.raises(errors.DeltaError, match=r"DELTA_CANNOT_MODIFY_APPEND_ONLY|append"):
        spark.sql(f"TRUNCATE TABLE delta.`{appends}`")
    assert spark.read.format("delta").load(appends).count() == 3


def test_show_partitions(spark, partitioned, tmp_path):
    t = f"delta.`{partitioned}`"
    out = spark.sql(f"SHOW PARTITIONS {t}")
    assert [(f.name, f.dataType.simpleString()) for f in out.schema.fields] == [("p", "int"), ("s", "string")]
    expected = {(r.p, r.s) for r in spark.read.format("delta").load(partitioned).select("p", "s").distinct().collect()}
    assert {(r.p, r.s) for r in out.collect()} == expected and len(expected) == 9
    assert {(r.p, r.s) for r in spark.sql(f"SHOW PARTITIONS {t} PARTITION (p = 1)").collect()} == \
        {e for e in expected if e[0] == 1}
    assert {r.p for r in spark.sql(f"SHOW PARTITIONS {t} PARTITION (s = null)").collect()} == {0, 1, 2}
    DeltaTable.forPath(spark, partitioned).delete("p = 2")  # only live files count
    assert {r.p for r in spark.sql(f"SHOW PARTITIONS {t}").collect()} == {0, 1}
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_SHOW_PARTITION_IN_NON_PARTITIONED_COLUMN"):
        spark.sql(f"SHOW PARTITIONS {t} PARTITION (id = 1)")
    plain = str(tmp_path / "plain")
    spark.range(3).write.format("delta").save(plain)
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_SHOW_PARTITION_IN_NON_PARTITIONED_TABLE"):
        spark.sql(f"SHOW PARTITIONS delta.`{plain}`")


def test_show_partitions_with_column_mapping(spark, tmp_path):
    path = str(tmp_path / "cm")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, `p p` DATE) USING delta PARTITIONED BY (`p p`) "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, DATE'2024-01-02'), (2, DATE'2024-01-02'), (3, NULL)")
    rows = spark.sql(f"SHOW PARTITIONS delta.`{path}`").collect()
    assert sorted(str(r[0]) for r in rows) == ["2024-01-02", "None"]


def test_analyze_table_is_refused_as_for_v2_tables(spark, partitioned):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="NOT_SUPPORTED_COMMAND_FOR_V2_TABLE"):
        spark.sql(f"ANALYZE TABLE delta.`{partitioned}` COMPUTE STATISTICS")
    with pytest.raises(errors.DeltaAnalysisError, match="ANALYZE TABLE is not supported for v2 tables"):
        spark.sql(f"ANALYZE TABLE delta.`{partitioned}` COMPUTE STATISTICS FOR COLUMNS id")


def test_create_table_options(spark, tmp_path):
    plain, ctas = str(tmp_path / "plain"), str(tmp_path / "ctas")
    spark.sql(f"CREATE TABLE delta.`{plain}` (id INT) USING delta OPTIONS ('dataSkippingNumIndexedCols' = 33, "
              "'delta.deletedFileRetentionDuration' = 'interval 2 weeks')")
    # A plain CREATE TABLE stores each option twice, as given and option.-prefixed (delta-spark).
    assert pydelta.load_snapshot(plain).metadata.configuration == {
        "dataSkippingNumIndexedCols": "33", "option.dataSkippingNumIndexedCols": "33",
        "delta.deletedFileRetentionDuration": "interval 2 weeks",
        "option.delta.deletedFileRetentionDuration": "interval 2 weeks"}
    # AS SELECT: only delta.* options become properties; the others are write options.
    spark.sql(f"CREATE TABLE delta.`{ctas}` USING delta OPTIONS ('delta.appendOnly' = true, 'userMetadata' = 'hi') "
              "AS SELECT id FROM range(3)")
    assert pydelta.load_snapshot(ctas).metadata.configuration == {"delta.appendOnly": "true"}
    assert DeltaTable.forPath(spark, ctas).history(1).first().userMetadata == "hi"
    with pytest.raises(errors.DeltaAnalysisError):
        spark.sql(f"CREATE TABLE delta.`{tmp_path}/bad` (id INT) USING delta OPTIONS ('delta.nonsense' = 'x')")
    named = "options_with_path"
    spark.sql(f"DROP TABLE IF EXISTS {named}")
    try:
        elsewhere = str(tmp_path / "elsewhere")
        spark.sql(f"CREATE TABLE {named} USING delta OPTIONS (path '{elsewhere}') AS SELECT 1 AS id")
        assert pydelta.load_snapshot(elsewhere).num_files == 1 and spark.table(named).count() == 1
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {named}")


def test_describe_partition_is_refused_as_for_v2_tables(spark, partitioned):
    with pytest.raises(errors.DeltaAnalysisError, match="DESCRIBE does not support partition for v2 tables"):
        spark.sql(f"DESCRIBE TABLE delta.`{partitioned}` PARTITION (p = 1, s = '1')")
