"""DESCRIBE, SHOW TBLPROPERTIES, SHOW COLUMNS and SHOW CREATE TABLE on Delta tables through spark.sql.

Expected rows are those of delta-spark (Spark's v2 DescribeTableExec, DescribeColumnExec and
ShowTablePropertiesExec over DeltaTableV2's properties); SHOW CREATE TABLE, which
delta-spark refuses, follows Spark's ShowCreateTableExec and must recreate the table.
"""

from __future__ import annotations

import json
import os

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

import pydelta
from pydelta import DeltaTable, errors
from pydelta.spark.base import catalog
from pydelta.spark.base.pyspark_compat import pyspark_before

pytestmark = pytest.mark.spark
STRING = "STRING" if pyspark_before(4, 2) else "STRING COLLATE UTF8_BINARY"  # Spark 4.2 names the collation

DB = "describe_db"

FULL_TABLE = f"""CREATE TABLE {DB}.full (
    id INT NOT NULL COMMENT 'the id',
    `odd name` STRING,
    day DATE,
    year INT GENERATED ALWAYS AS (year(day)) COMMENT 'from day',
    s STRUCT<a: INT NOT NULL COMMENT 'inner', b: DECIMAL(10,2)>,
    ts TIMESTAMP_NTZ,
    m MAP<STRING, ARRAY<BIGINT>>)
  USING DELTA
  PARTITIONED BY (year)
  COMMENT 'every clause'
  TBLPROPERTIES ('delta.appendOnly' = 'true', 'team' = 'ops', 'delta.constraints.positive' = 'id > 0')"""

FULL_COLUMNS = [
    ("id", "int", "the id"),
    ("odd name", "string", None),
    ("day", "date", None),
    ("year", "int", "from day"),
    ("s", "struct<a:int,b:decimal(10,2)>", None),
    ("ts", "timestamp_ntz", None),
    ("m", "map<string,array<bigint>>", None),
]

FULL_PROPERTIES = [
    ("delta.appendOnly", "true"),
    ("delta.constraints.positive", "id > 0"),
    ("delta.feature.appendOnly", "supported"),
    ("delta.feature.checkConstraints", "supported"),
    ("delta.feature.generatedColumns", "supported"),
    ("delta.feature.invariants", "supported"),
    ("delta.feature.timestampNtz", "supported"),
    ("delta.minReaderVersion", "3"),
    ("delta.minWriterVersion", "7"),
    ("team", "ops"),
]


@pytest.fixture
def db(spark):
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")
    spark.sql(f"CREATE DATABASE {DB}")
    yield DB
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")


def _rows(df) -> list[tuple]:
    return [tuple(r) for r in df.collect()]


def _location(spark, name: str) -> str:
    return catalog.lookup(spark, name).location


def _owner_rows(spark, name: str) -> list[tuple]:
    """The Owner row: delta-spark shows the catalog's owner when it records one (Hive does)."""
    from pydelta.spark.base.connect_session import is_connect

    if is_connect(spark):  # no catalog objects on a Connect client: the server's SHOW TABLE EXTENDED
        found = catalog.connect_table_information(spark, name)
        owner = found[1].get("Owner", "") if found else ""
    else:
        state = spark._jsparkSession.sessionState()
        owner = str(state.catalog().getTableMetadata(state.sqlParser().parseTableIdentifier(name)).owner())
    return [("Owner", owner, "")] if owner else []


def _table_state(path: str) -> tuple:
    """What a recreated table must match: schema, partitioning, configuration, comment, protocol."""
    snap = pydelta.load_snapshot(path)
    md = snap.metadata
    return md.schema_string, md.partition_columns, md.configuration, md.description, snap.protocol


# ---- DESCRIBE -----------------------------------------------------------------------------


def test_describe_lists_columns_then_partition_information(spark, db):
    spark.sql(FULL_TABLE)
    df = spark.sql(f"DESCRIBE {db}.full")
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields] == [
        ("col_name", "string", False), ("data_type", "string", False), ("comment", "string", True)]
    partition_info = [
        ("# Partition Information", "", ""),
        ("# col_name", "data_type", "comment"),
        ("year", "int", "from day"),
    ]
    assert _rows(df) == FULL_COLUMNS + partition_info
    assert _rows(spark.sql(f"DESC TABLE {db}.full")) == FULL_COLUMNS + partition_info
    spark.sql(f"USE {db}")
    try:
        assert _rows(spark.sql("DESCRIBE full")) == FULL_COLUMNS + partition_info
    finally:
        spark.sql("USE default")


def test_describe_extended_managed_table(spark, db):
    spark.sql(FULL_TABLE)
    location = _location(spark, f"{db}.full")
    assert location == os.path.join(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"), f"{db}.db", "full")
    details = [
        ("", "", ""),
        ("# Detailed Table Information", "", ""),
        ("Name", f"spark_catalog.{db}.full", ""),
        ("Type", "MANAGED", ""),
        ("Comment", "every clause", ""),
        ("Location", "file:" + location, ""),
        ("Provider", "delta", ""),
        *_owner_rows(spark, f"{db}.full"),
        ("Is_managed_location", "true", ""),
        ("Table Properties", "[" + ",".join(f"{k}={v}" for k, v in FULL_PROPERTIES) + "]", ""),
    ]
    partition_info = [("# Partition Information", "", ""), ("# col_name", "data_type", "comment"),
                      ("year", "int", "from day")]
    expected = FULL_COLUMNS + partition_info + details
    assert _rows(spark.sql(f"DESCRIBE EXTENDED {db}.full")) == expected
    assert _rows(spark.sql(f"DESC FORMATTED {db}.full")) == expected
    assert _rows(spark.sql(f"DESCRIBE TABLE EXTENDED spark_catalog.{db}.full")) == expected


def test_describe_extended_external_table_and_path(spark, db, tmp_path):
    path = str(tmp_path / "ext")
    spark.sql(f"CREATE TABLE {db}.ext (a BIGINT, b STRING) USING DELTA LOCATION '{path}'")
    columns = [("a", "bigint", None), ("b", "string", None)]
    assert _rows(spark.sql(f"DESCRIBE EXTENDED {db}.ext")) == [
        *columns,
        ("", "", ""),
        ("# Detailed Table Information", "", ""),
        ("Name", f"spark_catalog.{db}.ext", ""),
        ("Type", "EXTERNAL", ""),
        ("Location", "file:" + path, ""),
        ("Provider", "delta", ""),
        *_owner_rows(spark, f"{db}.ext"),
        ("Table Properties", "[delta.minReaderVersion=1,delta.minWriterVersion=2]", ""),
    ]
    # A path table has no catalog entry: DeltaTableV2 names it by its qualified path and,
    # lacking the `external` property, Spark calls it MANAGED.
    assert _rows(spark.sql(f"DESCRIBE EXTENDED delta.`{path}`")) == [
        *columns,
        ("", "", ""),
        ("# Detailed Table Information", "", ""),
        ("Name", f"delta.`file:{path}`", ""),
        ("Type", "MANAGED", ""),
        ("Location", path, ""),
        ("Provider", "delta", ""),
        ("Table Properties", "[delta.minReaderVersion=1,delta.minWriterVersion=2]", ""),
    ]
    assert _rows(spark.sql(f"DESCRIBE delta.`{path}`")) == columns


def test_describe_reads_the_log_not_the_catalog_copy(spark, db, tmp_path):
    path = str(tmp_path / "evolving")
    spark.sql(f"CREATE TABLE {db}.evolving (id BIGINT) USING DELTA LOCATION '{path}'")
    spark.range(2).withColumn("extra", F.lit("x")).write.format("delta").mode("append") \
        .option("mergeSchema", "true").save(path)
    assert _rows(spark.sql(f"DESCRIBE {db}.evolving")) == [("id", "bigint", None), ("extra", "string", None)]
    assert _rows(spark.sql(f"SHOW COLUMNS IN {db}.evolving")) == [("id",), ("extra",)]


def test_describe_builder_table(spark, db, tmp_path):
    path = str(tmp_path / "built")
    DeltaTable.create(spark).tableName(f"{db}.built").location(path) \
        .addColumn("id", "BIGINT", nullable=False, comment="key") \
        .addColumn("kind", "STRING") \
        .addColumn("amount", "DECIMAL(12,3)") \
        .addColumn("double_amount", "DECIMAL(13,3)", generatedAlwaysAs="amount * 2") \
        .partitionedBy("kind") \
        .property("delta.logRetentionDuration", "interval 60 days") \
        .comment("built by the builder") \
        .execute()
    assert _rows(spark.sql(f"DESCRIBE EXTENDED {db}.built")) == [
        ("id", "bigint", "key"),
        ("kind", "string", None),
        ("amount", "decimal(12,3)", None),
        ("double_amount", "decimal(13,3)", None),
        ("# Partition Information", "", ""),
        ("# col_name", "data_type", "comment"),
        ("kind", "string", None),
        ("", "", ""),
        ("# Detailed Table Information", "", ""),
        ("Name", f"spark_catalog.{db}.built", ""),
        ("Type", "EXTERNAL", ""),
        ("Comment", "built by the builder", ""),
        ("Location", "file:" + path, ""),
        ("Provider", "delta", ""),
        *_owner_rows(spark, f"{db}.built"),
        ("Table Properties", "[delta.logRetentionDuration=interval 60 days,delta.minReaderVersion=1,"
                             "delta.minWriterVersion=4]", ""),
    ]
    assert spark.sql(f"SHOW CREATE TABLE {db}.built").first()[0] == (
        f"CREATE TABLE spark_catalog.{db}.built (\n"
        "  id BIGINT NOT NULL COMMENT 'key',\n"
        f"  kind {STRING},\n"
        "  amount DECIMAL(12,3),\n"
        "  double_amount DECIMAL(13,3) GENERATED ALWAYS AS (amount * 2))\n"
        "USING delta\n"
        "PARTITIONED BY (kind)\n"
        "COMMENT 'built by the builder'\n"
        f"LOCATION 'file:{path}'\n"
        "TBLPROPERTIES (\n"
        "  'delta.logRetentionDuration' = 'interval 60 days',\n"
        "  'delta.minReaderVersion' = '1',\n"
        "  'delta.minWriterVersion' = '4')\n"
    )


def test_describe_column_mapped_table_shows_logical_names(spark, db):
    spark.sql(f"""CREATE TABLE {db}.mapped (`first col` INT, second STRING) USING DELTA
                  TBLPROPERTIES ('delta.columnMapping.mode' = 'name')""")
    assert _rows(spark.sql(f"DESCRIBE {db}.mapped")) == [("first col", "int", None), ("second", "string", None)]
    props = dict(_rows(spark.sql(f"SHOW TBLPROPERTIES {db}.mapped")))
    assert props["delta.columnMapping.mode"] == "name" and props["delta.columnMapping.maxColumnId"] == "2"
    assert (props["delta.minReaderVersion"], props["delta.minWriterVersion"]) == ("2", "5")
    assert not any(k.startswith("delta.feature.") for k in props)  # a legacy protocol lists no features


def test_describe_column(spark, db, tmp_path):
    spark.sql(FULL_TABLE)
    df = spark.sql(f"DESCRIBE {db}.full id")
    assert [(f.name, f.nullable) for f in df.schema.fields] == [("info_name", False), ("info_value", False)]
    assert _rows(df) == [("col_name", "id"), ("data_type", "int"), ("comment", "the id")]
    assert _rows(spark.sql(f"DESCRIBE TABLE EXTENDED {db}.full S")) == [
        ("col_name", "s"), ("data_type", "struct<a:int,b:decimal(10,2)>"), ("comment", "NULL")]
    assert _rows(spark.sql(f"DESC {db}.full full.`odd name`")) == [
        ("col_name", "odd name"), ("data_type", "string"), ("comment", "NULL")]
    assert _rows(spark.sql(f"DESC {db}.full {db}.full.m")) == [
        ("col_name", "m"), ("data_type", "map<string,array<bigint>>"), ("comment", "NULL")]
    with pytest.raises(errors.DeltaAnalysisError, match=r"DESC TABLE COLUMN does not support nested column: s\.a"):
        spark.sql(f"DESCRIBE {db}.full s.a")
    with pytest.raises(errors.DeltaAnalysisError, match=r"UNRESOLVED_COLUMN\.WITH_SUGGESTION"):
        spark.sql(f"DESCRIBE {db}.full nope")
    path = str(tmp_path / "p")
    spark.range(1).write.format("delta").save(path)
    assert _rows(spark.sql(f"DESCRIBE delta.`{path}` id")) == [
        ("col_name", "id"), ("data_type", "bigint"), ("comment", "NULL")]


# ---- SHOW TBLPROPERTIES -------------------------------------------------------------------


def test_show_tblproperties(spark, db):
    spark.sql(FULL_TABLE)
    df = spark.sql(f"SHOW TBLPROPERTIES {db}.full")
    assert [(f.name, f.nullable) for f in df.schema.fields] == [("key", False), ("value", False)]
    assert _rows(df) == FULL_PROPERTIES
    assert _rows(spark.sql(f"SHOW TBLPROPERTIES {db}.full ('team')")) == [("team", "ops")]
    assert _rows(spark.sql(f"SHOW TBLPROPERTIES {db}.full ('delta.minWriterVersion')")) == [
        ("delta.minWriterVersion", "7")]
    # keys are case-sensitive; reserved keys (comment, location, provider) are not properties
    for key in ("TEAM", "comment", "location"):
        assert _rows(spark.sql(f"SHOW TBLPROPERTIES {db}.full ('{key}')")) == [
            (key, f"Table spark_catalog.{db}.full does not have property: {key}")]


def test_show_tblproperties_legacy_protocol_and_path(spark, tmp_path):
    path = str(tmp_path / "legacy")
    spark.range(3).write.format("delta").option("delta.enableChangeDataFeed", "true").save(path)
    assert _rows(spark.sql(f"SHOW TBLPROPERTIES delta.`{path}`")) == [
        ("delta.enableChangeDataFeed", "true"), ("delta.minReaderVersion", "1"), ("delta.minWriterVersion", "4")]
    assert _rows(spark.sql(f"SHOW TBLPROPERTIES delta.`{path}` ('key')")) == [
        ("key", f"Table spark_catalog.delta.`{path}` does not have property: key")]


# ---- SHOW COLUMNS -------------------------------------------------------------------------


def test_show_columns(spark, db, tmp_path):
    spark.sql(FULL_TABLE)
    names = [(c,) for c, _, _ in FULL_COLUMNS]
    df = spark.sql(f"SHOW COLUMNS IN {db}.full")
    assert df.columns == ["col_name"] and _rows(df) == names
    assert _rows(spark.sql(f"SHOW COLUMNS FROM full IN {db}")) == names
    assert _rows(spark.sql(f"SHOW COLUMNS IN {db}.full FROM {db.upper()}")) == names
    with pytest.raises(errors.DeltaAnalysisError, match="SHOW_COLUMNS_WITH_CONFLICT_NAMESPACE"):
        spark.sql(f"SHOW COLUMNS IN {db}.full IN default")
    path = str(tmp_path / "cols")
    spark.range(1).withColumn("b", F.lit(1)).write.format("delta").save(path)
    assert _rows(spark.sql(f"SHOW COLUMNS IN delta.`{path}`")) == [("id",), ("b",)]
    assert _rows(spark.sql(f"SHOW COLUMNS IN `{path}` IN delta")) == [("id",), ("b",)]


# ---- SHOW CREATE TABLE --------------------------------------------------------------------

FULL_CREATE = f"""CREATE TABLE spark_catalog.{DB}.full (
  id INT NOT NULL COMMENT 'the id',
  `odd name` {STRING},
  day DATE,
  year INT GENERATED ALWAYS AS (year(day)) COMMENT 'from day',
  s STRUCT<a: INT NOT NULL COMMENT 'inner', b: DECIMAL(10,2)>,
  ts TIMESTAMP_NTZ,
  m MAP<{STRING}, ARRAY<BIGINT>>)
USING delta
PARTITIONED BY (year)
COMMENT 'every clause'
TBLPROPERTIES (
""" + ",\n".join(f"  '{k}' = '{v}'" for k, v in FULL_PROPERTIES) + ")\n"


def test_show_create_table_managed_recreates_the_table(spark, db):
    spark.sql(FULL_TABLE)
    location = _location(spark, f"{db}.full")
    df = spark.sql(f"SHOW CREATE TABLE {db}.full")
    assert [(f.name, f.nullable) for f in df.schema.fields] == [("createtab_stmt", False)]
    statement = df.first()[0]
    assert statement == FULL_CREATE  # a managed table: no LOCATION
    before = _table_state(location)
    spark.sql(f"DROP TABLE {db}.full")
    assert not os.path.exists(location)
    assert spark.sql(statement).collect() == []
    assert _table_state(location) == before
    assert catalog.lookup(spark, f"{db}.full").managed
    assert spark.sql(f"SHOW CREATE TABLE {db}.full").first()[0] == statement


def test_show_create_table_external_recreates_at_a_new_location(spark, db, tmp_path):
    old, new = str(tmp_path / "old"), str(tmp_path / "new it's")
    spark.sql(f"""CREATE TABLE {db}.ext (id BIGINT NOT NULL, note STRING COMMENT 'it\\'s free text', p INT)
                  USING DELTA PARTITIONED BY (p) LOCATION '{old}'
                  TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')""")
    statement = spark.sql(f"SHOW CREATE TABLE {db}.ext").first()[0]
    assert statement == (
        f"CREATE TABLE spark_catalog.{db}.ext (\n"
        "  id BIGINT NOT NULL,\n"
        f"  note {STRING} COMMENT 'it\\'s free text',\n"
        "  p INT)\n"
        "USING delta\n"
        "PARTITIONED BY (p)\n"
        f"LOCATION 'file:{old}'\n"
        "TBLPROPERTIES (\n"
        "  'delta.enableChangeDataFeed' = 'true',\n"
        "  'delta.minReaderVersion' = '1',\n"
        "  'delta.minWriterVersion' = '4')\n"
    )
    before = _table_state(old)
    spark.sql(f"DROP TABLE {db}.ext")
    spark.sql(statement.replace(f"LOCATION 'file:{old}'", "LOCATION 'file:" + new.replace("'", "\\'") + "'"))
    assert _location(spark, f"{db}.ext") == new
    assert _table_state(new) == before
    assert not catalog.lookup(spark, f"{db}.ext").managed


def test_show_create_table_of_a_path(spark, tmp_path):
    path, copy = str(tmp_path / "src"), str(tmp_path / "copy")
    spark.range(2).withColumn("part", F.col("id") % 2).write.format("delta").partitionBy("part").save(path)
    statement = spark.sql(f"SHOW CREATE TABLE delta.`{path}`").first()[0]
    assert statement == (
        f"CREATE TABLE delta.`{path}` (\n"
        "  id BIGINT,\n"
        "  part BIGINT)\n"
        "USING delta\n"
        "PARTITIONED BY (part)\n"
        f"LOCATION '{path}'\n"
        "TBLPROPERTIES (\n"
        "  'delta.minReaderVersion' = '1',\n"
        "  'delta.minWriterVersion' = '2')\n"
    )
    spark.sql(statement.replace(path, copy))
    assert _table_state(copy) == _table_state(path)


# ---- what pydelta leaves to Spark, and errors ---------------------------------------------


def test_other_tables_views_and_unknown_names_go_to_spark(spark, db):
    spark.sql(f"CREATE TABLE {db}.plain (a INT COMMENT 'c', p STRING) USING parquet PARTITIONED BY (p)")
    assert _rows(spark.sql(f"DESCRIBE {db}.plain")) == [
        ("a", "int", "c"), ("p", "string", None),
        ("# Partition Information", "", ""), ("# col_name", "data_type", "comment"), ("p", "string", None)]
    assert "USING parquet" in spark.sql(f"SHOW CREATE TABLE {db}.plain").first()[0]
    spark.sql(FULL_TABLE)
    spark.sql("CREATE OR REPLACE TEMP VIEW full AS SELECT 1 AS only_col")
    try:
        spark.sql(f"USE {db}")
        assert _rows(spark.sql("DESCRIBE full")) == [("only_col", "int", None)]  # the view shadows the table
    finally:
        spark.sql("USE default")
        spark.sql("DROP VIEW IF EXISTS full")
    for statement in ("DESCRIBE no_such_table", "SHOW TBLPROPERTIES no_such_table", "SHOW COLUMNS IN no_such_table",
                      "SHOW CREATE TABLE no_such_table", "DESCRIBE no_such_table id"):
        with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
            spark.sql(statement)


def test_path_without_a_delta_table(spark, tmp_path):
    with pytest.raises(errors.DeltaTableNotFoundError, match="not a Delta table"):
        spark.sql(f"DESCRIBE delta.`{tmp_path / 'nothing'}`")
    with pytest.raises(errors.DeltaTableNotFoundError, match="not a Delta table"):
        spark.sql(f"SHOW TBLPROPERTIES delta.`{tmp_path / 'nothing'}`")


def test_unsupported_forms_are_refused(spark, db):
    spark.sql(FULL_TABLE)
    with pytest.raises(errors.DeltaAnalysisError, match="AS SERDE"):
        spark.sql(f"SHOW CREATE TABLE {db}.full AS SERDE")
    with pytest.raises(errors.DeltaAnalysisError, match="does not support partition for v2 tables"):
        spark.sql(f"DESCRIBE {db}.full PARTITION (year = 2024)")
    with pytest.raises(errors.DeltaAnalysisError, match="AS JSON"):
        spark.sql(f"DESCRIBE EXTENDED {db}.full AS JSON")


def test_column_defaults_section(spark, tmp_path):
    """Tables written by other clients may carry column defaults: DESCRIBE EXTENDED lists them last."""
    path = tmp_path / "defaults"
    (path / "_delta_log").mkdir(parents=True)
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "n", "type": "long", "nullable": True, "metadata": {"CURRENT_DEFAULT": "42", "EXISTS_DEFAULT": "42"}},
    ]}
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["allowColumnDefaults"]}},
        {"metaData": {"id": "d1", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                      "partitionColumns": [], "configuration": {}, "createdTime": 0}},
    ]
    (path / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    rows = _rows(spark.sql(f"DESCRIBE EXTENDED delta.`{path}`"))
    assert rows[-4:] == [
        ("Table Properties", "[delta.feature.allowColumnDefaults=supported,delta.minReaderVersion=1,"
                             "delta.minWriterVersion=7]", ""),
        ("", "", ""), ("# Column Default Values", "", ""), ("n", "bigint", "42")]
    assert "  n BIGINT DEFAULT 42)\n" in spark.sql(f"SHOW CREATE TABLE delta.`{path}`").first()[0]
