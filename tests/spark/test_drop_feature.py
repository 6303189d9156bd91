"""DROP FEATURE through Spark: DeltaTable.dropFeatureSupport and ALTER TABLE ... DROP FEATURE.

Dropping deletionVectors purges them (REORG ... APPLY (PURGE)) before the protocol changes;
`deltalake` reads the result; errors are delta-spark's (pyspark classes, error classes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException, UnknownException

import pydelta
from pydelta import DeltaTable
from pydelta.errors import DeltaTableFeatureError
from pydelta.txn.drop_feature import PROTECTION_VERSION_KEY

pytestmark = pytest.mark.spark


def _dv_table(spark, path: str) -> None:
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.range(0, 300, numPartitions=3).selectExpr("id", "CAST(id AS STRING) AS v").write.format("delta") \
        .mode("append").save(path)
    DeltaTable.forPath(spark, path).delete("id % 7 = 0")


def _operations(path: str) -> list[str]:
    out = []
    for f in sorted(Path(path, "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            if line.startswith('{"commitInfo"'):
                out.append(json.loads(line)["commitInfo"]["operation"])
    return out


def _deltalake_ids(path: str) -> list[int]:
    import deltalake

    return sorted(deltalake.DeltaTable(path).to_pyarrow_table().column("id").to_pylist())


def test_drop_deletion_vectors_purges_then_downgrades(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    expected = [i for i in range(300) if i % 7]
    snap = pydelta.load_snapshot(path)
    dv_files = sorted(p.name for p in Path(path).glob("deletion_vector_*.bin"))
    assert dv_files and snap.files().column("deletion_vector").null_count < snap.num_files
    DeltaTable.forPath(spark, path).dropFeatureSupport("deletionVectors")
    after = pydelta.load_snapshot(path)
    assert not after.protocol.has_feature("deletionVectors")
    assert after.protocol.has_feature("checkpointProtection")
    assert after.metadata.configuration[PROTECTION_VERSION_KEY] == str(after.version)
    assert "delta.enableDeletionVectors" not in after.metadata.configuration
    assert after.files().column("deletion_vector").null_count == after.num_files  # every DV purged
    ops = _operations(path)
    assert ops[-7:] == ["UNSET TBLPROPERTIES", "REORG", "Deletion Vector Tombstones", "Empty Commit",
                        "Empty Commit", "Empty Commit", "DROP FEATURE"]
    tombstones = set(after.tombstones().column("path").to_pylist())
    assert {n for n in dv_files} <= tombstones  # the DV files are tombstones of their own now
    rows = sorted(r.id for r in spark.read.format("delta").load(path).select("id").collect())
    assert rows == expected
    assert _deltalake_ids(path) == expected
    # Still writable, and a DV-less delete rewrites files now.
    DeltaTable.forPath(spark, path).delete("id = 1")
    assert pydelta.load_snapshot(path).files().column("deletion_vector").null_count == \
        pydelta.load_snapshot(path).num_files


def test_sql_drop_feature_and_delta_spark_errors(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    t = f"delta.`{path}`"
    version = pydelta.load_snapshot(path).version
    with pytest.raises(UnknownException) as info:
        spark.sql(f"ALTER TABLE {t} DROP FEATURE noSuchFeature")
    assert info.value.getCondition() == "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE"
    assert isinstance(info.value, DeltaTableFeatureError)
    with pytest.raises(UnknownException) as info:
        spark.sql(f"ALTER TABLE {t} DROP FEATURE appendOnly")
    assert info.value.getCondition() == "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE"
    assert pydelta.load_snapshot(path).version == version  # refusals commit nothing
    # TRUNCATE HISTORY: the first run removes the traces and asks to wait for the retention.
    with pytest.raises(UnknownException) as info:
        spark.sql(f"ALTER TABLE {t} DROP FEATURE 'deletionVectors' TRUNCATE HISTORY")
    assert info.value.getCondition() == "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"
    snap = pydelta.load_snapshot(path)
    assert snap.protocol.has_feature("deletionVectors")
    assert snap.files().column("deletion_vector").null_count == snap.num_files
    with pytest.raises(UnknownException) as info:
        spark.sql(f"ALTER TABLE {t} DROP FEATURE deletionVectors TRUNCATE HISTORY")
    assert info.value.getCondition() == "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST"
    # Without TRUNCATE HISTORY the drop completes at once, behind protected checkpoints.
    spark.sql(f"ALTER TABLE {t} DROP FEATURE deletionVectors")
    assert not pydelta.load_snapshot(path).protocol.has_feature("deletionVectors")
    assert _deltalake_ids(path) == [i for i in range(300) if i % 7]


def test_check_constraint_refusal_is_an_analysis_exception(spark, tmp_path):
    path = str(tmp_path / "c")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta")
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (id > 0)")
    with pytest.raises(AnalysisException) as info:
        DeltaTable.forPath(spark, path).dropFeatureSupport("checkConstraints")
    assert info.value.getCondition() == "DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE"
    spark.sql(f"ALTER TABLE delta.`{path}` DROP CONSTRAINT positive")
    DeltaTable.forPath(spark, path).dropFeatureSupport("checkConstraints")
    assert not pydelta.load_snapshot(path).protocol.has_feature("checkConstraints")


def test_drop_feature_support_checks_argument_types(spark, tmp_path):
    path = str(tmp_path / "a")
    spark.range(3).write.format("delta").save(path)
    dt = DeltaTable.forPath(spark, path)
    with pytest.raises(ValueError, match="featureName needs to be a string"):
        dt.dropFeatureSupport(5)
    with pytest.raises(ValueError, match="truncateHistory needs to be a boolean"):
        dt.dropFeatureSupport("deletionVectors", "yes")


def test_drop_column_mapping_rewrites_with_logical_names(spark, tmp_path):
    path = str(tmp_path / "cm")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, label STRING, s STRUCT<a: INT, b: STRING>, p INT) USING delta "
              "PARTITIONED BY (p) TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
              "'delta.enableRowTracking' = 'true')")
    spark.sql(f"INSERT INTO {t} SELECT id, CAST(id AS STRING), named_struct('a', CAST(id AS INT), 'b', 'x'), "
              "CAST(id % 2 AS INT) FROM range(20)")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN label TO name")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN s")
    before = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    row_ids = {r.id: r.row_id for r in spark.read.format("delta").load(path).select("id", "_metadata.row_id").collect()}
    spark.sql(f"ALTER TABLE {t} DROP FEATURE columnMapping")
    snap = pydelta.load_snapshot(path)
    assert not snap.protocol.has_feature("columnMapping") and snap.protocol.has_feature("checkpointProtection")
    assert snap.metadata.configuration["delta.columnMapping.mode"] == "none"
    assert all("delta.columnMapping" not in json.dumps(f.metadata) for f in snap.metadata.schema.fields)
    assert "REMOVE COLUMN MAPPING" in _operations(path)
    after = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert after == before
    assert {r.id: r.row_id for r in spark.read.format("delta").load(path)
            .select("id", "_metadata.row_id").collect()} == row_ids  # row IDs survive the rewrite
    import pyarrow.parquet as pq

    for rel in snap.files().column("path").to_pylist():  # files hold logical names, hive-style directories
        assert rel.startswith(("p=0/", "p=1/"))
        names = set(pq.read_schema(snap.absolute_path(rel)).names)
        assert {"id", "name"} <= names and not any(n.startswith("col-") for n in names)
    import deltalake

    assert sorted(deltalake.DeltaTable(path).to_pyarrow_table().column("name").to_pylist()) == sorted(
        str(i) for i in range(20))


def test_drop_column_mapping_of_an_id_mode_table_writes_no_field_ids(spark, tmp_path):
    import pyarrow.parquet as pq

    path = str(tmp_path / "ids")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, s STRUCT<a: INT>) USING delta "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'id')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, named_struct('a', 2))")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP FEATURE columnMapping")
    snap = pydelta.load_snapshot(path)
    for rel in snap.files().column("path").to_pylist():
        schema = pq.read_schema(snap.absolute_path(rel))
        assert schema.names == ["id", "s"]
        assert not schema.field("id").metadata and not schema.field("s").type.field(0).metadata  # no field ids
    assert [tuple(r) for r in spark.read.format("delta").load(path).selectExpr("id", "s.a").collect()] == [(1, 2)]


def test_drop_column_mapping_refuses_names_that_need_it(spark, tmp_path):
    path = str(tmp_path / "cm")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, `my col` STRING) USING delta "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    version = pydelta.load_snapshot(path).version
    with pytest.raises(AnalysisException, match="DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES"):
        spark.sql(f"ALTER TABLE {t} DROP FEATURE columnMapping")
    assert pydelta.load_snapshot(path).version == version
