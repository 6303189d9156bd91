"""IcebergCompatV1/V2 tables written by pydelta on Spark: enabled as delta-spark enables them,
data files as Iceberg needs them (partition columns inside, field ids, numRecords), and what
the compatibility forbids refused with a clear error, the table left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import pydelta
from pydelta import errors
from pydelta.protocol.iceberg_compat import ATOMIC_CONVERSION_KEY, COMPAT_VERSION_TAG

pytestmark = pytest.mark.spark


def _adds(path: str) -> list[dict]:
    out = []
    for f in sorted((Path(path) / "_delta_log").glob("*.json")):
        out += [json.loads(line)["add"] for line in f.read_text().splitlines() if '"add"' in line[:8]]
    return out


def _field_ids(schema) -> dict[str, int]:
    return {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in schema if f.metadata}


def test_compat_v2_table_as_iceberg_needs_it(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"""CREATE TABLE delta.`{path}` (id BIGINT, name STRING, ts TIMESTAMP, p STRING) USING delta
                  PARTITIONED BY (p) TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'true')""")
    snap = pydelta.load_snapshot(path)
    assert {"columnMapping", "icebergCompatV2"} <= set(snap.protocol.effective_writer_features)
    conf = snap.metadata.configuration
    assert conf["delta.columnMapping.mode"] == "name" and conf[ATOMIC_CONVERSION_KEY] == "true"
    ids = {f.name: f.metadata["delta.columnMapping.id"] for f in snap.schema.fields}
    physical = {f.name: f.metadata["delta.columnMapping.physicalName"] for f in snap.schema.fields}

    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', TIMESTAMP'2024-01-01 00:00:00', 'x'), "
              "(2, 'b', NULL, 'y'), (3, NULL, NULL, 'x')")
    spark.sql(f"UPDATE delta.`{path}` SET name = 'u' WHERE id = 3")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")
    adds = _adds(path)
    assert adds
    for add in adds:
        assert add["tags"] == {COMPAT_VERSION_TAG: "2"}
        assert json.loads(add["stats"])["numRecords"] >= 1
        schema = pq.read_schema(Path(path) / add["path"])
        # every column in the file, the partition column after the data columns, each with its id
        assert schema.names == [physical[c] for c in ("id", "name", "ts", "p")]
        assert _field_ids(schema) == {physical[c]: ids[c] for c in ids}
        assert str(schema.field(physical["ts"]).type) == "timestamp[us, tz=UTC]"  # int64, not INT96
    assert "deletionVector" not in json.dumps(adds)  # no DVs: the table cannot have them
    rows = spark.sql(f"SELECT id, name, p FROM delta.`{path}` ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(1, "a", "x"), (3, "u", "x")]


def test_what_the_compatibility_forbids_is_refused(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta "
              "TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1)")
    before = pydelta.load_snapshot(path).version
    with pytest.raises(errors.IcebergCompatViolationError) as e:
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    assert e.value.error_class == "DELTA_ICEBERG_COMPAT_VIOLATION.DELETION_VECTORS_SHOULD_BE_DISABLED"
    with pytest.raises(errors.IcebergCompatViolationError, match="VERSION_MUTUAL_EXCLUSIVE"):
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableIcebergCompatV1' = 'true')")
    with pytest.raises(errors.IcebergCompatViolationError, match="UNSUPPORTED_DATA_TYPE"):
        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (v VARIANT)")
    # array and map columns need element ids in the files, which Spark cannot write: a clear refusal
    spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (tags ARRAY<STRING>)")
    with pytest.raises(errors.DeltaNotImplementedError, match=r"array or map columns \(tags\)"):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (2, array('a'))")
    after = pydelta.load_snapshot(path)
    assert after.version == before + 1  # only the ADD COLUMNS landed
    assert spark.sql(f"SELECT count(*) FROM delta.`{path}`").first()[0] == 1

    # an existing table without column mapping must set it itself
    plain = str(tmp_path / "plain")
    spark.range(2).write.format("delta").save(plain)
    with pytest.raises(errors.IcebergCompatViolationError, match="WRONG_REQUIRED_TABLE_PROPERTY"):
        spark.sql(f"ALTER TABLE delta.`{plain}` SET TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'true')")
    assert pydelta.load_snapshot(plain).version == 0


def test_compat_v1_with_column_mapping_given(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).selectExpr("id", "CAST(id AS STRING) AS s").write.format("delta") \
        .option("delta.enableIcebergCompatV1", "true").option("delta.columnMapping.mode", "id").save(path)
    snap = pydelta.load_snapshot(path)
    assert "icebergCompatV1" in snap.protocol.effective_writer_features
    assert snap.metadata.configuration["delta.columnMapping.mode"] == "id"
    assert all("tags" not in a for a in _adds(path))  # delta-spark tags files from V2 on
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [0, 1, 2]
