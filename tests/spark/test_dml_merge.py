"""DeltaTable.merge: every clause kind, real Spark, expected rows computed in plain Python."""

from __future__ import annotations

import json
import shutil

import pytest

import pydelta
from pydelta.errors import DeltaAnalysisError, DeltaError, InvariantViolationError
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


SCHEMA = "id long, p int, v double, s string"


@pytest.fixture
def table_path(tmp_path) -> str:
    return str(tmp_path / "t")


def result_of(df) -> dict:
    (row,) = df.collect()
    assert df.columns == ["num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows"]
    return row.asDict()


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_merge_upsert_rewrites_only_matched_files(spark, table_path, layout):
    rows = base_rows()
    make_table(spark, table_path, rows, **LAYOUTS[layout])
    before = file_paths(table_path)
    source_rows = [{"id": i, "p": i % 4, "v": -float(i), "s": "new"} for i in range(190, 250)]
    touched = files_with(table_path, "id", lambda i: 190 <= i < 250)
    assert 0 < len(touched) < len(before)

    source = spark.createDataFrame(source_rows, SCHEMA)
    result = (delta_table(spark, table_path).alias("t")
              .merge(source.alias("s"), "t.id = s.id")
              .whenMatchedUpdateAll()
              .whenNotMatchedInsertAll()
              .execute())

    by_id = {r["id"]: r for r in rows}
    by_id.update({r["id"]: r for r in source_rows})
    assert_rows(spark, table_path, list(by_id.values()))
    assert result_of(result) == {"num_affected_rows": 60, "num_updated_rows": 10, "num_deleted_rows": 0,
                                 "num_inserted_rows": 50}
    after = file_paths(table_path)
    assert before - after == touched
    info = commit_info(table_path)
    assert info["operation"] == "MERGE"
    params = info["operationParameters"]
    assert "id" in json.loads(params["predicate"])[0]
    assert json.loads(params["matchedPredicates"]) == [{"actionType": "update"}]
    assert json.loads(params["notMatchedPredicates"]) == [{"actionType": "insert"}]
    assert json.loads(params["notMatchedBySourcePredicates"]) == []
    m = info["operationMetrics"]
    copied = rows_in_files(table_path, touched, version=0) - 10
    assert m["numSourceRows"] == "60"
    assert m["numTargetRowsUpdated"] == "10" and m["numTargetRowsMatchedUpdated"] == "10"
    assert m["numTargetRowsInserted"] == "50"
    assert m["numTargetRowsDeleted"] == "0"
    assert m["numTargetRowsCopied"] == str(copied)
    assert m["numOutputRows"] == str(10 + 50 + copied)
    assert m["numTargetFilesRemoved"] == str(len(touched))
    assert m["numTargetFilesAdded"] == str(len(after - before))
    for k in ("numTargetRowsNotMatchedBySourceUpdated", "numTargetRowsMatchedDeleted",
              "numTargetRowsNotMatchedBySourceDeleted", "numTargetBytesAdded", "numTargetBytesRemoved",
              "numTargetChangeFilesAdded", "executionTimeMs", "scanTimeMs", "rewriteTimeMs",
              "materializeSourceTimeMs", "numTargetDeletionVectorsAdded", "numTargetDeletionVectorsRemoved",
              "numTargetDeletionVectorsUpdated"):
        assert k in m
    assert history_operations(spark, table_path) == ["WRITE", "MERGE"]


def _expected_all_clauses(rows, source_rows):
    """MERGE with every clause kind, evaluated row by row in Python (first clause wins per kind)."""
    src = {r["id"]: r for r in source_rows}
    out = []
    matched_ids = set()
    for t in rows:
        s = src.get(t["id"])
        if s is not None:
            matched_ids.add(t["id"])
            if s["op"] == "del":
                continue
            if s["op"] == "inc":
                out.append({**t, "v": None if t["v"] is None else t["v"] + s["v"]})
            else:
                out.append({**t, "s": "other"})
        else:
            if t["id"] < 10:
                out.append({**t, "s": "orphan"})
            elif t["id"] >= 30:
                continue
            else:
                out.append(t)
    for s in source_rows:
        if s["id"] in matched_ids:
            continue
        if s["op"] == "ins":
            out.append({"id": s["id"], "p": s["id"] % 4, "v": s["v"], "s": "inserted"})
        else:
            out.append({"id": s["id"], "p": 0, "v": None, "s": "fallback"})
    return out


@pytest.mark.parametrize("layout", ["plain", "name_mapping"])
def test_merge_every_clause_kind_in_order(spark, table_path, layout):
    rows = base_rows(60)
    make_table(spark, table_path, rows, files=3, **LAYOUTS[layout])
    ops = ["del", "inc", "ins", "zzz"]
    source_rows = [{"id": i, "op": ops[i % 4], "v": float(i)} for i in range(40, 80)]
    source = spark.createDataFrame(source_rows, "id long, op string, v double")

    result = (delta_table(spark, table_path).alias("t")
              .merge(source.alias("s"), "t.id = s.id")
              .whenMatchedDelete(condition="s.op = 'del'")
              .whenMatchedUpdate(condition="s.op = 'inc'", set={"v": "t.v + s.v"})
              .whenMatchedUpdate(set={"s": "'other'"})
              .whenNotMatchedInsert(condition="s.op = 'ins'",
                                    values={"id": "s.id", "p": "s.id % 4", "v": "s.v", "s": "'inserted'"})
              .whenNotMatchedInsert(values={"id": "s.id", "p": "0", "s": "'fallback'"})
              .whenNotMatchedBySourceUpdate(condition="t.id < 10", set={"s": "'orphan'"})
              .whenNotMatchedBySourceDelete(condition="t.id >= 30")
              .execute())

    expected = _expected_all_clauses(rows, source_rows)
    assert_rows(spark, table_path, expected)
    m = commit_info(table_path)["operationMetrics"]
    matched = [s for s in source_rows if s["id"] < 60]
    m_del = sum(1 for s in matched if s["op"] == "del")
    m_upd = len(matched) - m_del
    orphans = [t for t in rows if t["id"] < 40]
    u_upd = sum(1 for t in orphans if t["id"] < 10)
    u_del = sum(1 for t in orphans if t["id"] >= 30)
    inserted = sum(1 for s in source_rows if s["id"] >= 60)
    assert m["numTargetRowsMatchedDeleted"] == str(m_del)
    assert m["numTargetRowsMatchedUpdated"] == str(m_upd)
    assert m["numTargetRowsNotMatchedBySourceUpdated"] == str(u_upd)
    assert m["numTargetRowsNotMatchedBySourceDeleted"] == str(u_del)
    assert m["numTargetRowsDeleted"] == str(m_del + u_del)
    assert m["numTargetRowsUpdated"] == str(m_upd + u_upd)
    assert m["numTargetRowsInserted"] == str(inserted)
    assert m["numTargetRowsCopied"] == str(len(expected) - inserted - m_upd - u_upd)
    assert result_of(result) == {"num_affected_rows": m_del + m_upd + u_upd + u_del + inserted,
                                 "num_updated_rows": m_upd + u_upd, "num_deleted_rows": m_del + u_del,
                                 "num_inserted_rows": inserted}
    params = commit_info(table_path)["operationParameters"]
    matched_p = json.loads(params["matchedPredicates"])
    assert [c["actionType"] for c in matched_p] == ["delete", "update", "update"]
    assert "predicate" in matched_p[0] and "op" in matched_p[0]["predicate"] and "predicate" not in matched_p[2]
    assert [c["actionType"] for c in json.loads(params["notMatchedPredicates"])] == ["insert", "insert"]
    assert [c["actionType"] for c in json.loads(params["notMatchedBySourcePredicates"])] == ["update", "delete"]


def test_merge_insert_only_appends_without_rewriting(spark, table_path):
    rows = base_rows(80)
    make_table(spark, table_path, rows, partition_by=["p"], files=2)
    before = file_paths(table_path)
    source_rows = [{"id": i, "p": i % 4, "v": 0.5, "s": "ins"} for i in range(70, 100)]
    source = spark.createDataFrame(source_rows, SCHEMA)
    result = (delta_table(spark, table_path).alias("t").merge(source.alias("s"), "t.id = s.id")
              .whenNotMatchedInsertAll(condition="s.id % 2 = 0").execute())
    new = [r for r in source_rows if r["id"] >= 80 and r["id"] % 2 == 0]
    assert_rows(spark, table_path, rows + new)
    assert before <= file_paths(table_path)  # nothing removed or rewritten
    m = commit_info(table_path)["operationMetrics"]
    assert m["numTargetFilesRemoved"] == "0" and m["numTargetRowsInserted"] == str(len(new))
    assert m["numSourceRows"] == "30" and m["numTargetRowsCopied"] == "0"
    assert result_of(result)["num_inserted_rows"] == len(new)


def test_merge_without_matches_only_inserts(spark, table_path):
    rows = base_rows(40)
    make_table(spark, table_path, rows, files=2)
    before = file_paths(table_path)
    source = spark.createDataFrame([{"id": 500 + i, "p": 1, "v": 1.0, "s": "x"} for i in range(5)], SCHEMA)
    (delta_table(spark, table_path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedDelete().whenNotMatchedInsertAll().execute())
    assert before <= file_paths(table_path)
    assert_rows(spark, table_path, rows + [{"id": 500 + i, "p": 1, "v": 1.0, "s": "x"} for i in range(5)])
    m = commit_info(table_path)["operationMetrics"]
    assert m["numTargetFilesRemoved"] == "0" and m["numTargetRowsInserted"] == "5" and m["numSourceRows"] == "5"


def test_merge_multiple_source_rows_matching_one_target_row_fails(spark, table_path):
    from pydelta.spark.dml.merge import MultipleSourceRowMatchingTargetRowInMergeError

    rows = base_rows(40)
    make_table(spark, table_path, rows, files=2)
    before = file_paths(table_path)
    source = spark.createDataFrame([{"id": 5, "p": 1, "v": 1.0, "s": "a"}, {"id": 5, "p": 1, "v": 2.0, "s": "b"},
                                    {"id": 100, "p": 1, "v": 3.0, "s": "c"}], SCHEMA)
    builder = delta_table(spark, table_path).alias("t").merge(source.alias("s"), "t.id = s.id")
    with pytest.raises(MultipleSourceRowMatchingTargetRowInMergeError) as err:
        builder.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert isinstance(err.value, DeltaError)
    assert "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE" in str(err.value)
    with pytest.raises(MultipleSourceRowMatchingTargetRowInMergeError):
        builder.whenMatchedDelete(condition="s.v > 1.5").execute()
    assert version(table_path) == 0 and file_paths(table_path) == before
    assert_rows(spark, table_path, rows, check_deltalake=False)

    # One unconditional delete is not ambiguous: delta-spark allows it.
    result = builder.whenMatchedDelete().execute()
    assert_rows(spark, table_path, [r for r in rows if r["id"] != 5])
    assert result_of(result)["num_deleted_rows"] == 1
    assert commit_info(table_path)["operationMetrics"]["numTargetRowsDeleted"] == "1"


def test_merge_duplicate_matches_no_clause_applies_copy_once(spark, table_path):
    rows = base_rows(40)
    make_table(spark, table_path, rows, files=1)
    source = spark.createDataFrame(
        [{"id": 5, "p": 1, "v": 1.0, "s": "a"}, {"id": 5, "p": 1, "v": 2.0, "s": "b"},
         {"id": 6, "p": 2, "v": 9.0, "s": "upd"}], SCHEMA)
    # id 5 matches twice but no matched clause modifies it; id 6 (same file) is updated.
    (delta_table(spark, table_path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdate(condition="s.s = 'upd'", set={"v": "s.v"}).execute())
    expected = [{**r, "v": 9.0} if r["id"] == 6 else r for r in rows]
    assert_rows(spark, table_path, expected)
    m = commit_info(table_path)["operationMetrics"]
    assert m["numTargetRowsUpdated"] == "1" and m["numTargetRowsCopied"] == str(len(rows) - 1)


@pytest.mark.parametrize("how", ["builder", "conf"])
@pytest.mark.parametrize("layout", ["plain", "name_mapping"])
def test_merge_schema_evolution_adds_source_columns(spark, table_path, how, layout):
    rows = base_rows(30)
    make_table(spark, table_path, rows, files=2, **LAYOUTS[layout])
    source_rows = [{"id": i, "p": i % 4, "v": 2.0 * i, "s": "evo", "extra": f"e{i}"} for i in range(25, 35)]
    source = spark.createDataFrame(source_rows, SCHEMA + ", extra string")
    builder = (delta_table(spark, table_path).alias("t").merge(source.alias("s"), "t.id = s.id")
               .whenMatchedUpdateAll().whenNotMatchedInsertAll())
    if how == "builder":
        builder.withSchemaEvolution().execute()
    else:
        spark.conf.set("spark.databricks.delta.schema.autoMerge.enabled", "true")
        try:
            builder.execute()
        finally:
            spark.conf.unset("spark.databricks.delta.schema.autoMerge.enabled")
    snap = pydelta.load_snapshot(table_path)
    assert snap.schema.field_names == ["id", "p", "v", "s", "extra"]
    if layout == "name_mapping":
        assert snap.schema.field("extra").metadata.get("delta.columnMapping.physicalName")
    by_id = {r["id"]: {**r, "extra": None} for r in rows}
    by_id.update({r["id"]: r for r in source_rows})
    assert_rows(spark, table_path, list(by_id.values()))


def test_merge_without_schema_evolution_ignores_or_rejects_extra_columns(spark, table_path):
    rows = base_rows(20)
    make_table(spark, table_path, rows, files=1)
    source = spark.createDataFrame([{"id": 1, "p": 1, "v": 7.0, "s": "u", "extra": "x"}], SCHEMA + ", extra string")
    (delta_table(spark, table_path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().execute())
    assert pydelta.load_snapshot(table_path).schema.field_names == ["id", "p", "v", "s"]
    assert_rows(spark, table_path, [{"id": 1, "p": 1, "v": 7.0, "s": "u"} if r["id"] == 1 else r for r in rows])
    narrow = spark.createDataFrame([{"id": 1, "v": 7.0}], "id long, v double")
    v = version(table_path)
    with pytest.raises(DeltaAnalysisError, match="DELTA_MERGE_UNRESOLVED_EXPRESSION"):
        (delta_table(spark, table_path).alias("t").merge(narrow.alias("s"), "t.id = s.id")
         .whenMatchedUpdateAll().execute())
    with pytest.raises(DeltaAnalysisError):
        (delta_table(spark, table_path).alias("t").merge(narrow.alias("s"), "t.id = s.id")
         .whenMatchedUpdate(set={"nope": "s.v"}).execute())
    with pytest.raises(DeltaAnalysisError):
        (delta_table(spark, table_path).alias("t").merge(narrow.alias("s"), "t.id = s.missing")
         .whenMatchedDelete().execute())
    assert version(table_path) == v


def test_merge_column_conditions_and_unaliased_source(spark, table_path):
    from pyspark.sql import functions as F

    rows = base_rows(30)
    make_table(spark, table_path, rows, partition_by=["p"], files=1)
    source = spark.createDataFrame([(3, 100.0), (4, 200.0), (99, 5.0)], "key long, val double")
    (delta_table(spark, table_path)
     .merge(source, F.col("id") == F.col("key"))
     .whenMatchedUpdate(condition=F.col("val") > 150, set={"v": F.col("val")})
     .whenMatchedDelete()
     .whenNotMatchedInsert(values={"id": F.col("key"), "p": F.lit(3), "v": "val", "s": F.lit("k")})
     .execute())
    expected = [r for r in rows if r["id"] != 3]
    expected = [{**r, "v": 200.0} if r["id"] == 4 else r for r in expected]
    expected.append({"id": 99, "p": 3, "v": 5.0, "s": "k"})
    assert_rows(spark, table_path, expected)


def test_merge_into_table_with_deletion_vectors(spark, golden, tmp_path):
    import pyarrow.parquet as pq

    name = "dv-partitioned-with-checkpoint"
    path = str(tmp_path / name)
    shutil.copytree(golden / "delta-spark" / name / "delta", path)
    expected = pq.read_table(golden / "delta-spark" / name / "expected").to_pylist()
    some = sorted(r["col1"] for r in expected)[:3]
    source = spark.createDataFrame([(c, "merged") for c in some] + [(10_000, "new")], "col1 int, col2 string")
    (delta_table(spark, path).alias("t").merge(source.alias("s"), "t.col1 = s.col1")
     .whenMatchedUpdate(set={"col2": "s.col2"})
     .whenNotMatchedInsert(values={"col1": "s.col1", "col2": "s.col2", "part": "0"})
     .execute())
    want = [{**r, "col2": "merged"} if r["col1"] in some else r for r in expected]
    want.append({"part": 0, "col1": 10_000, "col2": "new"})
    assert_rows(spark, path, want)


def test_merge_constraint_violation_leaves_table_unchanged(spark, table_path):
    from pyspark.sql.types import DoubleType, LongType

    from pydelta.tables import DeltaTable

    (DeltaTable.create(spark).location(table_path)
     .addColumn("id", LongType(), nullable=False).addColumn("v", DoubleType()).execute())
    spark.createDataFrame([(i, float(i)) for i in range(5)], "id long, v double").write.format("delta") \
        .mode("append").save(table_path)
    v = version(table_path)
    source = spark.createDataFrame([(None, 1.0), (2, 5.0)], "id long, v double")
    with pytest.raises(InvariantViolationError, match="NOT NULL"):
        (delta_table(spark, table_path).alias("t").merge(source.alias("s"), "t.id = s.id")
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    assert version(table_path) == v
    assert spark_rows(spark, table_path) == canon([{"id": i, "v": float(i)} for i in range(5)])


def test_merge_clause_rules(spark, table_path):
    make_table(spark, table_path, base_rows(10), files=1)
    source = spark.createDataFrame([{"id": 1, "p": 1, "v": 1.0, "s": "x"}], SCHEMA)
    builder = delta_table(spark, table_path).alias("t").merge(source.alias("s"), "t.id = s.id")
    with pytest.raises(DeltaAnalysisError, match="DELTA_MERGE_MISSING_WHEN"):
        builder.execute()
    with pytest.raises(DeltaAnalysisError, match="only the last MATCHED clause"):
        builder.whenMatchedDelete().whenMatchedUpdateAll(condition="s.v > 0").execute()
    with pytest.raises(DeltaAnalysisError, match="only the last NOT MATCHED clause"):
        builder.whenNotMatchedInsertAll().whenNotMatchedInsertAll(condition="s.v > 0").execute()
    with pytest.raises(DeltaAnalysisError, match="NOT MATCHED BY SOURCE"):
        builder.whenNotMatchedBySourceDelete(condition="s.v > 0").execute()  # no source row there
    with pytest.raises(DeltaAnalysisError, match="NOT MATCHED INSERT"):
        builder.whenNotMatchedInsert(values={"id": "s.id", "v": "t.v"}).execute()  # no target row there
    with pytest.raises(TypeError):
        builder.whenMatchedUpdate(set=["v"])
    with pytest.raises(ValueError):
        builder.whenNotMatchedInsert()
    assert version(table_path) == 0


def test_merge_writes_change_data(spark, table_path):
    rows = base_rows(40)
    make_table(spark, table_path, rows, partition_by=["p"], files=2,
               properties={"delta.enableChangeDataFeed": "true"})
    source_rows = [{"id": 5, "op": "upd"}, {"id": 6, "op": "del"}, {"id": 100, "op": "ins"}]
    source = spark.createDataFrame(source_rows, "id long, op string")
    (delta_table(spark, table_path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedDelete(condition="s.op = 'del'")
     .whenMatchedUpdate(set={"s": "'updated'"})
     .whenNotMatchedInsert(values={"id": "s.id", "p": "0", "s": "s.op"})
     .execute())
    old5 = next(r for r in rows if r["id"] == 5)
    old6 = next(r for r in rows if r["id"] == 6)
    new = {"id": 100, "p": 0, "v": None, "s": "ins"}
    expected = [{**r, "s": "updated"} if r["id"] == 5 else r for r in rows if r["id"] != 6] + [new]
    assert_rows(spark, table_path, expected)
    assert cdc_actions(table_path, 1)
    assert cdf_rows(table_path, 1) == canon([
        {**old5, "_change_type": "update_preimage"},
        {**old5, "s": "updated", "_change_type": "update_postimage"},
        {**old6, "_change_type": "delete"},
        {**new, "_change_type": "insert"},
    ])
    m = commit_info(table_path)["operationMetrics"]
    assert m["numTargetChangeFilesAdded"] == str(len(cdc_actions(table_path, 1)))

    # An insert-only merge needs no change files: the added files are the inserted rows.
    more = spark.createDataFrame([{"id": 200, "op": "x"}], "id long, op string")
    (delta_table(spark, table_path).alias("t").merge(more.alias("s"), "t.id = s.id")
     .whenNotMatchedInsert(values={"id": "s.id", "p": "2"}).execute())
    assert cdc_actions(table_path, 2) == []
    assert cdf_rows(table_path, 2) == canon([{"id": 200, "p": 2, "v": None, "s": None, "_change_type": "insert"}])


def test_merge_into_empty_table_and_append_only_table(spark, table_path):
    from pyspark.sql.types import DoubleType, LongType

    from pydelta.tables import DeltaTable

    (DeltaTable.create(spark).location(table_path).addColumn("id", LongType()).addColumn("v", DoubleType())
     .property("delta.appendOnly", "true").execute())
    source = spark.createDataFrame([(1, 1.0), (2, 2.0)], "id long, v double")
    dt = delta_table(spark, table_path).alias("t")
    dt.merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert_rows(spark, table_path, [{"id": 1, "v": 1.0}, {"id": 2, "v": 2.0}])
    v = version(table_path)
    update = spark.createDataFrame([(1, 5.0)], "id long, v double")
    with pytest.raises(DeltaAnalysisError, match="only allow appends"):
        dt.merge(update.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    assert version(table_path) == v
    assert_rows(spark, table_path, [{"id": 1, "v": 1.0}, {"id": 2, "v": 2.0}])


def test_merge_loses_to_concurrent_update_of_its_files(spark, table_path):
    from pydelta.errors import DeltaConcurrentModificationException
    from pydelta.spark.dml.merge import MergeClause, prepare_merge

    rows = base_rows(40)
    make_table(spark, table_path, rows, files=1)
    source = spark.createDataFrame([{"id": 3, "p": 3, "v": 0.0, "s": "m"}], SCHEMA).alias("s")
    prepared = prepare_merge(spark, pydelta.load_snapshot(table_path), source, "t.id = s.id",
                             [MergeClause("matched", "update", None, None, star=True)], alias="t")
    delta_table(spark, table_path).update("id = 4", {"s": "'concurrent'"})  # rewrites the same file
    with pytest.raises(DeltaConcurrentModificationException):
        prepared.commit()
    assert_rows(spark, table_path, [{**r, "s": "concurrent"} if r["id"] == 4 else r for r in rows],
                check_deltalake=False)


def test_merge_reads_only_the_files_its_target_side_conditions_allow(spark, table_path):
    """Target-only conjuncts of the condition (and, for matched-only merges, of the MATCHED
    conditions) skip files: a concurrent rewrite of a skipped partition does not conflict."""
    from pydelta.errors import DeltaConcurrentModificationException
    from pydelta.spark.dml.merge import MergeClause, prepare_merge

    rows = base_rows(40)
    make_table(spark, table_path, rows, partition_by=["p"], files=1)
    source = spark.createDataFrame([{"id": 4, "p": 0, "v": 0.0, "s": "m"}], SCHEMA).alias("s")
    update = [MergeClause("matched", "update", None, None, star=True)]
    prepared = prepare_merge(spark, pydelta.load_snapshot(table_path), source, "t.id = s.id AND t.p = 0", update,
                             alias="t")
    delta_table(spark, table_path).update("p = 1", {"s": "'concurrent'"})  # only files the merge skipped
    prepared.commit()
    prepared = prepare_merge(spark, pydelta.load_snapshot(table_path), source, "t.id = s.id",
                             [MergeClause("matched", "update", "t.p IN (0, 2)", None, star=True)], alias="t")
    delta_table(spark, table_path).update("p = 3", {"s": "'concurrent'"})
    prepared.commit()
    prepared = prepare_merge(spark, pydelta.load_snapshot(table_path), source, "t.id = s.id AND t.p = 0", update,
                             alias="t")
    delta_table(spark, table_path).update("p = 0 AND id = 8", {"s": "'concurrent'"})  # a file it read
    with pytest.raises(DeltaConcurrentModificationException):
        prepared.commit()
    expected = [{**r, "s": "concurrent"} if r["p"] in (1, 3) or r["id"] == 8 else r for r in rows]
    assert_rows(spark, table_path, [{**r, "v": 0.0, "s": "m"} if r["id"] == 4 else r for r in expected],
                check_deltalake=False)


@pytest.mark.parametrize("threshold", ["0", "1"])  # 0: search touched files (unique keys); 1: one pass
def test_merge_with_unique_source_keys_fast_paths(spark, tmp_path, threshold):
    path = str(tmp_path / "u")
    spark.range(0, 400, numPartitions=4).selectExpr("id", "id * 2 AS v").write.format("delta").save(path)
    source = spark.createDataFrame([(5, -1), (150, -1), (1000, 7), (None, 9)], "id long, v long")
    spark.conf.set("spark.pydelta.merge.onePassSourceRowsPerFile", threshold)
    try:
        table = pydelta.DeltaTable.forPath(spark, path)
        (table.alias("t").merge(source.alias("s"), "t.id = s.id")
         .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll().execute())
        got = {r.id: r.v for r in spark.read.format("delta").load(path).collect()}
        expected = {i: i * 2 for i in range(400)} | {5: -1, 150: -1, 1000: 7, None: 9}
        assert got == expected
        m = table.history(1).first().operationMetrics
        assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"], m["numSourceRows"]) == ("2", "2", "4")
        files_before = pydelta.load_snapshot(path, version=0).num_files
        rewritten = int(m["numTargetFilesRemoved"])
        assert rewritten == (files_before if threshold == "1" else 2)
        # duplicate keys in the source still fail as delta-spark does, whatever the path
        dup = spark.createDataFrame([(7, 1), (7, 2)], "id long, v long")
        with pytest.raises(DeltaError, match="DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"):
            table.alias("t").merge(dup.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"v": "s.v"}).execute()
    finally:
        spark.conf.unset("spark.pydelta.merge.onePassSourceRowsPerFile")


def test_merge_one_pass_finds_multiple_matches_from_its_row_counts(spark, tmp_path):
    """The one-pass rewrite runs without checking the source's keys first; when a target row
    met several source rows its row counts differ from the files' statistics, the written
    files are dropped and the merge starts over: the same errors and results as ever."""
    path = str(tmp_path / "m")
    spark.range(0, 40, numPartitions=2).selectExpr("id", "id * 2 AS v").write.format("delta").save(path)
    table = pydelta.DeltaTable.forPath(spark, path)
    spark.conf.set("spark.pydelta.merge.onePassSourceRowsPerFile", "1")
    try:
        files_before = set(pydelta.load_snapshot(path).files().column("path").to_pylist())
        dup = spark.createDataFrame([(7, 1), (7, 2), (8, 3)], "id long, v long")
        with pytest.raises(DeltaError, match="DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"):
            table.alias("t").merge(dup.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"v": "s.v"}).execute()
        assert version(path) == 0
        data_files = {p.name for p in (tmp_path / "m").glob("*.parquet")}
        assert data_files == files_before  # the discarded rewrite left nothing behind

        # id 7 matched twice, but no clause modifies it: copied once; id 8 updated
        (table.alias("t").merge(dup.alias("s"), "t.id = s.id")
         .whenMatchedUpdate(condition="s.v = 3", set={"v": "s.v"}).execute())
        got = sorted((r.id, r.v) for r in spark.read.format("delta").load(path).collect())
        assert got == sorted([(i, i * 2) for i in range(40) if i != 8] + [(8, 3)])

        # one unconditional delete is exempt (delta-spark): id 7 deleted once
        result = table.alias("t").merge(dup.alias("s"), "t.id = s.id").whenMatchedDelete().execute()
        assert result_of(result)["num_deleted_rows"] == 2
        assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [
            i for i in range(40) if i not in (7, 8)]
    finally:
        spark.conf.unset("spark.pydelta.merge.onePassSourceRowsPerFile")
