"""Managed commits turned on the documented way: SQL TBLPROPERTIES and DeltaTable.create().property().

No allowArbitraryProperties, no internal classes. The owner's own database (read with
sqlite3 / psycopg, not through pydelta) shows it ratified the commits, and delta-rs reads
the backfilled table.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import pytest
from deltalake import DeltaTable as RsTable

from pydelta import DeltaTable
from tests.txn.test_commit_owner_support import PG_DSN, owner_conf

pytestmark = pytest.mark.spark

OWNER = "delta.managedCommit.commitOwner"
OWNER_CONF = "delta.managedCommit.commitOwnerConf"


def _ratified_versions(owner: str, conf: dict[str, str], table_id: str) -> list[int]:
    """Versions the owner's database holds for the table, read with the database's own client."""
    if owner == "sqlite":
        with sqlite3.connect(json.loads(conf[OWNER_CONF])["path"]) as db:
            rows = db.execute("SELECT version FROM commits WHERE table_id = ? ORDER BY version", (table_id,))
            return [r[0] for r in rows]
    import psycopg

    with psycopg.connect(PG_DSN) as db:
        rows = db.execute("SELECT version FROM pydelta_commits WHERE table_id = %s ORDER BY version", (table_id,))
        return [r[0] for r in rows]


def _check(spark, owner: str, conf: dict[str, str], name: str, location: Path) -> None:
    spark.sql(f"INSERT INTO {name} VALUES (1), (2)")
    spark.sql(f"INSERT INTO {name} VALUES (3)")
    log = location / "_delta_log"
    meta = next(json.loads(line)["metaData"] for line in (log / f"{0:020d}.json").read_text().splitlines()
                if '"metaData"' in line)
    assert meta["configuration"][OWNER] == owner
    assert list((log / "_commits").glob("*.json")), "the commits went through the owner's _commits/"
    assert _ratified_versions(owner, conf, meta["id"])[-2:] == [1, 2]
    rs = RsTable(str(location))  # delta-rs lists the backfilled files
    assert rs.version() == 2
    assert sorted(rs.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]


@pytest.mark.parametrize("owner", ["sqlite", "postgres"])
def test_sql_tblproperties_turn_on_managed_commits(spark, tmp_path, owner):
    conf = owner_conf(owner, tmp_path)
    name = f"mc_sql_{owner}_{uuid.uuid4().hex[:8]}"
    location = tmp_path / "t"
    props = ", ".join(f"'{k}' = '{v}'" for k, v in conf.items())
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING delta LOCATION '{location}' TBLPROPERTIES ({props})")
    _check(spark, owner, conf, name, location)


def test_builder_property_turns_on_managed_commits(spark, tmp_path):
    conf = owner_conf("sqlite", tmp_path)
    name = f"mc_builder_{uuid.uuid4().hex[:8]}"
    location = tmp_path / "t"
    builder = DeltaTable.create(spark).tableName(name).location(str(location)).addColumn("id", "BIGINT")
    for key, value in conf.items():
        builder = builder.property(key, value)
    builder.execute()
    _check(spark, "sqlite", conf, name, location)


def test_alter_table_converts_an_existing_table(spark, tmp_path):
    conf = owner_conf("sqlite", tmp_path)
    name = f"mc_alter_{uuid.uuid4().hex[:8]}"
    location = tmp_path / "t"
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING delta LOCATION '{location}'")
    props = ", ".join(f"'{k}' = '{v}'" for k, v in conf.items())
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({props})")  # version 1, a file-system commit
    spark.sql(f"INSERT INTO {name} VALUES (4)")
    meta_id = next(json.loads(line)["metaData"]["id"] for line in
                   (location / "_delta_log" / f"{0:020d}.json").read_text().splitlines() if '"metaData"' in line)
    assert _ratified_versions("sqlite", conf, meta_id)[-1] == 2
    assert RsTable(str(location)).to_pyarrow_table().column("id").to_pylist() == [4]


@pytest.mark.parametrize("owner", ["sqlite", "postgres"])
def test_sql_creates_a_catalog_managed_table_and_maintenance_waits_for_the_catalog(spark, tmp_path, owner):
    """TBLPROPERTIES naming one of pydelta's catalogs make a catalog-managed table (PROTOCOL.md):
    commits staged in _staged_commits/ and ratified by the catalog's own database; VACUUM and
    OPTIMIZE refused until the catalog permits them."""
    from pydelta.log.catalog_maintenance import grant_maintenance

    conf = owner_conf(owner, tmp_path, "catalogManaged")
    name = f"cm_sql_{owner}_{uuid.uuid4().hex[:8]}"
    location = tmp_path / "t"
    props = ", ".join(f"'{k}' = '{v}'" for k, v in conf.items())
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING delta LOCATION '{location}' TBLPROPERTIES ({props})")
    try:
        spark.sql(f"INSERT INTO {name} VALUES (1), (2)")
        spark.sql(f"DELETE FROM {name} WHERE id = 1")
        log = location / "_delta_log"
        protocol = next(json.loads(line)["protocol"] for line in (log / f"{0:020d}.json").read_text().splitlines()
                        if '"protocol"' in line)
        assert "catalogManaged" in protocol["readerFeatures"]
        assert sorted(p.name[:20] for p in (log / "_staged_commits").glob("*.json")) == [f"{1:020d}", f"{2:020d}"]
        table_id = json.loads(next(line for line in (log / f"{0:020d}.json").read_text().splitlines()
                                   if '"metaData"' in line))["metaData"]["id"]
        db_conf = {OWNER_CONF: conf["io.pydelta.catalog.conf"]}
        assert _ratified_versions(owner, db_conf, table_id) == [1, 2]
        assert [r.id for r in spark.table(name).collect()] == [2]
        for statement in (f"VACUUM {name} RETAIN 0 HOURS", f"OPTIMIZE {name}"):
            with pytest.raises(Exception, match="blocked by the catalog"):
                spark.sql(statement)
        spark.sql(f"INSERT INTO {name} VALUES (3)")
        spark.sql(f"INSERT INTO {name} VALUES (4)")
        grant_maintenance(str(location), "optimize")
        assert spark.sql(f"OPTIMIZE {name}").collect()[0].metrics.numFilesRemoved >= 2
        assert spark.sql(f"DESCRIBE HISTORY {name}").collect()[0].operation == "OPTIMIZE"
        assert sorted(r.id for r in spark.table(name).collect()) == [2, 3, 4]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_replace_table_keeps_a_catalog_managed_table_in_its_catalog(spark, tmp_path):
    """REPLACE TABLE / CREATE OR REPLACE ... AS SELECT on a catalog-managed table commit a new
    definition through the catalog, keeping the table's id and its catalog properties (delta-spark
    4.4 keeps the same), so the catalog goes on ratifying its commits."""
    conf = owner_conf("sqlite", tmp_path, "catalogManaged")
    location = tmp_path / "t"
    props = ", ".join(f"'{k}' = '{v}'" for k, v in conf.items())
    spark.sql(f"CREATE TABLE delta.`{location}` (id BIGINT) USING delta TBLPROPERTIES ({props})")
    spark.sql(f"INSERT INTO delta.`{location}` VALUES (1)")
    before = DeltaTable.forPath(spark, str(location)).detail().first()
    spark.sql(f"REPLACE TABLE delta.`{location}` (id BIGINT, name STRING) USING delta")
    spark.sql(f"CREATE OR REPLACE TABLE delta.`{location}` USING delta AS SELECT 7 AS id, 'x' AS name")
    after = DeltaTable.forPath(spark, str(location)).detail().first()
    assert after.id == before.id
    assert after.properties["io.pydelta.catalog"] == "sqlite"
    assert [tuple(r) for r in spark.read.format("delta").load(str(location)).collect()] == [(7, "x")]
    staged = sorted(p.name[:20] for p in (location / "_delta_log" / "_staged_commits").glob("*.json"))
    assert staged == [f"{v:020d}" for v in (1, 2, 3)]  # both replacements went through the catalog
    db_conf = {OWNER_CONF: conf["io.pydelta.catalog.conf"]}
    assert _ratified_versions("sqlite", db_conf, before.id) == [1, 2, 3]
