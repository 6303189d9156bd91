"""GEOMETRY / GEOGRAPHY columns end to end on Spark 4.3, as delta-spark 4.2+ handles them.

Witnesses: the `_delta_log` JSON bytes (schemaString as Spark's Scala ``DataType.json``
writes it, the protocol of delta-spark's ``GeoSpatialTableFeature``, stats as
``StatisticsCollection`` computes them: geo types are not ``SkippingEligibleDataType``, so
no minValues/maxValues, only nullCount) and the Parquet files read with pyarrow (GEOMETRY /
GEOGRAPHY logical types holding the WKB bytes). The `deltalake` package (1.6.6) cannot read
such tables ("Unsupported Delta table type: 'geometry(OGC:CRS84)'"), so it is no witness here.
Cases and WKB literals follow delta-spark's DeltaGeoSuite.scala (spark-4.2 shim).
"""

from __future__ import annotations

import glob
import json
import os

import pyarrow.parquet as pq
import pytest

from pydelta.errors import DeltaAnalysisError
from pydelta.log.checkpoint_writer import write_checkpoint
from pydelta.log.snapshot import load_snapshot
from pydelta.spark.base.pyspark_compat import pyspark_before

# Spark 4.0 has no geo types and 4.1 cannot write them to Parquet: pydelta refuses geo columns
# there with a clear error (tests/spark/test_spark_version_limits.py checks it on every version).
pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(pyspark_before(4, 2), reason="geospatial columns need Spark 4.2 or newer")]

# Little-endian WKB points, as in DeltaGeoSuite.scala.
P00 = "010100000000000000000000000000000000000000"
P11 = "0101000000000000000000F03F000000000000F03F"
P22 = "010100000000000000000000400000000000000040"

GEO_PROTOCOL = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["geospatial"],
                "writerFeatures": ["appendOnly", "geospatial", "invariants"]}


def _field(name: str, type_: str, nullable: bool = True) -> str:
    return f'{{"name":"{name}","type":"{type_}","nullable":{str(nullable).lower()},"metadata":{{}}}}'


def _schema(*fields: str) -> str:
    return '{"type":"struct","fields":[' + ",".join(fields) + "]}"


def _commit(path: str, version: int) -> list[dict]:
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        return [json.loads(line) for line in f]


def _one(actions: list[dict], kind: str) -> dict:
    (found,) = [a[kind] for a in actions if kind in a]
    return found


def _sorted_protocol(p: dict) -> dict:
    return {k: sorted(v) if isinstance(v, list) else v for k, v in p.items()}


def _data_files(path: str) -> list[str]:
    return sorted(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))


def _wkb_rows(spark, path: str, *cols: str, order: str = "id") -> list[tuple]:
    exprs = ["id"] + [f"hex(ST_AsBinary({c}))" for c in cols]
    return [tuple(r) for r in spark.read.format("delta").load(path).selectExpr(*exprs).orderBy(order).collect()]


def test_dataframe_write_logs_geometry_as_delta_spark_does(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.sql(
        f"SELECT id, ST_GeomFromWKB(CASE id WHEN 0 THEN X'{P00}' WHEN 1 THEN X'{P11}' END, 4326) AS g FROM range(3)"
    )
    df.coalesce(1).write.format("delta").save(path)

    actions = _commit(path, 0)
    assert _sorted_protocol(_one(actions, "protocol")) == GEO_PROTOCOL
    assert _one(actions, "metaData")["schemaString"] == _schema(
        _field("id", "long"), _field("g", "geometry(OGC:CRS84)")
    )
    add = _one(actions, "add")
    assert add["stats"] == '{"numRecords":3,"minValues":{"id":0},"maxValues":{"id":2},"nullCount":{"id":0,"g":1}}'

    (data,) = _data_files(path)
    column = pq.ParquetFile(data).schema.column(1)
    assert (column.name, column.physical_type, str(column.logical_type)) == ("g", "BYTE_ARRAY",
                                                                             "Geometry(crs=OGC:CRS84)")
    assert pq.read_table(data).column("g").to_pylist() == [bytes.fromhex(P00), bytes.fromhex(P11), None]

    assert _wkb_rows(spark, path, "g") == [(0, P00), (1, P11), (2, None)]
    srids = spark.read.format("delta").load(path).selectExpr("ST_Srid(g)").where("g IS NOT NULL").collect()
    assert [r[0] for r in srids] == [4326, 4326]


def test_sql_create_and_insert_geometry_and_geography(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, g GEOMETRY(4326), h GEOGRAPHY(4326), z GEOMETRY(0)) "
              "USING DELTA")
    v0 = _commit(path, 0)
    assert _sorted_protocol(_one(v0, "protocol")) == GEO_PROTOCOL
    assert _one(v0, "metaData")["schemaString"] == _schema(
        _field("id", "integer"), _field("g", "geometry(OGC:CRS84)"),
        _field("h", "geography(OGC:CRS84, SPHERICAL)"), _field("z", "geometry(SRID:0)"),
    )
    rows = spark.sql(
        "SELECT * FROM VALUES "
        f"(1, ST_GeomFromWKB(X'{P00}', 4326), ST_GeogFromWKB(X'{P11}'), ST_GeomFromWKB(X'{P22}', 0)), "
        f"(2, ST_GeomFromWKB(X'{P11}', 4326), ST_GeogFromWKB(X'{P22}'), NULL), "
        "(3, NULL, NULL, NULL) AS v(id, g, h, z)"
    )
    rows.coalesce(1).write.format("delta").mode("append").save(path)  # one file: exact stats
    add = _one(_commit(path, 1), "add")
    assert add["stats"] == ('{"numRecords":3,"minValues":{"id":1},"maxValues":{"id":3},'
                            '"nullCount":{"id":0,"g":1,"h":1,"z":2}}')

    (data,) = _data_files(path)
    schema = pq.ParquetFile(data).schema
    assert [str(schema.column(i).logical_type) for i in range(1, 4)] == [
        "Geometry(crs=OGC:CRS84)", "Geography(crs=OGC:CRS84, algorithm=spherical)", "Geometry(crs=SRID:0)"
    ]
    table = pq.read_table(data)
    assert table.column("h").to_pylist() == [bytes.fromhex(P11), bytes.fromhex(P22), None]
    assert _wkb_rows(spark, path, "g", "h", "z") == [(1, P00, P11, P22), (2, P11, P22, None),
                                                     (3, None, None, None)]


def test_nested_geo_columns(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, s STRUCT<inner: GEOMETRY(4326)>, "
              "xs ARRAY<GEOMETRY(4326)>, m MAP<STRING, GEOGRAPHY(4326)>) USING DELTA")
    assert _one(_commit(path, 0), "metaData")["schemaString"] == _schema(
        _field("id", "integer"),
        '{"name":"s","type":{"type":"struct","fields":[' + _field("inner", "geometry(OGC:CRS84)") + ']},'
        '"nullable":true,"metadata":{}}',
        '{"name":"xs","type":{"type":"array","elementType":"geometry(OGC:CRS84)","containsNull":true},'
        '"nullable":true,"metadata":{}}',
        '{"name":"m","type":{"type":"map","keyType":"string","valueType":"geography(OGC:CRS84, SPHERICAL)",'
        '"valueContainsNull":true},"nullable":true,"metadata":{}}',
    )
    assert _sorted_protocol(_one(_commit(path, 0), "protocol")) == GEO_PROTOCOL
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, named_struct('inner', ST_GeomFromWKB(X'{P11}', 4326)), "
              f"array(ST_GeomFromWKB(X'{P00}', 4326), ST_GeomFromWKB(X'{P11}', 4326)), "
              f"map('a', ST_GeogFromWKB(X'{P22}')))")
    add = _one(_commit(path, 1), "add")
    assert add["stats"] == ('{"numRecords":1,"minValues":{"id":1},"maxValues":{"id":1},'
                            '"nullCount":{"id":0,"s":{"inner":0},"xs":0,"m":0}}')
    (data,) = _data_files(path)
    row = pq.read_table(data).to_pylist()[0]
    assert row["s"] == {"inner": bytes.fromhex(P11)}
    assert row["xs"] == [bytes.fromhex(P00), bytes.fromhex(P11)]
    assert row["m"] == [("a", bytes.fromhex(P22))]
    got = spark.read.format("delta").load(path).selectExpr(
        "hex(ST_AsBinary(s.inner))", "transform(xs, x -> hex(ST_AsBinary(x)))", "hex(ST_AsBinary(m['a']))"
    ).collect()
    assert [tuple(r) for r in got] == [(P11, [P00, P11], P22)]


def test_data_skipping_on_other_columns_of_a_geo_table(spark, tmp_path):
    path = str(tmp_path / "t")
    for lo, wkb in ((0, None), (10, P11)):
        g = f"ST_GeomFromWKB(X'{wkb}', 4326)" if wkb else "CAST(NULL AS GEOMETRY(4326))"
        spark.sql(f"SELECT id, {g} AS g FROM range({lo}, {lo + 5})").coalesce(1).write.format("delta") \
            .mode("append").save(path)
    stats = [json.loads(_one(_commit(path, v), "add")["stats"]) for v in (0, 1)]
    assert [s["nullCount"] for s in stats] == [{"id": 0, "g": 5}, {"id": 0, "g": 0}]
    assert all("g" not in s["minValues"] and "g" not in s["maxValues"] for s in stats)

    df = spark.read.format("delta").load(path)
    assert len(df.inputFiles()) == 2
    one = df.where("id = 12")
    assert len(one.inputFiles()) == 1
    assert _wkb_rows(spark, path, "g") == [(i, None) for i in range(5)] + [(i, P11) for i in range(10, 15)]
    assert [tuple(r) for r in one.selectExpr("id", "hex(ST_AsBinary(g))").collect()] == [(12, P11)]
    # On the geo column only nullCount can skip (IS [NOT] NULL), as in delta-spark.
    nulls, values = df.where("g IS NULL"), df.where("g IS NOT NULL")
    assert (len(nulls.inputFiles()), len(values.inputFiles())) == (1, 1)
    assert sorted(r.id for r in nulls.select("id").collect()) == list(range(5))
    assert sorted(r.id for r in values.select("id").collect()) == list(range(10, 15))
    srid = df.where("ST_Srid(g) = 4326")
    assert (len(srid.inputFiles()), srid.count()) == (2, 5)


def test_update_delete_merge_rewrite_geo_values(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, g GEOMETRY(4326)) USING DELTA")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, ST_GeomFromWKB(X'{P00}', 4326)), "
              f"(2, ST_GeomFromWKB(X'{P11}', 4326)), (3, ST_GeomFromWKB(X'{P22}', 4326))")
    spark.sql(f"UPDATE delta.`{path}` SET g = ST_GeomFromWKB(X'{P22}', 4326) WHERE id = 1")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")
    spark.sql(f"MERGE INTO delta.`{path}` t USING (SELECT 3 AS id, ST_GeomFromWKB(X'{P00}', 4326) AS g "
              f"UNION ALL SELECT 4, ST_GeomFromWKB(X'{P11}', 4326)) s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert _wkb_rows(spark, path, "g") == [(1, P22), (3, P00), (4, P11)]
    # The rewritten files, read with pyarrow, hold exactly the table's rows.
    snapshot = load_snapshot(path)
    live = [os.path.join(path, p) for p in snapshot.files().column("path").to_pylist()]
    rows = sorted((r["id"], r["g"].hex().upper()) for f in live for r in pq.read_table(f).to_pylist())
    assert rows == [(1, P22), (3, P00), (4, P11)]
    for f in live:
        assert str(pq.ParquetFile(f).schema.column(1).logical_type) == "Geometry(crs=OGC:CRS84)"


def test_checkpoint_stats_struct_has_no_geo_bounds(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, g GEOMETRY(4326)) USING DELTA "
              "TBLPROPERTIES ('delta.checkpoint.writeStatsAsStruct' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, ST_GeomFromWKB(X'{P00}', 4326)), (2, NULL)")
    write_checkpoint(load_snapshot(path))
    checkpoint = pq.read_table(os.path.join(path, "_delta_log", f"{1:020d}.checkpoint.parquet"))
    stats_type = checkpoint.schema.field("add").type.field("stats_parsed").type
    assert str(stats_type.field("minValues").type) == "struct<id: int32>"
    assert str(stats_type.field("nullCount").type) == "struct<id: int64, g: int64>"
    adds = [a for a in checkpoint.column("add").to_pylist() if a]
    parsed = sorted((a["stats_parsed"]["minValues"]["id"], a["stats_parsed"]["nullCount"]["g"]) for a in adds)
    assert parsed == sorted((json.loads(a["stats"])["minValues"]["id"], json.loads(a["stats"])["nullCount"]["g"])
                            for a in adds)
    assert sum(g for _, g in parsed) == 1
    assert spark.read.format("delta").load(path).count() == 2


def test_delta_kernel_spelling_is_read_and_rewritten_as_spark_writes_it(spark, tmp_path):
    """delta-kernel writes ``geography(OGC:CRS84, spherical)``; Spark reads it and writes ``SPHERICAL``."""
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, h GEOGRAPHY(4326)) USING DELTA")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, ST_GeogFromWKB(X'{P11}'))")
    first = os.path.join(path, "_delta_log", f"{0:020d}.json")
    with open(first) as f:
        text = f.read()
    assert "geography(OGC:CRS84, SPHERICAL)" in text
    with open(first, "w") as f:
        f.write(text.replace("geography(OGC:CRS84, SPHERICAL)", "geography(OGC:CRS84, spherical)"))
    for name in os.listdir(os.path.join(path, "_delta_log")):  # as delta-kernel left them: no checksums
        if name.endswith(".crc"):
            os.remove(os.path.join(path, "_delta_log", name))
    assert _wkb_rows(spark, path, "h") == [(1, P11)]
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('k' = 'v')")
    assert _one(_commit(path, 2), "metaData")["schemaString"] == _schema(
        _field("id", "integer"), _field("h", "geography(OGC:CRS84, SPHERICAL)")
    )


def test_mixed_srid_partitioning_and_defaults_are_refused(spark, tmp_path):
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_GEOSPATIAL_SRID_NOT_SUPPORTED.*srid: -1"):
        spark.sql(f"CREATE TABLE delta.`{tmp_path}/a` (id INT, g GEOMETRY(ANY)) USING DELTA")
    with pytest.raises(DeltaAnalysisError, match="DELTA_INVALID_PARTITION_COLUMN_TYPE"):
        spark.sql(f"CREATE TABLE delta.`{tmp_path}/b` (id INT, g GEOMETRY(4326)) USING DELTA PARTITIONED BY (g)")
    with pytest.raises(DeltaAnalysisError, match="DELTA_INVALID_PARTITION_COLUMN_TYPE"):
        spark.sql(f"SELECT 1 AS id, ST_GeomFromWKB(X'{P00}', 4326) AS g").write.format("delta") \
            .partitionBy("g").save(f"{tmp_path}/c")
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_OPERATION_NOT_SUPPORTED_FOR_DATATYPES\] COLUMN DEFAULT"):
        spark.sql(f"CREATE TABLE delta.`{tmp_path}/d` (g GEOMETRY(4326) DEFAULT NULL) USING DELTA "
                  "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')")
    with pytest.raises(DeltaAnalysisError, match="DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED"):
        spark.sql(f"CREATE TABLE delta.`{tmp_path}/e` (id INT, g GEOMETRY(4326)) USING DELTA CLUSTER BY (g)")
    for name in "abcde":
        assert not os.path.exists(os.path.join(tmp_path, name, "_delta_log", f"{0:020d}.json"))


def test_zorder_and_convert_refuse_geo_columns(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"SELECT id, ST_GeomFromWKB(X'{P00}', 4326) AS g FROM range(2)").write.format("delta").save(path)
    with pytest.raises(DeltaAnalysisError, match=r"Z-ORDER is not supported for data types: \[g: geometry"):
        spark.sql(f"OPTIMIZE delta.`{path}` ZORDER BY (g)")
    parquet = str(tmp_path / "pq")
    spark.sql(f"SELECT id, ST_GeomFromWKB(X'{P00}', 4326) AS g FROM range(2)").write.parquet(parquet)
    with pytest.raises(DeltaAnalysisError, match=r"CONVERT TO DELTA is not supported for data types: \[g: geometry"):
        spark.sql(f"CONVERT TO DELTA parquet.`{parquet}`")
    assert not os.path.exists(os.path.join(parquet, "_delta_log", f"{0:020d}.json"))


def test_drop_feature_only_after_the_geo_columns_are_gone(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, s STRUCT<inner: GEOMETRY(4326)>) USING DELTA "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_CANNOT_DROP_GEOSPATIAL_FEATURE.*types: s and try again"):
        spark.sql(f"ALTER TABLE delta.`{path}` DROP FEATURE geospatial")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN s")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP FEATURE geospatial")
    protocol = load_snapshot(path).protocol
    assert "geospatial" not in (protocol.reader_features or ()) and "geospatial" not in (protocol.writer_features or ())
    assert spark.read.format("delta").load(path).columns == ["id"]


def test_streaming_source_and_sink_carry_geo_values(spark, tmp_path):
    """The streaming source reads files with pyarrow and hands Spark PySpark's Arrow form of the
    types (struct<srid, wkb>); nulls, nested and non-default SRIDs must survive."""
    source, out = str(tmp_path / "src"), str(tmp_path / "out")
    spark.sql(f"CREATE TABLE delta.`{source}` (id INT, g GEOMETRY(0), s STRUCT<h: GEOGRAPHY(4326)>, "
              "xs ARRAY<GEOMETRY(4326)>) USING DELTA")
    spark.sql(f"INSERT INTO delta.`{source}` VALUES "
              f"(1, ST_GeomFromWKB(X'{P11}', 0), named_struct('h', ST_GeogFromWKB(X'{P22}')), "
              f"array(ST_GeomFromWKB(X'{P00}', 4326), NULL)), (2, NULL, named_struct('h', NULL), NULL)")
    query = (spark.readStream.format("delta").load(source).writeStream.format("delta")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(out))
    query.awaitTermination()
    assert _one(_commit(out, 0), "metaData")["schemaString"] == _one(_commit(source, 0), "metaData")["schemaString"]
    got = spark.read.format("delta").load(out).selectExpr(
        "id", "hex(ST_AsBinary(g))", "ST_Srid(g)", "hex(ST_AsBinary(s.h))", "transform(xs, x -> hex(ST_AsBinary(x)))"
    ).orderBy("id").collect()
    assert [tuple(r) for r in got] == [(1, P11, 0, P22, [P00, None]), (2, None, None, None, None)]
