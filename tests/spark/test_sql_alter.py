"""ALTER TABLE through spark.sql on Delta tables (paths and catalog names), as delta-spark does it.

Each statement's effect is read back from the log (metaData, protocol, commitInfo), a
refused statement must leave the table at the same version, and the final tables are
read by the independent `deltalake` client too.
"""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pytest

import pydelta
from pydelta import errors

pytestmark = pytest.mark.spark


# ---- helpers -------------------------------------------------------------------------------


def _version(path: str) -> int:
    return pydelta.load_snapshot(path).version


def _last_commit(path: str) -> dict[str, dict]:
    last = sorted((Path(path) / "_delta_log").glob("*.json"))[-1]
    out: dict[str, dict] = {}
    for line in last.read_text().splitlines():
        action = json.loads(line)
        out.update(action)
    return out


def _info(path: str) -> dict:
    return _last_commit(path)["commitInfo"]


def _schema(path: str) -> dict:
    return json.loads(pydelta.load_snapshot(path).metadata.schema_string)


def _fields(path: str) -> list[tuple[str, str, bool, dict]]:
    return [(f["name"], f["type"] if isinstance(f["type"], str) else f["type"]["type"], f["nullable"], f["metadata"])
            for f in _schema(path)["fields"]]


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _refused(spark, path: str, statement: str, error: type[BaseException], match: str) -> None:
    """`statement` fails with `error` and commits nothing."""
    before = _version(path)
    with pytest.raises(error, match=match):
        spark.sql(statement)
    assert _version(path) == before


@pytest.fixture
def people(spark, tmp_path):
    path = str(tmp_path / "people")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING, address STRUCT<city: STRING, zip: STRING>) "
              "USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'Ann', named_struct('city', 'Delft', 'zip', '2611')), "
              "(2, NULL, NULL)")
    return path


# ---- SET / UNSET TBLPROPERTIES ---------------------------------------------------------------


def test_set_and_unset_tblproperties(spark, people):
    t = f"delta.`{people}`"
    result = spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('DELTA.checkpointINTERVAL' = '20', 'Key' = 'v', "
                       "'delta.logRetentionDuration' = 'interval 60 days', 'comment' = 'people we know')")
    assert result.collect() == [] and result.columns == []
    md = _last_commit(people)["metaData"]
    assert md["configuration"] == {"delta.checkpointInterval": "20", "Key": "v",
                                   "delta.logRetentionDuration": "interval 60 days"}
    assert md["description"] == "people we know"
    info = _info(people)
    assert info["operation"] == "SET TBLPROPERTIES"
    assert json.loads(info["operationParameters"]["properties"]) == {
        "delta.checkpointInterval": "20", "Key": "v", "delta.logRetentionDuration": "interval 60 days",
        "comment": "people we know"}
    assert "protocol" not in _last_commit(people)

    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('key' = 'other')")  # non-delta keys keep their case
    assert pydelta.load_snapshot(people).metadata.configuration["Key"] == "v"

    # Missing keys are ignored, IF EXISTS or not (Spark's DSv2 path, as delta-spark records it).
    spark.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('delta.CHECKPOINTINTERVAL', 'key', 'missing', 'comment')")
    md = _last_commit(people)["metaData"]
    assert md["configuration"] == {"Key": "v", "delta.logRetentionDuration": "interval 60 days"}
    assert "description" not in md
    info = _info(people)
    assert info["operation"] == "UNSET TBLPROPERTIES"
    assert info["operationParameters"] == {
        "properties": json.dumps(["delta.checkpointInterval", "key", "missing", "comment"], separators=(",", ":")),
        "ifExists": True}
    spark.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES IF EXISTS ('Key')")
    assert deltalake.DeltaTable(people).metadata().configuration == {"delta.logRetentionDuration": "interval 60 days"}


def test_comment_on_table(spark, people):
    t = f"delta.`{people}`"
    spark.sql(f"COMMENT ON TABLE {t} IS 'people we know'")
    assert _last_commit(people)["metaData"]["description"] == "people we know"
    assert _info(people)["operation"] == "SET TBLPROPERTIES"
    assert spark.sql(f"DESCRIBE DETAIL {t}").first().description == "people we know"
    assert deltalake.DeltaTable(people).metadata().description == "people we know"
    spark.sql(f"COMMENT ON TABLE {t} IS NULL")  # Spark's parser gives "": delta-spark stores that
    assert _last_commit(people)["metaData"]["description"] == ""
    assert json.loads(_info(people)["operationParameters"]["properties"]) == {"comment": ""}


def test_set_tblproperties_upgrades_the_protocol_without_storing_requests(spark, tmp_path):
    cdf, dv, versions = (str(tmp_path / n) for n in ("cdf", "dv", "versions"))
    for path in (cdf, dv, versions):
        spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta")
        assert pydelta.load_snapshot(path).protocol.min_writer_version == 2

    spark.sql(f"ALTER TABLE delta.`{cdf}` SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
    assert _last_commit(cdf)["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 4}

    spark.sql(f"ALTER TABLE delta.`{dv}` SET TBLPROPERTIES ('delta.feature.deletionVectors' = 'supported')")
    commit = _last_commit(dv)
    assert commit["protocol"]["readerFeatures"] == ["deletionVectors"]
    assert "deletionVectors" in commit["protocol"]["writerFeatures"]
    assert commit["metaData"]["configuration"] == {}
    assert json.loads(_info(dv)["operationParameters"]["properties"]) == {
        "delta.feature.deletionvectors": "supported"}  # delta-spark lower-cases feature keys

    spark.sql(f"ALTER TABLE delta.`{versions}` SET TBLPROPERTIES "
              "('delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5', 'team' = 'core')")
    commit = _last_commit(versions)
    assert commit["protocol"] == {"minReaderVersion": 2, "minWriterVersion": 5}
    assert commit["metaData"]["configuration"] == {"team": "core"}

    protocol = deltalake.DeltaTable(cdf).protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 4)
    assert "deletionVectors" in deltalake.DeltaTable(dv).protocol().reader_features
    assert deltalake.DeltaTable(versions).metadata().configuration == {"team": "core"}


def test_set_tblproperties_refusals_leave_the_table_unchanged(spark, people):
    t = f"delta.`{people}`"
    _refused(spark, people, f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.nonsense' = '1', 'a' = 'b')",
             errors.DeltaAnalysisError, r"DELTA_UNKNOWN_CONFIGURATION.*delta\.nonsense")
    _refused(spark, people, f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.randomPrefixLength' = '-1')",
             errors.DeltaIllegalArgumentError, "randomPrefixLength needs to be greater than 0")
    _refused(spark, people, f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.appendOnly' = 'maybe')",
             errors.DeltaIllegalArgumentError, "appendOnly needs to be a boolean")
    _refused(spark, people, f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.constraints.c' = 'id > 0')",
             errors.DeltaAnalysisError, "ALTER TABLE ADD CONSTRAINT")
    _refused(spark, people, f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.feature.noSuchFeature' = 'supported')",
             errors.DeltaAnalysisError, "not recognized")
    _refused(spark, people, f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.logRetentionDuration' = '1 day')",
             errors.DeltaIllegalArgumentError,
             "needs to be greater than or equal to delta.deletedFileRetentionDuration")
    _refused(spark, people, f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'id')",
             errors.DeltaAnalysisError, "DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE")
    _refused(spark, people, f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'true')",
             errors.IcebergCompatViolationError,  # as delta-spark: an existing table must set column mapping
             r"WRONG_REQUIRED_TABLE_PROPERTY.*'delta\.columnMapping\.mode' to be set to 'name'")

    spark.conf.set("spark.databricks.delta.allowArbitraryProperties.enabled", "true")
    try:
        spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.nonsense' = '1')")
    finally:
        spark.conf.unset("spark.databricks.delta.allowArbitraryProperties.enabled")
    assert pydelta.load_snapshot(people).metadata.configuration == {"delta.nonsense": "1"}


def test_enabling_name_column_mapping_keeps_existing_files_readable(spark, tmp_path):
    path = str(tmp_path / "mapped")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, part STRING, s STRUCT<a: INT>) USING delta PARTITIONED BY (part)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x', named_struct('a', 10))")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    commit = _last_commit(path)
    assert commit["protocol"] == {"minReaderVersion": 2, "minWriterVersion": 5}
    assert commit["metaData"]["configuration"] == {"delta.columnMapping.mode": "name",
                                                   "delta.columnMapping.maxColumnId": "4"}
    physical = {f["name"]: f["metadata"]["delta.columnMapping.physicalName"] for f in _schema(path)["fields"]}
    assert physical == {"id": "id", "part": "part", "s": "s"}
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (`new col` STRING)")  # spaces are fine with column mapping
    spark.sql(f"INSERT INTO {t} VALUES (2, 'y', named_struct('a', 20), 'hello')")
    assert _rows(spark.sql(f"SELECT id, part, s.a, `new col` FROM {t}")) == [(1, "x", 10, None), (2, "y", 20, "hello")]
    new_col = deltalake.DeltaTable(path).schema().to_json()
    assert '"name":"new col"' in new_col and '"delta.columnMapping.id":5' in new_col
    _refused(spark, path, f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')",
             errors.DeltaAnalysisError, "DELTA_INVALID_COLUMN_NAMES_WHEN_REMOVING_COLUMN_MAPPING.*new col")
    _refused(spark, path, f"ALTER TABLE {t} UNSET TBLPROPERTIES ('delta.columnMapping.mode')",
             errors.DeltaAnalysisError, "DELTA_INVALID_COLUMN_NAMES_WHEN_REMOVING_COLUMN_MAPPING.*new col")


# ---- ADD COLUMNS -----------------------------------------------------------------------------------


def test_add_columns_with_positions_comments_and_nested_fields(spark, people):
    t = f"delta.`{people}`"
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (rank INT COMMENT 'the rank' FIRST, address.street STRING AFTER CITY, "
              "email STRING AFTER id, tags ARRAY<STRING>)")
    assert _fields(people) == [
        ("rank", "integer", True, {"comment": "the rank"}), ("id", "long", True, {}), ("email", "string", True, {}),
        ("name", "string", True, {}), ("address", "struct", True, {}), ("tags", "array", True, {})]
    assert [f["name"] for f in _schema(people)["fields"][4]["type"]["fields"]] == ["city", "street", "zip"]
    info = _info(people)
    assert info["operation"] == "ADD COLUMNS"
    assert json.loads(info["operationParameters"]["columns"]) == [
        {"column": {"name": "rank", "type": "integer", "nullable": True, "metadata": {"comment": "the rank"}},
         "position": "FIRST"},
        {"column": {"name": "address.street", "type": "string", "nullable": True, "metadata": {}},
         "position": "AFTER city"},
        {"column": {"name": "email", "type": "string", "nullable": True, "metadata": {}}, "position": "AFTER id"},
        {"column": {"name": "tags", "type": "array", "nullable": True, "metadata": {}}},
    ]
    assert _rows(spark.sql(f"SELECT rank, id, email, address.street FROM {t}")) == [
        (None, 1, None, None), (None, 2, None, None)]
    spark.sql(f"INSERT INTO {t} VALUES (7, 3, 'c@x', 'Cid', named_struct('city', 'Gouda', 'street', 'Markt', "
              "'zip', '2801'), array('a'))")
    assert _rows(spark.sql(f"SELECT rank, address.street, tags FROM {t} WHERE id = 3")) == [(7, "Markt", ["a"])]
    schema = json.loads(deltalake.DeltaTable(people).schema().to_json())
    assert [f["name"] for f in schema["fields"]] == ["rank", "id", "email", "name", "address", "tags"]
    assert schema["fields"][0]["metadata"] == {"comment": "the rank"}
    assert deltalake.DeltaTable(people).to_pyarrow_table().num_rows == 3


def test_add_columns_inside_arrays_and_maps(spark, tmp_path):
    path = str(tmp_path / "nested")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, a ARRAY<STRUCT<x: INT>>, m MAP<STRING, STRUCT<y: INT>>) USING delta")
    spark.sql(f"INSERT INTO {t} VALUES (1, array(named_struct('x', 1)), map('k', named_struct('y', 2)))")
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (a.element.z STRING, m.value.w BIGINT)")
    fields = _schema(path)["fields"]
    assert [f["name"] for f in fields[1]["type"]["elementType"]["fields"]] == ["x", "z"]
    assert [f["name"] for f in fields[2]["type"]["valueType"]["fields"]] == ["y", "w"]
    assert [c["column"]["name"] for c in json.loads(_info(path)["operationParameters"]["columns"])] == [
        "a.element.z", "m.value.w"]
    assert _rows(spark.sql(f"SELECT a[0].x, a[0].z, m['k'].y, m['k'].w FROM {t}")) == [(1, None, 2, None)]
    _refused(spark, path, f"ALTER TABLE {t} ADD COLUMNS (a.q INT)", errors.DeltaAnalysisError,
             "DELTA_ADD_COLUMN_PARENT_NOT_STRUCT.*Found array")
    _refused(spark, path, f"ALTER TABLE {t} ADD COLUMNS (id.element.q INT)", errors.DeltaAnalysisError,
             r"INVALID_FIELD_NAME.*`id` is not a struct")


def test_add_columns_refusals_leave_the_table_unchanged(spark, people):
    t = f"delta.`{people}`"
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (age INT NOT NULL)", errors.DeltaAnalysisError,
             "NOT NULL in ALTER TABLE ADD COLUMNS")
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (s STRUCT<a INT NOT NULL>)", errors.DeltaAnalysisError,
             "NOT NULL in ALTER TABLE ADD COLUMNS")
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (NAME STRING)", errors.DeltaAnalysisError,
             "FIELD_ALREADY_EXISTS")
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (address.zip INT)", errors.DeltaAnalysisError,
             "FIELD_ALREADY_EXISTS")
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (x INT, x STRING)", errors.DeltaAnalysisError,
             "FIELD_ALREADY_EXISTS")
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (name.first STRING)", errors.DeltaAnalysisError,
             "DELTA_ADD_COLUMN_PARENT_NOT_STRUCT")
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (nope.x INT)", errors.DeltaAnalysisError,
             "Couldn't find column nope")
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (x INT AFTER nope)", errors.DeltaAnalysisError,
             "Couldn't find column nope")
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (`a b` INT)", errors.DeltaAnalysisError,
             "DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES")
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (x INT DEFAULT 5)", errors.DeltaAnalysisError,
             "WRONG_COLUMN_DEFAULTS_FOR_DELTA_ALTER_TABLE_ADD_COLUMN_NOT_SUPPORTED")
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (x VARCHAR(3))", errors.DeltaNotImplementedError,
             "VARCHAR")
    _refused(spark, people, f"ALTER TABLE {t} ADD COLUMNS (ts TIMESTAMP_NTZ)", errors.DeltaAnalysisError,
             "timestampNtz")  # needs delta.feature.timestampNtz first, as in delta-spark


def test_add_columns_on_a_column_mapping_table_assigns_ids_and_physical_names(spark, tmp_path):
    path = str(tmp_path / "cm")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, s STRUCT<a: INT>) USING delta "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"INSERT INTO {t} VALUES (1, named_struct('a', 1))")
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (`x y` STRING COMMENT 'spaced', s.b INT FIRST)")
    snapshot = pydelta.load_snapshot(path)
    assert snapshot.metadata.configuration["delta.columnMapping.maxColumnId"] == "5"
    fields = _schema(path)["fields"]
    b, xy = fields[1]["type"]["fields"][0], fields[2]
    assert (b["name"], b["metadata"]["delta.columnMapping.id"]) == ("b", 4)
    assert (xy["name"], xy["metadata"]["delta.columnMapping.id"], xy["metadata"]["comment"]) == ("x y", 5, "spaced")
    assert xy["metadata"]["delta.columnMapping.physicalName"].startswith("col-")
    logged = json.loads(_info(path)["operationParameters"]["columns"])  # the statement's columns, before mapping
    assert logged[0]["column"]["metadata"] == {"comment": "spaced"}
    spark.sql(f"INSERT INTO {t} VALUES (2, named_struct('b', 3, 'a', 2), 'hi')")
    assert _rows(spark.sql(f"SELECT id, s.b, s.a, `x y` FROM {t}")) == [(1, None, 1, None), (2, 3, 2, "hi")]
    assert '"name":"x y"' in deltalake.DeltaTable(path).schema().to_json()


# ---- CHECK constraints -------------------------------------------------------------------------------


def test_add_and_drop_check_constraint(spark, people):
    t = f"delta.`{people}`"
    spark.sql(f"ALTER TABLE {t} ADD CONSTRAINT idPositive CHECK (id > 0 AND id < 1000)")
    commit = _last_commit(people)
    assert commit["metaData"]["configuration"] == {"delta.constraints.idpositive": "id > 0 AND id < 1000"}
    assert commit["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 3}
    assert commit["commitInfo"]["operation"] == "ADD CONSTRAINT"
    assert commit["commitInfo"]["operationParameters"] == {"name": "idPositive", "expr": "id > 0 AND id < 1000"}
    protocol = deltalake.DeltaTable(people).protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 3)

    _refused(spark, people, f"INSERT INTO {t} VALUES (0, 'Zero', NULL)", errors.InvariantViolationError,
             "idpositive")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'Cid', NULL)")

    spark.sql(f"ALTER TABLE {t} DROP CONSTRAINT IDPOSITIVE")
    commit = _last_commit(people)
    assert commit["metaData"]["configuration"] == {}
    assert commit["commitInfo"]["operation"] == "DROP CONSTRAINT"
    assert commit["commitInfo"]["operationParameters"] == {
        "name": "IDPOSITIVE", "expr": "id > 0 AND id < 1000", "existed": "true"}
    spark.sql(f"INSERT INTO {t} VALUES (0, 'Zero', NULL)")  # no longer enforced

    spark.sql(f"ALTER TABLE {t} DROP CONSTRAINT IF EXISTS idPositive")  # still a commit, as delta-spark
    assert _info(people)["operationParameters"] == {"name": "idPositive", "existed": "false"}
    _refused(spark, people, f"ALTER TABLE {t} DROP CONSTRAINT idPositive", errors.DeltaAnalysisError,
             "DELTA_CONSTRAINT_DOES_NOT_EXIST")
    assert deltalake.DeltaTable(people).metadata().configuration == {}


def test_add_constraint_refusals_leave_the_table_unchanged(spark, people):
    t = f"delta.`{people}`"
    _refused(spark, people, f"ALTER TABLE {t} ADD CONSTRAINT named CHECK (name IS NOT NULL)",
             errors.DeltaAnalysisError,
             rf"^\[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION\] 1 rows in delta.`{people}` violate the new CHECK "
             r"constraint \(name IS NOT NULL\)$")
    _refused(spark, people, f"ALTER TABLE {t} ADD CONSTRAINT city CHECK (address.city = 'Delft')",
             errors.DeltaAnalysisError, "1 rows")  # NULL counts as a violation
    _refused(spark, people, f"ALTER TABLE {t} ADD CONSTRAINT c CHECK (id + 1)", errors.DeltaAnalysisError,
             "DELTA_NON_BOOLEAN_CHECK_CONSTRAINT")
    _refused(spark, people, f"ALTER TABLE {t} ADD CONSTRAINT c CHECK (rand() < 2)", errors.DeltaAnalysisError,
             "DELTA_NON_DETERMINISTIC_EXPRESSION_IN_CHECK_CONSTRAINT")
    _refused(spark, people, f"ALTER TABLE {t} ADD CONSTRAINT c CHECK (max(id) > 0)", errors.DeltaAnalysisError,
             "DELTA_AGGREGATE_IN_CHECK_CONSTRAINT")
    _refused(spark, people, f"ALTER TABLE {t} ADD CONSTRAINT c CHECK (nope > 0)", errors.DeltaAnalysisError,
             "nope")
    _refused(spark, people, f"ALTER TABLE {t} ADD CHECK (id > 0)", errors.DeltaAnalysisError, "needs a name")
    _refused(spark, people, f"ALTER TABLE {t} ADD CONSTRAINT pk PRIMARY KEY (id)", errors.DeltaNotImplementedError,
             "only support CHECK constraints")
    spark.sql(f"ALTER TABLE {t} ADD CONSTRAINT c CHECK (id > 0)")
    _refused(spark, people, f"ALTER TABLE {t} ADD CONSTRAINT C CHECK (id > 1)", errors.DeltaAnalysisError,
             "(?s)DELTA_CONSTRAINT_ALREADY_EXISTS.*Old constraint:\nid > 0")


# ---- ALTER / CHANGE COLUMN -----------------------------------------------------------------------------


def test_alter_column_not_null_comment_and_position(spark, people):
    t = f"delta.`{people}`"
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id SET NOT NULL")
    info = _info(people)
    assert info["operation"] == "CHANGE COLUMN"
    assert info["operationParameters"] == {
        "column": json.dumps({"name": "id", "type": "long", "nullable": False, "metadata": {}}, separators=(",", ":"))}
    _refused(spark, people, f"INSERT INTO {t} VALUES (NULL, 'Nobody', NULL)", errors.InvariantViolationError,
             "NOT NULL constraint violated for column: id")

    spark.sql(f"ALTER TABLE {t} CHANGE COLUMN name name STRING COMMENT 'first name' FIRST")
    info = _info(people)
    assert json.loads(info["operationParameters"]["column"]) == {
        "name": "name", "type": "string", "nullable": True, "metadata": {"comment": "first name"}}
    assert info["operationParameters"]["position"] == "FIRST"

    spark.sql(f"ALTER TABLE {t} ALTER COLUMN address.zip FIRST")
    assert json.loads(_info(people)["operationParameters"]["column"])["name"] == "address.zip"

    spark.sql(f"ALTER TABLE {t} ALTER COLUMN ID DROP NOT NULL, address.city COMMENT 'town', name AFTER address")
    info = _info(people)
    assert info["operation"] == "CHANGE COLUMNS"
    assert json.loads(info["operationParameters"]["columns"]) == [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "address.city", "type": "string", "nullable": True, "metadata": {"comment": "town"}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {"comment": "first name"},
         "position": "AFTER address"},
    ]
    assert _fields(people) == [("id", "long", True, {}), ("address", "struct", True, {}),
                               ("name", "string", True, {"comment": "first name"})]
    address = _schema(people)["fields"][1]["type"]["fields"]
    assert [(f["name"], f["metadata"]) for f in address] == [("zip", {}), ("city", {"comment": "town"})]
    spark.sql(f"INSERT INTO {t} VALUES (NULL, NULL, 'Nobody')")
    assert _rows(spark.sql(f"SELECT id, address.zip, name FROM {t}")) == [
        (1, "2611", "Ann"), (2, None, None), (None, None, "Nobody")]
    schema = json.loads(deltalake.DeltaTable(people).schema().to_json())
    assert [f["name"] for f in schema["fields"]] == ["id", "address", "name"]
    assert schema["fields"][2]["metadata"] == {"comment": "first name"}


def test_set_not_null_on_nested_fields_checks_only_present_parents(spark, people):
    t = f"delta.`{people}`"
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN address.city SET NOT NULL")  # row 2 has no address at all
    assert _schema(people)["fields"][2]["type"]["fields"][0]["nullable"] is False
    spark.sql(f"INSERT INTO {t} VALUES (3, 'Cid', named_struct('city', 'Gouda', 'zip', '1'))")
    rows = spark.sql("SELECT 4L AS id, 'Dee' AS name, "
                     "named_struct('city', CAST(NULL AS STRING), 'zip', '1') AS address")
    before = _version(people)
    with pytest.raises(errors.InvariantViolationError, match=r"address\.city"):  # the NOT NULL check, per row
        rows.write.format("delta").mode("append").save(people)
    with pytest.raises(errors.InvariantViolationError, match=r"address\.city"):
        spark.sql(f"INSERT INTO {t} VALUES (4, 'Dee', named_struct('city', CAST(NULL AS STRING), 'zip', '1'))")
    assert _version(people) == before
    spark.sql(f"INSERT INTO {t} (id, name) VALUES (5, 'Eve')")  # no address at all is fine


def test_alter_column_refusals_leave_the_table_unchanged(spark, people):
    t = f"delta.`{people}`"
    _refused(spark, people, f"ALTER TABLE {t} ALTER COLUMN name SET NOT NULL", errors.DeltaAnalysisError,
             rf"^\[DELTA_NEW_NOT_NULL_VIOLATION\] 1 rows in delta.`{people}` violate the new NOT NULL constraint "
             "on name$")
    _refused(spark, people, f"ALTER TABLE {t} ALTER COLUMN id TYPE INT", errors.DeltaAnalysisError,
             "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP.*from BIGINT to INT")
    _refused(spark, people, f"ALTER TABLE {t} ALTER COLUMN nope COMMENT 'x'", errors.DeltaAnalysisError,
             "Couldn't find column nope")
    _refused(spark, people, f"ALTER TABLE {t} ALTER COLUMN id AFTER nope", errors.DeltaAnalysisError,
             "Couldn't find column nope")
    _refused(spark, people, f"ALTER TABLE {t} ALTER COLUMN id SET DEFAULT 1", errors.DeltaAnalysisError,
             "WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED")
    _refused(spark, people, f"ALTER TABLE {t} RENAME COLUMN name TO full_name", errors.DeltaAnalysisError,
             r"DELTA_UNSUPPORTED_RENAME_COLUMN.*Column Mapping")  # needs column mapping, as in delta-spark
    _refused(spark, people, f"ALTER TABLE {t} DROP COLUMN name", errors.DeltaAnalysisError,
             r"DELTA_UNSUPPORTED_DROP_COLUMN.*Column Mapping")
    _refused(spark, people, f"ALTER TABLE {t} REPLACE COLUMNS (id BIGINT)", errors.DeltaAnalysisError,
             "DELTA_UNSUPPORTED_ALTER_TABLE_REPLACE_COL_OP")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT")  # the same type is no change
    assert _info(people)["operation"] == "CHANGE COLUMN"


def test_alter_column_on_array_elements_is_refused(spark, tmp_path):
    path = str(tmp_path / "arr")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (a ARRAY<STRUCT<x: INT>>) USING delta")
    _refused(spark, path, f"ALTER TABLE {t} ALTER COLUMN a.element COMMENT 'c'", errors.DeltaAnalysisError,
             "DELTA_UNSUPPORTED_COMMENT_MAP_ARRAY")
    _refused(spark, path, f"ALTER TABLE {t} ALTER COLUMN a.element.x SET NOT NULL", errors.DeltaAnalysisError,
             "arrays or maps")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN a.element.x COMMENT 'inner'")
    assert _schema(path)["fields"][0]["type"]["elementType"]["fields"][0]["metadata"] == {"comment": "inner"}


# ---- table names, other tables, other statements -------------------------------------------------------


def test_catalog_table_names(spark):
    from pydelta import DeltaTable
    from pydelta.spark.base import catalog

    try:
        spark.sql("CREATE TABLE alter_named (id BIGINT, name STRING) USING DELTA")
        DeltaTable.create(spark).tableName("alter_built").addColumn("id", "INT").execute()
        spark.sql("INSERT INTO alter_named VALUES (1, 'a')")
        spark.sql("ALTER TABLE alter_named ADD COLUMNS (age INT)")
        spark.sql("ALTER TABLE default.alter_named SET TBLPROPERTIES ('team' = 'core')")
        spark.sql("ALTER TABLE spark_catalog.default.alter_named ALTER COLUMN age COMMENT 'years'")
        spark.sql("ALTER TABLE alter_built ADD CONSTRAINT small CHECK (id < 10)")
        named, built = (catalog.table_location(spark, n) for n in ("alter_named", "alter_built"))
        assert _fields(named)[-1] == ("age", "integer", True, {"comment": "years"})
        assert pydelta.load_snapshot(named).metadata.configuration == {"team": "core"}
        assert pydelta.load_snapshot(built).metadata.configuration == {"delta.constraints.small": "id < 10"}
        assert spark.table("alter_named").columns == ["id", "name", "age"]
        assert _rows(spark.sql("SELECT * FROM alter_named")) == [(1, "a", None)]
        with pytest.raises(errors.DeltaAnalysisError, match="1 rows in `alter_named` violate"):
            spark.sql("ALTER TABLE alter_named ADD CONSTRAINT c CHECK (age > 0)")
        with pytest.raises(errors.InvariantViolationError):
            spark.sql("INSERT INTO alter_built VALUES (10)")
        assert deltalake.DeltaTable(built).metadata().configuration == {"delta.constraints.small": "id < 10"}
    finally:
        spark.sql("DROP TABLE IF EXISTS alter_named")
        spark.sql("DROP TABLE IF EXISTS alter_built")


def test_non_delta_tables_are_left_to_spark(spark):
    try:
        spark.sql("CREATE TABLE alter_parquet (id INT) USING parquet")
        spark.sql("ALTER TABLE alter_parquet ADD COLUMNS (name STRING)")
        spark.sql("ALTER TABLE alter_parquet SET TBLPROPERTIES ('delta.whatever' = '1')")
        assert spark.table("alter_parquet").columns == ["id", "name"]
    finally:
        spark.sql("DROP TABLE IF EXISTS alter_parquet")


def test_partition_and_location_statements_are_refused(spark, people):
    t = f"delta.`{people}`"
    _refused(spark, people, f"ALTER TABLE {t} ADD PARTITION (id = 1)", errors.DeltaAnalysisError,
             "DELTA_OPERATION_NOT_ALLOWED.*ADD PARTITION")
    _refused(spark, people, f"ALTER TABLE {t} RECOVER PARTITIONS", errors.DeltaAnalysisError,
             "DELTA_OPERATION_NOT_ALLOWED")
    _refused(spark, people, f"ALTER TABLE {t} SET LOCATION '/tmp/elsewhere'", errors.DeltaAnalysisError,
             "DELTA_CANNOT_SET_LOCATION_ON_PATH_IDENTIFIER")
    with pytest.raises(errors.DeltaTableNotFoundError):
        spark.sql(f"ALTER TABLE delta.`{people}_missing` ADD COLUMNS (x INT)")


def test_spark_layer_functions_return_the_committed_version(spark, people):
    from pydelta.spark.ddl import alter, schema_edits

    version = alter.set_table_properties(spark, people, {"a": "b"})
    assert version == _version(people)
    before = _version(people)
    with pytest.raises(errors.DeltaAnalysisError, match=r"DELTA_UNSET_NON_EXISTENT_PROPERTY.*'nope'"):
        alter.unset_table_properties(spark, people, ["a", "nope"], if_exists=False)
    assert _version(people) == before
    assert alter.unset_table_properties(spark, people, ["a"], if_exists=False) == before + 1
    assert _info(people)["operationParameters"]["ifExists"] is False
    column = schema_edits.NewColumn(("address", "country"), pydelta.protocol.schema.STRING,
                                    position=schema_edits.Position())
    alter.add_columns(spark, people, [column])
    assert [f["name"] for f in _schema(people)["fields"][2]["type"]["fields"]] == ["country", "city", "zip"]
