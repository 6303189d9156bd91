"""Delta reads hand Spark the schema delta-spark does: Delta's internal field metadata removed,
the user's kept.

The witness is delta-spark's source: every read schema (DeltaLog.buildHadoopFsRelationWithFileIndex,
DeltaTableV2.schema, DeltaDataSource.sourceSchema, DeltaSource, CDCReaderBase) goes through
DeltaTableUtils.removeInternalWriterMetadata (ColumnWithDefaultExprUtils.removeDefaultExpressions:
`delta.generationExpression` and the four `delta.identity.*` keys of top-level fields; the leaked
SPARK_INTERNAL_METADATA_KEYS) then removeInternalDeltaMetadata (DeltaColumnMapping.dropColumnMappingMetadata
and TypeWideningMetadata.removeTypeWideningMetadata, at any depth). `comment`, `CURRENT_DEFAULT`,
`delta.invariants` and other keys stay. The expected metadata below is written out from those rules;
each test first checks in the _delta_log JSON that the table does hold the internal keys.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from pydelta import DeltaTable
from tests.golden_paths import DELTA_RS

pytestmark = pytest.mark.spark

CDF_FIELDS = [
    {"name": "_change_type", "type": "string", "nullable": True, "metadata": {}},
    {"name": "_commit_version", "type": "long", "nullable": True, "metadata": {}},
    {"name": "_commit_timestamp", "type": "timestamp", "nullable": True, "metadata": {}},
]


def _field(name: str, type_: Any, metadata: dict | None = None) -> dict:
    return {"name": name, "type": type_, "nullable": True, "metadata": metadata or {}}


def _log_schema(path: str) -> str:
    """The newest schemaString in the table's JSON commits (the log's own bytes)."""
    log = os.path.join(path, "_delta_log")
    schema = None
    for name in sorted(n for n in os.listdir(log) if n.endswith(".json")):
        with open(os.path.join(log, name)) as f:
            for line in f:
                action = json.loads(line)
                if "metaData" in action:
                    schema = action["metaData"]["schemaString"]
    assert schema is not None
    return schema


def _fields(df: Any) -> list[dict]:
    return df.schema.jsonValue()["fields"]


# ---- a column-mapped table with every kind of internal metadata ----------------------------------

NESTED = {"type": "struct", "fields": [_field("x", "integer", {"comment": "nested x"}), _field("y", "string")]}
EXPOSED = [
    _field("id", "long"),
    _field("a", "integer", {"comment": "the a"}),
    _field("g", "integer", {"comment": "gen"}),
    _field("s", NESTED, {"comment": "a struct"}),
    _field("d", "integer", {"CURRENT_DEFAULT": "42"}),
    _field("w", "integer"),
    _field("p", "string", {"comment": "part"}),
]


@pytest.fixture
def mapped_table(spark, tmp_path):
    """A name-mode table (by name and path): identity, generated, default, comments (nested and
    partition too), a widened column, change data feed. Versions: 0 create, 1 insert, 2 widen, 3 insert."""
    path = str(tmp_path / "mapped")
    name = "read_schema_md_mapped"
    spark.sql(f"""CREATE TABLE delta.`{path}` (
        id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 5 INCREMENT BY 2), a INT COMMENT 'the a',
        g INT GENERATED ALWAYS AS (a + 1) COMMENT 'gen',
        s STRUCT<x: INT COMMENT 'nested x', y: STRING> COMMENT 'a struct',
        d INT DEFAULT 42, w SMALLINT, p STRING COMMENT 'part') USING delta PARTITIONED BY (p)
        TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.feature.allowColumnDefaults' = 'supported',
                       'delta.enableTypeWidening' = 'true', 'delta.enableChangeDataFeed' = 'true')""")
    spark.sql(f"INSERT INTO delta.`{path}` (a, s, w, p) VALUES (1, named_struct('x', 1, 'y', 'q'), 3, 'P')")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN w TYPE INT")
    spark.sql(f"INSERT INTO delta.`{path}` (a, s, w, p) VALUES (2, named_struct('x', 2, 'y', 'r'), 70000, 'Q')")
    spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{path}'")
    try:
        yield path, name
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_path_reads_expose_delta_sparks_schema(spark, mapped_table):
    path, _ = mapped_table
    raw = _log_schema(path)
    for key in ("delta.generationExpression", "delta.identity.start", "delta.identity.step",
                "delta.identity.highWaterMark", "delta.identity.allowExplicitInsert", "delta.columnMapping.id",
                "delta.columnMapping.physicalName", "delta.typeChanges", "CURRENT_DEFAULT", "comment"):
        assert f'"{key}"' in raw, key  # the log holds them all
    df = spark.read.format("delta").load(path)
    assert df.count() == 2
    assert _fields(df) == EXPOSED
    assert _fields(DeltaTable.forPath(spark, path).toDF()) == EXPOSED
    assert _fields(spark.sql(f"SELECT * FROM delta.`{path}`")) == EXPOSED
    assert _fields(spark.sql(f"SELECT * FROM delta.`{path}` WHERE p = 'Q'")) == EXPOSED


def test_name_reads_expose_delta_sparks_schema(spark, mapped_table):
    _, name = mapped_table
    assert _fields(spark.table(name)) == EXPOSED
    assert _fields(spark.read.table(name)) == EXPOSED
    assert _fields(spark.sql(f"SELECT * FROM {name}")) == EXPOSED
    assert _fields(DeltaTable.forName(spark, name).toDF()) == EXPOSED


def test_time_travel_exposes_delta_sparks_schema(spark, mapped_table):
    path, name = mapped_table
    assert _fields(spark.read.format("delta").option("versionAsOf", 2).load(path)) == EXPOSED
    assert _fields(spark.sql(f"SELECT * FROM {name} VERSION AS OF 2")) == EXPOSED
    before_widening = [f if f["name"] != "w" else _field("w", "short") for f in EXPOSED]
    assert _fields(spark.read.format("delta").option("versionAsOf", 1).load(path)) == before_widening
    empty = spark.read.format("delta").option("versionAsOf", 0).load(path)  # no files yet
    assert empty.count() == 0 and _fields(empty) == before_widening


def test_change_feed_exposes_delta_sparks_schema(spark, mapped_table):
    path, _ = mapped_table
    changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2).load(path)
    assert changes.count() == 1 and _fields(changes) == EXPOSED + CDF_FIELDS
    none = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2)
            .option("endingVersion", 2).load(path))  # the type change commits no data
    assert none.count() == 0 and _fields(none) == EXPOSED + CDF_FIELDS


def test_streaming_source_exposes_delta_sparks_schema(spark, mapped_table, tmp_path):
    path, _ = mapped_table
    stream = spark.readStream.format("delta").load(path)
    assert _fields(stream) == EXPOSED
    query = (stream.writeStream.format("memory").queryName("read_schema_md_stream")
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    try:
        query.awaitTermination()
        out = spark.table("read_schema_md_stream")
        assert sorted((r.id, r.a, r.g, r.s.x, r.w, r.p) for r in out.collect()) == [(5, 1, 2, 1, 3, "P"),
                                                                                   (7, 2, 3, 2, 70000, "Q")]
    finally:
        query.stop()


def test_writes_still_use_the_logged_metadata(spark, mapped_table):
    """Reads no longer show the generation expression or identity keys; writes take them from the log."""
    path, name = mapped_table
    spark.table(name).where("a = 1").select("a", "s", "w", "p").write.format("delta").mode("append").save(path)
    rows = sorted((r.id, r.a, r.g) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(5, 1, 2), (7, 2, 3), (9, 1, 2)]
    assert '"delta.identity.highWaterMark":9' in _log_schema(path)


def test_a_copy_of_a_read_carries_no_internal_metadata(spark, mapped_table, tmp_path):
    """Writing a read to a new table keeps the comments (the DataFrame's metadata) and nothing internal.

    (`d` is left out: its CURRENT_DEFAULT would need allowColumnDefaults on the new table.)
    """
    path, _ = mapped_table
    expected = [f for f in EXPOSED if f["name"] != "d"]
    copy = str(tmp_path / "copy")
    spark.read.format("delta").load(path).drop("d").write.format("delta").partitionBy("p").save(copy)
    assert json.loads(_log_schema(copy))["fields"] == expected
    ctas = str(tmp_path / "ctas")
    spark.sql(f"CREATE TABLE delta.`{ctas}` USING delta AS SELECT id, a, g, s, w, p FROM delta.`{path}`")
    assert json.loads(_log_schema(ctas))["fields"] == expected
    import deltalake

    assert sorted(deltalake.DeltaTable(copy).to_pyarrow_table().column("id").to_pylist()) == [5, 7]


# ---- no column mapping: the scan's own columns ---------------------------------------------------


def test_unmapped_table_keeps_user_metadata_and_invariants(spark, tmp_path):
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    from pydelta.tables import IdentityGenerator

    path = str(tmp_path / "plain")
    invariant = json.dumps({"expression": {"expression": "x > 0"}})
    columns = StructType([
        StructField("x", IntegerType(), True, {"delta.invariants": invariant, "comment": "positive", "team": "core"}),
        StructField("part", StringType(), True, {"comment": "the partition"}),
    ])
    (DeltaTable.create(spark).location(path)
     .addColumn("id", LongType(), generatedAlwaysAs=IdentityGenerator(start=1, step=1))
     .addColumns(columns)
     .addColumn("twice", IntegerType(), generatedAlwaysAs="x * 2", comment="derived")
     .partitionedBy("part").execute())
    spark.createDataFrame([(1, "a"), (2, "b")], "x INT, part STRING").write.format("delta").mode("append").save(path)
    raw = _log_schema(path)
    for key in ("delta.generationExpression", "delta.identity.highWaterMark", "delta.invariants", '"team"'):
        assert key.strip('"') in raw
    expected = [
        _field("id", "long"),
        _field("x", "integer", {"delta.invariants": invariant, "comment": "positive", "team": "core"}),
        _field("part", "string", {"comment": "the partition"}),
        _field("twice", "integer", {"comment": "derived"}),
    ]
    df = spark.read.format("delta").load(path)
    assert sorted((r.id, r.x, r.part, r.twice) for r in df.collect()) == [(1, 1, "a", 2), (2, 2, "b", 4)]
    assert _fields(df) == expected
    assert _fields(spark.sql(f"SELECT * FROM delta.`{path}`")) == expected
    assert _fields(spark.read.format("delta").load(path).where("part = 'a'")) == expected


def test_databricks_identity_table(spark):
    """A table Databricks Runtime 17 wrote (delta-rs golden data): its identity column shows no keys."""
    path = str(DELTA_RS / "checkpoint-v2-table")
    assert '"delta.identity.start"' in _log_schema(path)
    fields = _fields(spark.read.format("delta").load(path))
    assert [(f["name"], f["metadata"]) for f in fields] == [("id", {}), ("name", {}), ("created_at", {})]
