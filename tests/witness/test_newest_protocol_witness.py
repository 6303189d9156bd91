"""The newest protocol across clients (issue 43).

Version checksum files: delta-spark (in its own process) checks every checksum pydelta writes
against its own replay and builds its next one on pydelta's; pydelta agrees with the checksums
delta-spark writes; deltalake (whose kernel takes protocol, metadata and in-commit timestamps
from the latest checksum) reads pydelta's tables as pydelta does.

Materialized partition columns: each side writes into the other's table, both keep the
partition columns in the files, both read the same rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pydelta
from pydelta.log.checksum import checksum_mismatches, checksum_path, compute_checksum, derive_checksum, read_checksum
from pydelta.log.storage import LocalStorage
from tests.spark.test_materialize_partition_columns import PROPERTY, _check_files
from tests.witness._compare import commits, read, same_at_every_version, version
from tests.witness.delta_spark import WitnessError

pytestmark = [pytest.mark.spark, pytest.mark.witness]

# In the witness: delta-spark loads each version, says whether it found a checksum and checks it
# against its own state reconstruction (Snapshot.validateChecksum; a mismatch raises
# DELTA_TXN_LOG_FAILED_INTEGRITY, spark.databricks.delta.checksum.mismatch.fatal's default).
_VALIDATE = """
jvm = spark._jvm
log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, req["path"])
empty = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(jvm.java.util.HashMap())
defaults = [getattr(log, f"getSnapshotAt$default${i}")() for i in range(2, 5)]
out = {}
for v in req["versions"]:
    snap = log.getSnapshotAt(v, *defaults)
    out[str(v)] = {"found": bool(snap.checksumOpt().isDefined()), "valid": bool(snap.validateChecksum(empty))}
result = out
"""


def _table(spark, path: str) -> None:
    spark.sql(f"""CREATE TABLE delta.`{path}` (id BIGINT, part STRING, v STRING) USING delta PARTITIONED BY (part)
                  TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', 'delta.enableInCommitTimestamps' = 'true',
                                 'delta.enableChangeDataFeed' = 'true', 'delta.checkpointInterval' = '4')""")
    spark.range(0, 40, numPartitions=4).selectExpr("id", "CAST(id % 3 AS STRING) AS part", "CAST(id AS STRING) AS v") \
        .write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 5 = 0")  # deletion vectors
    spark.sql(f"UPDATE delta.`{path}` SET v = 'u' WHERE id < 6")
    source = spark.range(35, 45).selectExpr("id", "CAST(id % 3 AS STRING) AS part", "'m' AS v")
    from pydelta.tables import DeltaTable

    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('pydelta.test' = 'x')")


def test_delta_spark_validates_every_checksum_pydelta_writes(spark, delta_spark, tmp_path):
    path = str(tmp_path / "t")
    _table(spark, path)
    last = version(path)
    assert last == 6  # CREATE, append, DELETE, UPDATE, MERGE, OPTIMIZE, SET TBLPROPERTIES
    versions = list(range(last + 1))
    assert all(Path(checksum_path(path, v)).is_file() for v in versions)
    checked = delta_spark.exec(_VALIDATE, path=path, versions=versions)
    assert checked == {str(v): {"found": True, "valid": True} for v in versions}
    same_at_every_version(spark, delta_spark, path)

    # delta-spark commits on top, deriving its checksum from pydelta's; pydelta agrees with it.
    delta_spark.sql(f"INSERT INTO delta.`{path}` VALUES (100, '1', 'ds'), (101, '2', 'ds')")
    delta_spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 101")
    storage = LocalStorage()
    for v in (last + 1, last + 2):
        theirs = read_checksum(storage, path, v)
        assert theirs is not None, f"delta-spark wrote no checksum for version {v}"
        assert checksum_mismatches(theirs, compute_checksum(pydelta.load_snapshot(path, version=v))) == []
        actions = commits(path)[v]
        operation = next(a["commitInfo"]["operation"] for a in actions if "commitInfo" in a)
        ours = derive_checksum(read_checksum(storage, path, v - 1), actions, operation=operation)
        assert ours is not None and checksum_mismatches(theirs, ours) == []
    assert read(spark, path) == delta_spark.rows(path)


def test_delta_spark_refuses_a_wrong_checksum(spark, delta_spark, tmp_path):
    """The control for the test above: delta-spark does check, so a checksum pydelta got wrong
    would fail it."""
    path = str(tmp_path / "t")
    spark.range(10).write.format("delta").save(path)
    crc = Path(checksum_path(path, 0))
    body = json.loads(crc.read_text())
    body["tableSizeBytes"] += 1
    crc.write_text(json.dumps(body) + "\n")
    with pytest.raises(WitnessError) as e:
        delta_spark.exec(_VALIDATE, path=path, versions=[0])
    assert e.value.error_class == "DELTA_TXN_LOG_FAILED_INTEGRITY" or "DELTA_TXN_LOG_FAILED_INTEGRITY" in str(e.value)


def test_deltalake_reads_tables_with_pydelta_checksums(spark, tmp_path):
    import deltalake

    path = str(tmp_path / "t")
    _table(spark, path)
    table = deltalake.DeltaTable(path)
    assert table.version() == version(path)
    assert table.protocol().min_writer_version == pydelta.load_snapshot(path).protocol.min_writer_version
    ours = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    # delta-rs' SQL engine (its plain Arrow read refuses deletion vectors)
    import pyarrow as pa

    result = pa.table(deltalake.QueryBuilder().register("t", table).execute("SELECT id, part, v FROM t").read_all())
    theirs = sorted(zip(*[result.column(c).to_pylist() for c in ("id", "part", "v")], strict=True))
    assert ours == theirs


def test_materialized_partition_columns_both_ways(spark, delta_spark, tmp_path):
    ours = str(tmp_path / "ours")
    spark.sql(f"""CREATE TABLE delta.`{ours}` (id BIGINT, p STRING) USING delta PARTITIONED BY (p)
                  TBLPROPERTIES ('{PROPERTY}' = 'true')""")
    spark.sql(f"INSERT INTO delta.`{ours}` VALUES (1, 'a'), (2, 'b'), (3, NULL)")
    delta_spark.sql(f"INSERT INTO delta.`{ours}` VALUES (4, 'a'), (5, 'c')")  # delta-spark keeps them in too
    assert _check_files(ours, ["id"], ["p"]) == 5
    assert read(spark, ours) == delta_spark.rows(ours)

    theirs = str(tmp_path / "theirs")
    delta_spark.sql(f"""CREATE TABLE delta.`{theirs}` (id BIGINT, p STRING) USING delta PARTITIONED BY (p)
                        TBLPROPERTIES ('{PROPERTY}' = 'true')""")
    delta_spark.sql(f"INSERT INTO delta.`{theirs}` VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO delta.`{theirs}` VALUES (3, 'a'), (4, NULL)")
    spark.sql(f"UPDATE delta.`{theirs}` SET id = id + 10 WHERE p = 'b'")
    assert _check_files(theirs, ["id"], ["p"]) >= 3
    assert read(spark, theirs) == delta_spark.rows(theirs)
