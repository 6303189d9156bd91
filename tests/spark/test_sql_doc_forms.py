"""Every SQL form delta-spark's documentation shows, with its qualifiers and aliases.

The statements follow docs/src/content/docs/{delta-update,delta-batch,delta-utility,
optimizations-oss,delta-constraints}.mdx of delta-io/delta. Results are checked with
`deltalake` (delta-rs) reading the table, a Python model of the expected rows, or the
_delta_log JSON, never with pydelta's reader alone.
"""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pydelta import errors
from pydelta.spark.base.pyspark_compat import pyspark_before

pytestmark = pytest.mark.spark

PEOPLE = "id INT, firstName STRING, gender STRING, salary INT"
ROWS = [(1, "Ann", "F", 10), (2, "Bob", "M", 20), (3, "Cid", "M", 30)]
UPDATES = [(2, "Bobby", "M", 21), (4, "Dee", "F", 40)]
MERGED = [(1, "Ann", "F", 10), (2, "Bobby", "M", 21), (3, "Cid", "M", 30), (4, "Dee", "F", 40)]


def _witness(path: str | Path, columns: tuple[str, ...] = ("id", "firstName", "gender", "salary")) -> list[tuple]:
    """The table's rows as delta-rs reads them."""
    data = deltalake.DeltaTable(str(path)).to_pyarrow_table().select(list(columns)).to_pylist()
    return sorted(tuple(r[c] for c in columns) for r in data)


def _commits(path: str | Path) -> list[dict]:
    """commitInfo of every commit, oldest first, from the _delta_log JSON."""
    out = []
    for f in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            if '"commitInfo"' in line:
                out.append(json.loads(line)["commitInfo"])
    return out


def _last_metadata(path: str | Path) -> dict:
    """The newest metaData action in the _delta_log JSON."""
    found = {}
    for f in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            if '"metaData"' in line:
                found = json.loads(line)["metaData"]
    return found


def _commit_time_ms(path: str | Path, version: int) -> int:
    """A commit's timestamp as delta-spark's time travel sees it: its log file's mtime."""
    return int((Path(path) / "_delta_log" / f"{version:020d}.json").stat().st_mtime * 1000)


@pytest.fixture
def db(spark):
    spark.sql("CREATE DATABASE IF NOT EXISTS docforms")
    return "docforms"


@pytest.fixture
def people(spark, tmp_path, db):
    """docforms.people10m at a known location, plus the temp view people10mupdates."""
    path = str(tmp_path / "people10m")
    spark.sql("DROP TABLE IF EXISTS docforms.people10m")
    spark.sql(f"CREATE TABLE docforms.people10m ({PEOPLE}) USING DELTA LOCATION '{path}'")
    spark.sql(f"INSERT INTO docforms.people10m VALUES {_values(ROWS)}")
    spark.createDataFrame(UPDATES, PEOPLE).createOrReplaceTempView("people10mupdates")
    yield path
    spark.sql("DROP TABLE IF EXISTS docforms.people10m")
    spark.catalog.setCurrentDatabase("default")


def _values(rows: list[tuple]) -> str:
    return ", ".join("(" + ", ".join(repr(v) for v in r) + ")" for r in rows)


# ---- MERGE (delta-update.mdx) -------------------------------------------------------------

DOC_MERGE = """MERGE INTO {t}
USING people10mupdates
ON {q}.id = people10mupdates.id
WHEN MATCHED THEN
  UPDATE SET
    id = people10mupdates.id,
    firstName = people10mupdates.firstName,
    gender = people10mupdates.gender,
    salary = people10mupdates.salary
WHEN NOT MATCHED
  THEN INSERT (id, firstName, gender, salary)
  VALUES (people10mupdates.id, people10mupdates.firstName, people10mupdates.gender, people10mupdates.salary)"""


@pytest.mark.parametrize("target,qualifier", [
    ("people10m", "people10m"),
    ("docforms.people10m", "docforms.people10m"),
    ("docforms.people10m", "people10m"),
    ("spark_catalog.docforms.people10m", "docforms.people10m"),
])
def test_merge_columns_qualified_by_table_names(spark, people, target, qualifier):
    spark.catalog.setCurrentDatabase("docforms")
    spark.sql(DOC_MERGE.format(t=target, q=qualifier))
    assert _witness(people) == MERGED
    assert _commits(people)[-1]["operation"] == "MERGE"


def test_merge_path_target_qualified_by_its_identifier(spark, people):
    t = f"delta.`{people}`"
    spark.sql(DOC_MERGE.format(t=t, q=t))
    assert _witness(people) == MERGED


def test_merge_source_qualified_by_db_name(spark, people, tmp_path):
    src = str(tmp_path / "upd")
    spark.sql("DROP TABLE IF EXISTS docforms.updates")
    spark.sql(f"CREATE TABLE docforms.updates ({PEOPLE}) USING DELTA LOCATION '{src}'")
    spark.sql(f"INSERT INTO docforms.updates VALUES {_values(UPDATES)}")
    try:
        spark.sql("MERGE INTO docforms.people10m USING docforms.updates ON docforms.people10m.id = docforms.updates.id "
                  "WHEN MATCHED THEN UPDATE SET docforms.people10m.firstName = docforms.updates.firstName, "
                  "salary = updates.salary WHEN NOT MATCHED THEN INSERT *")
    finally:
        spark.sql("DROP TABLE IF EXISTS docforms.updates")
    assert _witness(people) == MERGED


def test_merge_star_clauses_and_not_matched_by_source(spark, people):
    spark.sql("CREATE OR REPLACE TEMP VIEW source AS SELECT * FROM people10mupdates")
    spark.catalog.setCurrentDatabase("docforms")
    spark.sql("""MERGE INTO people10m
    USING source
    ON source.id = people10m.id
    WHEN MATCHED THEN
      UPDATE SET *
    WHEN NOT MATCHED THEN
      INSERT *
    WHEN NOT MATCHED BY SOURCE THEN
      DELETE""")  # the docs omit THEN here, which Spark's parser (and so delta-spark) refuses
    assert _witness(people) == [(2, "Bobby", "M", 21), (4, "Dee", "F", 40)]


def test_merge_target_alias_assignments_and_by_source_update(spark, people):
    spark.sql("""MERGE INTO docforms.people10m AS target
    USING people10mupdates source
    ON source.id = target.id
    WHEN MATCHED THEN
      UPDATE SET target.salary = source.salary
    WHEN NOT MATCHED THEN
      INSERT (id, firstName, gender, salary) VALUES (source.id, source.firstName, 'X', 0)
    WHEN NOT MATCHED BY SOURCE AND target.salary >= 20 THEN
      UPDATE SET target.gender = 'inactive'""")
    assert _witness(people) == [(1, "Ann", "F", 10), (2, "Bob", "M", 21), (3, "Cid", "inactive", 30),
                                (4, "Dee", "X", 0)]


def test_merge_insert_only_dedup_with_conditions(spark, people):
    """The docs' insert-only merge for deduplication: conditions in ON and in WHEN NOT MATCHED."""
    spark.catalog.setCurrentDatabase("docforms")
    spark.sql("""MERGE INTO people10m
    USING people10mupdates
    ON people10m.id = people10mupdates.id AND people10m.salary > 0
    WHEN NOT MATCHED AND people10mupdates.salary > 30
      THEN INSERT *""")
    assert _witness(people) == [*ROWS, (4, "Dee", "F", 40)]


def test_merge_subquery_source_with_and_without_as(spark, people):
    spark.sql("MERGE INTO docforms.people10m t USING (SELECT id, salary FROM people10mupdates) AS s "
              "ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.salary = s.salary")
    spark.sql("MERGE INTO docforms.people10m AS t USING (SELECT id, 'Z' AS g FROM people10mupdates) s "
              "ON t.id = s.id WHEN MATCHED THEN UPDATE SET gender = s.g")
    assert _witness(people) == [(1, "Ann", "F", 10), (2, "Bob", "Z", 21), (3, "Cid", "M", 30)]


def test_merge_clone_doc_null_safe_condition_update_star(spark, people):
    spark.sql("CREATE OR REPLACE TEMP VIEW my_test AS SELECT * FROM people10mupdates")
    spark.sql("MERGE INTO docforms.people10m USING my_test ON my_test.id <=> people10m.id "
              "WHEN MATCHED AND my_test.id = 2 THEN UPDATE SET *")
    assert _witness(people) == [(1, "Ann", "F", 10), (2, "Bobby", "M", 21), (3, "Cid", "M", 30)]


# ---- UPDATE and DELETE (delta-update.mdx) -----------------------------------------------------


def test_update_and_delete_by_name_db_name_and_path(spark, people):
    spark.catalog.setCurrentDatabase("docforms")
    spark.sql("UPDATE people10m SET gender = 'Female' WHERE gender = 'F'")
    spark.sql("UPDATE docforms.people10m SET gender = 'Male' WHERE docforms.people10m.gender = 'M'")
    spark.sql(f"UPDATE delta.`{people}` SET salary = salary + 1 WHERE delta.`{people}`.id = 1")
    spark.sql("UPDATE docforms.people10m p SET p.salary = 0 WHERE p.id = 3")
    spark.sql("UPDATE docforms.people10m AS p SET firstName = upper(p.firstName) WHERE people10m_id_unused_ok(1)"
              if False else "UPDATE docforms.people10m AS p SET firstName = upper(p.firstName) WHERE p.id = 2")
    assert _witness(people) == [(1, "Ann", "Female", 11), (2, "BOB", "Male", 20), (3, "Cid", "Male", 0)]
    spark.sql("DELETE FROM people10m WHERE people10m.salary < 1")
    spark.sql(f"DELETE FROM delta.`{people}` WHERE firstName = 'BOB'")
    assert _witness(people) == [(1, "Ann", "Female", 11)]
    spark.sql("DELETE FROM docforms.people10m AS p WHERE p.id = 1")
    assert _witness(people) == []
    assert [c["operation"] for c in _commits(people)][-3:] == ["DELETE"] * 3


# ---- CREATE / REPLACE, reads, time travel, INSERT (delta-batch.mdx) -------------------------


def test_create_if_not_exists_replace_and_path_forms(spark, tmp_path, db):
    spark.sql("DROP TABLE IF EXISTS docforms.created")
    loc = str(tmp_path / "created")
    try:
        spark.sql(f"CREATE TABLE IF NOT EXISTS docforms.created ({PEOPLE}) USING DELTA LOCATION '{loc}'")
        spark.sql(f"CREATE TABLE IF NOT EXISTS docforms.created ({PEOPLE}) USING DELTA")  # a no-op
        spark.sql(f"INSERT INTO docforms.created VALUES {_values(ROWS)}")
        spark.sql(f"CREATE OR REPLACE TABLE docforms.created ({PEOPLE}) USING DELTA")
        assert _witness(loc) == []
        assert [c["operation"] for c in _commits(loc)] == ["CREATE TABLE", "WRITE", "CREATE OR REPLACE TABLE"]
    finally:
        spark.sql("DROP TABLE IF EXISTS docforms.created")
    path = str(tmp_path / "bypath")
    spark.sql(f"CREATE OR REPLACE TABLE delta.`{path}` ({PEOPLE}) USING DELTA")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES {_values(ROWS)}")
    assert _witness(path) == ROWS


def test_create_partitioned_location_and_partition_exists_query(spark, tmp_path, db):
    path = str(tmp_path / "parts")
    spark.sql("DROP TABLE IF EXISTS docforms.parts")
    spark.sql("DROP TABLE IF EXISTS docforms.parts_by_loc")
    try:
        spark.sql(f"CREATE TABLE docforms.parts ({PEOPLE}) USING DELTA PARTITIONED BY (gender) LOCATION '{path}'")
        spark.sql(f"INSERT INTO docforms.parts VALUES {_values(ROWS)}")
        assert deltalake.DeltaTable(path).metadata().partition_columns == ["gender"]
        spark.sql(f"CREATE TABLE docforms.parts_by_loc USING DELTA LOCATION '{path}'")  # an existing table
        got = spark.sql('SELECT COUNT(*) > 0 AS `Partition exists` FROM docforms.parts_by_loc WHERE gender = "M"')
        assert got.columns == ["Partition exists"] and got.collect()[0][0] is True
        assert sorted(tuple(r) for r in spark.sql("SELECT * FROM docforms.parts").collect()) == \
            sorted(tuple(r) for r in spark.sql(f"SELECT * FROM delta.`{path}`").collect())
    finally:
        spark.sql("DROP TABLE IF EXISTS docforms.parts_by_loc")
        spark.sql("DROP TABLE IF EXISTS docforms.parts")


def test_select_time_travel_by_timestamp_and_version(spark, people):
    from datetime import datetime

    spark.sql("DELETE FROM docforms.people10m WHERE id = 1")  # version 2
    first = _commit_time_ms(people, 1)
    stamp = datetime.fromtimestamp(first / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    old = spark.sql(f"SELECT * FROM docforms.people10m TIMESTAMP AS OF '{stamp}'")
    assert sorted(tuple(r) for r in old.collect()) == ROWS
    by_version = spark.sql(f"SELECT * FROM delta.`{people}` VERSION AS OF 1")
    assert sorted(tuple(r) for r in by_version.collect()) == ROWS
    expected = deltalake.DeltaTable(people, version=1).to_pyarrow_table().num_rows
    assert by_version.count() == expected


def test_insert_into_overwrite_replace_where_and_dynamic_overwrite(spark, people, tmp_path):
    spark.createDataFrame([(5, "Eve", "F", 50)], PEOPLE).createOrReplaceTempView("morePeople")
    spark.sql("INSERT INTO docforms.people10m SELECT * FROM morePeople")
    assert _witness(people) == [*ROWS, (5, "Eve", "F", 50)]
    spark.sql("INSERT OVERWRITE TABLE docforms.people10m SELECT * FROM morePeople")
    assert _witness(people) == [(5, "Eve", "F", 50)]
    spark.sql(f"INSERT INTO TABLE docforms.people10m VALUES {_values(ROWS)}")
    spark.createDataFrame([(2, "Ned", "M", 90)], PEOPLE).createOrReplaceTempView("replace_data")
    spark.sql("INSERT INTO TABLE docforms.people10m REPLACE WHERE id >= 2 AND id <= 3 SELECT * FROM replace_data")
    assert _commits(people)[-1]["operationParameters"]["predicate"] == json.dumps(["id >= 2 AND id <= 3"])
    assert _witness(people) == [(1, "Ann", "F", 10), (2, "Ned", "M", 90), (5, "Eve", "F", 50)]
    # dynamic partition overwrite on a partitioned copy
    path = str(tmp_path / "dyn")
    spark.sql(f"CREATE TABLE delta.`{path}` ({PEOPLE}) USING DELTA PARTITIONED BY (gender)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES {_values(ROWS)}")
    spark.sql("SET spark.sql.sources.partitionOverwriteMode=dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE TABLE delta.`{path}` SELECT * FROM morePeople")
    finally:
        spark.sql("SET spark.sql.sources.partitionOverwriteMode=static")
    assert _witness(path) == [(2, "Bob", "M", 20), (3, "Cid", "M", 30), (5, "Eve", "F", 50)]


def test_set_user_metadata_and_txn_conf(spark, people):
    spark.createDataFrame([(5, "Eve", "F", 50)], PEOPLE).createOrReplaceTempView("morePeople")
    spark.sql("SET spark.databricks.delta.commitInfo.userMetadata=overwritten-for-fixing-incorrect-data")
    try:
        spark.sql("INSERT OVERWRITE docforms.people10m SELECT * FROM morePeople")
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    assert _commits(people)[-1]["userMetadata"] == "overwritten-for-fixing-incorrect-data"
    assert _witness(people) == [(5, "Eve", "F", 50)]


def test_properties_defaults_append_only(spark, tmp_path):
    path = str(tmp_path / "ao")
    spark.sql("SET spark.databricks.delta.properties.defaults.appendOnly = true")
    try:
        spark.sql(f"CREATE TABLE delta.`{path}` ({PEOPLE}) USING DELTA")
    finally:
        spark.conf.unset("spark.databricks.delta.properties.defaults.appendOnly")
    assert deltalake.DeltaTable(path).metadata().configuration.get("delta.appendOnly") == "true"


# ---- schema changes and properties (delta-batch.mdx, delta-constraints.mdx) ----------------


def test_alter_table_columns_forms(spark, people):
    t = "docforms.people10m"
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (city STRING COMMENT 'where' AFTER firstName, info STRUCT<a: INT>)")
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (info.b STRING)")
    spark.sql(f"ALTER TABLE {t} CHANGE COLUMN city city STRING COMMENT 'the city' FIRST")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN city AFTER id")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
              "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN firstName TO first_name")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN info.a TO a1")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN gender")
    spark.sql(f"ALTER TABLE {t} DROP COLUMNS (salary, city)")
    fields = json.loads(_last_metadata(people)["schemaString"])["fields"]
    assert [f["name"] for f in fields] == ["id", "first_name", "info"]
    assert [f["name"] for f in fields[2]["type"]["fields"]] == ["a1", "b"]
    # delta-rs 1.6.6 reads a renamed camelCase column as NULL, so the rows come from the Parquet
    # footers of the files deltalake lists, through the log's physical names
    physical = fields[1]["metadata"]["delta.columnMapping.physicalName"]
    rows = []
    for uri in deltalake.DeltaTable(people).file_uris():
        data = pq.read_table(uri.removeprefix("file://"), columns=[fields[0]["metadata"][
            "delta.columnMapping.physicalName"], physical])
        rows += [tuple(r.values()) for r in data.to_pylist()]
    assert sorted(rows) == [(1, "Ann"), (2, "Bob"), (3, "Cid")]


def test_insert_with_schema_evolution_and_auto_merge(spark, people):
    spark.createDataFrame([(7, "Gus", "M", 70, "NL")], PEOPLE + ", country STRING").createOrReplaceTempView("wide")
    if pyspark_before(4, 2):  # Spark before 4.2 parses no INSERT WITH SCHEMA EVOLUTION: a clear error
        with pytest.raises(errors.DeltaNotImplementedError, match=r"needs Spark 4\.2 or newer"):
            spark.sql("INSERT WITH SCHEMA EVOLUTION INTO docforms.people10m\nSELECT * FROM wide")
        spark.table("wide").write.format("delta").mode("append").option("mergeSchema", "true") \
            .saveAsTable("docforms.people10m")
    else:
        spark.sql("INSERT WITH SCHEMA EVOLUTION INTO docforms.people10m\nSELECT * FROM wide")
    assert "country" in deltalake.DeltaTable(people).schema().to_arrow().names
    spark.createDataFrame([(8, "Hal", "M", 80, "BE", 1)], PEOPLE + ", country STRING, z INT") \
        .createOrReplaceTempView("wider")
    spark.sql("SET spark.databricks.delta.schema.autoMerge.enabled=true")
    try:
        spark.sql("INSERT INTO docforms.people10m SELECT * FROM wider")
    finally:
        spark.conf.unset("spark.databricks.delta.schema.autoMerge.enabled")
    assert _witness(people, ("id", "country", "z"))[-2:] == [(7, "NL", None), (8, "BE", 1)]


def test_set_and_show_tblproperties(spark, people):
    spark.sql("ALTER TABLE docforms.people10m SET TBLPROPERTIES ('department' = 'accounting', "
              "'delta.appendOnly' = 'true');")
    conf = deltalake.DeltaTable(people).metadata().configuration
    assert conf["department"] == "accounting" and conf["delta.appendOnly"] == "true"
    shown = {r[0]: r[1] for r in spark.sql("SHOW TBLPROPERTIES docforms.people10m;").collect()}
    assert shown["department"] == "accounting" and shown["delta.appendOnly"] == "true"
    one = spark.sql("SHOW TBLPROPERTIES docforms.people10m ('department');").collect()
    assert [tuple(r) for r in one] == [("department", "accounting")]


def test_constraints_doc_forms(spark, tmp_path, db):
    from pydelta import errors

    loc = str(tmp_path / "constrained")
    spark.sql("DROP TABLE IF EXISTS docforms.constrained")
    try:
        spark.sql(f"CREATE TABLE docforms.constrained (id INT NOT NULL, firstName STRING, middleName STRING NOT NULL, "
                  f"birthDate TIMESTAMP) USING DELTA LOCATION '{loc}';")
        spark.sql("ALTER TABLE docforms.constrained CHANGE COLUMN middleName DROP NOT NULL;")
        spark.sql("INSERT INTO docforms.constrained VALUES (1, 'A', NULL, TIMESTAMP'1950-01-01 00:00:00')")
        spark.sql("ALTER TABLE docforms.constrained ADD CONSTRAINT dateWithinRange CHECK (birthDate > '1900-01-01');")
        spark.sql("ALTER TABLE docforms.constrained ADD CONSTRAINT validIds CHECK (id > 0 and id < 99999999);")
        conf = deltalake.DeltaTable(loc).metadata().configuration
        assert conf["delta.constraints.validids"] == "id > 0 and id < 99999999"
        before = len(_commits(loc))
        with pytest.raises(Exception) as e:
            spark.sql("INSERT INTO docforms.constrained VALUES (0, 'B', 'x', TIMESTAMP'1950-01-01 00:00:00')")
        assert "DELTA_VIOLATE_CONSTRAINT" in str(e.value) or isinstance(e.value, errors.DeltaError)
        assert len(_commits(loc)) == before
        spark.sql("ALTER TABLE docforms.constrained DROP CONSTRAINT dateWithinRange;")
        assert "delta.constraints.datewithinrange" not in deltalake.DeltaTable(loc).metadata().configuration
        detail = spark.sql("DESCRIBE DETAIL docforms.constrained;").collect()[0]
        assert detail["location"].rstrip("/").endswith("constrained")
    finally:
        spark.sql("DROP TABLE IF EXISTS docforms.constrained")


# ---- utilities (delta-utility/index.mdx, optimizations-oss/index.mdx) ------------------------


def test_describe_history_and_detail_forms(spark, people):
    n = len(_commits(people))
    for stmt in (f"DESCRIBE HISTORY '{people}/'", f"DESCRIBE HISTORY delta.`{people}/`",
                 "DESCRIBE HISTORY docforms.people10m"):
        assert spark.sql(stmt).count() == n
    last = spark.sql(f"DESCRIBE HISTORY '{people}/' LIMIT 1").collect()
    assert [r["version"] for r in last] == [n - 1]
    files = len(deltalake.DeltaTable(people).file_uris())
    for stmt in (f"DESCRIBE DETAIL '{people}/'", "DESCRIBE DETAIL docforms.people10m"):
        assert spark.sql(stmt).collect()[0]["numFiles"] == files


def test_vacuum_forms(spark, people):
    spark.sql("DELETE FROM docforms.people10m WHERE id = 1")
    for stmt in ("VACUUM docforms.people10m", "VACUUM docforms.people10m LITE", f"VACUUM '{people}'",
                 f"VACUUM delta.`{people}/`", f"VACUUM delta.`{people}/` RETAIN 200 HOURS",
                 "VACUUM docforms.people10m DRY RUN"):
        spark.sql(stmt).collect()
    ops = [c["operation"] for c in _commits(people)]
    assert ops.count("VACUUM START") == ops.count("VACUUM END") >= 5
    assert _witness(people) == ROWS[1:]


def test_show_partitions_forms(spark, tmp_path, db):
    path = str(tmp_path / "events")
    spark.sql("DROP TABLE IF EXISTS docforms.eventsTable")
    try:
        spark.sql(f"CREATE TABLE docforms.eventsTable (id INT, date STRING) USING DELTA PARTITIONED BY (date) "
                  f"LOCATION '{path}'")
        spark.sql("INSERT INTO docforms.eventsTable VALUES (1, '2024-01-01'), (2, '2024-01-02')")
        expected = sorted(p["date"] for p in deltalake.DeltaTable(path).partitions())
        got = sorted(r[0] for r in spark.sql("SHOW PARTITIONS docforms.eventsTable;").collect())
        assert [g.split("=")[-1] for g in got] == expected
        one = spark.sql("SHOW PARTITIONS docforms.eventsTable PARTITION (date = '2024-01-01');").collect()
        assert [r[0].split("=")[-1] for r in one] == ["2024-01-01"]
        assert len(spark.sql(f"SHOW PARTITIONS delta.`{path}/`;").collect()) == 2
    finally:
        spark.sql("DROP TABLE IF EXISTS docforms.eventsTable")


def test_generate_manifest_doc_form(spark, people):
    spark.sql(f"GENERATE symlink_format_manifest FOR TABLE delta.`{people}`")
    listed = (Path(people) / "_symlink_format_manifest" / "manifest").read_text().split()
    want = {u.split("/")[-1] for u in deltalake.DeltaTable(people).file_uris()}
    assert {u.split("/")[-1] for u in listed} == want


def test_convert_to_delta_doc_forms(spark, tmp_path):
    plain = str(tmp_path / "plain")
    spark.createDataFrame(ROWS, PEOPLE).write.parquet(plain)
    spark.sql(f"CONVERT TO DELTA parquet.`{plain}` NO STATISTICS")
    assert _witness(plain) == ROWS
    parted = str(tmp_path / "parted")
    spark.createDataFrame([(1, 10, 1), (2, 20, 2)], "v INT, part INT, part2 INT").write \
        .partitionBy("part", "part2").parquet(parted)
    spark.sql(f"CONVERT TO DELTA parquet.`{parted}` NO STATISTICS PARTITIONED BY (part int, part2 int)")
    assert _witness(parted, ("v", "part", "part2")) == [(1, 10, 1), (2, 20, 2)]
    assert deltalake.DeltaTable(parted).metadata().partition_columns == ["part", "part2"]


def test_restore_doc_forms(spark, people):
    from datetime import datetime

    spark.sql("DELETE FROM docforms.people10m WHERE id = 1")
    spark.sql("RESTORE TABLE docforms.people10m TO VERSION AS OF 1")
    assert _witness(people) == ROWS
    spark.sql("DELETE FROM docforms.people10m WHERE id = 2")
    stamp = datetime.fromtimestamp(_commit_time_ms(people, 3) / 1000, UTC).isoformat()
    spark.sql(f"RESTORE TABLE delta.`{people}/` TO TIMESTAMP AS OF '{stamp}'")
    assert _witness(people) == ROWS
    assert [c["operation"] for c in _commits(people)][-1] == "RESTORE"


def test_optimize_doc_forms(spark, tmp_path, db):
    path = str(tmp_path / "opt")
    spark.sql("DROP TABLE IF EXISTS docforms.events")
    try:
        spark.sql(f"CREATE TABLE docforms.events (eventType STRING, date STRING) USING DELTA PARTITIONED BY (date) "
                  f"LOCATION '{path}'")
        for i in range(3):
            spark.sql(f"INSERT INTO docforms.events VALUES ('e{i}', '2021-11-18'), ('f{i}', '2017-01-02')")
        spark.sql("OPTIMIZE docforms.events WHERE date >= '2017-01-01' AND date < '2018-01-01'")
        by_part = {}
        for f in pa.table(deltalake.DeltaTable(path).get_add_actions(flatten=True)).to_pylist():
            by_part.setdefault(f["partition.date"], []).append(f)
        assert len(by_part["2017-01-02"]) == 1 and len(by_part["2021-11-18"]) == 3
        spark.sql("OPTIMIZE docforms.events WHERE date = '2021-11-18' ZORDER BY (eventType)")
        assert len(deltalake.DeltaTable(path).file_uris()) == 2
        spark.sql("INSERT INTO docforms.events VALUES ('g', '2017-01-02')")
        spark.sql(f"OPTIMIZE '{path}'")
        spark.sql("OPTIMIZE docforms.events;")
        spark.sql(f"OPTIMIZE delta.`{path}`;")
        spark.sql("OPTIMIZE docforms.events ZORDER BY (eventType)")
        assert len(deltalake.DeltaTable(path).file_uris()) == 2
        ops = [c["operation"] for c in _commits(path)]
        assert ops.count("OPTIMIZE") >= 3
    finally:
        spark.sql("DROP TABLE IF EXISTS docforms.events")


def test_vacuum_lite_deletes_only_files_the_log_names(spark, people):
    """LITE removes a tombstoned data file but leaves a file the log never named; FULL removes both."""
    spark.sql("DELETE FROM docforms.people10m WHERE id = 1")  # rewrites or removes the file holding id 1
    removed = [json.loads(line)["remove"]["path"] for f in sorted((Path(people) / "_delta_log").glob("*.json"))
               for line in f.read_text().splitlines() if '"remove"' in line]
    assert removed and all((Path(people) / p).exists() for p in removed)
    stray = Path(people) / "stray.parquet"
    stray.write_bytes(b"not in the log")
    spark.sql("SET spark.databricks.delta.retentionDurationCheck.enabled=false")
    try:
        dry = {r[0] for r in spark.sql("VACUUM docforms.people10m LITE RETAIN 0 HOURS DRY RUN").collect()}
        assert {d.split("/")[-1] for d in dry} == {p.split("/")[-1] for p in removed}
        spark.sql("VACUUM docforms.people10m LITE RETAIN 0 HOURS")
        assert not any((Path(people) / p).exists() for p in removed) and stray.exists()
        spark.sql("VACUUM docforms.people10m FULL RETAIN 0 HOURS")
        assert not stray.exists()
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert _witness(people) == ROWS[1:]
