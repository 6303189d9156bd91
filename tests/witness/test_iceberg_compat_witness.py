"""IcebergCompatV2 and UniForm across clients (issue 43, part 3).

delta-spark (in its own process) and pydelta enable IcebergCompatV2 the same way (protocol,
column mapping, nested ids), write data files Iceberg can read (partition columns inside, the
compat tag) into each other's tables and read the same rows. On a UniForm table, commits
delta-spark makes at a path (which it does not convert) are caught up by pydelta's next commit,
and pyiceberg reads what both engines read."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from tests.witness._compare import (
    commits,
    delta_spark_writes_then_pydelta_reads,
    pydelta_writes_then_delta_spark_reads,
    version,
)

pytestmark = [pytest.mark.spark, pytest.mark.witness]

COMPAT = "'delta.enableIcebergCompatV2' = 'true'"
UNIFORM = f"{COMPAT}, 'delta.universalFormat.enabledFormats' = 'iceberg'"
CREATE = "CREATE TABLE delta.`{p}` (id BIGINT, name STRING, ts TIMESTAMP, p STRING) USING delta PARTITIONED BY (p)"


def _metadata(path: str) -> dict:
    for v in sorted(commits(path), reverse=True):
        for action in commits(path)[v]:
            if "metaData" in action:
                return action["metaData"]
    raise AssertionError("no metadata")


def _shape(path: str) -> dict:
    """What enabling the compatibility set, without the ids and names that are random per table."""
    md = _metadata(path)
    fields = json.loads(md["schemaString"])["fields"]
    return {
        "configuration": {k: v for k, v in md["configuration"].items() if k != "delta.columnMapping.maxColumnId"},
        "field_metadata_keys": [sorted(f["metadata"]) for f in fields],
        "maxColumnId": md["configuration"]["delta.columnMapping.maxColumnId"],
    }


def _check_files(path: str, since: int) -> None:
    """Every file added after `since`: the compat tag, numRecords, the partition column inside."""
    physical = {f["name"]: f["metadata"]["delta.columnMapping.physicalName"]
                for f in json.loads(_metadata(path)["schemaString"])["fields"]}
    for v, actions in commits(path).items():
        for add in (a["add"] for a in actions if "add" in a and v > since):
            assert add["tags"]["ICEBERG_COMPAT_VERSION"] == "2", add["path"]
            assert json.loads(add["stats"])["numRecords"] >= 0
            names = pq.read_schema(Path(path) / add["path"]).names
            assert names[-1] == physical["p"] and len(names) == 4, (add["path"], names)


def test_compat_v2_both_ways(spark, delta_spark, tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    spark.sql(CREATE.format(p=ours) + f" TBLPROPERTIES ({COMPAT})")
    delta_spark.sql(CREATE.format(p=theirs) + f" TBLPROPERTIES ({COMPAT})", collect=False)
    assert delta_spark.protocol(ours) == delta_spark.protocol(theirs)
    assert _shape(ours) == _shape(theirs)

    for path in (ours, theirs):
        before = version(path)
        delta_spark_writes_then_pydelta_reads(
            spark, delta_spark, path,
            "INSERT INTO {t} VALUES (1, 'a', TIMESTAMP'2024-01-01 10:00:00', 'x'), (2, 'b', NULL, 'y')",
            "UPDATE {t} SET name = 'ds' WHERE id = 2")
        mid = version(path)
        pydelta_writes_then_delta_spark_reads(
            spark, delta_spark, path,
            "INSERT INTO {t} VALUES (3, 'c', TIMESTAMP'2024-06-01 00:00:00.123456', 'x')",
            "UPDATE {t} SET name = 'pd' WHERE id = 1",
            "DELETE FROM {t} WHERE p = 'y'")
        _check_files(path, before)
        assert mid > before


def test_delta_spark_commits_to_a_uniform_table_are_caught_up(spark, delta_spark, tmp_path):
    path = str(tmp_path / "u")
    spark.sql(CREATE.format(p=path) + f" TBLPROPERTIES ({UNIFORM})")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', NULL, 'x'), (2, 'b', NULL, 'y')")
    assert StaticTable.from_metadata(path).properties["delta-version"] == "1"
    # delta-spark writes at the path: it converts nothing there
    delta_spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 'c', NULL, 'x')", collect=False)
    delta_spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2", collect=False)
    assert StaticTable.from_metadata(path).properties["delta-version"] == "1"
    # pydelta's next commit converts delta-spark's two and its own
    spark.sql(f"UPDATE delta.`{path}` SET name = 'u' WHERE id = 1")
    table = StaticTable.from_metadata(path)
    assert table.properties["delta-version"] == str(version(path)) == "4"
    assert [s.summary.operation.value for s in table.snapshots()] == ["append", "append", "delete", "overwrite"]
    rows = delta_spark.sql(f"SELECT id, name, p FROM delta.`{path}`")["rows"]
    iceberg = table.scan(selected_fields=("id", "name", "p")).to_arrow().to_pylist()
    assert sorted([r["id"], r["name"], r["p"]] for r in iceberg) == sorted(rows)


def test_spark_with_the_iceberg_runtime_reads_every_snapshot(spark, iceberg_spark, tmp_path):
    """Apache Iceberg's own Spark reader: the table at its newest metadata and at each snapshot
    reads as pydelta reads the Delta version it was converted from."""
    from pydelta.log.storage import LocalStorage
    from pydelta.uniform.iceberg_converter import latest_metadata_location
    from tests.witness._compare import read

    path = str(tmp_path / "t")
    spark.sql(CREATE.format(p=path) + f" TBLPROPERTIES ({UNIFORM})")
    for statement in (
        "INSERT INTO {t} VALUES (1, 'a', TIMESTAMP'2024-01-01 10:00:00', 'x'), (2, 'b', NULL, 'y'), "
        "(3, NULL, NULL, 'x')",
        "UPDATE {t} SET name = 'u' WHERE id = 3",
        "DELETE FROM {t} WHERE p = 'y'",
        "OPTIMIZE {t}",
        "INSERT INTO {t} VALUES (4, 'd', TIMESTAMP'2024-03-01 00:00:00.000001', 'z')",
    ):
        spark.sql(statement.format(t=f"delta.`{path}`"))
    table = StaticTable.from_metadata(path)
    snapshots = [s.snapshot_id for s in table.snapshots()]
    assert len(snapshots) == version(path)  # one per commit after CREATE: each changed files
    seen = iceberg_spark(latest_metadata_location(LocalStorage(), path), snapshots)
    assert seen["current"] == read(spark, path)
    for delta_version, snapshot_id in enumerate(snapshots, start=1):
        assert seen["snapshots"][snapshot_id] == read(spark, path, delta_version), f"Delta version {delta_version}"
