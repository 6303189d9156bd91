"""Every write entry point honours the same options as `save(path)`, as delta-spark does.

Entry points: save(path), saveAsTable, insertInto (overwrite argument and writer mode),
writeTo(name).overwritePartitions(), SQL INSERT OVERWRITE; options given to the writer
and as session confs (partitionOverwriteMode, replaceWhere, overwriteSchema, userMetadata,
txnAppId/txnVersion). Witnesses: `deltalake` reading each table (the rows that survive)
and the commitInfo bytes of the _delta_log (the operation delta-spark records: WriteIntoDelta's
WRITE, or for a saveAsTable overwrite CreateDeltaTableCommand's CREATE OR REPLACE TABLE AS
SELECT with isV1SaveAsTableOverwrite).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from pydelta import errors
from tests.helpers import session_conf

pytestmark = pytest.mark.spark

DYNAMIC_CONF = "spark.sql.sources.partitionOverwriteMode"
INITIAL = [(1, "a"), (2, "b"), (3, "c")]


def dl_rows(path: str) -> list[tuple]:
    import deltalake

    t = deltalake.DeltaTable(path).to_pyarrow_table()
    return sorted(zip(*[t.column(c).to_pylist() for c in t.column_names], strict=True), key=repr)


def versions(path: str) -> list[int]:
    log = os.path.join(path, "_delta_log")
    return sorted(int(f[:20]) for f in os.listdir(log) if f.endswith(".json") and f[:20].isdigit())


def last_commit(path: str) -> dict:
    """The commitInfo of the newest commit, as the JSON bytes on disk say."""
    with open(os.path.join(path, "_delta_log", f"{versions(path)[-1]:020d}.json")) as f:
        return next(json.loads(line)["commitInfo"] for line in f if '"commitInfo"' in line)


def last_metadata(path: str) -> dict:
    found = None
    for v in versions(path):
        with open(os.path.join(path, "_delta_log", f"{v:020d}.json")) as f:
            found = next((json.loads(line)["metaData"] for line in f if '"metaData"' in line), found)
    assert found is not None
    return found


def named_table(spark: Any, tmp_path: Any, name: str) -> str:
    """An external Delta table `name` partitioned by `p`, rows INITIAL; returns its path."""
    path = str(tmp_path / name)
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.createDataFrame(INITIAL, "v INT, p STRING").write.format("delta").partitionBy("p") \
        .option("path", path).saveAsTable(name)
    return path


@pytest.fixture
def new_a(spark: Any) -> Any:
    return spark.createDataFrame([(10, "a")], "v INT, p STRING")


# ---- dynamic partition overwrite ---------------------------------------------------------------

def _by_path(spark, df, name, path):
    df.write.format("delta").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)


def _save_as_table(spark, df, name, path):
    df.write.format("delta").mode("overwrite").option("partitionOverwriteMode", "dynamic").saveAsTable(name)


def _save_as_table_conf(spark, df, name, path):
    with session_conf(spark, {DYNAMIC_CONF: "dynamic"}):
        df.write.format("delta").mode("overwrite").saveAsTable(name)


def _insert_into(spark, df, name, path):
    df.write.option("partitionOverwriteMode", "dynamic").insertInto(name, overwrite=True)


def _insert_into_writer_mode(spark, df, name, path):
    df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").insertInto(name)


def _insert_into_conf(spark, df, name, path):
    with session_conf(spark, {DYNAMIC_CONF: "dynamic"}):
        df.write.insertInto(name, overwrite=True)


def _overwrite_partitions(spark, df, name, path):
    df.writeTo(name).overwritePartitions()


def _sql_insert_overwrite(spark, df, name, path):
    df.createOrReplaceTempView("entry_points_new")
    with session_conf(spark, {DYNAMIC_CONF: "dynamic"}):
        spark.sql(f"INSERT OVERWRITE {name} SELECT * FROM entry_points_new")


ENTRY_POINTS: dict[str, Callable[..., None]] = {
    "save_path": _by_path, "save_as_table": _save_as_table, "save_as_table_conf": _save_as_table_conf,
    "insert_into": _insert_into, "insert_into_writer_mode": _insert_into_writer_mode,
    "insert_into_conf": _insert_into_conf, "overwrite_partitions": _overwrite_partitions,
    "sql_insert_overwrite": _sql_insert_overwrite,
}


def test_dynamic_partition_overwrite_is_the_same_on_every_entry_point(spark, tmp_path, new_a):
    """Only partition a is replaced; b and c survive, the table stays partitioned by p."""
    expected = sorted([(10, "a"), (2, "b"), (3, "c")], key=repr)
    for label, write in ENTRY_POINTS.items():
        name = f"entry_{label}"
        path = named_table(spark, tmp_path, name)
        write(spark, new_a, name, path)
        assert dl_rows(path) == expected, label
        assert last_metadata(path)["partitionColumns"] == ["p"], label
        info = last_commit(path)
        params = info["operationParameters"]
        assert params["isDynamicPartitionOverwrite"] is True, label
        # delta-spark records the writer's own partitionBy (none given here: `[]`) for a WRITE, the
        # table's partitioning for the CREATE OR REPLACE TABLE AS SELECT of a saveAsTable overwrite
        assert params["partitionBy"] == ('["p"]' if label.startswith("save_as_table") else "[]"), label
        if label.startswith("save_as_table"):  # delta-spark's CreateDeltaTableCommand for a V1 overwrite
            assert info["operation"] == "CREATE OR REPLACE TABLE AS SELECT", label
            assert params["isV1SaveAsTableOverwrite"] is True and params["isManaged"] == "false", label
        else:
            assert info["operation"] == "WRITE" and params["mode"] == "Overwrite", label
        spark.sql(f"DROP TABLE {name}")


def test_save_as_table_overwrite_replaces_data_not_the_definition(spark, tmp_path):
    """delta-spark: a saveAsTable overwrite of an existing table is a data overwrite: the table keeps
    its partitioning and properties; another schema needs overwriteSchema."""
    name = "entry_sat_static"
    path = named_table(spark, tmp_path, name)
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.appendOnly' = 'false', 'team' = 'x')")
    spark.createDataFrame([(7, "z")], "v INT, p STRING").write.format("delta").mode("overwrite") \
        .option("userMetadata", "reload").saveAsTable(name)
    assert dl_rows(path) == [(7, "z")]
    metadata = last_metadata(path)
    assert metadata["partitionColumns"] == ["p"]
    assert metadata["configuration"] == {"delta.appendOnly": "false", "team": "x"}
    info = last_commit(path)
    assert info["operation"] == "CREATE OR REPLACE TABLE AS SELECT" and info["userMetadata"] == "reload"
    assert info["operationParameters"] == {
        "isManaged": "false", "description": None, "partitionBy": '["p"]', "clusterBy": "[]",
        "properties": '{"delta.appendOnly":"false","team":"x"}', "isV1SaveAsTableOverwrite": True}

    before = versions(path)
    other = spark.createDataFrame([(1.5, "q")], "w DOUBLE, p STRING")
    with pytest.raises(errors.SchemaMismatchError):
        other.write.format("delta").mode("overwrite").saveAsTable(name)
    assert versions(path) == before and dl_rows(path) == [(7, "z")]
    other.write.format("delta").mode("overwrite").option("overwriteSchema", "true").saveAsTable(name)
    assert dl_rows(path) == [(1.5, "q")]
    assert [f["name"] for f in json.loads(last_metadata(path)["schemaString"])["fields"]] == ["w", "p"]
    assert last_commit(path)["operationParameters"]["canOverwriteSchema"] is True
    spark.sql(f"DROP TABLE {name}")


def test_save_as_table_overwrite_with_replace_where(spark, tmp_path):
    """replaceWhere reaches saveAsTable: rows outside the predicate survive; delta-spark records a WRITE."""
    name = "entry_sat_replace_where"
    path = named_table(spark, tmp_path, name)
    spark.createDataFrame([(20, "b")], "v INT, p STRING").write.format("delta").mode("overwrite") \
        .option("replaceWhere", "p = 'b'").saveAsTable(name)
    assert dl_rows(path) == sorted([(1, "a"), (20, "b"), (3, "c")], key=repr)
    info = last_commit(path)
    assert info["operation"] == "WRITE"
    assert info["operationParameters"]["mode"] == "Overwrite" and "p = 'b'" in info["operationParameters"]["predicate"]
    spark.sql(f"DROP TABLE {name}")


def test_session_dynamic_mode_yields_to_replace_where(spark, tmp_path):
    """delta-spark: a replaceWhere option wins over spark.sql.sources.partitionOverwriteMode=dynamic;
    rows of the written partition outside the predicate survive."""
    path = str(tmp_path / "rw")
    spark.createDataFrame([(1, "a"), (2, "a"), (3, "b")], "v INT, p STRING").write.format("delta") \
        .partitionBy("p").save(path)
    with session_conf(spark, {DYNAMIC_CONF: "dynamic"}):
        spark.createDataFrame([(0, "a")], "v INT, p STRING").write.format("delta").mode("overwrite") \
            .option("replaceWhere", "v < 2").save(path)
    assert dl_rows(path) == [(0, "a"), (2, "a"), (3, "b")]
    assert last_commit(path)["operationParameters"]["isDynamicPartitionOverwrite"] is True  # as delta-spark records


def test_replace_table_as_select_ignores_the_dynamic_mode(spark, tmp_path):
    """REPLACE TABLE AS SELECT replaces the whole table even with the session's dynamic mode."""
    path = str(tmp_path / "rtas")
    spark.createDataFrame(INITIAL, "v INT, p STRING").write.format("delta").partitionBy("p").save(path)
    with session_conf(spark, {DYNAMIC_CONF: "dynamic"}):
        spark.sql(f"CREATE OR REPLACE TABLE delta.`{path}` USING delta PARTITIONED BY (p) AS SELECT 10 AS v, 'a' AS p")
    assert dl_rows(path) == [(10, "a")]


def test_static_overwrite_records_no_dynamic_flag(spark, tmp_path):
    """delta-spark records isDynamicPartitionOverwrite only when it is true (never `false`)."""
    path = str(tmp_path / "static")
    spark.createDataFrame(INITIAL, "v INT, p STRING").write.format("delta").partitionBy("p").save(path)
    spark.createDataFrame([(9, "a")], "v INT, p STRING").write.format("delta").mode("overwrite").save(path)
    assert dl_rows(path) == [(9, "a")]
    assert last_commit(path)["operationParameters"] == {"mode": "Overwrite", "partitionBy": "[]"}


def test_dynamic_overwrite_of_an_unpartitioned_table_replaces_it(spark, tmp_path):
    """delta-spark ignores dynamic mode without partition columns: even no rows replace everything."""
    path = str(tmp_path / "flat")
    spark.createDataFrame(INITIAL, "v INT, p STRING").write.format("delta").save(path)
    empty = spark.createDataFrame([], "v INT, p STRING")
    empty.write.format("delta").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)
    assert dl_rows(path) == []


def test_insert_into_honours_the_writer_mode(spark, tmp_path):
    """Spark's insertInto(name) without `overwrite` takes the writer's mode: overwrite replaces."""
    name = "entry_insert_mode"
    path = named_table(spark, tmp_path, name)
    spark.createDataFrame([(5, "e")], "v INT, p STRING").write.mode("overwrite").insertInto(name)
    assert dl_rows(path) == [(5, "e")]
    assert last_commit(path)["operationParameters"] == {"mode": "Overwrite", "partitionBy": "[]"}
    spark.createDataFrame([(6, "f")], "v INT, p STRING").write.mode("overwrite").insertInto(name, overwrite=False)
    assert dl_rows(path) == [(5, "e"), (6, "f")]
    spark.sql(f"DROP TABLE {name}")


def test_idempotent_writes_on_every_entry_point(spark, tmp_path, new_a):
    """txnAppId/txnVersion as writer options on saveAsTable, insertInto and writeTo, and as
    delta-spark's session confs for SQL INSERT (with autoReset): a repeated write commits nothing."""
    name = "entry_txn"
    path = named_table(spark, tmp_path, name)
    writes = [
        lambda v: new_a.write.format("delta").mode("append").option("txnAppId", "app").option("txnVersion", v)
        .saveAsTable(name),
        lambda v: new_a.write.option("txnAppId", "app").option("txnVersion", v).insertInto(name),
        lambda v: new_a.writeTo(name).option("txnAppId", "app").option("txnVersion", v).append(),
    ]
    for version, write in enumerate(writes, start=1):
        write(version)
        write(version)
    assert versions(path) == [0, 1, 2, 3]
    confs = {"spark.databricks.delta.write.txnAppId": "sql", "spark.databricks.delta.write.txnVersion": "7"}
    with session_conf(spark, confs):
        spark.sql(f"INSERT INTO {name} VALUES (11, 'a')")
        spark.sql(f"INSERT INTO {name} VALUES (11, 'a')")
    assert versions(path) == [0, 1, 2, 3, 4]
    with open(os.path.join(path, "_delta_log", f"{4:020d}.json")) as f:
        txns = [json.loads(line)["txn"] for line in f if '"txn"' in line]
    assert [(t["appId"], t["version"]) for t in txns] == [("sql", 7)]
    auto = {**confs, "spark.databricks.delta.write.txnVersion.autoReset.enabled": "true"}
    with session_conf(spark, auto):
        spark.sql(f"INSERT INTO {name} VALUES (12, 'a')")  # version 7 again: skipped, then the version is unset
        assert spark.conf.get("spark.databricks.delta.write.txnVersion", None) is None
    assert versions(path) == [0, 1, 2, 3, 4]
    assert sorted(v for v, p in dl_rows(path)) == [1, 2, 3, 10, 10, 10, 11]
    spark.sql(f"DROP TABLE {name}")

