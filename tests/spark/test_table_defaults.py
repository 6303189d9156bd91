"""`spark.databricks.delta.properties.defaults.<key>` session confs on new tables.

As delta-spark's DeltaConfigs.mergeGlobalConfigs: every table CREATION (save on a new
path, saveAsTable, the DeltaTable builders, replace included) gets them as `delta.<key>`
table properties, explicit properties win, minReaderVersion/minWriterVersion/feature.*
set the protocol instead of being stored. Writes to existing tables never re-apply them.
Each table is checked in the log itself and through the independent `deltalake` reader.
"""

from __future__ import annotations

import json
import os

import pytest

from pydelta import DeltaTable, load_snapshot
from tests.helpers import session_conf

pytestmark = pytest.mark.spark

PREFIX = "spark.databricks.delta.properties.defaults."


def session_confs(spark, **confs: str):
    return session_conf(spark, confs)


def defaults(**props: str) -> dict[str, str]:
    return {PREFIX + k: v for k, v in props.items()}


def log_actions(path: str, version: int) -> dict[str, dict]:
    out: dict[str, dict] = {}
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        for line in f:
            out.update(json.loads(line))
    return out


def latest_version(path: str) -> int:
    log = os.path.join(path, "_delta_log")
    return max(int(f[:20]) for f in os.listdir(log) if f.endswith(".json") and f[:20].isdigit())


def state(path: str) -> tuple[dict[str, str], tuple[int, int]]:
    """(configuration, (minReader, minWriter)) of the table now, by pydelta and by deltalake."""
    import deltalake

    snapshot = load_snapshot(path)
    config = dict(snapshot.metadata.configuration)
    versions = (snapshot.protocol.min_reader_version, snapshot.protocol.min_writer_version)
    dl = deltalake.DeltaTable(path)
    assert dict(dl.metadata().configuration) == config
    assert (dl.protocol().min_reader_version, dl.protocol().min_writer_version) == versions
    return config, versions


CDF_APPEND_ONLY = defaults(enableChangeDataFeed="true", appendOnly="true", checkpointInterval="5")
EXPECTED = {"delta.enableChangeDataFeed": "true", "delta.appendOnly": "true", "delta.checkpointInterval": "5"}


def test_no_defaults_means_empty_configuration(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    assert state(path) == ({}, (1, 2))


def test_save_on_new_path_applies_defaults(spark, tmp_path):
    path = str(tmp_path / "t")
    with session_confs(spark, **CDF_APPEND_ONLY):
        spark.range(3).write.format("delta").save(path)
    assert state(path) == (EXPECTED, (1, 4))  # changeDataFeed needs writer version 4
    # The properties are live: appendOnly now refuses an overwrite.
    from pydelta import errors

    with pytest.raises(errors.DeltaError):
        spark.range(3).write.format("delta").mode("overwrite").save(path)


def test_overwrite_mode_on_new_path_applies_defaults(spark, tmp_path):
    path = str(tmp_path / "t")
    with session_confs(spark, **defaults(checkpointInterval="3")):
        spark.range(3).write.format("delta").mode("overwrite").save(path)
    assert state(path)[0] == {"delta.checkpointInterval": "3"}


def test_explicit_table_properties_win(spark, tmp_path):
    path = str(tmp_path / "t")
    with session_confs(spark, **CDF_APPEND_ONLY):
        (spark.range(3).write.format("delta").option("delta.appendOnly", "false")
         .option("delta.logRetentionDuration", "interval 7 days").save(path))
    config, _ = state(path)
    assert config == {**EXPECTED, "delta.appendOnly": "false", "delta.logRetentionDuration": "interval 7 days"}


def test_protocol_defaults_set_the_protocol_and_are_not_stored(spark, tmp_path):
    path = str(tmp_path / "t")
    with session_confs(spark, **defaults(minReaderVersion="2", minWriterVersion="5", appendOnly="true")):
        spark.range(3).write.format("delta").save(path)
    assert state(path) == ({"delta.appendOnly": "true"}, (2, 5))


def test_explicit_protocol_property_wins_over_default(spark, tmp_path):
    path = str(tmp_path / "t")
    with session_confs(spark, **defaults(minWriterVersion="5")):
        spark.range(3).write.format("delta").option("delta.minWriterVersion", "3").save(path)
    assert state(path) == ({}, (1, 3))


def test_feature_default_adds_the_feature(spark, tmp_path):
    """`...defaults.feature.<name>` acts as the table property `delta.feature.<name>`."""
    by_default, explicit = str(tmp_path / "default"), str(tmp_path / "explicit")
    with session_confs(spark, **defaults(**{"feature.changeDataFeed": "supported"})):
        spark.range(3).write.format("delta").save(by_default)
    spark.range(3).write.format("delta").option("delta.feature.changeDataFeed", "supported").save(explicit)
    assert log_actions(by_default, 0)["metaData"]["configuration"] == {}
    assert log_actions(by_default, 0)["protocol"] == log_actions(explicit, 0)["protocol"]
    assert state(by_default)[1] >= (1, 4)  # a protocol supporting changeDataFeed


def test_ignore_protocol_defaults(spark, tmp_path):
    path = str(tmp_path / "t")
    confs = defaults(ignoreProtocolDefaults="true", minWriterVersion="5", checkpointInterval="4")
    with session_confs(spark, **confs):
        spark.range(3).write.format("delta").save(path)
    # Protocol defaults ignored (and delta-spark's (1,2) session default too), other defaults kept.
    assert state(path) == ({"delta.checkpointInterval": "4"}, (1, 1))


def test_session_protocol_version_confs(spark, tmp_path):
    path = str(tmp_path / "t")
    with session_confs(spark, **{"spark.databricks.delta.protocol.minWriterVersion": "4"}):
        spark.range(3).write.format("delta").save(path)
    assert state(path) == ({}, (1, 4))


def test_save_as_table_applies_defaults(spark):
    with session_confs(spark, **CDF_APPEND_ONLY):
        spark.range(3).write.format("delta").saveAsTable("defaults_ctas")
    path = DeltaTable.forName(spark, "defaults_ctas").path
    assert state(path) == (EXPECTED, (1, 4))


@pytest.mark.parametrize("kind", ["create", "createIfNotExists", "createOrReplace"])
def test_builders_apply_defaults_on_creation(spark, tmp_path, kind):
    path = str(tmp_path / "t")
    with session_confs(spark, **CDF_APPEND_ONLY):
        (getattr(DeltaTable, kind)(spark).location(path).addColumn("id", "BIGINT")
         .property("delta.checkpointInterval", "7").execute())
    assert state(path) == ({**EXPECTED, "delta.checkpointInterval": "7"}, (1, 4))


def test_builders_on_existing_table(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    with session_confs(spark, **defaults(checkpointInterval="6")):
        # createIfNotExists on an existing table changes nothing.
        DeltaTable.createIfNotExists(spark).location(path).addColumn("id", "BIGINT").execute()
        assert latest_version(path) == 0
        # replace and createOrReplace make a new table definition: defaults apply (delta-spark).
        DeltaTable.replace(spark).location(path).addColumn("id", "BIGINT").execute()
        assert latest_version(path) == 1
        assert state(path)[0] == {"delta.checkpointInterval": "6"}
    with session_confs(spark, **defaults(checkpointInterval="8")):
        DeltaTable.createOrReplace(spark).location(path).addColumn("x", "STRING").execute()
        assert state(path)[0] == {"delta.checkpointInterval": "8"}


def test_writes_to_existing_tables_do_not_apply_defaults(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").option("delta.checkpointInterval", "9").save(path)
    with session_confs(spark, **CDF_APPEND_ONLY):
        spark.range(3).write.format("delta").mode("append").save(path)
        assert "metaData" not in log_actions(path, 1)
        (spark.range(3).selectExpr("id", "'a' AS s").write.format("delta").mode("overwrite")
         .option("overwriteSchema", "true").save(path))
    actions = log_actions(path, 2)
    assert actions["metaData"]["configuration"] == {"delta.checkpointInterval": "9"}
    assert state(path) == ({"delta.checkpointInterval": "9"}, (1, 2))
