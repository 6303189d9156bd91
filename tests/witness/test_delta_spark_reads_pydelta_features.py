"""More of test_delta_spark_reads_pydelta.py (its own file so the two spread over the test
workers): tables pydelta CREATES with column mapping by id, row tracking, identity and default
columns, V2 checkpoints with sidecars and managed commits; delta-spark (in its own process)
reads every version as pydelta does, then writes on top where the protocol lets it, and pydelta
reads delta-spark's result.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import pydelta
from tests.txn.test_commit_owner_support import owner_conf
from tests.witness._compare import (
    commits,
    delta_spark_writes_then_pydelta_reads,
    features,
    read,
    same_at_every_version,
    same_row_tracking,
    version,
)
from tests.witness.delta_spark import WitnessError

pytestmark = [pytest.mark.spark, pytest.mark.witness]


def _adds(path: str, v: int) -> list[dict]:
    return [a["add"] for a in commits(path)[v] if "add" in a]


def _schema_fields(path: str) -> dict[str, dict]:
    return {f["name"]: f for f in json.loads(pydelta.load_snapshot(path).metadata.schema_string)["fields"]}


def test_column_mapping_id_mode(spark, delta_spark, tmp_path):
    path = str(tmp_path / "cm-id")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, v STRING, p INT) USING delta PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'id')")                           # v0
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 0), (2, 'b', 1)")                         # v1
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN v TO label")                                # v2
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c', 1)")                                      # v3
    spark.sql(f"ALTER TABLE {t} DROP COLUMN label")                                       # v4
    spark.sql(f"ALTER TABLE {t} ADD COLUMN label STRING")                                 # v5: a new id, no old values
    spark.sql(f"INSERT INTO {t} VALUES (4, 0, 'd')")                                      # v6
    assert "columnMapping" in features(delta_spark, path)
    assert dict(delta_spark.detail(path)["properties"])["delta.columnMapping.mode"] == "id"
    # the data files carry the logged field ids (an id-mode reader resolves columns by them)
    ids = {f["metadata"]["delta.columnMapping.physicalName"]: f["metadata"]["delta.columnMapping.id"]
           for f in _schema_fields(path).values()}
    for add in _adds(path, 6):
        schema = pq.read_schema(Path(path) / add["path"])
        assert {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in schema} == \
            {name: i for name, i in ids.items() if name in schema.names}
    same_at_every_version(spark, delta_spark, path)
    assert delta_spark.rows(path)["rows"] == [[1, 0, None], [2, 1, None], [3, 1, None], [4, 0, "d"]]
    delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "UPDATE {t} SET label = 'u' WHERE id < 3",
        "ALTER TABLE {t} RENAME COLUMN label TO name",
        "DELETE FROM {t} WHERE id = 3",
        "INSERT INTO {t} VALUES (5, 1, 'e')")
    spark.sql(f"UPDATE {t} SET name = 'pu' WHERE id = 5")  # pydelta again, after delta-spark's rename
    same_at_every_version(spark, delta_spark, path)


def test_row_tracking(spark, delta_spark, tmp_path):
    path = str(tmp_path / "rt")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING delta TBLPROPERTIES ("
              "'delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true')")      # v0
    spark.sql(f"INSERT INTO {t} SELECT id, 'a' FROM range(0, 10, 1, 2)")                    # v1
    spark.sql(f"INSERT INTO {t} SELECT id, 'b' FROM range(10, 15)")                         # v2
    spark.sql(f"UPDATE {t} SET v = 'u' WHERE id % 4 = 0")                                   # v3
    spark.sql(f"DELETE FROM {t} WHERE id = 5")                                              # v4
    spark.sql(f"MERGE INTO {t} t USING (SELECT id FROM range(12, 18)) s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET v = 'm' WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 'n')")  # v5
    spark.sql(f"OPTIMIZE {t}")                                                              # v6
    assert {"rowTracking", "domainMetadata"} <= features(delta_spark, path)
    assert all("baseRowId" in a and "defaultRowCommitVersion" in a for v in range(1, 7) for a in _adds(path, v))
    same_at_every_version(spark, delta_spark, path)
    same_row_tracking(spark, delta_spark, path, since=1)
    latest = delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} VALUES (100, 'd')",
        "UPDATE {t} SET v = 'du' WHERE id IN (1, 100)",
        "OPTIMIZE {t}")
    spark.sql(f"UPDATE {t} SET v = 'last' WHERE id = 2")  # pydelta after delta-spark's high-water mark
    same_row_tracking(spark, delta_spark, path, since=latest - 2)


def test_identity_and_default_columns(spark, delta_spark, tmp_path):
    path = str(tmp_path / "ident-default")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5), "
              "v STRING DEFAULT 'dflt', n INT) USING delta "
              "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')")               # v0
    spark.sql(f"INSERT INTO {t} (n) VALUES (1), (2)")                                       # v1
    spark.sql(f"INSERT INTO {t} (v, n) VALUES ('given', 3)")                                # v2
    assert {"identityColumns", "allowColumnDefaults"} <= features(delta_spark, path)
    fields = _schema_fields(path)
    assert fields["v"]["metadata"]["CURRENT_DEFAULT"] == "'dflt'"
    mark = fields["id"]["metadata"]["delta.identity.highWaterMark"]
    same_at_every_version(spark, delta_spark, path)
    delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} (n) VALUES (4)",              # delta-spark continues pydelta's identity and default
        "INSERT INTO {t} (v, n) VALUES (DEFAULT, 5)")
    rows = delta_spark.rows(path)["rows"]
    by_n = {n: (i, v) for i, v, n in rows}
    ids = [i for i, _ in by_n.values()]
    assert len(set(ids)) == 5 and all(i >= 10 and (i - 10) % 5 == 0 for i in ids)
    assert by_n[4][0] > mark and by_n[5][0] > by_n[4][0], "delta-spark continues past pydelta's high-water mark"
    assert [by_n[n][1] for n in (1, 2, 3, 4, 5)] == ["dflt", "dflt", "given", "dflt", "dflt"]
    assert _schema_fields(path)["id"]["metadata"]["delta.identity.highWaterMark"] == max(ids)
    with pytest.raises(WitnessError) as e:  # delta-spark enforces pydelta's GENERATED ALWAYS
        delta_spark.sql(f"INSERT INTO {t} (id, n) VALUES (1, 6)", collect=False)
    assert "IDENTITY" in (e.value.error_class or str(e.value)).upper()


def _checkpoint_files(path: str) -> list[str]:
    return sorted(p.name for p in (Path(path) / "_delta_log").iterdir()
                  if ".checkpoint." in p.name and not p.name.startswith("."))


def test_v2_checkpoints_with_sidecars(spark, delta_spark, tmp_path):
    path = str(tmp_path / "v2")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, v STRING) USING delta TBLPROPERTIES ("
              "'delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2')")             # v0
    for i in range(1, 5):
        spark.sql(f"INSERT INTO {t} VALUES ({i}, '{chr(96 + i)}')")                         # v1..v4
    spark.sql(f"DELETE FROM {t} WHERE id = 1")                                              # v5
    assert "v2Checkpoint" in features(delta_spark, path)
    names = _checkpoint_files(path)
    # UUID-named top-level files at versions 2 and 4, their file actions in sidecars
    assert [n[:20] for n in names] == [f"{2:020d}", f"{4:020d}"] and all(len(n.split(".")) == 4 for n in names), names
    assert list((Path(path) / "_delta_log" / "_sidecars").glob("*.parquet"))
    same_at_every_version(spark, delta_spark, path)
    # delta-spark reads from pydelta's checkpoint alone (a copy without the commits before it)
    alone = str(tmp_path / "v2-checkpoint-only")
    shutil.copytree(path, alone)
    for v in range(5):
        (Path(alone) / "_delta_log" / f"{v:020d}.json").unlink()
    assert delta_spark.rows(alone)["rows"] == read(spark, path)["rows"] == [[2, "b"], [3, "c"], [4, "d"]]
    latest = delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} VALUES (5, 'e')",                # v6: delta-spark's own V2 checkpoint
        "UPDATE {t} SET v = 'x' WHERE id = 2")
    assert len(_checkpoint_files(path)) == 3
    spark.sql(f"INSERT INTO {t} VALUES (6, 'f')")                                           # v8: pydelta's again
    assert _checkpoint_files(path)[-1].startswith(f"{latest + 1:020d}.checkpoint.")
    same_at_every_version(spark, delta_spark, path)


def test_managed_commits_after_backfill(spark, delta_spark, tmp_path):
    """A seed-001 managed-commit table reads in delta-spark once backfilled; delta-spark does not
    know the managedCommit writer feature, so it must refuse to write (the protocol's rule for
    unknown writer features), and it does."""
    path = str(tmp_path / "mc")
    t = f"delta.`{path}`"
    props = ", ".join(f"'{k}' = '{v}'" for k, v in owner_conf("sqlite", tmp_path).items())
    spark.sql(f"CREATE TABLE {t} (id INT, v STRING) USING delta TBLPROPERTIES ({props})")  # v0
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")                                 # v1
    spark.sql(f"UPDATE {t} SET v = 'B' WHERE id = 2")                                       # v2
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c')")                                           # v3
    log = Path(path) / "_delta_log"
    assert list((log / "_commits").glob("*.json")), "the commits went through the owner"
    assert sorted(int(p.name[:20]) for p in log.glob("*.json")) == [0, 1, 2, 3], "backfilled"
    assert {"managedCommit", "inCommitTimestamp"} <= features(delta_spark, path)
    same_at_every_version(spark, delta_spark, path)
    with pytest.raises(WitnessError) as e:
        delta_spark.sql(f"INSERT INTO {t} VALUES (4, 'd')", collect=False)
    assert "managedCommit" in str(e.value)
    assert version(path) == 3
