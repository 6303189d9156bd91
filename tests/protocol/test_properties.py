"""The table-property registry (protocol/properties.py): typed values, delta-spark's validation
words, canonical key case."""

from __future__ import annotations

import pytest

from pydelta.errors import DeltaAnalysisError, DeltaIllegalArgumentError
from pydelta.protocol import properties as P


def test_typed_values_and_defaults():
    assert P.ENABLE_CHANGE_DATA_FEED.get({}) is False
    assert P.ENABLE_CHANGE_DATA_FEED.get({"delta.enableChangeDataFeed": " TRUE "}) is True
    assert P.ENABLE_EXPIRED_LOG_CLEANUP.get({}) is True
    assert P.CHECKPOINT_INTERVAL.get({"delta.checkpointInterval": "25"}) == 25
    assert P.CHECKPOINT_INTERVAL.get({"delta.checkpointInterval": "zero"}) == 10  # unreadable: the default
    assert P.LOG_RETENTION_DURATION.get({}) == 30 * 86_400_000
    assert P.DELETED_FILE_RETENTION_DURATION.get(
        {"delta.deletedFileRetentionDuration": "interval 2 days"}) == 2 * 86_400_000
    assert P.COLUMN_MAPPING_MODE.get({"delta.columnMapping.mode": "Name"}) == "name"
    assert P.flag({"delta.appendOnly": "true"}, "DELTA.APPENDONLY") is True
    assert P.flag({"delta.appendOnly": "maybe"}, "delta.appendOnly") is False


def test_validation_as_delta_spark():
    out = P.validate_properties({"DELTA.ENABLECHANGEDATAFEED": "true", "delta.feature.DeletionVectors": "supported",
                                 "delta.constraints.Positive": "x > 0", "user.key": "v"})
    assert out == {"delta.enableChangeDataFeed": "true", "delta.feature.deletionvectors": "supported",
                   "delta.constraints.Positive": "x > 0", "user.key": "v"}
    with pytest.raises(DeltaIllegalArgumentError,
                       match=r"requirement failed: delta\.appendOnly needs to be a boolean\."):
        P.validate_properties({"delta.appendOnly": "yes"})
    with pytest.raises(DeltaIllegalArgumentError,
                       match=r"delta\.logRetentionDuration needs to be provided as a calendar"):
        P.validate_properties({"delta.logRetentionDuration": "1 month"})
    with pytest.raises(DeltaIllegalArgumentError, match="needs to be greater than or equal to"):
        P.validate_properties({"delta.logRetentionDuration": "1 day"})
    with pytest.raises(DeltaAnalysisError, match="DELTA_UNKNOWN_CONFIGURATION"):
        P.validate_properties({"delta.noSuchThing": "1"})
    assert P.validate_properties({"delta.noSuchThing": "1"}, allow_arbitrary=True) == {"delta.noSuchThing": "1"}
    assert P.normalize_keys(["DELTA.APPENDONLY", "delta.Feature.X", "other"]) == [
        "delta.appendOnly", "delta.feature.x", "other"]


def test_every_property_default_parses():
    for prop in P.PROPERTIES.values():
        assert prop.key.startswith("delta.")
        if prop.default is not None and isinstance(prop.default, (bool, str)):
            assert prop.valid(str(prop.default).lower())
