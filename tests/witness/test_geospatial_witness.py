"""GEOMETRY / GEOGRAPHY against delta-spark 4.4.0 on Spark 4.2 (the witness process).

delta-spark gates geospatial behind its internal conf
``spark.databricks.delta.geo.preview.enabled`` (default false: DELTA_GEOSPATIAL_NOT_SUPPORTED
on create and on read); these tests switch it on in the witness. Both engines run the same
statements; the `_delta_log` bytes they leave (schemaString, protocol, stats) and the rows
each reads from the other's table must agree, and both refuse the same things.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pydelta.errors import DeltaAnalysisError
from pydelta.spark.base.pyspark_compat import pyspark_before
from tests.witness.delta_spark import WitnessError

# pydelta refuses geo columns before Spark 4.2 (tests/spark/test_spark_version_limits.py)
pytestmark = [pytest.mark.spark, pytest.mark.witness,
              pytest.mark.skipif(pyspark_before(4, 2), reason="geospatial columns need Spark 4.2 or newer")]

PREVIEW = "spark.databricks.delta.geo.preview.enabled"
P00 = "010100000000000000000000000000000000000000"
P11 = "0101000000000000000000F03F000000000000F03F"
P22 = "010100000000000000000000400000000000000040"

DDL = ("CREATE TABLE delta.`{p}` (id INT, g GEOMETRY(4326), h GEOGRAPHY(4326), z GEOMETRY(0), "
       "s STRUCT<inner: GEOMETRY(4326)>) USING DELTA")
ROWS = ("SELECT * FROM VALUES "
        f"(1, ST_GeomFromWKB(X'{P00}', 4326), ST_GeogFromWKB(X'{P11}'), ST_GeomFromWKB(X'{P22}', 0), "
        f"named_struct('inner', ST_GeomFromWKB(X'{P11}', 4326))), "
        "(2, NULL, NULL, NULL, NULL) AS v(id, g, h, z, s)")
READ = ("SELECT id, hex(ST_AsBinary(g)), hex(ST_AsBinary(h)), hex(ST_AsBinary(z)), ST_Srid(z), "
        "hex(ST_AsBinary(s.inner)) FROM delta.`{p}` ORDER BY id")


@pytest.fixture
def ds(delta_spark):
    delta_spark.exec(f"spark.conf.set('{PREVIEW}', 'true')")
    try:
        yield delta_spark
    finally:
        delta_spark.exec(f"spark.conf.unset('{PREVIEW}')")


def _log(path: str) -> dict[int, list[dict]]:
    return {int(p.stem): [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
            for p in sorted((Path(path) / "_delta_log").glob("*.json"))}


def _action(path: str, version: int, kind: str) -> dict:
    (found,) = [a[kind] for a in _log(path)[version] if kind in a]
    return found


def _protocol(path: str) -> dict:
    p = _action(path, 0, "protocol")
    return {k: sorted(v) if isinstance(v, list) else v for k, v in p.items()}


def _ours(spark, sql: str) -> list[list]:
    return [list(r) for r in spark.sql(sql).collect()]


def test_both_engines_write_the_same_log(spark, ds, tmp_path):
    ours, theirs = str(tmp_path / "pydelta"), str(tmp_path / "delta-spark")
    spark.sql(DDL.format(p=ours))
    spark.sql(ROWS).coalesce(1).write.format("delta").mode("append").save(ours)
    ds.sql(DDL.format(p=theirs), collect=False)
    ds.exec(f'spark.sql("""{ROWS}""").coalesce(1).write.format("delta").mode("append").save("{theirs}")')

    assert _action(ours, 0, "metaData")["schemaString"] == _action(theirs, 0, "metaData")["schemaString"]
    assert _protocol(ours) == _protocol(theirs) == {
        "minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["geospatial"],
        "writerFeatures": ["appendOnly", "geospatial", "invariants"]}
    # No min/max for the geo leaves (not SkippingEligibleDataType), nullCount for all.
    assert _action(ours, 1, "add")["stats"] == _action(theirs, 1, "add")["stats"] == (
        '{"numRecords":2,"minValues":{"id":1},"maxValues":{"id":2},'
        '"nullCount":{"id":0,"g":1,"h":1,"z":1,"s":{"inner":1}}}')


def test_each_engine_reads_the_others_geo_values(spark, ds, tmp_path):
    ours, theirs = str(tmp_path / "pydelta"), str(tmp_path / "delta-spark")
    expected = [[1, P00, P11, P22, 0, P11], [2, None, None, None, None, None]]
    spark.sql(DDL.format(p=ours))
    spark.sql(ROWS).write.format("delta").mode("append").save(ours)
    ds.sql(DDL.format(p=theirs), collect=False)
    ds.exec(f'spark.sql("""{ROWS}""").write.format("delta").mode("append").save("{theirs}")')
    for path in (ours, theirs):
        assert _ours(spark, READ.format(p=path)) == expected
        assert ds.sql(READ.format(p=path))["rows"] == expected

    # delta-spark changes pydelta's table; pydelta reads what it wrote, and the reverse.
    ds.sql(f"UPDATE delta.`{ours}` SET g = ST_GeomFromWKB(X'{P22}', 4326) WHERE id = 2", collect=False)
    spark.sql(f"UPDATE delta.`{theirs}` SET g = ST_GeomFromWKB(X'{P22}', 4326) WHERE id = 2")
    changed = [[1, P00, P11, P22, 0, P11], [2, P22, None, None, None, None]]
    for path in (ours, theirs):
        assert _ours(spark, READ.format(p=path)) == changed
        assert ds.sql(READ.format(p=path))["rows"] == changed


def test_delta_spark_gates_geo_behind_its_preview_conf(spark, delta_spark, tmp_path):
    """pydelta does not gate; delta-spark without the conf refuses to read pydelta's table."""
    path = str(tmp_path / "t")
    spark.sql(DDL.format(p=path))
    with pytest.raises(WitnessError) as e:
        delta_spark.sql(f"SELECT id FROM delta.`{path}`")
    assert e.value.error_class == "DELTA_GEOSPATIAL_NOT_SUPPORTED"


@pytest.mark.parametrize("statement,error_class", [
    ("CREATE TABLE delta.`{p}` (id INT, g GEOMETRY(ANY)) USING DELTA", "DELTA_GEOSPATIAL_SRID_NOT_SUPPORTED"),
    (("CREATE TABLE delta.`{p}` (g GEOMETRY(4326) DEFAULT NULL) USING DELTA "
      "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')"),
     "DELTA_OPERATION_NOT_SUPPORTED_FOR_DATATYPES"),
    ("CREATE TABLE delta.`{p}` (id INT, g GEOMETRY(4326)) USING DELTA CLUSTER BY (g)",
     "DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED"),
])
def test_both_engines_refuse_the_same_tables(spark, ds, tmp_path, statement, error_class):
    with pytest.raises(WitnessError) as theirs:
        ds.sql(statement.format(p=tmp_path / "theirs"), collect=False)
    assert theirs.value.error_class == error_class
    with pytest.raises(DeltaAnalysisError, match=error_class):
        spark.sql(statement.format(p=tmp_path / "ours"))


def test_both_engines_refuse_zorder_and_dropping_the_feature(spark, ds, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(DDL.format(p=path))
    for statement, error_class in (
        (f"OPTIMIZE delta.`{path}` ZORDER BY (g)", "DELTA_OPERATION_NOT_SUPPORTED_FOR_DATATYPES"),
        (f"ALTER TABLE delta.`{path}` DROP FEATURE geospatial", "DELTA_CANNOT_DROP_GEOSPATIAL_FEATURE"),
    ):
        with pytest.raises(WitnessError) as theirs:
            ds.sql(statement, collect=False)
        assert theirs.value.error_class == error_class
        with pytest.raises(DeltaAnalysisError, match=error_class):
            spark.sql(statement)
    assert sorted(_log(path)) == [0]  # neither engine committed anything
