"""delta-spark's python/delta/tables.py, method by method: argument checks, exception classes
and messages; the session's commitInfo.userMetadata on every commit; `@` time travel in paths."""

from __future__ import annotations

import glob
import json
import os
from datetime import UTC, datetime

import deltalake
import pytest
from pyspark.errors import AnalysisException, IllegalArgumentException, UnsupportedOperationException
from pyspark.sql.types import IntegerType, LongType

from pydelta import errors as E
from pydelta.tables import DeltaTable, IdentityGenerator

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


def _table(spark, tmp_path, name: str = "t", versions: int = 1) -> tuple[str, DeltaTable]:
    path = str(tmp_path / name)
    spark.range(3).write.format("delta").save(path)
    for i in range(1, versions):
        spark.range(10 * i, 10 * i + 2).write.format("delta").mode("append").save(path)
    return path, DeltaTable.forPath(spark, path)


# ---- DeltaTable ------------------------------------------------------------------------


def test_for_name_of_a_missing_table(spark):
    spark.sql("DROP TABLE IF EXISTS walk_no_table")
    with pytest.raises(AnalysisException) as info:
        DeltaTable.forName(spark, "walk_no_table")
    assert info.value.getCondition() == "DELTA_MISSING_DELTA_TABLE"
    assert str(info.value) == "[DELTA_MISSING_DELTA_TABLE] `walk_no_table` is not a Delta table."
    with pytest.raises(AnalysisException) as info:
        DeltaTable.forName(spark, "default.walk_no_table")
    assert str(info.value) == "[DELTA_MISSING_DELTA_TABLE] `default`.`walk_no_table` is not a Delta table."


def test_for_path_hadoop_conf_keys(spark, tmp_path):
    from pyspark.errors import IllegalArgumentException

    path, _ = _table(spark, tmp_path)
    with pytest.raises(IllegalArgumentException) as info:
        DeltaTable.forPath(spark, path, {"spark.x": "1"})
    assert info.value.getCondition() == "DELTA_TABLE_FOR_PATH_UNSUPPORTED_HADOOP_CONF"
    assert str(info.value) == ("[DELTA_TABLE_FOR_PATH_UNSUPPORTED_HADOOP_CONF] Currently DeltaTable.forPath only "
                               "supports hadoop configuration keys starting with [fs.,dfs.] but got spark.x -> 1")
    assert DeltaTable.forPath(spark, path, {"fs.s3a.x": "1"}).toDF().count() == 3


def test_add_feature_support_checks_the_name_type(spark, tmp_path):
    _, t = _table(spark, tmp_path)
    with pytest.raises(ValueError) as info:
        t.addFeatureSupport(5)
    assert str(info.value) == "featureName needs to be a string but got '<class 'int'>'."
    with pytest.raises(ValueError) as info:
        t.addFeatureSupport(None)
    assert str(info.value) == "featureName needs to be a string but got '<class 'NoneType'>'."


def test_restore_to_timestamp_not_a_timestamp(spark, tmp_path):
    _, t = _table(spark, tmp_path, versions=2)
    with pytest.raises(AnalysisException) as info:
        t.restoreToTimestamp("not a time")
    assert info.value.getCondition() == "DELTA_TIMESTAMP_INVALID"
    assert str(info.value) == ("[DELTA_TIMESTAMP_INVALID] The provided timestamp ('not a time') cannot be "
                               "converted to a valid timestamp.")
    with pytest.raises(ValueError) as bad_type:
        t.restoreToTimestamp(5)
    assert str(bad_type.value) == "timestamp needs to be a string but got '<class 'int'>'."


def test_clone_at_timestamp_not_a_timestamp(spark, tmp_path):
    _, t = _table(spark, tmp_path)
    with pytest.raises(AnalysisException) as info:
        t.cloneAtTimestamp("yesterday", str(tmp_path / "c"))
    assert str(info.value) == ("[DELTA_TIMESTAMP_INVALID] The provided timestamp ('yesterday') cannot be "
                               "converted to a valid timestamp.")


# ---- DeltaMergeBuilder ------------------------------------------------------------------------------


def test_merge_builder_mapping_checks(spark, tmp_path):
    _, t = _table(spark, tmp_path)
    m = t.alias("t").merge(spark.range(2).alias("s"), "t.id = s.id")
    with pytest.raises(ValueError) as none:
        m.whenMatchedUpdate(set=None)
    assert str(none.value) == "'set' in whenMatchedUpdate cannot be None"
    with pytest.raises(TypeError) as key:
        m.whenNotMatchedInsert(values={1: "s.id"})
    assert str(key.value) == ("Keys of dict in 'values' in whenNotMatchedInsert must contain only strings with "
                              "column names, found '1' of type '<class 'int'>")
    with pytest.raises(TypeError) as value:
        m.whenNotMatchedBySourceUpdate(set={"id": 5})
    assert str(value.value) == ("Values of dict in 'set' in whenNotMatchedBySourceUpdate must contain only Spark SQL "
                                "Columns or strings (expressions in SQL syntax) as values, found '5' of type "
                                "'<class 'int'>'")
    with pytest.raises(TypeError) as cond:
        m.whenMatchedDelete(condition=5)
    assert str(cond.value) == ("'condition' must be a Spark SQL Column or a string (expression in SQL syntax), "
                               "found to be of type <class 'int'>")


# ---- DeltaTableBuilder ---------------------------------------------------------------------


@pytest.mark.parametrize("data_type, shown", [("INT", "integer"), (IntegerType(), "integer"),
                                              ("STRING", "string"), ("DECIMAL(10,2)", "decimal(10,2)")])
def test_identity_column_must_be_bigint(spark, tmp_path, data_type, shown):
    builder = DeltaTable.create(spark).location(str(tmp_path / "ident"))
    with pytest.raises(UnsupportedOperationException) as info:  # raised by addColumn (DeltaColumnBuilder.build)
        builder.addColumn("id", data_type, generatedAlwaysAs=IdentityGenerator())
    assert info.value.getCondition() == "DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE"
    assert str(info.value) == (f"[DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE] DataType {shown} is not "
                               "supported for IDENTITY columns.")
    with pytest.raises(UnsupportedOperationException):
        builder.addColumn("id", data_type, generatedByDefaultAs=IdentityGenerator(1, 2))
    builder.addColumn("id", LongType(), generatedByDefaultAs=IdentityGenerator(1, 2))  # BIGINT is fine


def test_identity_both_generators_value_error_args(spark):
    with pytest.raises(ValueError) as info:
        DeltaTable.create(spark).addColumn("id", "BIGINT", generatedAlwaysAs=IdentityGenerator(),
                                           generatedByDefaultAs=IdentityGenerator())
    assert info.value.args == ("generatedByDefaultAs and generatedAlwaysAs cannot both be set.",
                               [IdentityGenerator(), IdentityGenerator()])


def test_builder_without_name_or_location(spark):
    with pytest.raises(AnalysisException) as info:
        DeltaTable.create(spark).addColumn("id", "INT").execute()
    assert info.value.getCondition() == "DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION"
    assert str(info.value) == ("[DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION] Table name or location has to "
                               "be specified.")


def test_replace_a_missing_table_by_path(spark, tmp_path):
    path = str(tmp_path / "never")
    with pytest.raises(AnalysisException) as info:
        DeltaTable.replace(spark).location(path).addColumn("id", "INT").execute()
    assert info.value.getCondition() == "DELTA_CANNOT_REPLACE_MISSING_TABLE"
    assert str(info.value) == (f"[DELTA_CANNOT_REPLACE_MISSING_TABLE] Table delta.`{path}` cannot be replaced "
                               "as it does not exist. Use CREATE OR REPLACE TABLE to create the table.")
    assert not os.path.exists(path)


def test_replace_a_missing_table_by_name(spark):
    spark.sql("DROP TABLE IF EXISTS walk_never_made")
    with pytest.raises(AnalysisException) as info:
        DeltaTable.replace(spark).tableName("walk_never_made").addColumn("id", "INT").execute()
    assert info.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"  # Spark's AtomicReplaceTableExec
    assert str(info.value).startswith("[TABLE_OR_VIEW_NOT_FOUND] The table or view `default`.`walk_never_made` "
                                      "cannot be found. Verify the spelling and correctness of the schema and catalog.")


# ---- commitInfo.userMetadata from the session conf ---------------------------------------------


def _last_commit_info(path: str) -> dict:
    last = sorted(glob.glob(os.path.join(path, "_delta_log", "*.json")))[-1]
    with open(last, "rb") as f:
        actions = [json.loads(line) for line in f.read().splitlines() if line.strip()]
    return next(a["commitInfo"] for a in actions if "commitInfo" in a)


def _commit_infos(path: str) -> list[dict]:
    out = []
    for name in sorted(glob.glob(os.path.join(path, "_delta_log", "*.json"))):
        with open(name, "rb") as f:
            out += [json.loads(line)["commitInfo"] for line in f.read().splitlines()
                    if line.strip() and "commitInfo" in json.loads(line)]
    return out


def test_session_user_metadata_reaches_every_commit(spark, tmp_path):
    from pyspark.sql import functions as F

    path, t = _table(spark, tmp_path, versions=2)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    spark.conf.set(USER_METADATA_CONF, "walk-meta")
    try:
        ops = {
            "DELETE": lambda: t.delete("id = 0"),
            "UPDATE": lambda: t.update("id = 1", {"id": F.lit(100)}),
            "MERGE": lambda: t.alias("t").merge(spark.range(2).alias("s"), "t.id = s.id")
                                         .whenNotMatchedInsertAll().execute(),
            "OPTIMIZE": lambda: t.optimize().executeCompaction(),
            "RESTORE": lambda: t.restoreToVersion(0),
            "UPGRADE PROTOCOL": lambda: t.upgradeTableProtocol(1, 3),
            "ADD FEATURE": lambda: t.addFeatureSupport("deletionVectors"),
            "DROP FEATURE": lambda: t.dropFeatureSupport("deletionVectors"),
            "SET TBLPROPERTIES": lambda: spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('k' = 'v')"),
            "SQL DELETE": lambda: spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2"),
        }
        for op, run in ops.items():
            before = len(_commit_infos(path))
            run()
            infos = _commit_infos(path)
            assert len(infos) > before, op
            assert all(ci.get("userMetadata") == "walk-meta" for ci in infos[before:]), (op, infos[before:])
        before = len(_commit_infos(path))
        t.vacuum(0)  # VACUUM START and VACUUM END
        assert [ci["operation"] for ci in _commit_infos(path)[before:]] == ["VACUUM START", "VACUUM END"]
        assert all(ci["userMetadata"] == "walk-meta" for ci in _commit_infos(path)[before:])
        clone = str(tmp_path / "clone")
        t.clone(clone, isShallow=True)
        assert _last_commit_info(clone)["userMetadata"] == "walk-meta"
        made = str(tmp_path / "made")
        DeltaTable.create(spark).location(made).addColumn("id", "BIGINT").execute()
        DeltaTable.createOrReplace(spark).location(made).addColumn("id", "BIGINT").execute()
        assert [ci["userMetadata"] for ci in _commit_infos(made)] == ["walk-meta", "walk-meta"]
        spark.range(1).write.format("delta").mode("append").option("userMetadata", "explicit").save(made)
        assert _last_commit_info(made)["userMetadata"] == "explicit"  # the write option wins
    finally:
        spark.conf.unset(USER_METADATA_CONF)
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    t.delete()  # rows to delete: a DML that changes nothing commits nothing
    assert "userMetadata" not in _last_commit_info(path)


# ---- `@` time travel in paths --------------------------------------------------------------------


def _rows(df) -> list:
    return sorted(r[0] for r in df.collect())


def _version_rows(path: str, version: int) -> list:
    return sorted(deltalake.DeltaTable(path, version=version).to_pyarrow_table().column("id").to_pylist())


def test_at_version_in_a_load_path(spark, tmp_path):
    path, _ = _table(spark, tmp_path, versions=3)
    for v in range(3):
        assert _rows(spark.read.format("delta").load(f"{path}@v{v}")) == _version_rows(path, v)
    assert _rows(spark.read.format("delta").load(f"{path}@V1")) == _version_rows(path, 1)
    assert _rows(spark.sql(f"SELECT id FROM delta.`{path}@v1`")) == _version_rows(path, 1)
    with pytest.raises(AnalysisException) as info:
        spark.read.format("delta").option("versionAsOf", 0).load(f"{path}@v1")
    assert str(info.value) == ("[DELTA_UNSUPPORTED_TIME_TRAVEL_MULTIPLE_FORMATS] Cannot specify time travel in "
                               "multiple formats.")


def test_at_timestamp_in_a_load_path(spark, tmp_path):
    from zoneinfo import ZoneInfo

    path, _ = _table(spark, tmp_path, versions=3)
    zone = ZoneInfo(spark.conf.get("spark.sql.session.timeZone"))
    for v in range(3):  # @yyyyMMddHHmmssSSS in the session time zone; the commit time is the file's mtime
        mtime_ms = os.stat(os.path.join(path, "_delta_log", f"{v:020d}.json")).st_mtime_ns // 1_000_000
        ts = datetime.fromtimestamp(mtime_ms / 1000, tz=UTC).astimezone(zone)
        text = ts.strftime("%Y%m%d%H%M%S") + f"{ts.microsecond // 1000:03d}"
        assert _rows(spark.read.format("delta").load(f"{path}@{text}")) == _version_rows(path, v)


def test_at_syntax_off_and_real_directories(spark, tmp_path):
    path, _ = _table(spark, tmp_path, versions=2)
    literal = str(tmp_path / "dir@v0")
    spark.range(5).write.format("delta").save(literal)  # a directory really named ...@v0: no time travel
    assert _rows(spark.read.format("delta").load(literal)) == list(range(5))
    spark.conf.set("spark.databricks.delta.timeTravel.resolveOnIdentifier.enabled", "false")
    try:
        with pytest.raises(AnalysisException):
            spark.read.format("delta").load(f"{path}@v0")
    finally:
        spark.conf.unset("spark.databricks.delta.timeTravel.resolveOnIdentifier.enabled")


def test_for_path_does_not_time_travel(spark, tmp_path):
    path, _ = _table(spark, tmp_path, versions=2)
    with pytest.raises(AnalysisException) as info:  # delta-spark: DeltaTableUtils.isDeltaTable(new Path(path))
        DeltaTable.forPath(spark, f"{path}@v0")
    assert str(info.value) == f"[DELTA_MISSING_DELTA_TABLE] `{path}@v0` is not a Delta table."


# ---- the rest of the walk: history, vacuum, optimize, convertToDelta, builders, names ----------


def test_history_limit_below_one_lists_nothing(spark, tmp_path):
    _, table = _table(spark, tmp_path, versions=3)
    assert [r.version for r in table.history(2).collect()] == [2, 1]
    assert table.history(0).collect() == [] and table.history(-1).collect() == []
    assert table.history(0).columns == table.history().columns  # delta-spark: the same empty history frame


def test_vacuum_negative_retention(spark, tmp_path):
    path, table = _table(spark, tmp_path)
    with pytest.raises(IllegalArgumentException) as info:
        table.vacuum(-1)
    assert info.value.getCondition() == "DELTA_VACUUM_RETENTION_PERIOD_NEGATIVE"
    assert "Retention period for Vacuum can't be less than 0 hours." in str(info.value)
    assert len(glob.glob(os.path.join(path, "_delta_log", "*.json"))) == 1  # nothing committed


def test_optimize_builder_argument_types(spark, tmp_path):
    _, table = _table(spark, tmp_path)
    with pytest.raises(E.DeltaIllegalArgumentError, match="partition filter"):
        table.optimize().where(5)
    with pytest.raises(TypeError, match=r"Z-order column must be str\. Found 5 with type <class 'int'>"):
        table.optimize().executeZOrderBy(5)


def test_convert_to_delta_arguments(spark, tmp_path):
    parquet = str(tmp_path / "pq")
    spark.range(4).selectExpr("id", "id % 2 AS part").write.partitionBy("part").parquet(parquet)
    with pytest.raises(AnalysisException, match="Expecting 0 partition column"):
        DeltaTable.convertToDelta(spark, f"parquet.`{parquet}`")
    with pytest.raises(E.DeltaIllegalArgumentError, match="partitionSchema must be a DDL string or a StructType"):
        DeltaTable.convertToDelta(spark, f"parquet.`{parquet}`", 5)
    with pytest.raises(AnalysisException, match="only supports parquet"):
        DeltaTable.convertToDelta(spark, f"csv.`{parquet}`")
    assert not os.path.exists(os.path.join(parquet, "_delta_log"))
    converted = DeltaTable.convertToDelta(spark, f"parquet.`{parquet}`", "part bigint")
    assert sorted(r.id for r in converted.toDF().collect()) == [0, 1, 2, 3]
    again = DeltaTable.convertToDelta(spark, f"parquet.`{parquet}`", "part bigint")  # already Delta: no new commit
    assert again.history().count() == 1
    assert deltalake.DeltaTable(parquet).metadata().partition_columns == ["part"]


def test_builders_use_the_active_session(spark, tmp_path):
    path = str(tmp_path / "active")
    table = DeltaTable.create().location(path).addColumn("x", "INT").execute()
    assert table.toDF().columns == ["x"]
    DeltaTable.createIfNotExists().location(path).addColumn("x", "INT").execute()
    DeltaTable.createOrReplace().location(path).addColumn("y", "STRING").execute()
    DeltaTable.replace().location(path).addColumn("z", "LONG").execute()
    assert deltalake.DeltaTable(path).schema().fields[0].name == "z"
    assert [r.operation for r in table.history().collect()] == [
        "REPLACE TABLE", "CREATE OR REPLACE TABLE", "CREATE TABLE"]


def test_naming_an_existing_table_checks_its_definition(spark, tmp_path):
    path = str(tmp_path / "existing")
    spark.range(3).selectExpr("id", "id % 2 AS p").write.format("delta").partitionBy("p").save(path)
    for name in ("walk_same", "walk_schema", "walk_parts", "walk_props", "walk_builder"):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    with pytest.raises(AnalysisException) as info:
        spark.sql(f"CREATE TABLE walk_schema (id INT, q STRING) USING delta LOCATION '{path}'")
    assert info.value.getCondition() == "DELTA_CREATE_TABLE_SCHEME_MISMATCH"
    text = str(info.value)
    assert "- Specified schema is missing field(s): p" in text
    assert "- Specified schema has additional field(s): q" in text
    assert "- Specified type for id is different from existing schema:\n  Specified: integer\n  Existing:  long" in text
    with pytest.raises(AnalysisException) as info:
        spark.sql(f"CREATE TABLE walk_parts (id BIGINT, p BIGINT) USING delta LOCATION '{path}'")
    assert info.value.getCondition() == "DELTA_CREATE_TABLE_WITH_DIFFERENT_PARTITIONING"
    with pytest.raises(AnalysisException) as info:
        spark.sql(f"CREATE TABLE walk_props USING delta LOCATION '{path}' TBLPROPERTIES ('delta.appendOnly' = 'true')")
    assert info.value.getCondition() == "DELTA_CREATE_TABLE_WITH_DIFFERENT_PROPERTY"
    assert not any(spark.catalog.tableExists(n) for n in ("walk_schema", "walk_parts", "walk_props"))
    spark.sql(f"CREATE TABLE walk_same (id BIGINT, p BIGINT) USING delta PARTITIONED BY (p) LOCATION '{path}'")
    DeltaTable.create(spark).tableName("walk_builder").location(path) \
        .addColumn("id", "BIGINT").addColumn("p", "BIGINT").partitionedBy("p").execute()
    try:
        assert spark.table("walk_same").count() == 3 and spark.table("walk_builder").count() == 3
        assert len(glob.glob(os.path.join(path, "_delta_log", "*.json"))) == 1  # naming commits nothing
        with pytest.raises(AnalysisException) as info:
            spark.sql(f"CREATE TABLE walk_same (id BIGINT, p BIGINT) USING delta PARTITIONED BY (p) LOCATION '{path}'")
        assert info.value.getCondition() == "TABLE_OR_VIEW_ALREADY_EXISTS"
    finally:
        spark.sql("DROP TABLE IF EXISTS walk_same")
        spark.sql("DROP TABLE IF EXISTS walk_builder")
    assert os.path.exists(path)  # external: dropping the names keeps the data


def test_at_syntax_on_table_names(spark, tmp_path):
    path, _ = _table(spark, tmp_path, versions=2)
    spark.sql("DROP TABLE IF EXISTS walk_at")
    spark.sql(f"CREATE TABLE walk_at USING delta LOCATION '{path}'")
    try:
        assert spark.table("walk_at@v0").count() == 3
        assert spark.read.table("walk_at@v1").count() == 5
        assert spark.sql("SELECT count(*) AS n FROM walk_at@v0").collect()[0].n == 3
    finally:
        spark.sql("DROP TABLE IF EXISTS walk_at")
