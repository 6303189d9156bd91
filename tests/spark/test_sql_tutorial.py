"""Seed 004 (Delta Lake 101) run verbatim as SQL, statement by statement.

Each statement's result and the log it leaves on disk are checked; the final
table is read by the independent `deltalake` client too.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import deltalake
import pytest

pytestmark = pytest.mark.spark


def _commit(log: Path, version: int) -> list[dict]:
    return [json.loads(line) for line in (log / f"{version:020d}.json").read_text().splitlines()]


def _action(actions: list[dict], kind: str) -> list[dict]:
    return [a[kind] for a in actions if kind in a]


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture
def mydb(spark):
    spark.sql("DROP DATABASE IF EXISTS mydb CASCADE")
    spark.sql("CREATE DATABASE mydb")
    yield
    spark.sql("DROP DATABASE IF EXISTS mydb CASCADE")


def test_delta_lake_101_tutorial(spark, mydb):
    assert spark.sql("""CREATE TABLE mydb.employees
(
    id int,
    name string,
    birthdate date
) USING DELTA""").collect() == []
    location = Path(spark.sql("DESCRIBE DETAIL mydb.employees").first().location.removeprefix("file:"))
    log = location / "_delta_log"
    assert sorted(os.listdir(log)) == ["00000000000000000000.crc", "00000000000000000000.json"]  # as delta-spark
    v0 = _commit(log, 0)
    info = _action(v0, "commitInfo")[0]
    assert info["operation"] == "CREATE TABLE"
    assert info["operationParameters"] == {"isManaged": "true", "description": None, "partitionBy": "[]",
                                           "properties": "{}"}
    assert _action(v0, "protocol")[0] == {"minReaderVersion": 1, "minWriterVersion": 2}
    schema = json.loads(_action(v0, "metaData")[0]["schemaString"])
    assert [(f["name"], f["type"]) for f in schema["fields"]] == [
        ("id", "integer"), ("name", "string"), ("birthdate", "date")]

    spark.sql("""INSERT INTO mydb.employees
VALUES
  (1, 'John Doe', '1980-01-01'),
  (2, 'Jane Smith', '1990-05-15'),
  (3, 'Bob Johnson', '1985-12-31');""")
    v1 = _commit(log, 1)
    info = _action(v1, "commitInfo")[0]
    assert info["operation"] == "WRITE" and info["operationParameters"] == {"mode": "Append", "partitionBy": "[]"}
    assert info["readVersion"] == 0 and info["isBlindAppend"] is True
    assert info["operationMetrics"]["numOutputRows"] == "3"
    adds = _action(v1, "add")
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 3

    spark.sql("""UPDATE mydb.employees
SET id = 4
where name = 'Jane Smith'""")
    v2 = _commit(log, 2)
    info = _action(v2, "commitInfo")[0]
    assert info["operation"] == "UPDATE" and info["operationMetrics"]["numUpdatedRows"] == "1"
    assert "#" not in info["operationParameters"]["predicate"]
    assert _action(v2, "remove") and _action(v2, "add")

    spark.sql("""DELETE FROM mydb.employees
where id <3""")
    info = _action(_commit(log, 3), "commitInfo")[0]
    assert info["operation"] == "DELETE" and info["operationMetrics"]["numDeletedRows"] == "1"
    assert json.loads(info["operationParameters"]["predicate"]) == ["(id < 3)"]

    assert _rows(spark.sql("SELECT * FROM mydb.employees")) == [
        (3, "Bob Johnson", dt.date(1985, 12, 31)), (4, "Jane Smith", dt.date(1990, 5, 15))]

    history = spark.sql("DESCRIBE HISTORY mydb.employees").collect()
    assert [(r.version, r.operation) for r in history] == [
        (3, "DELETE"), (2, "UPDATE"), (1, "WRITE"), (0, "CREATE TABLE")]

    version_1 = [(1, "John Doe", dt.date(1980, 1, 1)), (2, "Jane Smith", dt.date(1990, 5, 15)),
                 (3, "Bob Johnson", dt.date(1985, 12, 31))]
    assert _rows(spark.sql("""SELECT * FROM mydb.employees
VERSION AS OF 1""")) == version_1

    restored = spark.sql("RESTORE mydb.employees TO VERSION AS OF 1;").first()
    assert restored.num_of_files_after_restore == len(adds) and restored.num_restored_files >= 1
    assert _action(_commit(log, 4), "commitInfo")[0]["operation"] == "RESTORE"
    assert _rows(spark.sql("SELECT * FROM mydb.employees")) == version_1

    # "a few more rows ... a total of 11 transactions": a checkpoint appears at version 10.
    for i in range(6):
        spark.sql(f"INSERT INTO mydb.employees VALUES ({10 + i}, 'Temp {i}', '2000-01-01')")
    assert (log / "00000000000000000010.checkpoint.parquet").exists()
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 10

    witness = deltalake.DeltaTable(str(location))
    assert witness.version() == 10
    ours = _rows(spark.sql("SELECT * FROM mydb.employees"))
    theirs = sorted(zip(*[witness.to_pyarrow_table().column(c).to_pylist() for c in ("id", "name", "birthdate")],
                        strict=True))
    assert ours == theirs and len(ours) == 9
