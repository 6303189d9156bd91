"""upgradeTableProtocol / addFeatureSupport: the protocol algebra, then real tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pydelta.errors import DeltaAnalysisError, DeltaIllegalArgumentError, DeltaProtocolError, UnsupportedFeatureError
from pydelta.protocol.actions import Protocol
from pydelta.spark.maintenance.protocol_ops import protocol_with_feature, upgraded_protocol
from pydelta.tables import DeltaTable
from tests.spark.test_maintenance_support import (
    commit_actions,
    commit_infos,
    deltalake_rows,
    latest_version,
    spark_rows,
)

LEGACY_12 = Protocol(1, 2)


# ---- protocol algebra (no Spark) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "reader, writer, expected",
    [
        (1, 2, Protocol(1, 2)),
        (1, 3, Protocol(1, 3)),
        (2, 5, Protocol(2, 5)),
        (1, 7, Protocol(1, 7, None, frozenset({"appendOnly", "invariants"}))),
        (3, 7, Protocol(3, 7, frozenset(), frozenset({"appendOnly", "invariants"}))),
    ],
)
def test_upgraded_protocol_from_legacy(reader, writer, expected):
    assert upgraded_protocol(LEGACY_12, reader, writer) == expected


def test_upgraded_protocol_keeps_every_feature():
    cm = Protocol(2, 5)  # columnMapping (a reader-writer feature) and the writer-4 features
    up = upgraded_protocol(cm, 3, 7)
    assert up.reader_features == frozenset({"columnMapping"})
    assert up.writer_features >= {"columnMapping", "changeDataFeed", "generatedColumns", "checkConstraints"}
    tf = Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors", "appendOnly"}))
    assert upgraded_protocol(tf, 3, 7) == tf


@pytest.mark.parametrize(
    "current, reader, writer, error",
    [
        (Protocol(1, 2), 3, 5, DeltaProtocolError),  # reader 3 needs writer 7
        (Protocol(1, 2), 4, 7, DeltaIllegalArgumentError),
        (Protocol(1, 2), 1, 8, DeltaIllegalArgumentError),
        (Protocol(1, 2), 0, 2, DeltaIllegalArgumentError),
    ],
)
def test_upgraded_protocol_refusals(current, reader, writer, error):
    with pytest.raises(error):
        upgraded_protocol(current, reader, writer)


def test_feature_support_moves_to_table_features():
    dv = protocol_with_feature(LEGACY_12, "deletionVectors")
    assert dv == Protocol(3, 7, frozenset({"deletionVectors"}),
                          frozenset({"appendOnly", "invariants", "deletionVectors"}))
    dm = protocol_with_feature(LEGACY_12, "domainMetadata")  # writer-only: reader stays 1
    assert dm == Protocol(1, 7, None, frozenset({"appendOnly", "invariants", "domainMetadata"}))
    rt = protocol_with_feature(LEGACY_12, "rowTracking")  # brings what it requires
    assert rt.writer_features >= {"rowTracking", "domainMetadata"}
    cm = protocol_with_feature(Protocol(2, 5), "domainMetadata")
    assert cm.min_reader_version == 2 and cm.reader_features is None and "columnMapping" in cm.writer_features
    assert protocol_with_feature(LEGACY_12, "DELETIONVECTORS") == dv  # names are case-insensitive
    with pytest.raises(DeltaAnalysisError, match="not recognized"):
        protocol_with_feature(LEGACY_12, "noSuchFeature")


# ---- on tables ---------------------------------------------------------------------------------------


@pytest.fixture
def table_path(spark, tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    spark.range(0, 6).selectExpr("id", "id * 10 as v").write.format("delta").save(path)
    return path


@pytest.mark.spark
def test_upgrade_table_protocol(spark, table_path):
    table = DeltaTable.forPath(spark, table_path)
    assert table.snapshot().protocol == Protocol(1, 2)
    table.upgradeTableProtocol(1, 3)
    assert table.snapshot().protocol == Protocol(1, 3)
    info = commit_infos(table_path)[1]
    assert info["operation"] == "UPGRADE PROTOCOL"
    assert json.loads(info["operationParameters"]["newProtocol"]) == {"minReaderVersion": 1, "minWriterVersion": 3}
    actions = commit_actions(table_path, 1)
    assert [k for a in actions for k in a] == ["commitInfo", "protocol"]
    table.upgradeTableProtocol(1, 3)  # already there: nothing committed
    assert latest_version(table_path) == 1
    table.upgradeTableProtocol(1, 2)  # lower than the table's: a no-op, as in delta-spark
    assert latest_version(table_path) == 1
    table.upgradeTableProtocol(3, 7)
    p = table.snapshot().protocol
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert p.writer_features == {"appendOnly", "invariants", "checkConstraints"} and p.reader_features == frozenset()
    expected = [(i, i * 10) for i in range(6)]
    assert spark_rows(table.toDF(), ["id", "v"]) == expected
    assert deltalake_rows(table_path, ["id", "v"]) == expected


@pytest.mark.spark
def test_add_feature_support(spark, table_path):
    table = DeltaTable.forPath(spark, table_path)
    table.addFeatureSupport("deletionVectors")
    p = table.snapshot().protocol
    assert p == Protocol(3, 7, frozenset({"deletionVectors"}),
                         frozenset({"appendOnly", "invariants", "deletionVectors"}))
    info = commit_infos(table_path)[1]
    assert info["operation"] == "UPGRADE PROTOCOL"
    assert json.loads(info["operationParameters"]["newProtocol"]) == {
        "minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
        "writerFeatures": ["appendOnly", "deletionVectors", "invariants"],
    }
    table.addFeatureSupport("deletionVectors")  # supported already: no commit
    assert latest_version(table_path) == 1
    table.addFeatureSupport("domainMetadata")
    assert table.snapshot().protocol.writer_features >= {"domainMetadata", "deletionVectors"}
    with pytest.raises(DeltaAnalysisError, match="not recognized"):
        table.addFeatureSupport("fancyNewThing")
    with pytest.raises(UnsupportedFeatureError):  # a real feature pydelta cannot write yet
        table.addFeatureSupport("catalogManaged")
    assert latest_version(table_path) == 2
    expected = [(i, i * 10) for i in range(6)]
    assert spark_rows(table.toDF(), ["id", "v"]) == expected
    assert deltalake_rows(table_path, ["id", "v"]) == expected
