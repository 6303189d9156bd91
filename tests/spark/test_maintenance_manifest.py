"""DeltaTable.generate("symlink_format_manifest")."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pyarrow.parquet as pq
import pytest

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.spark.maintenance.manifest import ManifestGenerationError
from pydelta.tables import DeltaTable
from tests.spark.test_maintenance_support import delete_rows_with_dv, live_paths

pytestmark = pytest.mark.spark


def _manifests(path: str) -> dict[str, list[str]]:
    root = Path(path) / "_symlink_format_manifest"
    return {
        str(p.parent.relative_to(root)): p.read_text().splitlines()
        for p in sorted(root.rglob("manifest"))
    }


def _rows_via_manifests(path: str) -> list[int]:
    """What an external engine reading the manifests sees (data columns only)."""
    out = []
    for lines in _manifests(path).values():
        for uri in lines:
            assert uri.startswith("file:/")
            out.extend(pq.read_table(uri[len("file:"):]).column("id").to_pylist())
    return sorted(out)


def test_partitioned_manifests(spark, tmp_path: Path):
    path = str(tmp_path / "t")
    spark.range(0, 30).selectExpr("id", "cast(id % 3 as int) as p", "if(id % 2 = 0, 'a b', 'c') as q") \
        .repartition(2).write.format("delta").partitionBy("p", "q").save(path)
    table = DeltaTable.forPath(spark, path)
    table.generate("symlink_format_manifest")
    manifests = _manifests(path)
    assert set(manifests) == {f"p={p}/q={q}" for p in range(3) for q in ("a b", "c")}
    listed = {uri[len("file:"):] for lines in manifests.values() for uri in lines}
    assert listed == live_paths(path)
    for rel, lines in manifests.items():
        assert all(f"/{rel}/" in uri for uri in lines)
    assert _rows_via_manifests(path) == list(range(30))

    # partitions that disappear lose their manifest; mode names are case-insensitive
    spark.range(0, 4).selectExpr("id", "cast(1 as int) as p", "'c' as q").write.format("delta") \
        .mode("overwrite").save(path)
    table.generate("SYMLINK_FORMAT_MANIFEST")
    assert set(_manifests(path)) == {"p=1/q=c"}
    assert _rows_via_manifests(path) == list(range(4))
    assert not (Path(path) / "_symlink_format_manifest" / "p=0").exists()


def test_unpartitioned_and_empty_tables(spark, tmp_path: Path):
    path = str(tmp_path / "t")
    spark.range(0, 10).repartition(3).write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)
    table.generate("symlink_format_manifest")
    manifests = _manifests(path)
    assert list(manifests) == ["."] and len(manifests["."]) == 3
    assert _rows_via_manifests(path) == list(range(10))
    spark.range(0, 0).write.format("delta").mode("overwrite").save(path)
    table.generate("symlink_format_manifest")
    assert _manifests(path) == {".": []}


def test_bad_mode_and_refused_tables(spark, tmp_path: Path):
    path = str(tmp_path / "t")
    spark.range(0, 10).repartition(1).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(DeltaIllegalArgumentError, match="Specified mode 'full' is not supported"):
        table.generate("full")
    table.generate("symlink_format_manifest")  # DVs allowed by the protocol but none in use yet: fine
    rel = table.snapshot().files().column("path").to_pylist()[0]
    delete_rows_with_dv(path, rel, [1])
    with pytest.raises(ManifestGenerationError, match="deletion vectors"):
        table.generate("symlink_format_manifest")

    cm = str(tmp_path / "cm")
    spark.range(0, 3).write.format("delta").option("delta.columnMapping.mode", "name").save(cm)
    with pytest.raises(ManifestGenerationError, match="column mapping"):
        DeltaTable.forPath(spark, cm).generate("symlink_format_manifest")
    assert not (Path(cm) / "_symlink_format_manifest").exists()


def test_enabled_manifests_follow_every_commit(spark, tmp_path: Path):
    """delta.compatibility.symlinkFormatManifest.enabled: the post-commit hook keeps the manifests
    equal to the live files after writes, DML, OPTIMIZE and RESTORE (delta-spark's GenerateSymlinkManifest)."""
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, p INT) USING delta PARTITIONED BY (p) "
              "TBLPROPERTIES (delta.compatibility.symlinkFormatManifest.enabled = true)")
    assert _manifests(path) == {}  # no file action yet: no manifest
    spark.range(0, 20).selectExpr("id", "cast(id % 2 as int) as p").repartition(3) \
        .write.format("delta").mode("append").save(path)

    def listed() -> set[str]:
        return {uri[len("file:"):] for lines in _manifests(path).values() for uri in lines}

    assert set(_manifests(path)) == {"p=0", "p=1"} and listed() == live_paths(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE p = 1")
    assert set(_manifests(path)) == {"p=0"} and listed() == live_paths(path)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert listed() == live_paths(path) and len(listed()) == 1
    assert _rows_via_manifests(path) == list(range(0, 20, 2))
    DeltaTable.forPath(spark, path).restoreToVersion(1)
    assert set(_manifests(path)) == {"p=0", "p=1"} and listed() == live_paths(path)
    assert _rows_via_manifests(path) == list(range(20))
    from deltalake import DeltaTable as WitnessTable  # an independent reader's live files

    assert listed() == {unquote(u.removeprefix("file://")) for u in WitnessTable(path).file_uris()}


def test_a_table_without_the_property_gets_no_manifest(spark, tmp_path: Path):
    path = str(tmp_path / "t")
    spark.range(0, 5).write.format("delta").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")
    assert not (Path(path) / "_symlink_format_manifest").exists()


def test_a_failing_hook_leaves_its_commit_and_says_so(spark, tmp_path: Path):
    """Deletion vectors in use make manifests impossible: the DELETE's commit stands, and the error
    names the hook that failed after it (delta-spark's DELTA_POST_COMMIT_HOOK_FAILED)."""
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta TBLPROPERTIES "
              "(delta.compatibility.symlinkFormatManifest.enabled = true, delta.enableDeletionVectors = true)")
    spark.range(0, 10).coalesce(1).write.format("delta").mode("append").save(path)
    with pytest.raises(ManifestGenerationError, match=r"DELTA_POST_COMMIT_HOOK_FAILED.*version 2.*Generate Symlink"):
        DeltaTable.forPath(spark, path).delete("id = 3")
    rows = spark.read.format("delta").load(path).collect()
    assert sorted(r.id for r in rows) == [i for i in range(10) if i != 3]
    assert DeltaTable.forPath(spark, path).history(1).first().operation == "DELETE"
