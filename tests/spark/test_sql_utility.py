"""Delta's own statements through spark.sql: DESCRIBE HISTORY/DETAIL, RESTORE, VACUUM,
OPTIMIZE, CONVERT TO DELTA, GENERATE, and the ones pydelta refuses by name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import pydelta
from pydelta import errors
from pydelta.spark.sql.statements import parse_utility
from pydelta.spark.sql.utility_grammar import (
    ConvertToDelta,
    DescribeHistory,
    Optimize,
    Restore,
    TableRef,
    Vacuum,
)

pytestmark = pytest.mark.spark


def test_grammar():
    assert parse_utility("describe history db.`my t` limit 2") == DescribeHistory(TableRef(("db", "my t")), 2)
    assert parse_utility("RESTORE TABLE delta.`/x/y` TO TIMESTAMP AS OF '2024-01-01'") == \
        Restore(TableRef(path="/x/y"), timestamp="2024-01-01")
    assert parse_utility("VACUUM '/data/t' RETAIN 0.5 HOURS DRY RUN;") == Vacuum(TableRef(path="/data/t"), 0.5, True)
    assert parse_utility("OPTIMIZE t WHERE (p = 1 AND q IN (2, 3)) ZORDER BY (a, `b c`)") == \
        Optimize(TableRef(("t",)), "(p = 1 AND q IN (2, 3))", ("a", "b c"))
    assert parse_utility("CONVERT TO DELTA parquet.`/p` PARTITIONED BY (d DATE, h INT)") == \
        ConvertToDelta(TableRef(path="/p"), "parquet", "d DATE, h INT")
    assert parse_utility("DESCRIBE t") is None and parse_utility("SELECT 1") is None
    with pytest.raises(errors.DeltaParseError, match="LIMIT"):
        parse_utility("DESCRIBE HISTORY t LIMIT x")
    with pytest.raises(errors.DeltaParseError):
        parse_utility("VACUUM t RETAIN 5 DAYS")


@pytest.fixture
def table(spark, tmp_path):
    path = str(tmp_path / "t")
    for i in range(3):
        spark.range(i * 10, i * 10 + 10, numPartitions=1).selectExpr("id", "CAST(id % 2 AS INT) AS p") \
            .write.format("delta").partitionBy("p").mode("append").save(path)
    return path


def test_history_detail_restore(spark, table):
    t = f"delta.`{table}`"
    assert [r.version for r in spark.sql(f"DESCRIBE HISTORY {t} LIMIT 2").collect()] == [2, 1]
    assert [r.version for r in spark.sql(f"DESC HISTORY '{table}'").collect()] == [2, 1, 0]
    detail = spark.sql(f"DESCRIBE DETAIL {t}").first()
    assert detail.format == "delta" and detail.partitionColumns == ["p"] and detail.numFiles == 6
    spark.sql(f"RESTORE TABLE {t} TO VERSION AS OF 0")
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == 10
    with pytest.raises(errors.DeltaIllegalArgumentError, match="less then last available version"):
        spark.sql(f"RESTORE {t} TO VERSION AS OF 42")  # delta-spark's message, word for word
    assert pydelta.load_snapshot(table).version == 3


def test_optimize_vacuum_and_restore_to_vacuumed_version(spark, table):
    t = f"delta.`{table}`"
    result = spark.sql(f"OPTIMIZE {t} WHERE p = 1").first()
    assert result.metrics.numFilesRemoved == 3 and result.metrics.numFilesAdded == 1
    spark.sql(f"OPTIMIZE {t} ZORDER BY (id)")  # rewrites the 4 live files: 7 files are now unreferenced
    assert pydelta.load_snapshot(table).num_files == 2
    with pytest.raises(errors.DeltaError, match=r"(?i)retention"):
        spark.sql(f"VACUUM {t} RETAIN 0 HOURS")
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        dry = spark.sql(f"VACUUM {t} RETAIN 0 HOURS DRY RUN").collect()
        assert len(dry) == 7 and all(r.path.startswith("file:") for r in dry)
        assert spark.sql(f"VACUUM {t} RETAIN 0 HOURS").collect()[0].path == f"file:{table}"
    finally:
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "true")
    parquet = [f for _, _, fs in os.walk(table) for f in fs if f.endswith(".parquet") and "checkpoint" not in f]
    assert len(parquet) == 2
    before = pydelta.load_snapshot(table).version
    with pytest.raises(errors.MissingDataFileError):
        spark.sql(f"RESTORE {t} TO VERSION AS OF 1")
    assert pydelta.load_snapshot(table).version == before


def test_convert_and_generate(spark, tmp_path):
    src = str(tmp_path / "pq")
    spark.range(6).selectExpr("id", "CAST(id % 3 AS INT) AS k").coalesce(1).write.partitionBy("k").parquet(src)
    spark.sql(f"CONVERT TO DELTA parquet.`{src}` PARTITIONED BY (k INT)")
    snap = pydelta.load_snapshot(src)
    assert snap.partition_columns == ["k"] and snap.num_files == 3
    assert spark.sql(f"SELECT count(*) FROM delta.`{src}` WHERE k = 1").first()[0] == 2
    spark.sql(f"GENERATE symlink_format_manifest FOR TABLE delta.`{src}`")
    assert (Path(src) / "_symlink_format_manifest").is_dir()


def test_convert_no_statistics(spark, tmp_path):
    import json

    from deltalake import DeltaTable as RsTable

    src = str(tmp_path / "pq")
    spark.range(8, numPartitions=2).selectExpr("id", "CAST(id % 2 AS INT) AS k").write.parquet(src)
    spark.sql(f"CONVERT TO DELTA parquet.`{src}` NO STATISTICS")
    snap = pydelta.load_snapshot(src)
    assert snap.num_files == 2 and snap.files().column("stats").null_count == 2
    with open(os.path.join(src, "_delta_log", "00000000000000000000.json")) as f:
        commit = [json.loads(line) for line in f]
    assert all("stats" not in a["add"] for a in commit if "add" in a)
    assert next(a for a in commit if "commitInfo" in a)["commitInfo"]["operationParameters"]["collectStats"] is False
    assert RsTable(src).to_pyarrow_table().num_rows == 8  # delta-rs reads it
    assert spark.sql(f"SELECT count(*) FROM delta.`{src}` WHERE id > 3").first()[0] == 4


def test_refused_statements_name_themselves(spark, table):
    t = f"delta.`{table}`"
    with pytest.raises(errors.DeltaNotImplementedError, match="UPGRADE UNIFORM"):
        spark.sql(f"REORG TABLE {t} APPLY (UPGRADE UNIFORM (ICEBERG_COMPAT_VERSION = 2))")
    with pytest.raises(errors.DeltaTableNotFoundError):
        spark.sql("DESCRIBE HISTORY no_such_table_here")
    with pytest.raises(errors.DeltaTableNotFoundError):
        spark.sql(f"DESCRIBE HISTORY delta.`{table}_missing`")


def test_truncate_and_unserved_commands(spark, table):
    t = f"delta.`{table}`"
    with pytest.raises(errors.DeltaAnalysisError, match="MSCK REPAIR TABLE is not supported for v2 tables"):
        spark.sql(f"MSCK REPAIR TABLE {t}")  # as Spark refuses it on delta-spark's (v2) tables
    spark.sql(f"TRUNCATE TABLE {t}")
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == 0
    assert spark.sql(f"DESCRIBE HISTORY {t} LIMIT 1").first().operation == "TRUNCATE"


def test_convert_applies_session_defaults_and_needs_stats_for_row_tracking(spark, tmp_path):
    key = "spark.databricks.delta.properties.defaults.enableRowTracking"
    src, other = str(tmp_path / "pq"), str(tmp_path / "pq2")
    for path in (src, other):
        spark.range(6, numPartitions=2).write.parquet(path)
    spark.conf.set(key, "true")
    try:
        with pytest.raises(errors.DeltaAnalysisError, match="DELTA_CONVERT_TO_DELTA_ROW_TRACKING_WITHOUT_STATS"):
            spark.sql(f"CONVERT TO DELTA parquet.`{src}` NO STATISTICS")
        assert not os.path.exists(os.path.join(src, "_delta_log", "00000000000000000000.json"))
        spark.sql(f"CONVERT TO DELTA parquet.`{other}`")
    finally:
        spark.conf.unset(key)
    snap = pydelta.load_snapshot(other)
    assert snap.metadata.configuration.get("delta.enableRowTracking") == "true"
    assert sorted(snap.files().column("base_row_id").to_pylist()) == [0, 3]
    ids = sorted(r.row_id for r in spark.read.format("delta").load(other).select("_metadata.row_id").collect())
    assert ids == list(range(6))
