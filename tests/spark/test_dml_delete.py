"""DeltaTable.delete: real Spark, real files, expected rows computed in plain Python.

The helpers at the top are shared with test_dml_update.py and test_dml_merge.py.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pydelta
from pydelta.errors import (
    ConcurrentAppendException,
    ConcurrentDeleteReadException,
    DeltaAnalysisError,
    DeltaError,
)

pytestmark = pytest.mark.spark


# ---- shared helpers -------------------------------------------------------------------------------

LAYOUTS = {
    "plain": dict(partition_by=None, mapping=False),
    "partitioned": dict(partition_by=["p"], mapping=False),
    "name_mapping": dict(partition_by=["p"], mapping=True),
}
COLUMNS = ["id", "p", "v", "s"]


def base_rows(n: int = 200) -> list[dict[str, Any]]:
    """id 0..n-1; p = id % 4; v = id * 1.5 (null every 7th); s = 's<id>' (null every 11th)."""
    return [
        {"id": i, "p": i % 4, "v": None if i % 7 == 3 else i * 1.5, "s": None if i % 11 == 5 else f"s{i}"}
        for i in range(n)
    ]


def make_table(spark, path: str, rows: list[dict[str, Any]], *, partition_by=None, mapping=False,
               files: int = 4, properties: dict[str, str] | None = None) -> str:
    """A table whose files hold disjoint id ranges (so data skipping can prune)."""
    df = spark.createDataFrame(rows, "id long, p int, v double, s string").repartitionByRange(files, "id")
    writer = df.write.format("delta").mode("overwrite")
    if mapping:
        writer = writer.option("delta.columnMapping.mode", "name")
    for key, value in (properties or {}).items():
        writer = writer.option(key, value)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(path)
    return path


def key(row: dict[str, Any]) -> tuple:
    def norm(v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        return v

    return tuple(sorted((k, norm(v)) for k, v in row.items()))


def canon(rows: list[dict[str, Any]]) -> list[tuple]:
    return sorted((key(r) for r in rows), key=repr)


def spark_rows(spark, path: str) -> list[tuple]:
    return canon([r.asDict(recursive=True) for r in spark.read.format("delta").load(path).collect()])


def deltalake_rows(path: str) -> list[tuple]:
    """The table as the PyPI `deltalake` package (delta-rs) reads it: an independent reader.

    `to_pyarrow_table()` silently returns nulls for column-mapped columns and
    ignores deletion vectors, so such tables go through deltalake's SQL engine.
    """
    import deltalake

    table = deltalake.DeltaTable(path)
    config = table.metadata().configuration
    mapped = config.get("delta.columnMapping.mode", "none") not in ("none", None)
    has_dvs = "deletionVectors" in (table.protocol().reader_features or [])
    data = None
    if not mapped and not has_dvs:
        try:
            data = table.to_pyarrow_table()
        except Exception:
            data = None
    if data is None:
        reader = deltalake.QueryBuilder().register("t", table).execute("select * from t")
        data = pa.table(reader.read_all())
    return canon(data.to_pylist())


def assert_rows(spark, path: str, expected: list[dict[str, Any]], *, check_deltalake: bool = True) -> None:
    want = canon(expected)
    assert spark_rows(spark, path) == want
    if check_deltalake:
        assert deltalake_rows(path) == want


def file_paths(path: str) -> set[str]:
    return set(pydelta.load_snapshot(path).files().column("path").to_pylist())


def version(path: str) -> int:
    return pydelta.load_snapshot(path).version


def commit_info(path: str, v: int | None = None) -> dict[str, Any]:
    v = version(path) if v is None else v
    with open(os.path.join(path, "_delta_log", f"{v:020d}.json")) as f:
        for line in f:
            action = json.loads(line)
            if "commitInfo" in action:
                return action["commitInfo"]
    raise AssertionError(f"no commitInfo in version {v}")


def history_operations(spark, path: str) -> list[str]:
    from pydelta.tables import DeltaTable

    rows = DeltaTable.forPath(spark, path).history().orderBy("version").collect()
    return [r["operation"] for r in rows]


def physical(path: str, column: str) -> str:
    field = pydelta.load_snapshot(path).schema.field(column)
    return field.metadata.get("delta.columnMapping.physicalName", column)


def files_with(path: str, column: str, predicate: Callable[[Any], bool]) -> set[str]:
    """Data files (log paths) holding a row whose `column` satisfies `predicate`, read with pyarrow."""
    snap = pydelta.load_snapshot(path)
    phys = physical(path, column)
    out = set()
    for rel in snap.files().column("path").to_pylist():
        values = pq.read_table(snap.absolute_path(rel), columns=[phys]).column(phys).to_pylist()
        if any(v is not None and predicate(v) for v in values):
            out.add(rel)
    return out


def cdf_rows(path: str, v: int) -> list[tuple]:
    """The change data of version `v` as delta-rs's CDF reader returns it (without commit columns)."""
    import deltalake

    reader = deltalake.DeltaTable(path).load_cdf(starting_version=v, ending_version=v)
    rows = pa.table(reader.read_all()).to_pylist()
    return canon([{k: val for k, val in r.items() if k not in ("_commit_version", "_commit_timestamp")}
                  for r in rows])


def cdc_actions(path: str, v: int) -> list[dict[str, Any]]:
    with open(os.path.join(path, "_delta_log", f"{v:020d}.json")) as f:
        return [a["cdc"] for a in map(json.loads, f) if "cdc" in a]


def rows_in_files(path: str, files: set[str], version: int | None = None) -> int:
    """Rows physically in these data files (no deletion vectors), counted by pyarrow."""
    snap = pydelta.load_snapshot(path, version=version)
    return sum(pq.ParquetFile(snap.absolute_path(f)).metadata.num_rows for f in files)


def delta_table(spark, path: str):
    from pydelta.tables import DeltaTable

    return DeltaTable.forPath(spark, path)


@pytest.fixture
def table_path(tmp_path) -> str:
    return str(tmp_path / "t")


# ---- delete -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_delete_data_predicate_rewrites_only_touched_files(spark, table_path, layout):
    rows = base_rows()
    make_table(spark, table_path, rows, **LAYOUTS[layout])
    before = file_paths(table_path)
    touched = files_with(table_path, "id", lambda i: i < 30 and i % 3 == 0)
    assert 0 < len(touched) < len(before)

    delta_table(spark, table_path).delete("id < 30 AND id % 3 = 0")

    expected = [r for r in rows if not (r["id"] < 30 and r["id"] % 3 == 0)]
    assert_rows(spark, table_path, expected)
    after = file_paths(table_path)
    assert before - after == touched  # exactly the files with matching rows were removed
    assert before & after == before - touched
    info = commit_info(table_path)
    assert info["operation"] == "DELETE"
    assert info["isBlindAppend"] is False
    assert info["readVersion"] == 0
    predicate = json.loads(info["operationParameters"]["predicate"])
    assert len(predicate) == 1 and "id" in predicate[0] and "30" in predicate[0]
    m = info["operationMetrics"]
    deleted = len(rows) - len(expected)
    assert m["numDeletedRows"] == str(deleted)
    assert m["numRemovedFiles"] == str(len(touched))
    assert int(m["numAddedFiles"]) >= 1
    assert m["numAddedChangeFiles"] == "0"
    assert int(m["numRemovedBytes"]) > 0 and int(m["numAddedBytes"]) > 0
    assert m["numCopiedRows"] == str(rows_in_files(table_path, touched, version=0) - deleted)
    for k in ("executionTimeMs", "scanTimeMs", "rewriteTimeMs", "numDeletionVectorsAdded",
              "numDeletionVectorsRemoved", "numDeletionVectorsUpdated"):
        assert k in m
    assert history_operations(spark, table_path) == ["WRITE", "DELETE"]


def test_delete_with_nulls_keeps_unknown_rows(spark, table_path):
    from pyspark.sql import functions as F

    rows = base_rows(120)
    make_table(spark, table_path, rows, files=2)
    delta_table(spark, table_path).delete(F.col("v") > 60.0)  # v is null on some rows: those stay
    expected = [r for r in rows if not (r["v"] is not None and r["v"] > 60.0)]
    assert_rows(spark, table_path, expected)
    m = commit_info(table_path)["operationMetrics"]
    assert m["numDeletedRows"] == str(len(rows) - len(expected))


@pytest.mark.parametrize("layout", ["partitioned", "name_mapping"])
def test_delete_partition_predicate_removes_whole_files(spark, table_path, layout):
    rows = base_rows()
    make_table(spark, table_path, rows, **LAYOUTS[layout])
    before = file_paths(table_path)
    in_p1 = {p for p in before if "p=1" in p} if layout == "partitioned" else None

    delta_table(spark, table_path).delete("p = 1")

    expected = [r for r in rows if r["p"] != 1]
    assert_rows(spark, table_path, expected)
    after = file_paths(table_path)
    assert after < before  # nothing rewritten, only removed
    if in_p1 is not None:
        assert before - after == in_p1
    m = commit_info(table_path)["operationMetrics"]
    assert m["numAddedFiles"] == "0"
    assert m["numCopiedRows"] == "0"
    assert m["numDeletedRows"] == str(len(rows) - len(expected))  # from file statistics
    assert m["numRemovedFiles"] == str(len(before - after))
    assert m["numAddedBytes"] == "0"


def test_delete_everything(spark, table_path):
    rows = base_rows(50)
    make_table(spark, table_path, rows, partition_by=["p"])
    n_files = len(file_paths(table_path))
    delta_table(spark, table_path).delete()
    assert_rows(spark, table_path, [])
    info = commit_info(table_path)
    assert info["operationParameters"]["predicate"] == "[]"
    assert info["operationMetrics"]["numRemovedFiles"] == str(n_files)
    assert info["operationMetrics"]["numDeletedRows"] == "50"
    assert file_paths(table_path) == set()


def test_delete_nothing_matches_commits_nothing(spark, table_path):
    rows = base_rows(40)
    make_table(spark, table_path, rows, files=2)
    before = file_paths(table_path)
    delta_table(spark, table_path).delete("id > 1000")
    assert version(table_path) == 0  # delta-spark 4.4 (commitIfNeeded) records no version either
    assert file_paths(table_path) == before
    assert_rows(spark, table_path, rows, check_deltalake=False)


def test_delete_nothing_matches_serializable_skips_commit(spark, table_path):
    rows = base_rows(40)
    make_table(spark, table_path, rows, files=2, properties={"delta.isolationLevel": "Serializable"})
    delta_table(spark, table_path).delete("id > 1000")
    assert version(table_path) == 0


def test_delete_with_table_alias_and_column_condition(spark, table_path):
    from pyspark.sql import functions as F

    rows = base_rows(80)
    make_table(spark, table_path, rows, partition_by=["p"], files=2)
    dt = delta_table(spark, table_path).alias("t")
    dt.delete("t.id >= 70 OR t.s = 's3'")
    dt.delete(F.col("t.p") == 2)
    expected = [r for r in rows if not (r["id"] >= 70 or r["s"] == "s3") and r["p"] != 2]
    assert_rows(spark, table_path, expected)


def test_delete_unknown_column_fails_and_commits_nothing(spark, table_path):
    make_table(spark, table_path, base_rows(20), files=1)
    with pytest.raises(DeltaAnalysisError):
        delta_table(spark, table_path).delete("nope = 1")
    with pytest.raises(DeltaAnalysisError):
        delta_table(spark, table_path).delete("id +")  # not even SQL
    with pytest.raises(TypeError):
        delta_table(spark, table_path).delete(42)
    assert version(table_path) == 0


def test_delete_writes_change_data(spark, table_path):
    rows = base_rows(80)
    make_table(spark, table_path, rows, partition_by=["p"], files=2,
               properties={"delta.enableChangeDataFeed": "true"})
    dt = delta_table(spark, table_path)
    dt.delete("id < 30 AND id % 3 = 0")
    deleted = [r for r in rows if r["id"] < 30 and r["id"] % 3 == 0]
    remaining = [r for r in rows if r not in deleted]
    assert_rows(spark, table_path, remaining)
    cdc = cdc_actions(table_path, 1)
    assert cdc and all(c["path"].startswith("_change_data/") and c["dataChange"] is False for c in cdc)
    assert all(os.path.exists(os.path.join(table_path, c["path"])) for c in cdc)
    assert commit_info(table_path)["operationMetrics"]["numAddedChangeFiles"] == str(len(cdc))
    assert cdf_rows(table_path, 1) == canon([{**r, "_change_type": "delete"} for r in deleted])

    # Whole-file deletes write no change files: readers take the removed files as deleted rows.
    dt.delete("p = 1")
    assert cdc_actions(table_path, 2) == []
    assert cdf_rows(table_path, 2) == canon([{**r, "_change_type": "delete"} for r in remaining if r["p"] == 1])


def _golden_expected(golden: Path, name: str) -> list[dict[str, Any]]:
    return pq.read_table(golden / "delta-spark" / name / "expected").to_pylist()


@pytest.mark.parametrize("name", ["dv-partitioned-with-checkpoint", "dv-with-columnmapping"])
def test_delete_on_table_with_deletion_vectors_grows_the_vectors(spark, golden, tmp_path, name):
    """delta-spark's DV tables (delta.enableDeletionVectors) get DV deletes: no file rewritten."""
    src = golden / "delta-spark" / name / "delta"
    path = str(tmp_path / name)
    shutil.copytree(src, path)
    expected = _golden_expected(golden, name)
    snap = pydelta.load_snapshot(path)
    assert snap.metadata.configuration.get("delta.enableDeletionVectors") == "true"

    delta_table(spark, path).delete("col1 % 3 = 0")

    want = [r for r in expected if r["col1"] % 3 != 0]
    assert_rows(spark, path, want)
    after = pydelta.load_snapshot(path)
    before_paths = set(snap.files().column("path").to_pylist())
    after_rows = after.files().to_pylist()
    assert {r["path"] for r in after_rows} <= before_paths  # nothing new written
    m = commit_info(path)["operationMetrics"]
    assert m["numAddedFiles"] == "0" and m["numDeletedRows"] == str(len(expected) - len(want))
    touched = int(m["numDeletionVectorsAdded"]) + int(m["numDeletionVectorsUpdated"])
    assert touched > 0 and sum(1 for r in after_rows if r["deletion_vector"]) >= touched


@pytest.mark.parametrize("name", ["dv-partitioned-with-checkpoint", "dv-with-columnmapping"])
def test_copy_on_write_delete_on_table_with_deletion_vectors(spark, golden, tmp_path, name):
    src = golden / "delta-spark" / name / "delta"
    path = str(tmp_path / name)
    shutil.copytree(src, path)
    expected = _golden_expected(golden, name)
    assert spark_rows(spark, path) == canon(expected)
    snap = pydelta.load_snapshot(path)
    with_dv = {r["path"] for r in snap.files().to_pylist() if r["deletion_vector"]}
    assert with_dv

    spark.conf.set("spark.databricks.delta.delete.deletionVectors.persistent", "false")
    try:
        delta_table(spark, path).delete("col1 % 3 = 0")
    finally:
        spark.conf.unset("spark.databricks.delta.delete.deletionVectors.persistent")

    want = [r for r in expected if r["col1"] % 3 != 0]
    assert_rows(spark, path, want)
    after = pydelta.load_snapshot(path)
    removed = {r["path"] for r in snap.files().to_pylist()} - set(after.files().column("path").to_pylist())
    assert removed  # rewritten files are gone, deletion vectors with them
    assert all(not r["deletion_vector"] for r in after.files().to_pylist() if r["path"] not in with_dv)
    tombstones = after.tombstones().to_pylist()
    dv_removes = [t for t in tombstones if t["path"] in removed & with_dv and t.get("deletionVector")]
    assert len(dv_removes) == len(removed & with_dv)
    m = commit_info(path)["operationMetrics"]
    assert m["numDeletionVectorsRemoved"] == str(len(removed & with_dv))
    assert m["numDeletedRows"] == str(len(expected) - len(want))


# ---- conflicts ----------------------------------------------------------------------------------------


def _append(spark, path: str, rows: list[dict[str, Any]]) -> None:
    spark.createDataFrame(rows, "id long, p int, v double, s string").write.format("delta").mode("append").save(path)


def test_delete_loses_to_concurrent_append_in_same_partition_serializable(spark, table_path):
    from pydelta.spark.dml.delete import prepare_delete

    rows = base_rows(80)
    make_table(spark, table_path, rows, partition_by=["p"], files=2,
               properties={"delta.isolationLevel": "Serializable"})
    snapshot = pydelta.load_snapshot(table_path)
    prepared = prepare_delete(spark, snapshot, "p = 1 AND id < 20")  # reads partition p=1
    written = [os.path.join(table_path, a["add"]["path"]) for a in prepared.actions if "add" in a]
    assert written and all(os.path.exists(w) for w in written)
    new = {"id": 9, "p": 1, "v": 1.0, "s": "new"}  # a row the delete would have deleted
    _append(spark, table_path, [new])  # wins version 1
    with pytest.raises(ConcurrentAppendException) as err:
        prepared.commit()
    assert "p=1" in str(err.value)
    assert not any(os.path.exists(w) for w in written)  # the loser's files are cleaned up
    assert version(table_path) == 1
    assert_rows(spark, table_path, [*rows, new], check_deltalake=False)


def test_delete_and_concurrent_append_elsewhere_both_commit(spark, table_path):
    from pydelta.spark.dml.delete import prepare_delete

    rows = base_rows(80)
    make_table(spark, table_path, rows, partition_by=["p"], files=2,
               properties={"delta.isolationLevel": "Serializable"})
    prepared = prepare_delete(spark, pydelta.load_snapshot(table_path), "p = 1 AND id < 40")
    extra = {"id": 1002, "p": 2, "v": 2.0, "s": "other"}
    _append(spark, table_path, [extra])  # another partition: no conflict
    assert prepared.commit() == 2
    expected = [r for r in rows if not (r["p"] == 1 and r["id"] < 40)] + [extra]
    assert_rows(spark, table_path, expected, check_deltalake=False)


def test_delete_and_blind_append_same_partition_write_serializable(spark, table_path):
    from pydelta.spark.dml.delete import prepare_delete

    rows = base_rows(80)
    make_table(spark, table_path, rows, partition_by=["p"], files=2)
    prepared = prepare_delete(spark, pydelta.load_snapshot(table_path), "p = 1 AND id < 40")
    extra = {"id": 5, "p": 1, "v": 2.0, "s": "blind"}  # would match the delete, but was appended after it read
    _append(spark, table_path, [extra])
    assert prepared.commit() == 2  # WriteSerializable: a blind append may be ordered after the delete
    expected = [r for r in rows if not (r["p"] == 1 and r["id"] < 40)] + [extra]
    assert_rows(spark, table_path, expected, check_deltalake=False)


def test_delete_loses_to_concurrent_delete_of_its_files(spark, table_path):
    from pydelta.spark.dml.delete import prepare_delete

    rows = base_rows(80)
    make_table(spark, table_path, rows, partition_by=["p"], files=2)
    prepared = prepare_delete(spark, pydelta.load_snapshot(table_path), "p = 1 AND id < 40")
    delta_table(spark, table_path).delete("p = 1")  # removes the files the first delete read
    with pytest.raises(ConcurrentDeleteReadException):
        prepared.commit()
    assert version(table_path) == 1
    assert issubclass(ConcurrentDeleteReadException, DeltaError)
