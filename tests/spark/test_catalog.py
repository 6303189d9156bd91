"""Table names resolve through Spark's session catalog, whoever created the table."""

from __future__ import annotations

import os

import pytest

from pydelta import DeltaTable
from pydelta.errors import DeltaAnalysisError, DeltaError, DeltaTableNotFoundError
from pydelta.spark.base import catalog

pytestmark = pytest.mark.spark


def _drop(spark, *names: str) -> None:
    for name in names:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_builder_name_with_location_resolves_by_name(spark, tmp_path):
    path = str(tmp_path / "people")
    try:
        DeltaTable.create(spark).tableName("cat_people").location(path).addColumn("id", "INT").execute()
        entry = catalog.lookup(spark, "cat_people")
        assert entry is not None and entry.provider == "delta" and entry.location == path and not entry.managed
        spark.range(3).selectExpr("CAST(id AS INT) AS id").write.format("delta").mode("append").save(path)
        table = DeltaTable.forName(spark, "cat_people")
        assert table.path == path
        assert sorted(r.id for r in table.toDF().collect()) == [0, 1, 2]
        assert sorted(r.id for r in spark.table("cat_people").collect()) == [0, 1, 2]
        assert "cat_people" in [t.name for t in spark.catalog.listTables()]
    finally:
        _drop(spark, "cat_people")
    assert os.path.isdir(os.path.join(path, "_delta_log")), "dropping an external table keeps its data"


def test_builder_managed_table_lives_in_warehouse_and_drop_removes_it(spark):
    try:
        DeltaTable.create(spark).tableName("cat_managed").addColumn("id", "BIGINT").execute()
        entry = catalog.lookup(spark, "cat_managed")
        assert entry is not None and entry.managed
        assert entry.location == catalog.default_location(spark, "cat_managed")
        assert os.path.isdir(os.path.join(entry.location, "_delta_log"))
        assert DeltaTable.forName(spark, "cat_managed").toDF().count() == 0
    finally:
        _drop(spark, "cat_managed")
    assert not os.path.exists(entry.location)


def test_name_registered_elsewhere_refuses_another_location(spark, tmp_path):
    try:
        DeltaTable.create(spark).tableName("cat_moved").location(str(tmp_path / "a")).addColumn("id", "INT").execute()
        with pytest.raises(DeltaAnalysisError, match="already exists"):
            DeltaTable.createOrReplace(spark).tableName("cat_moved").location(str(tmp_path / "b")) \
                .addColumn("id", "INT").execute()
        assert not (tmp_path / "b").exists()
    finally:
        _drop(spark, "cat_moved")


def test_failed_create_leaves_no_catalog_entry(spark, tmp_path):
    refused = DeltaTable.create(spark).tableName("cat_bad").addColumn("id", "INT")
    with pytest.raises(DeltaError):  # refused before anything is written
        refused.property("delta.feature.noSuchFeature", "supported").execute()
    assert catalog.lookup(spark, "cat_bad") is None
    assert not os.path.exists(catalog.default_location(spark, "cat_bad"))
    # The commit itself fails (its _delta_log is a plain file), after the name was registered.
    location = tmp_path / "bad"
    location.mkdir()
    (location / "_delta_log").write_text("not a directory")
    with pytest.raises(OSError):
        DeltaTable.create(spark).tableName("cat_bad").location(str(location)).addColumn("id", "INT").execute()
    assert catalog.lookup(spark, "cat_bad") is None
    assert (location / "_delta_log").read_text() == "not a directory"


def test_unknown_and_non_delta_names(spark):
    with pytest.raises(DeltaTableNotFoundError):
        DeltaTable.forName(spark, "cat_nowhere")
    try:
        spark.range(2).write.format("parquet").saveAsTable("cat_parquet")
        assert not catalog.is_delta_name(spark, "cat_parquet")
        with pytest.raises(DeltaTableNotFoundError, match="not a Delta table"):
            DeltaTable.forName(spark, "cat_parquet")
    finally:
        _drop(spark, "cat_parquet")


def test_list_tables_reports_type_and_comment_of_delta_tables(spark, tmp_path):
    try:
        DeltaTable.create(spark).tableName("cat_ext").location(str(tmp_path / "ext")).comment("outside") \
            .addColumn("id", "INT").execute()
        spark.sql("CREATE TABLE cat_man (id INT) USING delta COMMENT 'inside'")
        tables = {t.name: t for t in spark.catalog.listTables()}
        assert (tables["cat_ext"].tableType, tables["cat_ext"].description) == ("EXTERNAL", "outside")
        assert (tables["cat_man"].tableType, tables["cat_man"].description) == ("MANAGED", "inside")
        assert spark.catalog.getTable("cat_ext").tableType == "EXTERNAL"
    finally:
        _drop(spark, "cat_ext", "cat_man")
