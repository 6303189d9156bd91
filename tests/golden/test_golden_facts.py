"""The fact checks listed in tests/data/golden/README.md, plus time travel on golden tables."""

from __future__ import annotations

import pytest

import pydelta
from pydelta import errors
from tests.golden_paths import DELTA_SPARK as DS


def test_checkpoint_table_at_14_with_one_file():
    snap = pydelta.load_snapshot(str(DS / "checkpoint" / "delta"))
    assert snap.version == 14
    assert snap.num_files == 1
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 10


def test_dv_key_cases_one_add_with_cardinality_3():
    files = pydelta.load_snapshot(str(DS / "log-replay-dv-key-cases" / "delta")).files()
    assert files.num_rows == 1
    assert files.column("deletion_vector").to_pylist()[0]["cardinality"] == 3


def test_get_changes_txn_version():
    snap = pydelta.load_snapshot(str(DS / "deltalog-getChanges" / "delta"))
    assert snap.transactions == {"fakeAppId": 3}


def test_corrupted_last_checkpoint_falls_back_to_listing():
    path = DS / "corrupted-last-checkpoint-kernel" / "delta"
    assert (path / "_delta_log" / "_last_checkpoint").read_bytes().strip() == b""
    snap = pydelta.load_snapshot(str(path))
    assert snap.version == 11


@pytest.mark.spark
def test_corrupted_last_checkpoint_reads_ids(spark):
    df = spark.read.format("delta").load(str(DS / "corrupted-last-checkpoint-kernel" / "delta"))
    assert sorted(r[0] for r in df.select("id").collect()) == list(range(100))


def test_multi_part_checkpoint_is_used():
    snap = pydelta.load_snapshot(str(DS / "multi-part-checkpoint" / "delta"))
    assert snap.segment.checkpoint.kind == "multipart"
    assert len(snap.segment.checkpoint.files) == 2


@pytest.mark.parametrize("name", ["v2-checkpoint-json", "v2-checkpoint-parquet"])
def test_v2_checkpoint_with_sidecars(name):
    snap = pydelta.load_snapshot(str(DS / name / "delta"))
    assert snap.segment.checkpoint.kind == "v2"
    assert snap.protocol.has_feature("v2Checkpoint")
    assert snap.num_files > 0


def test_only_checkpoint_files():
    snap = pydelta.load_snapshot(str(DS / "only-checkpoint-files" / "delta"))
    assert snap.segment.checkpoint is not None


def test_canonicalized_paths_cancel():
    for name in ("canonicalized-paths-normal-a", "canonicalized-paths-normal-b", "canonicalized-paths-special-a",
                 "canonicalized-paths-special-b"):
        assert pydelta.load_snapshot(str(DS / name / "delta")).num_files == 0, name


def test_latest_metadata_and_protocol_win():
    snap = pydelta.load_snapshot(str(DS / "log-replay-latest-metadata-protocol" / "delta"))
    v0 = pydelta.load_snapshot(str(DS / "log-replay-latest-metadata-protocol" / "delta"), version=0)
    assert snap.schema != v0.schema or snap.protocol != v0.protocol


@pytest.mark.spark
def test_version_as_of_matches_expected_of_earlier_tables(spark):
    """time-travel-start is version 0 of time-travel-start-start20-start40 (same writes)."""
    base = str(DS / "time-travel-start-start20-start40" / "delta")
    for older, version in (("time-travel-start", 0), ("time-travel-start-start20", 1)):
        expected = spark.read.parquet(str(DS / older / "expected"))
        actual = spark.read.format("delta").option("versionAsOf", version).load(base)
        assert sorted(actual.collect()) == sorted(expected.select(*actual.columns).collect())


def test_timestamp_as_of_resolves_versions():
    path = str(DS / "time-travel-start-start20-start40" / "delta")
    from pydelta.log.storage import LocalStorage
    from pydelta.log.timestamps import commit_timestamps

    stamps = commit_timestamps(LocalStorage(), path, None)
    for ct in stamps:
        assert pydelta.load_snapshot(path, timestamp=ct.timestamp).version == ct.version
    with pytest.raises(errors.VersionNotFoundError):
        pydelta.load_snapshot(path, timestamp=stamps[0].timestamp - 1)
    with pytest.raises(errors.VersionNotFoundError):
        pydelta.load_snapshot(path, timestamp=stamps[-1].timestamp + 10_000)


def test_version_beyond_latest_is_clear():
    with pytest.raises(errors.VersionNotFoundError, match="latest version"):
        pydelta.load_snapshot(str(DS / "checkpoint" / "delta"), version=99)


def test_old_version_before_retained_checkpoint():
    rs = DS.parent / "delta-rs" / "checkpoints_vacuumed"
    with pytest.raises(errors.VersionNotFoundError):
        pydelta.load_snapshot(str(rs), version=2)
    assert pydelta.load_snapshot(str(rs), version=10).version == 10
