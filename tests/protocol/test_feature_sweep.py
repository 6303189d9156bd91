"""Every table feature of the current PROTOCOL.md and of delta-spark 4.4's TableFeature list is
known to pydelta, written or refused by name, and listed in the guide's table-features page."""

from __future__ import annotations

from pathlib import Path

import pytest

from pydelta import errors
from pydelta.protocol import features as F
from pydelta.protocol.actions import Protocol

# delta-spark 4.4.0's TableFeature.scala (its test-only features left out), and PROTOCOL.md's list.
DELTA_SPARK_FEATURES = (
    "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping",
    "identityColumns", "geospatial-dev", "geospatial", "timestampNtz", "redirectReaderWriter-preview",
    "redirectWriterOnly-preview", "variantType-preview", "variantType", "variantShredding-preview",
    "variantShredding", "deletionVectors", "adaptiveMetadata-preview", "rowTracking", "domainMetadata",
    "icebergCompatV1", "icebergCompatV2", "icebergCompatV3", "allowColumnDefaults", "materializePartitionColumns",
    "v2Checkpoint", "coordinatedCommits-preview", "catalogManaged", "typeWidening-preview", "typeWidening",
    "inCommitTimestamp", "vacuumProtocolCheck", "checkpointProtection", "clustering",
)
PROTOCOL_FEATURES = (
    "appendOnly", "invariants", "checkConstraints", "generatedColumns", "allowColumnDefaults", "changeDataFeed",
    "columnMapping", "identityColumns", "deletionVectors", "rowTracking", "timestampNtz", "domainMetadata",
    "v2Checkpoint", "catalogManaged", "icebergCompatV1", "icebergCompatV2", "clustering", "vacuumProtocolCheck",
    "inCommitTimestamp",
)
ALL = sorted(set(DELTA_SPARK_FEATURES) | set(PROTOCOL_FEATURES))
#: Features pydelta does not write, and why (the guide's page says the same).
NOT_WRITTEN = {
    "icebergCompatV3": "Iceberg format version 3",
    "catalogOwned-preview": "the preview of catalog-managed tables",
    "coordinatedCommits-preview": "delta-spark's preview commit coordinators",
    "redirectReaderWriter-preview": "table redirection (preview)",
    "redirectWriterOnly-preview": "table redirection (preview)",
    "adaptiveMetadata-preview": "catalog-managed tables with Iceberg v4 manifests",
}


def _protocol(name: str) -> Protocol:
    spec = F.known_feature(name)
    assert spec is not None
    closure = {name, *spec.requires}
    readers = frozenset(n for n in closure if F.feature_spec(n).reader_writer)
    return Protocol(3, 7, readers, frozenset(closure))


@pytest.mark.parametrize("name", ALL)
def test_every_feature_is_known_and_written_or_refused_by_name(name):
    spec = F.known_feature(name)
    assert spec is not None, f"{name} is not in pydelta's registry"
    if name in NOT_WRITTEN:
        return  # refused by name: below
    assert name in F.SUPPORTED_WRITER_FEATURES, f"{name} is neither written nor listed as refused"
    if spec.reader_writer:
        assert name in F.SUPPORTED_READER_FEATURES
    _protocol(name).check_writable()  # a table with it (and what it needs) is writable


@pytest.mark.parametrize("name", sorted(set(NOT_WRITTEN) - {"catalogOwned-preview"}))
def test_what_is_not_written_is_refused_by_name(name):
    with pytest.raises(errors.UnsupportedFeatureError, match=name) as e:
        _protocol(name).check_writable()
    assert name in e.value.features or any(name in str(f) for f in e.value.features)


def test_the_guide_lists_every_feature():
    page = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "features.md").read_text()
    missing = [n for n in [*ALL, *NOT_WRITTEN] if f"`{n}`" not in page]
    assert missing == []
