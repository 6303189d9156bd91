"""ALTER TABLE, COMMENT ON, column DEFAULTs, CREATE TABLE ... LOCATION / OPTIONS and SHALLOW
CLONE through spark.sql on a Spark Connect session: the classic suite's own test functions, run
here on the Connect session (pydelta's client-side grammar instead of Spark's parser), plus what
only Connect needs."""

from __future__ import annotations

import deltalake
import pytest

import pydelta
from pydelta import errors

# The classic suite's tests, verbatim: the `spark` fixture here is the Connect session.
from tests.spark.test_column_defaults import (  # noqa: F401
    test_default_refusals,
    test_defaults_fill_inserts,
    test_defaults_in_merge_and_update,
)
from tests.spark.test_sql_alter import (  # noqa: F401
    people,
    test_add_columns_with_positions_comments_and_nested_fields,
    test_alter_column_not_null_comment_and_position,
    test_alter_column_refusals_leave_the_table_unchanged,
    test_catalog_table_names,
    test_comment_on_table,
    test_partition_and_location_statements_are_refused,
)
from tests.spark.test_sql_clone import (  # noqa: F401
    source,
    test_clone_refusals_leave_nothing,
    test_clone_to_path_location_and_properties,
    test_shallow_clone_of_a_name_and_time_travel,
)
from tests.spark.test_sql_parity import test_create_table_options  # noqa: F401


def test_replace_columns_and_hive_change_column(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, name STRING COMMENT 'full name', city STRING) USING delta")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'Ann', 'Delft')")
    spark.sql(f"ALTER TABLE {t} REPLACE COLUMNS (city STRING, ID INT COMMENT 'the key', name STRING)")
    schema = pydelta.load_snapshot(path).schema
    assert [f.name for f in schema.fields] == ["city", "id", "name"]
    assert schema.field("name").metadata["comment"] == "full name"
    spark.sql(f"ALTER TABLE {t} CHANGE COLUMN city city STRING COMMENT 'the city' AFTER name")
    assert [f.name for f in pydelta.load_snapshot(path).schema.fields] == ["id", "name", "city"]
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT")  # widening needs the typeWidening feature
    history = deltalake.DeltaTable(path).history()
    assert [h["operation"] for h in history[:3]] == ["CHANGE COLUMN", "REPLACE COLUMNS", "WRITE"]
    assert deltalake.DeltaTable(path).to_pyarrow_table().to_pylist() == [{"id": 1, "name": "Ann", "city": "Delft"}]


def test_create_table_naming_an_existing_location(spark, tmp_path):
    path = str(tmp_path / "existing")
    spark.range(3).write.format("delta").save(path)
    try:
        spark.sql(f"CREATE TABLE connect_existing USING delta LOCATION '{path}'")
        assert sorted(r.id for r in spark.table("connect_existing").collect()) == [0, 1, 2]
        spark.sql(f"CREATE TABLE IF NOT EXISTS connect_existing USING delta LOCATION '{path}'")
        with pytest.raises(errors.TableAlreadyExistsError):
            spark.sql(f"CREATE TABLE connect_existing USING delta LOCATION '{path}'")
        with pytest.raises(errors.DeltaAnalysisError, match="DELTA_CREATE_TABLE_WITH_DIFFERENT_PARTITIONING"):
            spark.sql(f"CREATE TABLE connect_other USING delta PARTITIONED BY (id) LOCATION '{path}'")
        assert pydelta.load_snapshot(path).version == 0  # naming a table commits nothing
        spark.sql("ALTER TABLE connect_existing RENAME TO connect_renamed")  # the catalog's: Spark runs it
        assert spark.table("connect_renamed").count() == 3
        assert spark.sql("DESCRIBE DETAIL connect_renamed").first().location.endswith("existing")
    finally:
        spark.sql("DROP TABLE IF EXISTS connect_existing")
        spark.sql("DROP TABLE IF EXISTS connect_renamed")


def test_create_table_clause_refusals(spark, tmp_path):
    path = str(tmp_path / "t")
    with pytest.raises(errors.DeltaAnalysisError, match="STORED AS cannot be used with USING DELTA"):
        spark.sql(f"CREATE TABLE delta.`{path}` (id INT) USING delta STORED AS PARQUET")
    with pytest.raises(errors.DeltaAnalysisError, match="only specify one of them"):
        spark.sql(f"CREATE TABLE connect_two_paths (id INT) USING delta LOCATION '{path}' OPTIONS (path '{path}')")
    assert not (tmp_path / "t").exists()  # nothing written
