"""CREATE / REPLACE TABLE (and AS SELECT), DROP TABLE through spark.sql."""

from __future__ import annotations

import json
import os
from pathlib import Path

import deltalake
import pytest
from pyspark.errors import AnalysisException

import pydelta
from pydelta import DeltaTable, errors
from pydelta.spark.base import catalog

pytestmark = pytest.mark.spark


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def _drop(spark, *names):
    for n in names:
        spark.sql(f"DROP TABLE IF EXISTS {n}")


def test_create_table_with_every_clause(spark, tmp_path):
    path = str(tmp_path / "full")
    try:
        spark.sql(f"""CREATE TABLE ddl_full (
                id BIGINT NOT NULL COMMENT 'the key',
                name STRING,
                day DATE,
                year INT GENERATED ALWAYS AS (YEAR(day)))
            USING DELTA PARTITIONED BY (year) LOCATION '{path}'
            COMMENT 'all clauses' TBLPROPERTIES ('delta.appendOnly' = 'true', 'team' = 'ops')""")
        snap = pydelta.load_snapshot(path)
        fields = {f.name: f for f in snap.schema.fields}
        assert not fields["id"].nullable and fields["id"].metadata["comment"] == "the key"
        assert fields["year"].metadata["delta.generationExpression"] == "YEAR(day)"
        assert snap.partition_columns == ["year"]
        assert snap.metadata.description == "all clauses"
        assert snap.configuration == {"delta.appendOnly": "true", "team": "ops"}
        entry = catalog.lookup(spark, "ddl_full")
        assert entry.location == path and not entry.managed
        spark.sql("INSERT INTO ddl_full (id, name, day) VALUES (1, 'a', DATE'2024-03-01')")
        assert _rows(spark.sql("SELECT id, year FROM ddl_full")) == [(1, 2024)]
        with pytest.raises(errors.DeltaError):
            spark.sql("INSERT INTO ddl_full (id, name, day) VALUES (NULL, 'b', DATE'2024-03-01')")
        witness = deltalake.DeltaTable(path)
        assert witness.metadata().partition_columns == ["year"] and witness.to_pyarrow_table().num_rows == 1
    finally:
        _drop(spark, "ddl_full")
    assert os.path.isdir(os.path.join(path, "_delta_log")), "external data survives DROP TABLE"


def test_create_if_not_exists_exists_and_replace(spark):
    try:
        spark.sql("CREATE TABLE ddl_t (id INT) USING delta")
        spark.sql("CREATE TABLE IF NOT EXISTS ddl_t (other STRING) USING delta")  # no-op
        with pytest.raises(errors.TableAlreadyExistsError):
            spark.sql("CREATE TABLE ddl_t (id INT) USING delta")
        spark.sql("INSERT INTO ddl_t VALUES (1)")
        spark.sql("REPLACE TABLE ddl_t (x STRING, y INT) USING delta")
        path = catalog.table_location(spark, "ddl_t")
        snap = pydelta.load_snapshot(path)
        assert snap.schema.field_names == ["x", "y"] and snap.num_files == 0
        assert [r.operation for r in spark.sql("DESCRIBE HISTORY ddl_t").collect()][:1] == ["REPLACE TABLE"]
        spark.sql("CREATE OR REPLACE TABLE ddl_t (z INT) USING delta")
        assert pydelta.load_snapshot(path).schema.field_names == ["z"]
        with pytest.raises(errors.DeltaAnalysisError):
            spark.sql("REPLACE TABLE ddl_missing (z INT) USING delta")
        assert catalog.lookup(spark, "ddl_missing") is None
    finally:
        _drop(spark, "ddl_t")


def test_ctas_and_rtas_in_one_commit(spark, tmp_path):
    try:
        spark.sql("CREATE TABLE ddl_src USING delta AS SELECT id, id % 3 AS k FROM range(30)")
        spark.sql("""CREATE TABLE ddl_ctas USING delta PARTITIONED BY (k) COMMENT 'from src'
                     TBLPROPERTIES ('delta.checkpointInterval' = '5') AS SELECT * FROM ddl_src WHERE id < 10""")
        path = catalog.table_location(spark, "ddl_ctas")
        log = Path(path) / "_delta_log"
        assert sorted(p.name for p in log.glob("*.json")) == ["00000000000000000000.json"]
        info = next(json.loads(line)["commitInfo"]
                    for line in (log / "00000000000000000000.json").read_text().splitlines() if "commitInfo" in line)
        assert info["operation"] == "CREATE TABLE AS SELECT"
        assert info["operationParameters"]["partitionBy"] == '["k"]'
        assert info["operationParameters"]["description"] == "from src"
        snap = pydelta.load_snapshot(path)
        assert snap.configuration == {"delta.checkpointInterval": "5"} and snap.partition_columns == ["k"]
        assert spark.sql("SELECT count(*) FROM ddl_ctas").first()[0] == 10
        spark.sql("CREATE OR REPLACE TABLE ddl_ctas USING delta AS SELECT 'x' AS s")
        assert _rows(spark.sql("SELECT * FROM ddl_ctas")) == [("x",)]
        assert pydelta.load_snapshot(path).version == 1
        with pytest.raises(errors.TableAlreadyExistsError):
            spark.sql("CREATE TABLE ddl_ctas USING delta AS SELECT 1 AS a")
        spark.sql("CREATE TABLE IF NOT EXISTS ddl_ctas USING delta AS SELECT 1 AS a")
        assert pydelta.load_snapshot(path).version == 1
        path_table = str(tmp_path / "by_path")
        spark.sql(f"CREATE TABLE delta.`{path_table}` USING delta AS SELECT * FROM ddl_src")
        assert deltalake.DeltaTable(path_table).to_pyarrow_table().num_rows == 30
    finally:
        _drop(spark, "ddl_src", "ddl_ctas")


def test_failed_ctas_leaves_nothing(spark):
    with pytest.raises(AnalysisException):
        spark.sql("CREATE TABLE ddl_fail USING delta AS SELECT id, no_such_column FROM range(3)")
    assert catalog.lookup(spark, "ddl_fail") is None
    assert not os.path.exists(catalog.default_location(spark, "ddl_fail"))


def test_register_existing_location_and_drop_semantics(spark, tmp_path):
    path = str(tmp_path / "existing")
    spark.range(5).write.format("delta").save(path)
    try:
        spark.sql(f"CREATE TABLE ddl_existing USING delta LOCATION '{path}'")
        assert spark.sql("SELECT count(*) FROM ddl_existing").first()[0] == 5
        assert DeltaTable.forName(spark, "ddl_existing").path == path
        with pytest.raises(errors.DeltaAnalysisError, match="DELTA_SCHEMA_NOT_PROVIDED"):
            spark.sql(f"CREATE TABLE ddl_nothing USING delta LOCATION '{tmp_path / 'empty'}'")
        spark.sql("CREATE TABLE ddl_managed (id INT) USING delta")
        managed = catalog.table_location(spark, "ddl_managed")
        assert os.path.isdir(os.path.join(managed, "_delta_log"))
        spark.sql("DROP TABLE ddl_managed")
        assert not os.path.exists(managed), "DROP TABLE removes a managed table's data"
        spark.sql("DROP TABLE ddl_existing")
        assert pydelta.load_snapshot(path).num_files >= 1
        with pytest.raises(errors.DeltaAnalysisError):
            spark.sql(f"DROP TABLE delta.`{path}`")
    finally:
        _drop(spark, "ddl_existing", "ddl_managed")


def test_api_sql_and_save_as_table_see_the_same_tables(spark):
    try:
        DeltaTable.create(spark).tableName("ddl_api").addColumn("id", "INT").execute()
        spark.sql("INSERT INTO ddl_api VALUES (1)")
        spark.createDataFrame([(2,)], "id INT").write.format("delta").mode("append").saveAsTable("ddl_api")
        spark.createDataFrame([(3,)], "id INT").write.insertInto("ddl_api")
        assert _rows(spark.sql("SELECT * FROM ddl_api")) == [(1,), (2,), (3,)]
        spark.range(3).write.format("delta").saveAsTable("ddl_saved")
        assert "ddl_saved" in [t.name for t in spark.catalog.listTables()]
        assert spark.sql("SELECT count(*) FROM ddl_saved").first()[0] == 3
        assert DeltaTable.forName(spark, "ddl_saved").toDF().count() == 3
    finally:
        _drop(spark, "ddl_api", "ddl_saved")


def test_non_delta_create_passes_through(spark):
    try:
        spark.sql("CREATE TABLE ddl_pq (id INT) USING parquet")
        assert catalog.lookup(spark, "ddl_pq").provider == "parquet"
    finally:
        _drop(spark, "ddl_pq")
