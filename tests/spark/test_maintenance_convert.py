"""DeltaTable.convertToDelta on directories of Parquet files."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pydelta.errors import DeltaAnalysisError
from pydelta.log.snapshot import load_snapshot
from pydelta.tables import DeltaTable
from tests.spark.test_maintenance_support import commit_actions, commit_infos, deltalake_rows, spark_rows

pytestmark = pytest.mark.spark


def test_convert_partitioned_spark_parquet(spark, tmp_path: Path):
    path = str(tmp_path / "pq")
    df = spark.range(0, 40).selectExpr(
        "id", "concat('n', id) as name", "cast(id % 4 as int) as part",
        "date_add(date'2024-01-01', cast(id % 2 as int)) as day",
    )
    df.repartition(3).write.partitionBy("part", "day").parquet(path)
    table = DeltaTable.convertToDelta(spark, f"parquet.`{path}`", "part INT, day DATE")
    snap = load_snapshot(path)
    assert snap.version == 0
    assert snap.schema.field_names == ["id", "name", "part", "day"]
    assert snap.partition_columns == ["part", "day"]
    assert all(f.nullable for f in snap.schema.fields)
    parquet_files = sorted(p for p in Path(path).rglob("*.parquet"))
    assert snap.num_files == len(parquet_files)

    info = commit_infos(path)[0]
    assert info["operation"] == "CONVERT"
    params = info["operationParameters"]
    assert params["numFiles"] == len(parquet_files) and json.loads(params["partitionedBy"]) == ["part", "day"]
    assert params["collectStats"] is True
    assert info["operationMetrics"] == {"numConvertedFiles": str(len(parquet_files))}
    adds = [a["add"] for a in commit_actions(path, 0) if "add" in a]
    assert {a["partitionValues"]["day"] for a in adds} == {"2024-01-01", "2024-01-02"}
    assert all(json.loads(a["stats"])["numRecords"] > 0 and "minValues" in json.loads(a["stats"]) for a in adds)
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 40

    cols = ["id", "name", "part", "day"]
    expected = sorted((i, f"n{i}", i % 4, date(2024, 1, 1 + i % 2)) for i in range(40))
    assert spark_rows(table.toDF(), cols) == expected
    assert spark_rows(spark.read.format("delta").load(path), cols) == expected
    theirs = deltalake_rows(path, cols)
    assert [(r[0], r[1], r[2], str(r[3])) for r in theirs] == [(a, b, c, str(d)) for a, b, c, d in expected]
    # filters prune by partition and by the collected stats
    assert spark_rows(table.toDF().filter("part = 1 and id > 20"), ["id"]) == [(i,) for i in range(21, 40, 4)]


def test_convert_plain_path_and_foreign_parquet(spark, tmp_path: Path):
    path = tmp_path / "pq"
    path.mkdir()
    pq.write_table(pa.table({"a": pa.array([1, 2, 3], pa.int32()), "b": ["x", None, "z"]}), path / "one.parquet")
    pq.write_table(pa.table({"a": pa.array([4], pa.int32()), "c": pa.array([1.5])}), path / "two.parquet")
    (path / "_SUCCESS").write_text("")
    (path / ".hidden.parquet").write_text("not parquet")
    from pyspark.sql.types import StructType

    table = DeltaTable.convertToDelta(spark, str(path), StructType([]))  # empty partition schema
    snap = table.snapshot()
    assert snap.schema.field_names == ["a", "b", "c"]  # merged over the files
    assert [f.type.name for f in snap.schema.fields] == ["integer", "string", "double"]
    assert snap.num_files == 2
    cols = ["a", "b", "c"]
    expected = sorted([(1, "x", None), (2, None, None), (3, "z", None), (4, None, 1.5)], key=repr)
    assert sorted(spark_rows(table.toDF(), cols), key=repr) == expected
    assert sorted(deltalake_rows(path, cols), key=repr) == expected


def test_convert_checks_partition_directories(spark, tmp_path: Path):
    path = str(tmp_path / "pq")
    spark.range(0, 6).selectExpr("id", "cast(id % 2 as int) as part").write.partitionBy("part").parquet(path)
    with pytest.raises(DeltaAnalysisError, match=r"Expecting 0 partition column\(s\): \[\], but found 1"):
        DeltaTable.convertToDelta(spark, f"parquet.`{path}`")
    with pytest.raises(DeltaAnalysisError, match="Expecting partition column `other`"):
        DeltaTable.convertToDelta(spark, f"parquet.`{path}`", "other INT")
    with pytest.raises(DeltaAnalysisError, match="Failed to cast value"):
        DeltaTable.convertToDelta(spark, f"parquet.`{path}`", "part BOOLEAN")
    assert not (Path(path) / "_delta_log").exists()  # nothing committed on failure
    t = DeltaTable.convertToDelta(spark, f"parquet.`{path}`", "part INT")
    assert spark_rows(t.toDF(), ["id", "part"]) == [(i, i % 2) for i in range(6)]
    # converting again is a no-op on a Delta table
    again = DeltaTable.convertToDelta(spark, f"parquet.`{path}`", "part INT")
    assert again.snapshot().version == 0
    assert DeltaTable.convertToDelta(spark, f"delta.`{path}`").snapshot().version == 0


def test_convert_refuses_empty_and_missing_directories(spark, tmp_path: Path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DeltaAnalysisError, match="no Parquet files"):
        DeltaTable.convertToDelta(spark, f"parquet.`{tmp_path / 'empty'}`")
    with pytest.raises(DeltaAnalysisError, match="does not exist"):
        DeltaTable.convertToDelta(spark, f"parquet.`{tmp_path / 'nope'}`")
    with pytest.raises(DeltaAnalysisError, match="only supports parquet"):
        DeltaTable.convertToDelta(spark, f"orc.`{tmp_path / 'empty'}`")
