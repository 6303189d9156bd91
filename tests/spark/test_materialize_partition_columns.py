"""The materializePartitionColumns writer feature: with it, every new data file holds the
partition columns too, after the data columns, while the directories and the log keep them
as always; readers (pydelta, deltalake) read the same rows."""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pyarrow.parquet as pq
import pytest

import pydelta
from pydelta.tables import DeltaTable

pytestmark = pytest.mark.spark

PROPERTY = "delta.enableMaterializePartitionColumnsFeature"


def _files(path: str) -> list[dict]:
    """The live files, each with its decoded absolute path (`file`)."""
    snapshot = pydelta.load_snapshot(path)
    return [{**f, "file": snapshot.absolute_path(f["path"])} for f in snapshot.files().to_pylist()]


def _check_files(path: str, data_columns: list[str], partition_columns: list[str]) -> int:
    """Each live file: the data columns, then the partition columns, holding its log values."""
    checked = 0
    for f in _files(path):
        table = pq.read_table(f["file"])
        assert table.column_names == data_columns + partition_columns, f["path"]
        logged = dict(f["partition_values"])
        for column in partition_columns:
            values = set(table.column(column).to_pylist())
            expected = None if logged[column] is None else type(next(iter(values)))(logged[column])
            assert values == {expected}, (f["path"], column)
            directory = Path(f["path"]).parts
            assert any(part.startswith(f"{column}=") for part in directory), f["path"]
        checked += 1
    return checked


def _rows(spark, path: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def test_new_files_hold_the_partition_columns(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"""CREATE TABLE delta.`{path}` (id BIGINT, v STRING, p INT, q STRING) USING delta
                  PARTITIONED BY (p, q) TBLPROPERTIES ('{PROPERTY}' = 'true')""")
    protocol = pydelta.load_snapshot(path).protocol
    assert "materializePartitionColumns" in (protocol.writer_features or ())
    spark.range(0, 12, numPartitions=3).selectExpr(
        "id", "CAST(id AS STRING) AS v", "CAST(id % 2 AS INT) AS p",
        "CASE WHEN id % 3 = 0 THEN NULL ELSE CAST(id % 3 AS STRING) END AS q",
    ).write.format("delta").mode("append").save(path)
    assert _check_files(path, ["id", "v"], ["p", "q"]) >= 6
    table = DeltaTable.forPath(spark, path)
    table.update("id < 4", {"v": "'u'"})
    source = spark.createDataFrame([(1, "m", 1, "1"), (50, "n", 0, None)], "id BIGINT, v STRING, p INT, q STRING")
    (table.alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    table.optimize().executeCompaction()
    assert _check_files(path, ["id", "v"], ["p", "q"]) >= 1
    expected = _rows(spark, path)
    assert len(expected) == 13 and (1, "m", 1, "1") in expected and (50, "n", 0, None) in expected
    dl = deltalake.DeltaTable(path).to_pyarrow_table()
    theirs = sorted(zip(*[dl.column(c).to_pylist() for c in ("id", "v", "p", "q")], strict=True))
    assert theirs == expected


def test_without_the_feature_files_stay_as_they_were(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(4).selectExpr("id", "CAST(id % 2 AS INT) AS p").write.format("delta").partitionBy("p").save(path)
    for f in _files(path):
        assert pq.read_table(f["file"]).column_names == ["id"]


def test_column_mapping_writes_the_physical_names(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"""CREATE TABLE delta.`{path}` (id BIGINT, `part col` STRING) USING delta PARTITIONED BY (`part col`)
                  TBLPROPERTIES ('{PROPERTY}' = 'true', 'delta.columnMapping.mode' = 'name')""")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b b')")
    fields = {f["name"]: f["metadata"]["delta.columnMapping.physicalName"]
              for f in json.loads(pydelta.load_snapshot(path).metadata.schema_string)["fields"]}
    for f in _files(path):
        names = pq.read_table(f["file"]).column_names
        assert names == [fields["id"], fields["part col"]]
    assert _rows(spark, path) == [(1, "a"), (2, "b b")]


def test_the_feature_turns_on_for_an_existing_table(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(4).selectExpr("id", "CAST(id % 2 AS INT) AS p").write.format("delta").partitionBy("p").save(path)
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('{PROPERTY}' = 'true')")
    spark.range(4, 6).selectExpr("id", "CAST(id % 2 AS INT) AS p").write.format("delta").mode("append").save(path)
    new = [f for f in _files(path) if pq.read_table(f["file"]).column_names == ["id", "p"]]
    assert len(new) == 2  # the two files of the append; the old ones stay as they were
    assert _rows(spark, path) == [(i, i % 2) for i in range(6)]
