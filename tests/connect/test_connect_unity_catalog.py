"""Unity Catalog names over Spark Connect: the client resolves `catalog.schema.table` through the
server named by `spark.sql.catalog.<catalog>.uri` (the session's conf, read over Connect) and
commits through the catalog; the Connect server only runs the Spark jobs."""

from __future__ import annotations

import uuid

import pytest

from pydelta.tables import DeltaTable
from pydelta.txn.unity_catalog import UnityCatalog, parse_name
from tests.uc.server import CATALOG, SCHEMA


@pytest.fixture
def uc_connect(spark, uc_server):
    spark.conf.set(f"spark.sql.catalog.{CATALOG}.uri", uc_server.uri)
    try:
        yield spark
    finally:
        spark.conf.unset(f"spark.sql.catalog.{CATALOG}.uri")


def test_sql_and_the_api_on_a_unity_catalog_name_over_connect(uc_connect, uc_server) -> None:
    spark = uc_connect
    name = f"{CATALOG}.{SCHEMA}.c_{uuid.uuid4().hex[:10]}"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, v STRING) USING delta")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"UPDATE {name} SET v = 'B' WHERE id = 2")
    DeltaTable.forName(spark, name).delete("id = 1")
    assert [tuple(r) for r in spark.sql(f"SELECT id, v FROM {name}").collect()] == [(2, "B")]
    parts = parse_name(name)
    loaded = UnityCatalog(uc_server.uri).rest.load_table(parts.catalog, parts.schema, parts.name)
    assert loaded.latest_table_version == 3  # every statement was ratified by the catalog
    history = spark.sql(f"DESCRIBE HISTORY {name}").select("version").collect()
    assert [r.version for r in history] == [3, 2, 1, 0]
