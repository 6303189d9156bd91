"""Row tracking through Spark: enabling on a table with data backfills row IDs first; appends,
DELETE (DVs and copy-on-write), UPDATE, MERGE and OPTIMIZE keep every row's stable ID (materialized
columns for rewritten rows)."""

from __future__ import annotations

from itertools import pairwise

import pytest

import pydelta
from pydelta import DeltaTable

pytestmark = pytest.mark.spark


def _files(path: str) -> list[tuple]:
    files = pydelta.load_snapshot(path).files()
    return sorted(zip(files.column("path").to_pylist(), files.column("base_row_id").to_pylist(),
                      files.column("num_records").to_pylist(), strict=True),
                  key=lambda r: (r[1] is None, r[1] or 0, r[0]))


def _stable_ids(spark, path: str) -> dict[int, tuple[int, int]]:
    """id -> (stable row ID, stable row commit version), as a row-tracking reader reconstructs them."""
    from pydelta.spark.read.scan import ROW_ID_COL, ROW_VERSION_COL, build_dataframe

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
    assert spans[0][0] == 0 and all(a[1] <= b[0] for a, b in pairwise(spans))
    spark.range(300, 350).selectExpr("id", "CAST(id AS STRING) AS v").write.format("delta").mode("append").save(path)
    newest = _files(path)[-1]
    assert newest[1] >= spans[-1][1]  # above every earlier ID
    before = {p: base for p, base, _ in _files(path)}
    DeltaTable.forPath(spark, path).delete("id % 10 = 0")  # deletion vectors: files and IDs stay
    assert {p: base for p, base, _ in _files(path)} == before
    assert spark.read.format("delta").load(path).count() == 350 - 35
    # Rewrites keep stable row IDs (materialized columns): UPDATE (DVs), copy-on-write DELETE, OPTIMIZE.
    ids = _stable_ids(spark, path)
    DeltaTable.forPath(spark, path).update("id = 1", {"v": "'x'"})
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


def test_metadata_row_id_and_row_commit_version_on_reads(spark, tmp_path):
    path = str(tmp_path / "t")
    (spark.range(0, 40, numPartitions=2).selectExpr("id", "id * 2 AS v").write.format("delta")
     .option("delta.enableRowTracking", "true").option("delta.enableDeletionVectors", "true").save(path))
    spark.range(40, 50).selectExpr("id", "id * 2 AS v").write.format("delta").mode("append").save(path)
    DeltaTable.forPath(spark, path).update("id = 5", {"v": "-1"})  # DV + materialized ID for the new row
    DeltaTable.forPath(spark, path).delete("id = 6")
    expected = _stable_ids(spark, path)
    df = spark.read.format("delta").load(path)
    assert df.columns == ["id", "v"] and "_metadata" not in df.select("*").columns  # hidden
    # delta-spark's fields after Spark's own, in its order, none nullable
    tracked = [(f.name, f.dataType.simpleString(), f.nullable) for f in df.select("_metadata.*").schema][-4:]
    assert tracked == [("row_id", "bigint", False), ("base_row_id", "bigint", False),
                       ("default_row_commit_version", "bigint", False), ("row_commit_version", "bigint", False)]
    rows = df.select("id", "_metadata.row_id", "_metadata.row_commit_version").collect()
    assert {r[0]: (r[1], r[2]) for r in rows} == expected and len(rows) == 49
    # base_row_id / default_row_commit_version are the file's; file_path still names the real file.
    files = {pydelta.load_snapshot(path).absolute_path(p): (b, d) for p, b, d in zip(
        *[pydelta.load_snapshot(path).files().column(c).to_pylist() for c in
          ("path", "base_row_id", "default_row_commit_version")], strict=True)}
    meta = df.select("_metadata.file_path", "_metadata.base_row_id", "_metadata.default_row_commit_version",
                     "_metadata.row_index", "_metadata.row_id", "id").collect()
    from pydelta.spark.read.scan import spark_file_uri

    uris = {spark_file_uri(p): v for p, v in files.items()}
    for file_path, base, default_version, row_index, row_id, ident in meta:
        assert uris[file_path] == (base, default_version)
        if ident != 5:  # the updated row's ID is materialized, not base + index
            assert row_id == base + row_index
    # after a filter (which prunes files: column references of `df` stay valid) and a withColumn
    filtered = df.filter(df.id >= 40).withColumn("w", df.v + 1).select("id", "w", "_metadata.row_id")
    assert {r[0]: (r[1], r[2]) for r in filtered.collect()} == {
        k: (2 * k + 1, v[0]) for k, v in expected.items() if k >= 40}
    assert df.filter(df.id > 1000).select("_metadata.row_id").collect() == []  # every file pruned
    # a table without row tracking keeps Spark's plain _metadata
    plain = str(tmp_path / "plain")
    spark.range(3).write.format("delta").save(plain)
    with pytest.raises(Exception, match="row_id"):
        spark.read.format("delta").load(plain).select("_metadata.row_id").collect()


def test_drop_row_tracking_feature_through_sql(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta "
              "TBLPROPERTIES ('delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true')")
    spark.range(0, 100, numPartitions=2).selectExpr("id", "CAST(id AS STRING) AS v").write.format("delta") \
        .mode("append").save(path)
    DeltaTable.forPath(spark, path).update("id < 10", {"v": "'u'"})  # rewritten rows carry materialized IDs
    DeltaTable.forPath(spark, path).delete("id % 9 = 0")
    expected = sorted((r.id, r.v) for r in spark.read.format("delta").load(path).collect())
    spark.sql(f"ALTER TABLE delta.`{path}` DROP FEATURE rowTracking")
    snap = pydelta.load_snapshot(path)
    assert not snap.protocol.has_feature("rowTracking")
    assert all(base is None for _, base, _ in _files(path))
    assert not any("rowtracking" in k.lower() for k in snap.metadata.configuration)
    assert sorted((r.id, r.v) for r in spark.read.format("delta").load(path).collect()) == expected
    with pytest.raises(Exception, match="row_id"):
        spark.read.format("delta").load(path).select("_metadata.row_id").collect()
    import deltalake
    import pyarrow as pa

    rows = pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path)).execute(
        "SELECT id, v FROM t").read_all()).to_pylist()  # deltalake's SQL engine applies the DVs
    assert sorted((r["id"], r["v"]) for r in rows) == expected
    DeltaTable.forPath(spark, path).update("id = 1", {"v": "'again'"})  # still writable, no IDs assigned
    assert all(base is None for _, base, _ in _files(path))
    assert spark.read.format("delta").load(path).where("id = 1").first().v == "again"
