"""Row tracking through Spark: enabling on a table with data backfills row IDs first; appends,
DELETE (DVs and copy-on-write), UPDATE, MERGE and OPTIMIZE keep every row's stable ID (materialized
columns for rewritten rows)."""

from __future__ import annotations

import pytest

import pydelta
from pydelta import DeltaTable, errors

pytestmark = pytest.mark.spark


def _files(path: str) -> list[tuple]:
    files = pydelta.load_snapshot(path).files()
    return sorted(zip(files.column("path").to_pylist(), files.column("base_row_id").to_pylist(),
                      files.column("num_records").to_pylist()), key=lambda r: (r[1] is None, r[1] or 0, r[0]))


def _stable_ids(spark, path: str) -> dict[int, tuple[int, int]]:
    """id -> (stable row ID, stable row commit version), as a row-tracking reader reconstructs them."""
    from pydelta.spark.read import ROW_ID_COL, ROW_VERSION_COL, build_dataframe

    snap = pydelta.load_snapshot(path)
    df = build_dataframe(spark, snap, snap.files(), row_ids=True)
    rows = df.select("id", ROW_ID_COL, ROW_VERSION_COL).collect()
    out = {r[0]: (r[1], r[2]) for r in rows}
    assert len({v[0] for v in out.values()}) == len(out)  # stable IDs are unique
    return out


def test_enable_on_existing_table_backfills_then_dml(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(0, 300, numPartitions=3).selectExpr("id", "CAST(id AS STRING) AS v").write.format("delta").save(path)
    assert all(base is None for _, base, _ in _files(path))
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableRowTracking' = 'true', "
              "'delta.enableDeletionVectors' = 'true')")
    ops = [r.operation for r in DeltaTable.forPath(spark, path).history().orderBy("version").collect()]
    assert ops[-3:] == ["UPGRADE PROTOCOL", "ROW TRACKING BACKFILL", "SET TBLPROPERTIES"]
    files = _files(path)
    spans = [(base, base + n) for _, base, n in files]
    assert spans[0][0] == 0 and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    spark.range(300, 350).selectExpr("id", "CAST(id AS STRING) AS v").write.format("delta").mode("append").save(path)
    newest = _files(path)[-1]
    assert newest[1] >= spans[-1][1]  # above every earlier ID
    before = {p: base for p, base, _ in _files(path)}
    DeltaTable.forPath(spark, path).delete("id % 10 = 0")  # deletion vectors: files and IDs stay
    assert {p: base for p, base, _ in _files(path)} == before
    assert spark.read.format("delta").load(path).count() == 350 - 35
    # Rewrites keep stable row IDs (materialized columns): UPDATE (DVs), copy-on-write DELETE, OPTIMIZE.
    ids = _stable_ids(spark, path)
    version = DeltaTable.forPath(spark, path).update("id = 1", {"v": "'x'"}) or pydelta.load_snapshot(path).version
    after = _stable_ids(spark, path)
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in ids.items()}
    assert after[1][1] == pydelta.load_snapshot(path).version and all(
        after[k][1] == ids[k][1] for k in ids if k != 1)
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')")
    DeltaTable.forPath(spark, path).delete("id = 2")  # copy-on-write now
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert pydelta.load_snapshot(path).num_files == 1
    final = _stable_ids(spark, path)
    assert final == {k: v for k, v in after.items() if k != 2}
    # MERGE: matched rows keep their ID and take the new version; copied rows keep both; inserts are new.
    source = spark.createDataFrame([(3, "three"), (1000, "new")], "id BIGINT, v STRING")
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll().execute())
    merged = _stable_ids(spark, path)
    merge_version = pydelta.load_snapshot(path).version
    assert merged[3] == (final[3][0], merge_version)
    assert all(merged[k] == final[k] for k in final if k != 3)
    assert merged[1000][0] not in {v[0] for v in final.values()} and merged[1000][1] == merge_version
    import deltalake

    import pyarrow as pa

    count = pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path)).execute(
        "SELECT count(*) AS n FROM t").read_all()).column("n")[0].as_py()
    assert count == 315 - 1 + 1  # deltalake's SQL engine applies the deletion vectors
