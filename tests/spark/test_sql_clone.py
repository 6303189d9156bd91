"""CLONE in SQL, in the forms delta-spark's documentation and grammar give.

Witnesses: delta-rs reads each clone (rows and version), and the clone's log bytes hold
the CLONE commit with delta-spark's operation parameters.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable

from pydelta.errors import DeltaAnalysisError, DeltaNotImplementedError, TableAlreadyExistsError
from pydelta.spark.sql.statements import parse_utility
from pydelta.spark.sql.utility_grammar import Clone

pytestmark = pytest.mark.spark


def _rs_ids(path: str | Path) -> list[int]:
    """delta-rs's DataFusion scan (its pyarrow dataset path mishandles a shallow clone's absolute URIs)."""
    from deltalake import QueryBuilder

    result = QueryBuilder().register("t", RsTable(str(path))).execute("SELECT id FROM t").read_all()
    return sorted(pa.table(result).column("id").to_pylist())


def _last_commit_info(path: str | Path) -> dict:
    log = sorted(Path(path, "_delta_log").glob("*.json"))[-1]
    return next(json.loads(line)["commitInfo"] for line in log.read_text().splitlines() if '"commitInfo"' in line)


@pytest.fixture
def source(spark, tmp_path):
    """A catalog table: version 0 empty, 1 ids 0-2, 2 ids 0-4."""
    name = f"clone_src_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING delta LOCATION '{tmp_path / 'src'}'")
    spark.sql(f"INSERT INTO {name} VALUES (0), (1), (2)")
    spark.sql(f"INSERT INTO {name} VALUES (3), (4)")
    return name, tmp_path / "src"


def test_grammar_forms():
    c = parse_utility("CREATE OR REPLACE TABLE db.t2 SHALLOW CLONE db.t VERSION AS OF 3 "
                      "TBLPROPERTIES ('delta.logRetentionDuration' = '30 days', a.b = 1) LOCATION '/x'")
    assert isinstance(c, Clone) and c.create and c.replace and c.version == 3
    assert c.target.parts == ("db", "t2") and c.source.parts == ("db", "t") and c.location == "/x"
    assert c.properties == (("delta.logRetentionDuration", "30 days"), ("a.b", "1"))
    r = parse_utility("REPLACE TABLE delta.`/t2` SHALLOW CLONE delta.`/t` TIMESTAMP AS OF '2024-01-01'")
    assert not r.create and r.replace and r.timestamp == "2024-01-01" and r.target.path == "/t2"
    assert parse_utility("CREATE TABLE IF NOT EXISTS t2 SHALLOW CLONE t").if_not_exists
    assert parse_utility("CREATE TABLE t2 SHALLOW CLONE parquet.`/p`").from_parquet
    assert parse_utility("CREATE TABLE t (id INT) USING delta COMMENT 'a CLONE'") is None
    assert parse_utility("CREATE TABLE t AS SELECT 'CLONE' AS x") is None


def test_shallow_clone_of_a_name_and_time_travel(spark, source, tmp_path):
    name, src = source
    t2 = f"clone_t2_{uuid.uuid4().hex[:8]}"
    metrics = spark.sql(f"CREATE TABLE {t2} SHALLOW CLONE {name}").collect()[0]
    assert metrics.source_num_of_files == len(RsTable(str(src)).file_uris()) and metrics.num_copied_files == 0
    location = spark.sql(f"DESCRIBE DETAIL {t2}").collect()[0].location.replace("file:", "")
    assert _rs_ids(location) == [0, 1, 2, 3, 4]
    info = _last_commit_info(location)
    assert info["operation"] == "CLONE" and info["operationParameters"]["sourceVersion"] in (2, "2")
    assert sorted(r.id for r in spark.table(t2).collect()) == [0, 1, 2, 3, 4]

    with pytest.raises(TableAlreadyExistsError, match="already exists"):
        spark.sql(f"CREATE TABLE {t2} SHALLOW CLONE {name}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {t2} SHALLOW CLONE {name} VERSION AS OF 1")  # no-op
    assert _rs_ids(location) == [0, 1, 2, 3, 4]

    spark.sql(f"CREATE OR REPLACE TABLE {t2} SHALLOW CLONE {name} VERSION AS OF 1")
    assert _rs_ids(location) == [0, 1, 2]
    spark.sql(f"REPLACE TABLE {t2} SHALLOW CLONE {name} VERSION AS OF 2")
    assert _rs_ids(location) == [0, 1, 2, 3, 4]

    # Cloned to a new name with no LOCATION, the table is managed (delta-spark): DROP TABLE removes its data.
    assert spark.catalog.getTable(t2).tableType == "MANAGED"
    spark.sql(f"DROP TABLE {t2}")
    assert not Path(location).exists()


def test_clone_to_path_location_and_properties(spark, source, tmp_path):
    name, src = source
    path_target = tmp_path / "by_path"
    spark.sql(f"CREATE TABLE delta.`{path_target}` SHALLOW CLONE delta.`{src}` VERSION AS OF 1 "
              "TBLPROPERTIES ('delta.appendOnly' = 'true')")
    assert _rs_ids(path_target) == [0, 1, 2]
    assert RsTable(str(path_target)).metadata().configuration["delta.appendOnly"] == "true"

    external = f"clone_ext_{uuid.uuid4().hex[:8]}"
    loc = tmp_path / "external"
    spark.sql(f"CREATE TABLE {external} SHALLOW CLONE {name} LOCATION '{loc}'")
    assert _rs_ids(loc) == [0, 1, 2, 3, 4]
    assert sorted(r.id for r in spark.table(external).collect()) == [0, 1, 2, 3, 4]


def test_clone_refusals_leave_nothing(spark, source, tmp_path):
    name, _ = source
    missing = f"clone_missing_{uuid.uuid4().hex[:8]}"
    with pytest.raises(DeltaAnalysisError, match="DELTA_CANNOT_REPLACE_MISSING_TABLE"):
        spark.sql(f"REPLACE TABLE {missing} SHALLOW CLONE {name}")
    assert not spark.catalog.tableExists(missing)
    with pytest.raises(DeltaNotImplementedError, match="Parquet"):
        spark.sql(f"CREATE TABLE {missing} SHALLOW CLONE parquet.`{tmp_path}`")
    assert not spark.catalog.tableExists(missing)
