"""DeltaTable.update / updateExpr: real Spark, real files, expected rows computed in plain Python."""

from __future__ import annotations

import json

import pytest

import pydelta
from pydelta.errors import DeltaAnalysisError, InvariantViolationError
from tests.spark.test_dml_delete import (
    LAYOUTS,
    assert_rows,
    base_rows,
    canon,
    cdc_actions,
    cdf_rows,
    commit_info,
    delta_table,
    file_paths,
    files_with,
    history_operations,
    make_table,
    rows_in_files,
    spark_rows,
    version,
)

pytestmark = pytest.mark.spark


@pytest.fixture
def table_path(tmp_path) -> str:
    return str(tmp_path / "t")


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_update_data_predicate_rewrites_only_touched_files(spark, table_path, layout):
    rows = base_rows()
    make_table(spark, table_path, rows, **LAYOUTS[layout])
    before = file_paths(table_path)
    touched = files_with(table_path, "id", lambda i: 10 <= i <= 40)
    assert 0 < len(touched) < len(before)

    delta_table(spark, table_path).update("id BETWEEN 10 AND 40", {"v": "v * 2", "s": "concat(s, '!')"})

    expected = [
        {**r, "v": None if r["v"] is None else r["v"] * 2, "s": None if r["s"] is None else r["s"] + "!"}
        if 10 <= r["id"] <= 40 else r
        for r in rows
    ]
    assert_rows(spark, table_path, expected)
    after = file_paths(table_path)
    assert before - after == touched
    info = commit_info(table_path)
    assert info["operation"] == "UPDATE"
    predicate = json.loads(info["operationParameters"]["predicate"])
    assert len(predicate) == 1 and "id" in predicate[0]
    m = info["operationMetrics"]
    assert m["numUpdatedRows"] == "31"
    assert m["numCopiedRows"] == str(rows_in_files(table_path, touched, version=0) - 31)
    assert m["numRemovedFiles"] == str(len(touched))
    assert m["numAddedFiles"] == str(len(after - before))
    assert m["numAddedChangeFiles"] == "0"
    for k in ("executionTimeMs", "scanTimeMs", "rewriteTimeMs", "numRemovedBytes", "numAddedBytes",
              "numDeletionVectorsAdded", "numDeletionVectorsRemoved", "numDeletionVectorsUpdated"):
        assert k in m
    assert history_operations(spark, table_path) == ["WRITE", "UPDATE"]


def test_update_with_columns_and_alias(spark, table_path):
    from pyspark.sql import functions as F

    rows = base_rows(60)
    make_table(spark, table_path, rows, files=2)
    dt = delta_table(spark, table_path).alias("t")
    dt.update(F.col("t.s").isNull(), {"s": F.lit("was null"), "t.v": F.col("t.id") + 0.25})
    expected = [{**r, "s": "was null", "v": r["id"] + 0.25} if r["s"] is None else r for r in rows]
    assert_rows(spark, table_path, expected)
    # updateExpr is the same call with SQL strings
    dt.updateExpr("id = 0", {"s": "'zero'"})
    expected = [{**r, "s": "zero"} if r["id"] == 0 else r for r in expected]
    assert_rows(spark, table_path, expected)


@pytest.mark.parametrize("layout", ["partitioned", "name_mapping"])
def test_update_partition_predicate_rewrites_whole_partition(spark, table_path, layout):
    rows = base_rows()
    make_table(spark, table_path, rows, **LAYOUTS[layout])
    snap = pydelta.load_snapshot(table_path)
    before = file_paths(table_path)
    delta_table(spark, table_path).update("p = 2", {"s": "upper(s)"})
    expected = [{**r, "s": r["s"].upper() if r["s"] else None} if r["p"] == 2 else r for r in rows]
    assert_rows(spark, table_path, expected)
    removed = before - file_paths(table_path)
    pkey = snap.schema.field("p").metadata.get("delta.columnMapping.physicalName", "p")
    in_p2 = {r["path"] for r in snap.files().to_pylist() if dict(r["partition_values"])[pkey] == "2"}
    assert removed == in_p2
    m = commit_info(table_path)["operationMetrics"]
    assert m["numUpdatedRows"] == str(sum(1 for r in rows if r["p"] == 2))
    assert m["numCopiedRows"] == "0"


def test_update_partition_column_moves_rows(spark, table_path):
    rows = base_rows(80)
    make_table(spark, table_path, rows, partition_by=["p"], files=2)
    delta_table(spark, table_path).update("id < 10", {"p": "9"})
    expected = [{**r, "p": 9} if r["id"] < 10 else r for r in rows]
    assert_rows(spark, table_path, expected)
    parts = {dict(pv)["p"] for pv in pydelta.load_snapshot(table_path).files().column("partition_values").to_pylist()}
    assert "9" in parts


def test_update_without_condition(spark, table_path):
    rows = base_rows(50)
    make_table(spark, table_path, rows, mapping=True, files=2)
    delta_table(spark, table_path).update(set={"v": "coalesce(v, -1.0)"})
    expected = [{**r, "v": -1.0 if r["v"] is None else r["v"]} for r in rows]
    assert_rows(spark, table_path, expected)
    info = commit_info(table_path)
    assert info["operationParameters"]["predicate"] == "[]"
    assert info["operationMetrics"]["numUpdatedRows"] == "50"
    assert info["operationMetrics"]["numCopiedRows"] == "0"


def test_update_no_match_changes_no_files(spark, table_path):
    rows = base_rows(30)
    make_table(spark, table_path, rows, files=2)
    before = file_paths(table_path)
    delta_table(spark, table_path).update("id < 0", {"v": "0"})
    assert file_paths(table_path) == before
    assert commit_info(table_path)["operation"] != "UPDATE"  # no version: delta-spark 4.4 commits nothing either
    assert_rows(spark, table_path, rows, check_deltalake=False)


def test_update_unknown_column_is_an_error_and_commits_nothing(spark, table_path, tmp_path):
    rows = base_rows(20)
    make_table(spark, table_path, rows, files=1)
    dt = delta_table(spark, table_path)
    with pytest.raises(DeltaAnalysisError, match="nope"):
        dt.update("id = 1", {"nope": "1"})
    with pytest.raises(DeltaAnalysisError):
        dt.update("id = 1", {"v": "no_such_column + 1"})
    with pytest.raises(DeltaAnalysisError):
        dt.update("missing = 1", {"v": "1"})
    with pytest.raises(DeltaAnalysisError, match="conflict"):
        dt.update("id = 1", {"v": "1", "V": "2"})
    with pytest.raises(ValueError):
        dt.update("id = 1")
    with pytest.raises(TypeError):
        dt.update("id = 1", {"v": 3})
    assert version(table_path) == 0
    assert_rows(spark, table_path, rows, check_deltalake=False)


def test_update_enforces_constraints_and_leaves_table_untouched(spark, table_path):
    from pyspark.sql.types import DoubleType, LongType, StringType

    from pydelta.tables import DeltaTable

    (DeltaTable.create(spark).location(table_path)
     .addColumn("id", LongType(), nullable=False)
     .addColumn("v", DoubleType())
     .addColumn("s", StringType())
     .property("delta.constraints.v_positive", "v > 0")
     .execute())
    rows = [{"id": i, "v": float(i + 1), "s": f"s{i}"} for i in range(10)]
    spark.createDataFrame(rows, "id long, v double, s string").write.format("delta").mode("append").save(table_path)
    dt = delta_table(spark, table_path)
    before = version(table_path)
    with pytest.raises(InvariantViolationError, match="v_positive"):
        dt.update("id = 3", {"v": "-1.0"})
    with pytest.raises(InvariantViolationError, match="NOT NULL"):
        dt.update("id = 4", {"id": "NULL"})
    assert version(table_path) == before
    dt.update("id = 5", {"v": "v + 100"})
    expected = [{**r, "v": r["v"] + 100} if r["id"] == 5 else r for r in rows]
    assert_rows(spark, table_path, expected)


def test_update_recomputes_generated_columns(spark, table_path):
    from pyspark.sql.types import LongType

    from pydelta.tables import DeltaTable

    (DeltaTable.create(spark).location(table_path)
     .addColumn("id", LongType())
     .addColumn("twice", LongType(), generatedAlwaysAs="id * 2")
     .execute())
    spark.createDataFrame([(i,) for i in range(6)], "id long").write.format("delta").mode("append").save(table_path)
    delta_table(spark, table_path).update("id >= 4", {"id": "id + 10"})
    expected = [{"id": i + (10 if i >= 4 else 0), "twice": 2 * (i + (10 if i >= 4 else 0))} for i in range(6)]
    assert spark_rows(spark, table_path) == sorted(
        (tuple(sorted(r.items())) for r in expected), key=repr)


def test_update_nested_field(spark, table_path):
    rows = [(i, (i, f"n{i}")) for i in range(6)]
    spark.createDataFrame(rows, "id long, st struct<a:long, b:string>").write.format("delta").save(table_path)
    delta_table(spark, table_path).update("id < 2", {"st.b": "'changed'"})
    got = sorted((r["id"], r["st"]["a"], r["st"]["b"]) for r in spark.read.format("delta").load(table_path).collect())
    assert got == [(i, i, "changed" if i < 2 else f"n{i}") for i in range(6)]


@pytest.mark.parametrize("layout", ["plain", "partitioned"])
def test_update_writes_change_data(spark, table_path, layout):
    rows = base_rows(40)
    make_table(spark, table_path, rows, files=2, properties={"delta.enableChangeDataFeed": "true"},
               **LAYOUTS[layout])
    delta_table(spark, table_path).update("id BETWEEN 10 AND 14", {"s": "'changed'"})
    hit = [r for r in rows if 10 <= r["id"] <= 14]
    expected = [{**r, "s": "changed"} if 10 <= r["id"] <= 14 else r for r in rows]
    assert_rows(spark, table_path, expected)
    cdc = cdc_actions(table_path, 1)
    assert cdc and commit_info(table_path)["operationMetrics"]["numAddedChangeFiles"] == str(len(cdc))
    want = [{**r, "_change_type": "update_preimage"} for r in hit]
    want += [{**r, "s": "changed", "_change_type": "update_postimage"} for r in hit]
    assert cdf_rows(table_path, 1) == canon(want)
