"""ALTER TABLE ... REPLACE COLUMNS on Delta tables (delta-spark's AlterTableReplaceColumnsDeltaCommand)."""

from __future__ import annotations

import json

import deltalake
import pytest

import pydelta
from pydelta import errors
from tests.helpers import last_commit_actions

pytestmark = pytest.mark.spark


@pytest.fixture
def people(spark, tmp_path):
    path = str(tmp_path / "people")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, name STRING COMMENT 'full name', "
              "address STRUCT<city: STRING, zip: STRING>) USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'Ann', named_struct('city', 'Delft', 'zip', '2611'))")
    return path


def test_reorder_comment_and_nested_order(spark, people):
    t = f"delta.`{people}`"
    spark.sql(f"ALTER TABLE {t} REPLACE COLUMNS (address STRUCT<zip: STRING, city: STRING>, "
              "ID INT COMMENT 'the key', name STRING)")
    actions = last_commit_actions(people)
    assert not [a for a in actions if "add" in a or "remove" in a]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "REPLACE COLUMNS"
    logged = json.loads(info["operationParameters"]["columns"])
    assert [c["name"] for c in logged] == ["address", "ID", "name"] and logged[1]["metadata"] == {"comment": "the key"}
    schema = pydelta.load_snapshot(people).schema
    assert [f.name for f in schema.fields] == ["address", "id", "name"]  # matched columns keep their old name
    assert [f.name for f in schema.field("address").type.fields] == ["zip", "city"]
    assert schema.field("id").metadata["comment"] == "the key"
    assert schema.field("name").metadata["comment"] == "full name"  # no COMMENT given: the old one stays
    row = spark.read.format("delta").load(people).first()
    assert (row.id, row.name, row.address.city) == (1, "Ann", "Delft")
    assert deltalake.DeltaTable(people).to_pyarrow_table().column_names == ["address", "id", "name"]


def test_refusals_leave_the_table_as_it_was(spark, people):
    t = f"delta.`{people}`"
    version = pydelta.load_snapshot(people).version
    cases = {
        "dropping column(s) [address]": "id INT, name STRING",
        "changing data type of id from INT to STRING":
            "id STRING, name STRING, address STRUCT<city: STRING, zip: STRING>",
        "DELTA_AMBIGUOUS_DATA_TYPE_CHANGE": "id INT, nickname STRING, address STRUCT<city: STRING, zip: STRING>",
        "adding non-nullable column address.country":
            "id INT, name STRING, address STRUCT<city: STRING, zip: STRING, country: STRING NOT NULL>",
    }
    for reason, columns in cases.items():
        with pytest.raises(errors.DeltaAnalysisError, match="DELTA_UNSUPPORTED_ALTER_TABLE_REPLACE_COL_OP") as info:
            spark.sql(f"ALTER TABLE {t} REPLACE COLUMNS ({columns})")
        assert reason in str(info.value)
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_DUPLICATE_COLUMNS_FOUND"):
        spark.sql(f"ALTER TABLE {t} REPLACE COLUMNS (id INT, ID INT, name STRING, "
                  "address STRUCT<city: STRING, zip: STRING>)")
    assert pydelta.load_snapshot(people).version == version


def test_new_columns_widening_and_column_mapping(spark, tmp_path):
    path = str(tmp_path / "cm")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, a STRING, b STRING) USING delta TBLPROPERTIES "
              "('delta.columnMapping.mode' = 'name', 'delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'x', 'y')")
    before = {f.name: f.metadata["delta.columnMapping.physicalName"] for f in pydelta.load_snapshot(path).schema.fields}
    # With column mapping, columns may be dropped; INT -> BIGINT is a widening the table allows.
    spark.sql(f"ALTER TABLE delta.`{path}` REPLACE COLUMNS (b STRING, id BIGINT)")
    snap = pydelta.load_snapshot(path)
    assert [f.name for f in snap.schema.fields] == ["b", "id"]
    assert snap.schema.field("b").metadata["delta.columnMapping.physicalName"] == before["b"]
    assert snap.schema.field("id").metadata["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    rows = spark.read.format("delta").load(path).collect()
    assert [(r.b, r.id) for r in rows] == [("y", 1)]
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (id > 0)")
    version = pydelta.load_snapshot(path).version
    with pytest.raises(errors.DeltaAnalysisError, match="DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE"):
        spark.sql(f"ALTER TABLE delta.`{path}` REPLACE COLUMNS (b STRING)")
    assert pydelta.load_snapshot(path).version == version
    plain = str(tmp_path / "plain")
    spark.range(2).selectExpr("CAST(id AS INT) AS id").write.format("delta").save(plain)
    spark.sql(f"ALTER TABLE delta.`{plain}` REPLACE COLUMNS (id INT, extra STRING COMMENT 'new')")
    assert [r.extra for r in spark.read.format("delta").load(plain).collect()] == [None, None]
    with pytest.raises(errors.DeltaAnalysisError, match="changing data type of id from INT to BIGINT"):
        spark.sql(f"ALTER TABLE delta.`{plain}` REPLACE COLUMNS (id BIGINT, extra STRING)")  # no type widening
