"""Unity Catalog tables by their three-part names in Spark SQL and DeltaTable.forName, configured as
delta-spark users configure Unity Catalog (`spark.sql.catalog.<name>.uri` / `.token`), with no
Unity Catalog jar on the JVM. The catalog itself (loadTable) witnesses every commit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pydelta.errors import DeltaError
from pydelta.tables import DeltaTable
from pydelta.txn.unity_catalog import UnityCatalog, parse_name
from tests.txn.writers import make_metadata
from tests.uc.server import CATALOG

pytestmark = pytest.mark.spark


@pytest.fixture
def uc_spark(spark, uc_server) -> Iterator[object]:
    # As a delta-spark program configures Unity Catalog: the catalog's class (whose jar pydelta does not
    # need: the class is never loaded), its server and its token.
    spark.conf.set(f"spark.sql.catalog.{CATALOG}", "io.unitycatalog.spark.UCSingleCatalog")
    spark.conf.set(f"spark.sql.catalog.{CATALOG}.uri", uc_server.uri)
    spark.conf.set(f"spark.sql.catalog.{CATALOG}.token", "not-checked-by-this-server")
    try:
        yield spark
    finally:
        spark.conf.unset(f"spark.sql.catalog.{CATALOG}")
        spark.conf.unset(f"spark.sql.catalog.{CATALOG}.uri")
        spark.conf.unset(f"spark.sql.catalog.{CATALOG}.token")


def _latest(uc: UnityCatalog, full_name: str) -> int:
    name = parse_name(full_name)
    return uc.rest.load_table(name.catalog, name.schema, name.name).latest_table_version


def test_sql_dml_and_history_on_a_three_part_name(uc_spark, uc: UnityCatalog, uc_name: str) -> None:
    spark = uc_spark
    uc.create_table(uc_name, make_metadata())
    spark.sql(f"INSERT INTO {uc_name} VALUES (1, 'a', 'one'), (2, 'a', 'two'), (3, 'b', 'three')")
    assert _latest(uc, uc_name) == 1
    spark.sql(f"UPDATE {uc_name} SET value = 'TWO' WHERE id = 2")
    spark.sql(f"DELETE FROM {uc_name} WHERE id = 3")
    spark.createDataFrame([(1, "a", "uno"), (4, "b", "four")], "id long, part string, value string") \
        .createOrReplaceTempView("uc_source")
    spark.sql(f"""MERGE INTO {uc_name} t USING uc_source s ON t.id = s.id
                  WHEN MATCHED THEN UPDATE SET value = s.value WHEN NOT MATCHED THEN INSERT *""")
    assert _latest(uc, uc_name) == 4  # every statement was ratified by the catalog
    rows = sorted(tuple(r) for r in spark.sql(f"SELECT id, part, value FROM {uc_name}").collect())
    assert rows == [(1, "a", "uno"), (2, "a", "TWO"), (4, "b", "four")]
    history = spark.sql(f"DESCRIBE HISTORY {uc_name}").select("version", "operation").collect()
    assert [(r.version, r.operation) for r in history] == [
        (4, "MERGE"), (3, "DELETE"), (2, "UPDATE"), (1, "WRITE"), (0, "CREATE TABLE")]
    old = sorted(r.id for r in spark.sql(f"SELECT id FROM {uc_name} VERSION AS OF 1").collect())
    assert old == [1, 2, 3]


def test_delta_table_for_name_and_the_dataframe_writer(uc_spark, uc: UnityCatalog, uc_name: str) -> None:
    spark = uc_spark
    uc.create_table(uc_name, make_metadata())
    spark.createDataFrame([(1, "a", "x")], "id long, part string, value string") \
        .write.format("delta").mode("append").saveAsTable(uc_name)
    table = DeltaTable.forName(spark, uc_name)
    table.update("id = 1", {"value": "'y'"})
    assert [tuple(r) for r in table.toDF().select("id", "value").collect()] == [(1, "y")]
    assert _latest(uc, uc_name) == 2
    assert table.history().count() == 3


def test_the_session_names_the_server_and_its_token(uc_spark, uc_server) -> None:
    from pydelta.spark.base.unity_catalogs import unity_catalog

    catalog = unity_catalog(uc_spark, CATALOG)
    assert catalog is not None and catalog.rest.uri == uc_server.uri
    assert catalog.rest.token == "not-checked-by-this-server"
    assert unity_catalog(uc_spark, "spark_catalog") is None and unity_catalog(uc_spark, "other") is None


def test_a_missing_table_of_a_unity_catalog_is_a_clear_error(uc_spark) -> None:
    with pytest.raises(Exception, match=r"(?i)not found|cannot be found|TABLE_OR_VIEW_NOT_FOUND|not a Delta table"):
        uc_spark.sql(f"SELECT * FROM {CATALOG}.default.no_such_table").collect()
    with pytest.raises(DeltaError):
        DeltaTable.forName(uc_spark, f"{CATALOG}.default.no_such_table")


def test_create_table_ctas_and_save_as_table_create_through_the_catalog(uc_spark, uc: UnityCatalog) -> None:
    spark = uc_spark
    import uuid

    names = [f"{CATALOG}.default.c_{uuid.uuid4().hex[:10]}" for _ in range(3)]
    spark.sql(f"CREATE TABLE {names[0]} (id BIGINT, name STRING) USING delta PARTITIONED BY (name)")
    spark.sql(f"CREATE TABLE {names[1]} USING delta AS SELECT id, CAST(id AS STRING) AS s FROM range(3)")
    spark.range(2).write.format("delta").saveAsTable(names[2])
    for name, version in ((names[0], 0), (names[1], 0), (names[2], 0)):
        table = uc.table(name)  # the catalog has it, at its own location, with its uuid on disk
        snapshot = DeltaTable.forName(spark, name).detail().collect()[0]
        assert snapshot.location.rstrip("/").endswith(table.location.rstrip("/").split("/")[-1])
        assert snapshot.properties["io.unitycatalog.tableId"] == table.table_id
        assert _latest(uc, name) == version
    assert spark.table(names[1]).count() == 3 and spark.table(names[2]).count() == 2
    spark.sql(f"INSERT INTO {names[0]} VALUES (7, 'x')")
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {names[0]}").collect()] == [(7, "x")]
    spark.sql(f"CREATE TABLE IF NOT EXISTS {names[0]} (id BIGINT) USING delta")  # kept as it is
    assert _latest(uc, names[0]) == 1
    with pytest.raises(DeltaError, match="already exists"):
        spark.sql(f"CREATE TABLE {names[0]} (id BIGINT) USING delta")


def test_drop_table_removes_it_from_the_catalog(uc_spark, uc: UnityCatalog, uc_name: str) -> None:
    spark = uc_spark
    spark.sql(f"CREATE TABLE {uc_name} (id BIGINT) USING delta")
    assert uc.exists(uc_name)
    spark.sql(f"DROP TABLE {uc_name}")
    assert not uc.exists(uc_name)
    spark.sql(f"DROP TABLE IF EXISTS {uc_name}")
    with pytest.raises(DeltaError, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"DROP TABLE {uc_name}")
    detail = spark.sql(f"CREATE TABLE {uc_name} (id BIGINT) USING delta")  # the name is free again
    assert detail is not None and uc.exists(uc_name)


def test_schema_and_property_changes_reach_the_catalog(uc_spark, uc: UnityCatalog, uc_name: str) -> None:
    spark = uc_spark
    spark.sql(f"CREATE TABLE {uc_name} (id BIGINT, tags ARRAY<STRING>) USING delta TBLPROPERTIES ('team' = 'a')")
    spark.sql(f"ALTER TABLE {uc_name} ADD COLUMNS (score DOUBLE)")
    spark.sql(f"ALTER TABLE {uc_name} SET TBLPROPERTIES ('owner.note' = 'x', 'team' = 'b')")
    spark.sql(f"ALTER TABLE {uc_name} UNSET TBLPROPERTIES ('owner.note')")
    name = parse_name(uc_name)
    loaded = uc.rest.load_table(name.catalog, name.schema, name.name)
    assert loaded.latest_table_version == 3 and loaded.column_names == ("id", "tags", "score")
    assert loaded.properties["team"] == "b" and "owner.note" not in loaded.properties
    assert loaded.properties["io.unitycatalog.tableId"] == uc.table(uc_name).table_id  # what the catalog requires stays
    spark.sql(f"INSERT INTO {uc_name} VALUES (1, array('t'), 0.5)")
    assert [tuple(r) for r in spark.sql(f"SELECT id, score FROM {uc_name}").collect()] == [(1, 0.5)]


def test_replace_table_keeps_the_unity_catalog_table(uc_spark, uc: UnityCatalog, uc_name: str) -> None:
    spark = uc_spark
    spark.sql(f"CREATE TABLE {uc_name} (id BIGINT) USING delta")
    spark.sql(f"INSERT INTO {uc_name} VALUES (1)")
    table_id = uc.table(uc_name).table_id
    spark.sql(f"REPLACE TABLE {uc_name} (id BIGINT, name STRING) USING delta")
    spark.sql(f"CREATE OR REPLACE TABLE {uc_name} USING delta AS SELECT 7 AS id, 'x' AS name, 1.5 AS score")
    assert uc.table(uc_name).table_id == table_id  # the same table in the catalog
    name = parse_name(uc_name)
    loaded = uc.rest.load_table(name.catalog, name.schema, name.name)
    assert loaded.latest_table_version == 3 and loaded.column_names == ("id", "name", "score")
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {uc_name}").collect()] == [(7, "x", 1.5)]
    detail = DeltaTable.forName(spark, uc_name).detail().first()
    assert detail.properties["io.unitycatalog.tableId"] == table_id
    assert detail.properties["delta.checkpointPolicy"] == "v2"
    with pytest.raises(DeltaError, match=r"TABLE_OR_VIEW_NOT_FOUND|cannot be replaced"):
        spark.sql(f"REPLACE TABLE {CATALOG}.default.never_made (id BIGINT) USING delta")


def test_describe_and_show_on_a_unity_catalog_name(uc_spark, uc: UnityCatalog, uc_name: str) -> None:
    spark = uc_spark
    spark.sql(f"CREATE TABLE {uc_name} (id BIGINT, v STRING) USING delta COMMENT 'kept'")
    detail = spark.sql(f"DESCRIBE DETAIL {uc_name}").first()
    assert detail.name == uc_name and detail.properties["io.unitycatalog.tableId"] == uc.table(uc_name).table_id
    assert [r.col_name for r in spark.sql(f"DESCRIBE TABLE {uc_name}").collect()] == ["id", "v"]
    properties = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {uc_name}").collect()}
    assert properties["delta.enableInCommitTimestamps"] == "true"
    assert [r.col_name for r in spark.sql(f"SHOW COLUMNS IN {uc_name}").collect()] == ["id", "v"]
    for statement in (f"OPTIMIZE {uc_name}", f"VACUUM {uc_name}"):  # the catalog has not permitted them
        with pytest.raises(DeltaError, match="blocked by the catalog"):
            spark.sql(statement)
