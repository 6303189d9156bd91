"""CONVERT TO DELTA of Parquet tables in Spark's catalog (Hive metastore on Derby), as delta-spark does it."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pydelta import DeltaTable
from pydelta.errors import DeltaAnalysisError, DeltaTableNotFoundError
from pydelta.spark.base.catalog import lookup


def _name(prefix: str = "cvt") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@contextmanager
def _dropped(spark: Any, *names: str, views: tuple[str, ...] = ()) -> Iterator[None]:
    """Drop the test's tables and views whatever happens."""
    try:
        yield
    finally:
        for v in views:
            spark.sql(f"DROP VIEW IF EXISTS {v}")
        for n in names:
            spark.sql(f"DROP TABLE IF EXISTS {n}")


def _log(location: str, version: int = 0) -> list[dict]:
    with open(os.path.join(location, "_delta_log", f"{version:020d}.json")) as f:
        return [json.loads(line) for line in f]


def _action(actions: list[dict], kind: str) -> dict:
    return next(a[kind] for a in actions if kind in a)


def _adds(actions: list[dict]) -> list[dict]:
    return [a["add"] for a in actions if "add" in a]


def _describe(spark: Any, name: str) -> dict[str, str]:
    return {r["col_name"]: r["data_type"] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()}


def _rs_rows(location: str) -> int:
    from deltalake import DeltaTable as RsTable

    return RsTable(location).to_pyarrow_table().num_rows


def _assert_still_parquet(spark: Any, name: str) -> None:
    entry = lookup(spark, name)
    assert entry is not None and entry.provider == "parquet"
    assert not os.path.exists(os.path.join(entry.location, "_delta_log", f"{0:020d}.json"))


def test_sql_converts_partitioned_managed_table(spark):
    t = _name()
    with _dropped(spark, t):
        (spark.range(8).selectExpr("id", "CAST(id % 2 AS STRING) AS s")
         .write.format("parquet").partitionBy("s").saveAsTable(t))
        before = lookup(spark, t)
        assert before.provider == "parquet" and before.managed

        spark.sql(f"CONVERT TO DELTA {t}")

        actions = _log(before.location)
        info = _action(actions, "commitInfo")
        assert info["operation"] == "CONVERT"
        assert info["operationParameters"] == {
            "numFiles": len(_adds(actions)), "partitionedBy": "[]", "collectStats": True,
            "catalogTable": f"`spark_catalog`.`default`.`{t}`", "sourceFormat": "parquet",
        }
        meta = _action(actions, "metaData")
        assert meta["partitionColumns"] == ["s"] and meta["configuration"] == {}
        fields = {f["name"]: f["type"] for f in json.loads(meta["schemaString"])["fields"]}
        assert fields == {"id": "long", "s": "string"}  # the catalog's type, though the values look numeric
        assert all("stats" in a and a["partitionValues"]["s"] in ("0", "1") for a in _adds(actions))

        after = lookup(spark, t)  # same location, still managed, now delta
        assert (after.provider, after.location, after.managed) == ("delta", before.location, True)
        described = _describe(spark, t)
        assert described["Provider"] == "delta" and described["Type"] == "MANAGED"
        assert spark.table(t).count() == 8
        assert spark.sql(f"SELECT count(*) FROM {t} WHERE s = '1'").first()[0] == 4
        detail = spark.sql(f"DESCRIBE DETAIL {t}").first()
        assert detail["format"] == "delta" and detail["partitionColumns"] == ["s"]
        assert _rs_rows(after.location) == 8

        spark.sql(f"CONVERT TO DELTA {t}")  # a Delta table already: nothing happens
        DeltaTable.convertToDelta(spark, t)
        assert [r["version"] for r in DeltaTable.forName(spark, t).history().collect()] == [0]

        spark.sql(f"INSERT INTO {t} VALUES (100, '1')")  # the name now writes the Delta table
        assert spark.table(t).count() == 9 and _rs_rows(after.location) == 9


def test_api_converts_table_with_properties_in_a_database(spark, tmp_path):
    db, t = _name("cvtdb"), _name()
    name = f"{db}.{t}"
    spark.sql(f"CREATE DATABASE {db}")
    try:
        with _dropped(spark, name):
            location = str(tmp_path / "ext")
            spark.sql(f"CREATE TABLE {name} (a INT, b STRING) USING parquet LOCATION '{location}' "
                      "TBLPROPERTIES ('x' = '1', 'delta.appendOnly' = 'true')")
            spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b'), (3, NULL)")

            table = DeltaTable.convertToDelta(spark, name)

            assert table.toDF().count() == 3
            actions = _log(location)
            assert _action(actions, "metaData")["configuration"] == {"x": "1", "delta.appendOnly": "true"}
            params = _action(actions, "commitInfo")["operationParameters"]
            assert params["catalogTable"] == f"`spark_catalog`.`{db}`.`{t}`" and params["partitionedBy"] == "[]"
            entry = lookup(spark, name)
            assert (entry.provider, entry.managed, entry.location) == ("delta", False, location)
            assert DeltaTable.forName(spark, name).detail().first()["properties"]["x"] == "1"
            assert spark.sql(f"SELECT count(*) FROM {name} WHERE b IS NULL").first()[0] == 1
            assert _rs_rows(location) == 3
        assert os.path.isdir(os.path.join(location, "_delta_log"))  # an external table's files outlive DROP
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def test_no_statistics_and_matching_partitioned_by(spark):
    t1, t2 = _name(), _name()
    with _dropped(spark, t1, t2):
        df = spark.range(6).selectExpr("id", "CAST(id % 3 AS INT) AS k")
        df.write.format("parquet").saveAsTable(t1)
        df.write.format("parquet").partitionBy("k").saveAsTable(t2)

        spark.sql(f"CONVERT TO DELTA {t1} NO STATISTICS")
        actions = _log(lookup(spark, t1).location)
        assert _adds(actions) and all("stats" not in a for a in _adds(actions))
        assert _action(actions, "commitInfo")["operationParameters"]["collectStats"] is False
        assert spark.table(t1).count() == 6

        spark.sql(f"CONVERT TO DELTA {t2} NO STATISTICS PARTITIONED BY (k INT)")
        actions = _log(lookup(spark, t2).location)
        assert _action(actions, "commitInfo")["operationParameters"]["partitionedBy"] == '["k"]'
        assert _action(actions, "metaData")["partitionColumns"] == ["k"]
        assert spark.sql(f"SELECT count(*) FROM {t2} WHERE k = 2").first()[0] == 2
        assert _rs_rows(lookup(spark, t2).location) == 6


def test_hive_parquet_serde_table(spark):
    t = _name()
    with _dropped(spark, t):
        spark.sql(f"CREATE TABLE {t} (a INT) PARTITIONED BY (p STRING) STORED AS PARQUET")  # a Hive table: Spark's
        spark.sql(f"INSERT INTO {t} VALUES (1, 'x'), (2, 'y'), (3, 'y')")
        assert lookup(spark, t).provider == "hive"

        spark.sql(f"CONVERT TO DELTA {t}")

        location = lookup(spark, t).location
        meta = _action(_log(location), "metaData")
        assert meta["partitionColumns"] == ["p"]
        assert "transient_lastDdlTime" not in meta["configuration"]
        assert lookup(spark, t).provider == "delta"
        assert spark.sql(f"SELECT count(*) FROM {t} WHERE p = 'y'").first()[0] == 2
        assert _rs_rows(location) == 3


def test_refusals_leave_the_catalog_alone(spark):
    pq, orc, view, empty, mapped = _name(), _name(), _name(), _name(), _name()
    tmp_view = _name("tv")
    with _dropped(spark, pq, orc, empty, mapped, views=(view, tmp_view)):
        spark.range(4).selectExpr("id", "CAST(id % 2 AS INT) AS k").write.format("parquet") \
            .partitionBy("k").saveAsTable(pq)
        spark.sql(f"CREATE TABLE {orc} (a INT) USING orc")
        spark.sql(f"CREATE TABLE {empty} (a INT) USING parquet")
        spark.sql(f"CREATE VIEW {view} AS SELECT 1 AS a")
        spark.sql(f"CREATE TEMPORARY VIEW {tmp_view} AS SELECT 1 AS a")

        for v in (view, tmp_view):
            with pytest.raises(DeltaAnalysisError, match=r"DELTA_OPERATION_NOT_ALLOWED_DETAIL.*Converting a view"):
                spark.sql(f"CONVERT TO DELTA {v}")
        with pytest.raises(DeltaAnalysisError, match=rf"DELTA_CONVERT_NON_PARQUET_TABLE.*a orc source: .*{orc}"):
            spark.sql(f"CONVERT TO DELTA {orc}")
        assert lookup(spark, orc).provider == "orc"
        with pytest.raises(DeltaTableNotFoundError, match="TABLE_OR_VIEW_NOT_FOUND"):
            spark.sql(f"CONVERT TO DELTA {_name('missing')}")
        with pytest.raises(DeltaTableNotFoundError, match="TABLE_OR_VIEW_NOT_FOUND"):
            DeltaTable.convertToDelta(spark, f"{_name('nodb')}.{_name('missing')}")
        with pytest.raises(DeltaAnalysisError, match="DELTA_EMPTY_DIRECTORY"):
            spark.sql(f"CONVERT TO DELTA {empty}")
        _assert_still_parquet(spark, empty)
        spark.sql(f"CREATE TABLE {mapped} (a INT) USING parquet TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
        spark.sql(f"INSERT INTO {mapped} VALUES (1)")
        with pytest.raises(DeltaAnalysisError, match="DELTA_CONVERSION_UNSUPPORTED_COLUMN_MAPPING"):
            spark.sql(f"CONVERT TO DELTA {mapped}")
        _assert_still_parquet(spark, mapped)

        with pytest.raises(DeltaAnalysisError, match="DELTA_UNEXPECTED_PARTITION_SCHEMA_FROM_USER"):
            spark.sql(f"CONVERT TO DELTA {pq} PARTITIONED BY (k STRING)")
        with pytest.raises(DeltaAnalysisError, match="DELTA_UNEXPECTED_PARTITION_SCHEMA_FROM_USER"):
            DeltaTable.convertToDelta(spark, pq, "other INT")
        _assert_still_parquet(spark, pq)

        # a file that is not Parquet fails the conversion before its commit: the entry stays parquet
        junk = os.path.join(lookup(spark, pq).location, "k=0", "junk.parquet")
        with open(junk, "w") as f:
            f.write("not parquet")
        with pytest.raises(DeltaAnalysisError, match="Parquet footer"):
            spark.sql(f"CONVERT TO DELTA {pq}")
        _assert_still_parquet(spark, pq)
        assert spark.table(pq).where("k = 1").count() == 2  # still Spark's parquet table
        os.remove(junk)
        spark.sql(f"CONVERT TO DELTA {pq}")
        assert lookup(spark, pq).provider == "delta" and spark.table(pq).count() == 4


def test_existing_log_gets_the_catalog_properties(spark):
    """A location converted by path keeps its log; converting the name merges the properties (delta-spark)."""
    t1, t2 = _name(), _name()
    with _dropped(spark, t1, t2):
        for t in (t1, t2):
            spark.sql(f"CREATE TABLE {t} (a INT) USING parquet TBLPROPERTIES ('x' = '1')")
            spark.sql(f"INSERT INTO {t} VALUES (1), (2)")
        loc1, loc2 = lookup(spark, t1).location, lookup(spark, t2).location

        spark.sql(f"CONVERT TO DELTA parquet.`{loc1}`")
        assert lookup(spark, t1).provider == "parquet"
        spark.sql(f"CONVERT TO DELTA {t1}")
        commit = _log(loc1, 1)
        assert _action(commit, "metaData")["configuration"] == {"x": "1"} and not _adds(commit)
        params = _action(commit, "commitInfo")["operationParameters"]
        assert (params["numFiles"], params["collectStats"]) == (0, False)
        assert lookup(spark, t1).provider == "delta" and spark.table(t1).count() == 2

        spark.sql(f"CONVERT TO DELTA parquet.`{loc2}`")
        spark.sql(f"ALTER TABLE delta.`{loc2}` SET TBLPROPERTIES ('y' = '2')")
        with pytest.raises(DeltaAnalysisError, match="DELTA_CONVERT_METASTORE_METADATA_MISMATCH"):
            spark.sql(f"CONVERT TO DELTA {t2}")
        assert lookup(spark, t2).provider == "parquet"
        spark.conf.set("spark.databricks.delta.convert.metadataCheck.enabled", "false")
        try:
            spark.sql(f"CONVERT TO DELTA {t2}")
        finally:
            spark.conf.unset("spark.databricks.delta.convert.metadataCheck.enabled")
        assert DeltaTable.forName(spark, t2).detail().first()["properties"] == {"x": "1", "y": "2"}
        assert _rs_rows(loc2) == 2
