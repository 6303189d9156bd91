"""Managed commits (seed 001) through the sqlite and postgres commit owners: the rules, one by one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import (
    CommitOwnerError,
    CommitOwnerMismatchError,
    CommitOwnerUnavailableError,
    DeltaConcurrentModificationException,
    InvalidManagedCommitStateError,
    InvalidTableError,
    MetadataChangedException,
    ProtocolChangedException,
    UnknownCommitOwnerError,
)
from pydelta.log.commit_owners import CommitOwnerClient, commit_owner, owner_of
from pydelta.log.commit_owners.base import COMMIT_OWNER_CONF_KEY, COMMIT_OWNER_KEY
from pydelta.log.history import history
from pydelta.protocol.actions import Metadata
from pydelta.txn.transaction import Operation, OptimisticTransaction

from .test_commit_owner_support import OWNERS, committed_versions, owner_conf
from .writers import append, create_table, deltalake_rows, make_metadata, remove_action, rows_of, write_data_file


def _row(i: int) -> list[dict]:
    return [{"id": i, "part": "a", "value": f"v{i}"}]


def _commits_dir(root: str) -> list[str]:
    d = Path(root) / "_delta_log" / "_commits"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


@pytest.fixture(params=OWNERS)
def owner(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def managed(owner: str, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A new managed-commit table at version 0 and its owner properties."""
    conf = owner_conf(owner, tmp_path)
    root = str(tmp_path / "t")
    assert create_table(root, configuration=conf) == 0
    return root, conf


@pytest.fixture
def no_backfill(monkeypatch: pytest.MonkeyPatch):
    """Owners ratify but nobody backfills (as if every client died right after ratification)."""
    monkeypatch.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)


def _set_conf(root: str, conf: dict[str, str], drop: tuple[str, ...] = ()) -> int:
    snap = pydelta.load_snapshot(root)
    md = snap.metadata
    new_conf = {k: v for k, v in {**md.configuration, **conf}.items() if k not in drop}
    txn = OptimisticTransaction(root, snap)
    txn.update_metadata(Metadata(md.id, md.schema_string, md.partition_columns, new_conf, md.format, md.name,
                                 md.description, md.created_time))
    return txn.commit([], Operation("SET TBLPROPERTIES"), data_change=False)


# ---- creation and the commit path -----------------------------------------------------


def test_creation_enables_the_feature_and_in_commit_timestamps(managed) -> None:
    root, conf = managed
    snap = pydelta.load_snapshot(root)
    assert {"managedCommit", "inCommitTimestamp"} <= snap.protocol.writer_features
    assert snap.configuration[COMMIT_OWNER_KEY] == conf[COMMIT_OWNER_KEY]
    assert snap.configuration["delta.enableInCommitTimestamps"] == "true"
    # creation is a file-system commit (put-if-absent of 0.json), no un-backfilled file
    assert committed_versions(root) == [0] and _commits_dir(root) == []


def test_commits_are_ratified_then_backfilled_in_order(managed) -> None:
    root, _ = managed
    for i in range(1, 4):
        assert append(root, _row(i)) == i
    names = _commits_dir(root)
    assert [n[:20] for n in names] == [f"{v:020d}" for v in (1, 2, 3)]
    assert all(len(n) == 20 + 1 + 36 + 5 for n in names)  # <version>.<uuid>.json
    assert committed_versions(root) == [0, 1, 2, 3]
    snap = pydelta.load_snapshot(root)
    owner = owner_of(snap.metadata, snap.protocol)
    ratified = owner.ratified_commits(snap.metadata.id)
    assert [c.version for c in ratified] == [1, 2, 3]
    for c in ratified:  # the backfilled log equals the owner's record, byte for byte
        backfilled = Path(root, "_delta_log", f"{c.version:020d}.json").read_bytes()
        assert backfilled == Path(root, "_delta_log", "_commits", c.file_name).read_bytes()
    assert owner.get_commits(snap.metadata.id, 0).commits == []  # all backfilled
    assert owner.get_commits(snap.metadata.id, 0).latest_table_version == 3
    ci = history(snap)[0].commit_info
    assert ci["inCommitTimestamp"] == snap.timestamp


def test_readers_merge_unbackfilled_commits_and_fs_readers_see_a_stale_table(managed, no_backfill) -> None:
    root, _ = managed
    append(root, _row(1))
    append(root, _row(2))
    assert committed_versions(root) == [0]  # nothing backfilled
    snap = pydelta.load_snapshot(root)
    assert snap.version == 2
    assert [v for v, _ in snap.unbackfilled_commits] == [1, 2]
    assert rows_of(root) == [(1, "a", "v1"), (2, "a", "v2")]
    version, rows = deltalake_rows(root)  # delta-rs only lists _delta_log: stale but consistent
    assert version == 0 and rows == []
    # time travel and history across un-backfilled versions
    assert pydelta.load_snapshot(root, version=1).num_files == 1
    hist = history(snap)
    assert [h.version for h in hist] == [2, 1, 0]
    assert pydelta.load_snapshot(root, timestamp=hist[1].timestamp).version == 1
    # an older snapshot catches up through update()
    old = pydelta.load_snapshot(root, version=0)
    assert old.update().version == 2


def test_change_feed_reaches_unbackfilled_commits(owner: str, tmp_path: Path, no_backfill) -> None:
    from pydelta.log.changes import ChangeRange, plan_changes, resolve_range

    conf = {**owner_conf(owner, tmp_path), "delta.enableChangeDataFeed": "true"}
    root = str(tmp_path / "t")
    create_table(root, configuration=conf)
    append(root, _row(1))
    append(root, _row(2))
    assert committed_versions(root) == [0]  # versions 1 and 2 are known to the owner only
    snap = pydelta.load_snapshot(root)
    planned = plan_changes(snap, ChangeRange(1, 2))
    assert [(f.version, f.change_type) for f in planned] == [(1, "insert"), (2, "insert")]
    # the timestamps of un-backfilled commits resolve timestamp options too
    stamps = {h.version: h.timestamp for h in history(snap)}
    assert resolve_range(snap, {"startingTimestamp": stamps[2]}) == ChangeRange(2, 2)


def test_the_next_reader_backfills_what_a_dead_writer_left(managed, monkeypatch) -> None:
    root, _ = managed
    with monkeypatch.context() as m:
        m.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)
        append(root, _row(1))
    assert committed_versions(root) == [0]
    assert pydelta.load_snapshot(root).version == 1
    assert committed_versions(root) == [0, 1]  # the reader backfilled
    assert deltalake_rows(root) == (1, [(1, "a", "v1")])


def test_the_next_writer_backfills_what_a_dead_writer_left(managed, monkeypatch) -> None:
    root, _ = managed

    def crash(self, *a, **k):
        raise RuntimeError("killed between ratification and backfill")

    with monkeypatch.context() as m:
        m.setattr(CommitOwnerClient, "backfill_to_version", crash)
        assert append(root, _row(1)) == 1  # ratified = committed, even though backfill failed
    assert committed_versions(root) == [0]
    snap_stale_reader = None
    with monkeypatch.context() as m:
        m.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)
        snap_stale_reader = pydelta.load_snapshot(root)
    assert snap_stale_reader.version == 1
    txn = OptimisticTransaction(root, snap_stale_reader)
    assert txn.commit([write_data_file(root, _row(2))], Operation.write("Append", [])) == 2
    assert committed_versions(root) == [0, 1, 2]


def test_concurrent_writers_rebase_through_the_owner(managed) -> None:
    root, _ = managed
    base = pydelta.load_snapshot(root)
    t1, t2 = OptimisticTransaction(root, base), OptimisticTransaction(root, base)
    assert t1.commit([write_data_file(root, _row(1))], Operation.write("Append", [])) == 1
    assert t2.commit([write_data_file(root, _row(2))], Operation.write("Append", [])) == 2
    assert rows_of(root) == [(1, "a", "v1"), (2, "a", "v2")]
    # a real conflict is still detected: both delete the same file
    snap = pydelta.load_snapshot(root)
    path = snap.files().to_pylist()[0]
    rm = remove_action({"path": path["path"], "partitionValues": path["partition_values"], "size": path["size"]})
    t3, t4 = OptimisticTransaction(root, snap), OptimisticTransaction(root, snap)
    t3.read_files([path["path"]])
    t4.read_files([path["path"]])
    t3.commit([rm], Operation("DELETE"))
    with pytest.raises(DeltaConcurrentModificationException):
        t4.commit([rm], Operation("DELETE"))


def test_in_commit_timestamps_stay_monotonic(managed) -> None:
    root, _ = managed
    for i in range(1, 4):
        append(root, _row(i))
    stamps = [h.timestamp for h in reversed(history(pydelta.load_snapshot(root)))]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


# ---- conversions -------------------------------------------------------------------------


def test_convert_file_system_table_to_managed_and_back(owner: str, tmp_path: Path) -> None:
    conf = owner_conf(owner, tmp_path)
    root = str(tmp_path / "t")
    create_table(root)
    append(root, _row(1))
    assert _set_conf(root, conf) == 2  # the ownership change is itself a file-system commit
    assert committed_versions(root) == [0, 1, 2] and _commits_dir(root) == []
    snap = pydelta.load_snapshot(root)
    assert "managedCommit" in snap.protocol.writer_features
    assert snap.configuration["delta.inCommitTimestampEnablementVersion"] == "2"
    owner_client = owner_of(snap.metadata, snap.protocol)
    assert owner_client.get_commits(snap.metadata.id, 0).latest_table_version == 2  # registered at 2
    assert append(root, _row(3)) == 3
    assert [n[:20] for n in _commits_dir(root)] == [f"{3:020d}"]

    stale = pydelta.load_snapshot(root)  # a writer that still believes the table is managed
    assert _set_conf(root, {}, drop=(COMMIT_OWNER_KEY, COMMIT_OWNER_CONF_KEY)) == 4
    snap = pydelta.load_snapshot(root)
    assert "managedCommit" not in (snap.protocol.writer_features or frozenset())
    assert COMMIT_OWNER_KEY not in snap.configuration
    assert committed_versions(root) == [0, 1, 2, 3, 4]
    assert owner_client.get_commits(snap.metadata.id, 0).commits == []
    assert append(root, _row(5)) == 5  # file-system commit again
    assert [n[:20] for n in _commits_dir(root)] == [f"{3:020d}", f"{4:020d}"]
    txn = OptimisticTransaction(root, stale)
    with pytest.raises((MetadataChangedException, ProtocolChangedException)):  # the owner released the table at 4
        txn.commit([write_data_file(root, _row(6))], Operation.write("Append", []))
    assert rows_of(root) == [(1, "a", "v1"), (3, "a", "v3"), (5, "a", "v5")]
    assert deltalake_rows(root)[0] == 5


def test_a_file_system_writer_racing_the_conversion_loses_cleanly(owner: str, tmp_path: Path) -> None:
    conf = owner_conf(owner, tmp_path)
    root = str(tmp_path / "t")
    create_table(root)
    fs_snapshot = pydelta.load_snapshot(root)
    _set_conf(root, conf)
    append(root, _row(2))
    txn = OptimisticTransaction(root, fs_snapshot)
    with pytest.raises((MetadataChangedException, ProtocolChangedException)):
        txn.commit([write_data_file(root, _row(9))], Operation.write("Append", []))
    assert committed_versions(root) == [0, 1, 2]


def test_switching_owner_needs_a_conversion_first(owner: str, tmp_path: Path) -> None:
    conf = owner_conf(owner, tmp_path)
    root = str(tmp_path / "t")
    create_table(root, configuration=conf)
    other = {COMMIT_OWNER_KEY: "sqlite", COMMIT_OWNER_CONF_KEY: json.dumps({"path": str(tmp_path / "other.db")})}
    with pytest.raises(CommitOwnerMismatchError, match="convert it to a file-system table first"):
        _set_conf(root, other)
    assert pydelta.load_snapshot(root).version == 0
    _set_conf(root, {}, drop=(COMMIT_OWNER_KEY, COMMIT_OWNER_CONF_KEY))
    _set_conf(root, other)
    assert append(root, _row(3)) == 3
    snap = pydelta.load_snapshot(root)
    assert json.loads(snap.configuration[COMMIT_OWNER_CONF_KEY]) == {"path": str(tmp_path / "other.db")}


def test_creation_race_between_two_owners_has_one_winner(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    a = {COMMIT_OWNER_KEY: "sqlite", COMMIT_OWNER_CONF_KEY: json.dumps({"path": str(tmp_path / "a.db")})}
    b = {COMMIT_OWNER_KEY: "sqlite", COMMIT_OWNER_CONF_KEY: json.dumps({"path": str(tmp_path / "b.db")})}
    t1, t2 = OptimisticTransaction(root, None), OptimisticTransaction(root, None)
    md1, md2 = make_metadata(configuration=a), make_metadata(configuration=b)
    t1.update_metadata(md1)
    t2.update_metadata(md2)
    t1.commit([], Operation.create_table(md1))
    with pytest.raises(DeltaConcurrentModificationException):
        t2.commit([], Operation.create_table(md2))
    assert pydelta.load_snapshot(root).configuration[COMMIT_OWNER_CONF_KEY] == a[COMMIT_OWNER_CONF_KEY]


# ---- invalid states and failures ------------------------------------------------------


def _hand_written_table(root: Path, writer_features: list[str], conf: dict[str, str]) -> None:
    (root / "_delta_log").mkdir(parents=True)
    md = make_metadata(configuration=conf)
    lines = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": writer_features}},
        {"metaData": md.to_dict()},
    ]
    (root / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(x) for x in lines))


def test_owner_property_without_the_feature_is_refused(tmp_path: Path) -> None:
    conf = {COMMIT_OWNER_KEY: "sqlite", "delta.enableInCommitTimestamps": "true"}
    _hand_written_table(tmp_path / "t", ["inCommitTimestamp"], conf)
    with pytest.raises(InvalidManagedCommitStateError, match="does not support the 'managedCommit'"):
        pydelta.load_snapshot(str(tmp_path / "t"))


def test_feature_without_the_owner_property_is_refused(tmp_path: Path) -> None:
    _hand_written_table(tmp_path / "t", ["inCommitTimestamp", "managedCommit"],
                        {"delta.enableInCommitTimestamps": "true"})
    with pytest.raises(InvalidManagedCommitStateError, match="is not set"):
        pydelta.load_snapshot(str(tmp_path / "t"))


def test_invalid_properties_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    txn = OptimisticTransaction(root, None)
    with pytest.raises(InvalidTableError, match="require in-commit timestamps"):
        txn.update_metadata(make_metadata(
            configuration={COMMIT_OWNER_KEY: "sqlite", "delta.enableInCommitTimestamps": "false"}))
    with pytest.raises(InvalidTableError, match="without"):
        txn.update_metadata(make_metadata(configuration={COMMIT_OWNER_CONF_KEY: "{}"}))
    with pytest.raises(CommitOwnerError, match="not valid JSON"):
        txn.update_metadata(make_metadata(configuration={COMMIT_OWNER_KEY: "sqlite", COMMIT_OWNER_CONF_KEY: "{nope"}))
    with pytest.raises(CommitOwnerError, match="strings to strings"):
        txn.update_metadata(make_metadata(
            configuration={COMMIT_OWNER_KEY: "sqlite", COMMIT_OWNER_CONF_KEY: '{"a": 1}'}))
    assert not os.path.exists(root)


def test_unknown_owner_is_named(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    with pytest.raises(UnknownCommitOwnerError, match="'nosuchowner'"):
        create_table(root, configuration={COMMIT_OWNER_KEY: "nosuchowner"})
    assert committed_versions(root) == [] if os.path.isdir(os.path.join(root, "_delta_log")) else True


def test_unreachable_postgres_commits_nothing(tmp_path: Path) -> None:
    bad = {COMMIT_OWNER_KEY: "postgres",
           COMMIT_OWNER_CONF_KEY: json.dumps({"dsn": "host=127.0.0.1 port=1 dbname=x user=x connect_timeout=2"})}
    root = str(tmp_path / "t")
    with pytest.raises(CommitOwnerUnavailableError, match="unreachable"):
        create_table(root, configuration=bad)
    assert not os.path.isdir(os.path.join(root, "_delta_log")) or committed_versions(root) == []


def test_owner_unreachable_after_creation_commits_nothing(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "owner.db"
    conf = {COMMIT_OWNER_KEY: "sqlite", COMMIT_OWNER_CONF_KEY: json.dumps({"path": str(db)})}
    root = str(tmp_path / "t")
    create_table(root, configuration=conf)
    snap = pydelta.load_snapshot(root)
    client = commit_owner("sqlite", {"path": str(db)})

    def down(*a, **k):
        raise CommitOwnerUnavailableError(f"sqlite commit owner at {db} is unavailable: simulated outage")

    monkeypatch.setattr(client, "_ratify", down)
    txn = OptimisticTransaction(root, snap)
    with pytest.raises(CommitOwnerUnavailableError, match="simulated outage"):
        txn.commit([write_data_file(root, _row(1))], Operation.write("Append", []))
    monkeypatch.undo()
    assert pydelta.load_snapshot(root).version == 0
    assert committed_versions(root) == [0]
    assert client.ratified_commits(snap.metadata.id) == []


def test_the_sqlite_database_location_is_configurable(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "env.db"
    monkeypatch.setenv("PYDELTA_SQLITE_COMMIT_OWNER", str(db))
    root = str(tmp_path / "t")
    create_table(root, configuration={COMMIT_OWNER_KEY: "sqlite"})
    append(root, _row(1))
    assert db.exists()
    assert rows_of(root) == [(1, "a", "v1")]


def test_the_feature_alone_is_an_invalid_state_and_is_refused(tmp_path: Path) -> None:
    txn = OptimisticTransaction(str(tmp_path / "t"), None)
    with pytest.raises(InvalidManagedCommitStateError, match="is not set"):
        txn.update_metadata(make_metadata(configuration={"delta.feature.managedCommit": "supported"}))


def test_time_travel_past_the_owners_latest_version_fails_by_name(managed) -> None:
    from pydelta.errors import VersionNotFoundError

    root, _ = managed
    append(root, _row(1))
    with pytest.raises(VersionNotFoundError, match="99"):
        pydelta.load_snapshot(root, version=99)


def test_a_failed_backfill_of_the_release_is_repaired_before_the_next_file_system_commit(managed, monkeypatch) -> None:
    root, _ = managed
    append(root, _row(1))
    with monkeypatch.context() as m:
        real = CommitOwnerClient.backfill_to_version

        def backfill_all_but_the_release(self, storage, table_root, table_id, version=None, just_ratified=None):
            if just_ratified is not None:
                raise RuntimeError("crashed right after the owner ratified the release")
            return real(self, storage, table_root, table_id, version)

        m.setattr(CommitOwnerClient, "backfill_to_version", backfill_all_but_the_release)
        assert _set_conf(root, {}, drop=(COMMIT_OWNER_KEY, COMMIT_OWNER_CONF_KEY)) == 2
        assert committed_versions(root) == [0, 1]  # the release (2) is ratified, not backfilled
        m.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)
        snap = pydelta.load_snapshot(root)  # the owner still answers for version 2
        assert snap.version == 2 and COMMIT_OWNER_KEY not in snap.configuration
        txn = OptimisticTransaction(root, snap)
        assert txn.commit([write_data_file(root, _row(3))], Operation.write("Append", [])) == 3
    assert committed_versions(root) == [0, 1, 2, 3]  # 2 was copied before 3 was written
    assert rows_of(root) == [(1, "a", "v1"), (3, "a", "v3")]
