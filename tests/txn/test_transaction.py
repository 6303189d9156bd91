"""OptimisticTransaction without concurrency: commits, commitInfo, validation, ICT, protocol, hooks."""

from __future__ import annotations

import json
import os
import sys
import types
import uuid
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import (
    ConcurrentWriteException,
    DeltaAnalysisError,
    DeltaError,
    DeltaIllegalArgumentError,
    DeltaProtocolError,
    InvalidTableError,
    ProtocolChangedException,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
)
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.txn import protocol_upgrade as pu
from pydelta.txn.commit_info import Operation, encode_parameters
from pydelta.txn.transaction import OptimisticTransaction

from .writers import (
    append,
    create_table,
    deltalake_rows,
    make_metadata,
    remove_action,
    rows_of,
    write_data_file,
)


def log_lines(root: Path | str, version: int) -> list[dict]:
    text = (Path(root) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def log_listing(root: Path | str) -> dict[str, bytes]:
    log = Path(root) / "_delta_log"
    return {p.name: p.read_bytes() for p in sorted(log.iterdir())}


def commit_info(root: Path | str, version: int) -> dict:
    first = log_lines(root, version)[0]
    assert "commitInfo" in first, "commitInfo must be the first action"
    return first["commitInfo"]


@pytest.fixture
def table(tmp_path: Path) -> str:
    root = str(tmp_path / "t")
    create_table(root)
    return root


# ---- new tables and appends -------------------------------------------------------------


def test_new_table_commits_version_0_with_protocol_and_metadata(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    md = make_metadata(configuration={"delta.checkpointInterval": "10"})
    txn = OptimisticTransaction(root, None, engine_info="pydelta/0.1.0 Apache-Spark/4.3.0")
    assert txn.read_version == -1 and txn.metadata is None and txn.protocol is None
    txn.update_metadata(md)
    assert txn.protocol == Protocol(1, 2)
    assert txn.commit([], Operation.create_table(md)) == 0

    lines = log_lines(root, 0)
    assert [next(iter(a)) for a in lines] == ["commitInfo", "protocol", "metaData"]
    assert lines[1]["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}
    assert lines[2]["metaData"]["partitionColumns"] == ["part"]
    info = lines[0]["commitInfo"]
    assert list(info) == [
        "timestamp", "operation", "operationParameters", "isolationLevel",
        "isBlindAppend", "operationMetrics", "engineInfo", "txnId",
    ]  # no readVersion for a new table
    assert info["operation"] == "CREATE TABLE"
    assert info["operationParameters"] == {
        "isManaged": "false",
        "description": None,
        "partitionBy": '["part"]',
        "clusterBy": "[]",
        "properties": '{"delta.checkpointInterval":"10"}',
    }
    assert info["isolationLevel"] == "WriteSerializable"
    assert info["isBlindAppend"] is True
    assert info["operationMetrics"] == {}
    assert info["engineInfo"] == "pydelta/0.1.0 Apache-Spark/4.3.0"
    assert str(uuid.UUID(info["txnId"])) == info["txnId"] == txn.txn_id

    snap = pydelta.load_snapshot(root)
    assert snap.version == 0 and snap.num_files == 0
    assert snap.metadata.id == md.id
    assert deltalake_rows(root) == (0, [])


def test_appends_land_as_consecutive_versions(table: str) -> None:
    v1 = append(table, [{"id": 1, "part": "a", "value": "x"}, {"id": 2, "part": "a", "value": "y"}])
    v2 = append(table, [{"id": 3, "part": "b", "value": None}])
    assert (v1, v2) == (1, 2)
    info = commit_info(table, 2)
    assert info["operation"] == "WRITE"
    assert info["operationParameters"] == {"mode": "Append", "partitionBy": "[]"}
    assert info["readVersion"] == 1
    assert info["isBlindAppend"] is True
    assert info["operationMetrics"] == {"numFiles": "1", "numOutputRows": "1"}
    expected = [(1, "a", "x"), (2, "a", "y"), (3, "b", None)]
    assert rows_of(table) == expected
    assert deltalake_rows(table) == (2, expected)
    snap = pydelta.load_snapshot(table)
    assert sum(snap.files().column("num_records").to_pylist()) == 3


def test_user_metadata_tags_and_default_engine_info(table: str) -> None:
    snap = pydelta.load_snapshot(table)
    txn = OptimisticTransaction(table, snap)
    add = write_data_file(table, [{"id": 1, "part": "a", "value": "x"}])
    txn.commit([add], Operation.write(), user_metadata="nightly load", tags={"source": "test"})
    info = commit_info(table, 1)
    assert info["userMetadata"] == "nightly load"
    assert info["tags"] == {"source": "test"}
    assert info["engineInfo"] == f"pydelta/{pydelta.__version__}"
    assert txn.committed_commit_info == info


def test_commit_never_overwrites_an_existing_log_entry(table: str) -> None:
    snap = pydelta.load_snapshot(table)
    intruder = append(table, [{"id": 1, "part": "a", "value": "first"}])  # another writer takes version 1
    before = (Path(table) / "_delta_log" / f"{intruder:020d}.json").read_bytes()
    txn = OptimisticTransaction(table, snap)
    version = txn.commit([write_data_file(table, [{"id": 2, "part": "a", "value": "second"}])], Operation.write())
    assert version == 2
    assert (Path(table) / "_delta_log" / f"{intruder:020d}.json").read_bytes() == before
    assert commit_info(table, 2)["readVersion"] == 0
    assert [r[2] for r in rows_of(table)] == ["first", "second"]


def test_second_creator_of_the_same_table_gets_protocol_changed(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    a = OptimisticTransaction(root, None)
    b = OptimisticTransaction(root, None)
    a.update_metadata(make_metadata())
    b.update_metadata(make_metadata())
    a.commit([], "CREATE TABLE")
    with pytest.raises(ProtocolChangedException, match="writing to an empty directory"):
        b.commit([], "CREATE TABLE")
    assert sorted(os.listdir(Path(root) / "_delta_log")) == [f"{0:020d}.crc", f"{0:020d}.json"]  # a's only


def test_creating_a_table_that_exists_says_it_exists(table: str) -> None:
    """Not the creation race's ProtocolChangedException: the log had version 0 before this
    transaction started (delta-spark's DELTA_TABLE_ALREADY_EXISTS, "Table <tableName> already exists.")."""
    before = log_listing(table)
    with pytest.raises(TableAlreadyExistsError) as err:
        OptimisticTransaction(table, None)
    assert str(err.value) == f"[DELTA_TABLE_ALREADY_EXISTS] Table delta.`{table}` already exists."
    assert not isinstance(err.value, ProtocolChangedException)
    with pytest.raises(TableAlreadyExistsError):
        create_table(table)
    assert log_listing(table) == before


def test_post_commit_snapshot_is_at_the_committed_version(table: str) -> None:
    snap = pydelta.load_snapshot(table)
    txn = OptimisticTransaction(table, snap)
    version = txn.commit([write_data_file(table, [{"id": 1, "part": "a", "value": "x"}])], Operation.write())
    append(table, [{"id": 2, "part": "a", "value": "y"}])  # lands after ours
    post = txn.post_commit_snapshot()
    assert post.version == version == 1
    assert post.num_files == 1
    assert txn.post_commit_snapshot() is post
    with pytest.raises(DeltaIllegalArgumentError):
        OptimisticTransaction(table, snap).post_commit_snapshot()


def test_a_transaction_commits_only_once(table: str) -> None:
    txn = OptimisticTransaction(table, pydelta.load_snapshot(table))
    txn.commit([], Operation.write())
    with pytest.raises(DeltaIllegalArgumentError, match="already committed"):
        txn.commit([], Operation.write())


# ---- operation parameters ---------------------------------------------------------------


def test_operation_parameters_are_encoded_like_delta_spark() -> None:
    assert encode_parameters({"mode": "Append", "partitionBy": ["a", "b"], "canOverwriteSchema": True}) == {
        "mode": "Append",
        "partitionBy": '["a","b"]',
        "canOverwriteSchema": True,
    }
    assert encode_parameters({"properties": {"k": "v"}, "version": 3, "timestamp": None}) == {
        "properties": '{"k":"v"}',
        "version": 3,
        "timestamp": None,
    }
    assert Operation.write("Overwrite", ["p"], predicate="(p = 1)").parameters == {
        "mode": "Overwrite",
        "partitionBy": '["p"]',
        "predicate": "(p = 1)",
    }
    assert Operation.delete(["(id < 3)"]).encoded_parameters() == {"predicate": '["(id < 3)"]'}
    assert Operation.update().encoded_parameters() == {"predicate": "[]"}
    merge = Operation.merge("(t.id = s.id)", matched=[{"actionType": "update", "predicate": None}])
    assert merge.encoded_parameters()["matchedPredicates"] == '[{"actionType":"update"}]'
    assert merge.encoded_parameters()["notMatchedBySourcePredicates"] == "[]"
    opt = Operation.optimize(zorder_by=["id"])
    assert opt.name == "OPTIMIZE"
    assert opt.encoded_parameters() == {"predicate": "[]", "zOrderBy": '["id"]', "clusterBy": "[]", "auto": False}
    assert Operation.streaming_update("Append", "q1", 7).parameters["epochId"] == "7"
    md = make_metadata(configuration={"delta.appendOnly": "true"})
    assert Operation.create_table(md, or_replace=True, as_select=True).name == "CREATE OR REPLACE TABLE AS SELECT"
    assert Operation.create_table(md, replace=True).name == "REPLACE TABLE"
    assert json.loads(Operation.upgrade_protocol(Protocol(1, 3)).parameters["newProtocol"]) == {
        "minReaderVersion": 1,
        "minWriterVersion": 3,
    }


# ---- idempotent writers -----------------------------------------------------------------


def test_app_transaction_makes_writes_idempotent(table: str) -> None:
    def write_batch(batch: int) -> int | None:
        snap = pydelta.load_snapshot(table)
        txn = OptimisticTransaction(table, snap)
        done = txn.app_transaction_version("etl-job")
        if done is not None and done >= batch:
            return None  # already written: skip
        txn.set_app_transaction("etl-job", batch)
        add = write_data_file(table, [{"id": batch, "part": "a", "value": f"batch-{batch}"}])
        return txn.commit([add], Operation.streaming_update("Append", "etl-job", batch))

    assert write_batch(0) == 1
    assert write_batch(0) is None
    assert write_batch(1) == 2
    assert write_batch(1) is None
    snap = pydelta.load_snapshot(table)
    assert snap.transactions == {"etl-job": 1}
    txn_action = next(a for a in log_lines(table, 2) if "txn" in a)["txn"]
    assert txn_action["appId"] == "etl-job" and txn_action["version"] == 1 and "lastUpdated" in txn_action
    assert [r[2] for r in rows_of(table)] == ["batch-0", "batch-1"]


# ---- metadata changes --------------------------------------------------------------------


def test_metadata_change_is_committed(table: str) -> None:
    snap = pydelta.load_snapshot(table)
    fields = (("id", "long"), ("part", "string"), ("value", "string"), ("extra", "double"))
    md = Metadata(
        snap.metadata.id, make_metadata(fields=fields).schema_string, ("part",),
        {"delta.logRetentionDuration": "interval 7 days"},
    )
    txn = OptimisticTransaction(table, snap)
    txn.update_metadata(md)
    with pytest.raises(DeltaIllegalArgumentError, match="more than once"):
        txn.update_metadata(md)
    version = txn.commit([], Operation.set_table_properties({"delta.logRetentionDuration": "interval 7 days"}))
    lines = log_lines(table, version)
    assert [next(iter(a)) for a in lines] == ["commitInfo", "metaData"]  # protocol unchanged
    after = pydelta.load_snapshot(table)
    assert after.schema.field_names == ["id", "part", "value", "extra"]
    assert after.configuration == {"delta.logRetentionDuration": "interval 7 days"}
    assert commit_info(table, version)["isBlindAppend"] is True


def test_metadata_passed_as_action_counts_as_the_one_metadata_change(table: str) -> None:
    snap = pydelta.load_snapshot(table)
    txn = OptimisticTransaction(table, snap)
    txn.update_metadata(snap.metadata)
    before = log_listing(table)
    with pytest.raises(DeltaIllegalArgumentError, match="more than once"):
        txn.commit([{"metaData": snap.metadata.to_dict()}], Operation.set_table_properties({}))
    assert log_listing(table) == before


def test_partition_column_must_be_in_schema(tmp_path: Path) -> None:
    txn = OptimisticTransaction(str(tmp_path / "t"), None)
    with pytest.raises(InvalidTableError, match="Partition column `nope` not found"):
        txn.update_metadata(make_metadata(partition_columns=("nope",)))


# ---- validation: the log must stay untouched ------------------------------------------------


def test_append_only_table_refuses_data_removal_and_stays_untouched(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.appendOnly": "true"})
    append(root, [{"id": 1, "part": "a", "value": "keep"}])
    snap = pydelta.load_snapshot(root)
    assert snap.protocol == Protocol(1, 2)
    before = log_listing(root)
    existing = snap.files().to_pylist()[0]
    remove = remove_action({"add": {"path": existing["path"], "partitionValues": {"part": "a"},
                                    "size": existing["size"]}})
    txn = OptimisticTransaction(root, snap)
    with pytest.raises(DeltaAnalysisError, match="only allow appends"):
        txn.commit([remove], Operation.delete(["true"]))
    assert log_listing(root) == before
    assert rows_of(root) == [(1, "a", "keep")]
    # Rearranging data without changing it (dataChange=false) is still allowed.
    compact = write_data_file(root, [{"id": 1, "part": "a", "value": "keep"}], data_change=False)
    txn = OptimisticTransaction(root, snap)
    txn.read_files([existing["path"]])
    version = txn.commit([remove_action(remove, data_change=False), compact], Operation.optimize(), data_change=False)
    assert version == 2 and rows_of(root) == [(1, "a", "keep")]


@pytest.mark.parametrize(
    "case",
    ["duplicate_add", "add_and_remove_same_file", "missing_partition_value", "extra_partition_value", "commit_info",
     "unknown_kind", "add_without_size"],
)
def test_invalid_commits_leave_the_log_untouched(table: str, case: str) -> None:
    snap = pydelta.load_snapshot(table)
    add = write_data_file(table, [{"id": 1, "part": "a", "value": "x"}])
    body = add["add"]
    actions = {
        "duplicate_add": [add, {"add": dict(body)}],
        "add_and_remove_same_file": [add, remove_action(add)],
        "missing_partition_value": [{"add": {**body, "partitionValues": {}}}],
        "extra_partition_value": [{"add": {**body, "partitionValues": {"part": "a", "other": "1"}}}],
        "commit_info": [add, {"commitInfo": {"operation": "X"}}],
        "unknown_kind": [{"sidecar": {"path": "x"}}],
        "add_without_size": [{"add": {k: v for k, v in body.items() if k != "size"}}],
    }[case]
    before = log_listing(table)
    with pytest.raises(DeltaError) as err:
        OptimisticTransaction(table, snap).commit(actions, Operation.write())
    assert isinstance(err.value, (DeltaIllegalArgumentError, InvalidTableError))
    assert log_listing(table) == before


def test_new_table_needs_metadata(tmp_path: Path) -> None:
    root = tmp_path / "t"
    with pytest.raises(InvalidTableError, match="Couldn't find Metadata"):
        OptimisticTransaction(str(root), None).commit([], "CREATE TABLE")
    assert not (root / "_delta_log").exists()


def test_partition_values_use_physical_names_under_column_mapping() -> None:
    from pydelta.txn.commit_checks import physical_partition_columns as _physical_partition_columns

    fmd = {
        "id": {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-1"},
        "part": {"delta.columnMapping.id": 2, "delta.columnMapping.physicalName": "col-2"},
        "value": {"delta.columnMapping.id": 3, "delta.columnMapping.physicalName": "col-3"},
    }
    md = make_metadata(configuration={"delta.columnMapping.mode": "name"}, field_metadata=fmd)
    assert _physical_partition_columns(md) == {"col-2"}
    assert _physical_partition_columns(make_metadata()) == {"part"}


def test_tables_with_unknown_writer_features_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "_delta_log").mkdir(parents=True)
    md = make_metadata()
    lines = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                      "writerFeatures": ["appendOnly", "someFutureWriterFeature"]}},
        {"metaData": md.to_dict()},
    ]
    (root / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(x) for x in lines))
    snap = pydelta.load_snapshot(str(root))  # still readable
    with pytest.raises(UnsupportedFeatureError, match="someFutureWriterFeature"):
        OptimisticTransaction(str(root), snap)


def test_metadata_needing_an_unwritable_feature_is_refused(tmp_path: Path) -> None:
    txn = OptimisticTransaction(str(tmp_path / "t"), None)
    with pytest.raises(UnsupportedFeatureError, match="catalogManaged"):
        txn.update_metadata(make_metadata(configuration={"delta.feature.catalogManaged": "supported"}))
    assert txn.metadata is None


def test_update_protocol_upgrades_but_never_downgrades(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.feature.inCommitTimestamp": "supported"})
    snap = pydelta.load_snapshot(root)
    assert snap.protocol == Protocol(1, 7, None, frozenset({"appendOnly", "invariants", "inCommitTimestamp"}))
    assert snap.configuration == {}  # protocol requests are not stored
    txn = OptimisticTransaction(root, snap)
    with pytest.raises(DeltaProtocolError, match="cannot be downgraded"):
        txn.update_protocol(Protocol(1, 2))
    new = Protocol(1, 7, None, frozenset({"appendOnly", "invariants", "inCommitTimestamp", "domainMetadata"}))
    txn.update_protocol(new)
    version = txn.commit([], Operation.upgrade_protocol(new))
    assert pydelta.load_snapshot(root).protocol == new
    assert [next(iter(a)) for a in log_lines(root, version)] == ["commitInfo", "protocol"]


def test_domain_metadata_needs_the_feature(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    txn = OptimisticTransaction(root, pydelta.load_snapshot(root))
    txn.add_domain_metadata("my.domain", '{"k":1}')
    before = log_listing(root)
    with pytest.raises(DeltaAnalysisError, match="DomainMetadataTableFeature is not enabled"):
        txn.commit([], Operation("MANUAL"))
    assert log_listing(root) == before

    root2 = str(tmp_path / "t2")
    create_table(root2, configuration={"delta.feature.domainMetadata": "supported"})
    txn = OptimisticTransaction(root2, pydelta.load_snapshot(root2))
    txn.add_domain_metadata("my.domain", '{"k":1}')
    with pytest.raises(DeltaIllegalArgumentError, match="same domain"):
        txn.add_domain_metadata("my.domain", "{}")
    txn.commit([], Operation("MANUAL"))
    assert pydelta.load_snapshot(root2).domain_metadata == {"my.domain": '{"k":1}'}


def test_no_data_change_commit_uses_snapshot_isolation(table: str) -> None:
    append(table, [{"id": 1, "part": "a", "value": "x"}])
    snap = pydelta.load_snapshot(table)
    old = snap.files().to_pylist()[0]
    txn = OptimisticTransaction(table, snap)
    txn.read_files([old["path"]])
    new = write_data_file(table, [{"id": 1, "part": "a", "value": "x"}], data_change=False)
    rm = remove_action({"add": {"path": old["path"], "partitionValues": {"part": "a"}, "size": old["size"]}},
                       data_change=False)
    version = txn.commit([rm, new], Operation.optimize(), data_change=False)
    info = commit_info(table, version)
    assert info["isolationLevel"] == "SnapshotIsolation"
    assert info["isBlindAppend"] is False


def test_serializable_isolation_is_recorded(table: str) -> None:
    txn = OptimisticTransaction(table, pydelta.load_snapshot(table), isolation_level="Serializable")
    version = txn.commit([write_data_file(table, [{"id": 1, "part": "a", "value": "x"}])], Operation.write())
    assert commit_info(table, version)["isolationLevel"] == "Serializable"
    with pytest.raises(DeltaIllegalArgumentError):
        OptimisticTransaction(table, None, isolation_level="ReadCommitted")


def test_gives_up_after_max_attempts(table: str) -> None:
    snap = pydelta.load_snapshot(table)
    append(table, [{"id": 1, "part": "a", "value": "x"}])
    txn = OptimisticTransaction(table, snap, max_commit_attempts=1)
    with pytest.raises(ConcurrentWriteException, match="tried 1 times"):
        txn.commit([write_data_file(table, [{"id": 2, "part": "a", "value": "y"}])], Operation.write())


# ---- in-commit timestamps ------------------------------------------------------------------


def test_in_commit_timestamps_are_first_and_monotonic(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.enableInCommitTimestamps": "true"})
    snap = pydelta.load_snapshot(root)
    assert "inCommitTimestamp" in snap.protocol.writer_features
    assert snap.protocol.min_writer_version == 7
    assert "delta.inCommitTimestampEnablementVersion" not in snap.configuration  # enabled at creation
    info0 = commit_info(root, 0)
    assert next(iter(info0)) == "inCommitTimestamp"
    assert info0["inCommitTimestamp"] == info0["timestamp"]

    # A writer whose clock is far behind still produces increasing timestamps.
    stamps = [info0["inCommitTimestamp"]]
    for i in range(3):
        txn = OptimisticTransaction(root, pydelta.load_snapshot(root), clock=lambda: 1_000)
        version = txn.commit([write_data_file(root, [{"id": i, "part": "a", "value": "x"}])], Operation.write())
        stamps.append(commit_info(root, version)["inCommitTimestamp"])
        assert commit_info(root, version)["timestamp"] == 1_000
    assert stamps == [stamps[0] + i for i in range(4)]
    assert pydelta.load_snapshot(root).timestamp == stamps[-1]


def test_enabling_in_commit_timestamps_records_enablement(table: str) -> None:
    append(table, [{"id": 1, "part": "a", "value": "x"}])
    snap = pydelta.load_snapshot(table)
    conf = {"delta.enableInCommitTimestamps": "true"}
    txn = OptimisticTransaction(table, snap)
    txn.update_metadata(Metadata(snap.metadata.id, snap.metadata.schema_string, ("part",), conf))
    version = txn.commit([], Operation.set_table_properties(conf))
    assert version == 2
    info = commit_info(table, 2)
    after = pydelta.load_snapshot(table)
    assert after.configuration["delta.inCommitTimestampEnablementVersion"] == "2"
    assert after.configuration["delta.inCommitTimestampEnablementTimestamp"] == str(info["inCommitTimestamp"])
    assert info["inCommitTimestamp"] > snap.timestamp  # later than the previous file time
    assert after.protocol == Protocol(1, 7, None, frozenset({"appendOnly", "invariants", "inCommitTimestamp"}))
    # Later metadata changes keep the provenance.
    txn = OptimisticTransaction(table, after)
    txn.update_metadata(Metadata(after.metadata.id, after.metadata.schema_string, ("part",), {**conf, "a": "b"}))
    txn.commit([], Operation.set_table_properties({"a": "b"}))
    final = pydelta.load_snapshot(table).configuration
    assert final["delta.inCommitTimestampEnablementVersion"] == "2"
    assert final["a"] == "b"


# ---- checkpoint hook ------------------------------------------------------------------------


@pytest.fixture
def fake_checkpointing(monkeypatch: pytest.MonkeyPatch):
    calls: dict[str, list] = {"checkpoint": [], "cleanup": []}
    state = {"fail": False}

    def write_checkpoint(snapshot, *, parts=None, v2=None, now_ms=None, checksum_mismatch_fatal=True):
        calls["checkpoint"].append(snapshot.version)
        if state["fail"]:
            raise OSError("disk full")

    def cleanup_expired_logs(snapshot):
        calls["cleanup"].append(snapshot.version)

    cp = types.ModuleType("pydelta.log.checkpoint_writer")
    cp.write_checkpoint = write_checkpoint  # type: ignore[attr-defined]
    cl = types.ModuleType("pydelta.log.cleanup")
    cl.cleanup_expired_logs = cleanup_expired_logs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pydelta.log.checkpoint_writer", cp)
    monkeypatch.setitem(sys.modules, "pydelta.log.cleanup", cl)
    return calls, state


def test_checkpoint_every_interval_and_failures_do_not_fail_the_commit(
    tmp_path: Path, fake_checkpointing, caplog
) -> None:
    calls, state = fake_checkpointing
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.checkpointInterval": "2"})
    for i in range(1, 5):
        if i == 4:
            state["fail"] = True
        assert append(root, [{"id": i, "part": "a", "value": "x"}]) == i
    assert calls["checkpoint"] == [2, 4]
    assert calls["cleanup"] == [2]  # no cleanup after a failed checkpoint
    assert "checkpoint" in caplog.text and "disk full" in caplog.text
    assert len(rows_of(root)) == 4


def test_default_checkpoint_interval_is_10(tmp_path: Path, fake_checkpointing) -> None:
    calls, _ = fake_checkpointing
    root = str(tmp_path / "t")
    create_table(root)
    for i in range(1, 11):
        append(root, [{"id": i, "part": "a", "value": "x"}])
    assert calls["checkpoint"] == [10]


# ---- protocol_upgrade ----------------------------------------------------------------------

FIELD = {"name": "id", "type": "integer", "nullable": True, "metadata": {}}


def md_with(conf: dict | None = None, fields: list[dict] | None = None) -> Metadata:
    schema = json.dumps({"type": "struct", "fields": fields or [FIELD]})
    return Metadata("id", schema, (), conf or {})


def P(r: int, w: int, readers: list[str] | None = None, writers: list[str] | None = None) -> Protocol:
    return Protocol(r, w, frozenset(readers) if readers is not None else None,
                    frozenset(writers) if writers is not None else None)


def test_seed_003_walk_through() -> None:
    """CREATE TABLE -> (1,2); enable CDF -> (1,4); enable DVs -> (3,7) with the legacy features listed."""
    created = pu.required_protocol(md_with(), None)
    assert created == P(1, 2)
    cdf = {"delta.enableChangeDataFeed": "true"}
    with_cdf = pu.required_protocol(md_with(cdf), created)
    assert with_cdf == P(1, 4)
    with_dv = pu.required_protocol(md_with({**cdf, "delta.enableDeletionVectors": "true"}), with_cdf)
    assert with_dv == P(
        3,
        7,
        ["deletionVectors"],
        ["deletionVectors", "checkConstraints", "generatedColumns", "invariants", "changeDataFeed", "appendOnly"],
    )
    assert with_dv.to_dict()["readerFeatures"] == ["deletionVectors"]


AO_INV = ["appendOnly", "invariants"]


def col(name: str, type_: str, **metadata: object) -> dict:
    return {"name": name, "type": type_, "nullable": True, "metadata": metadata}


INVARIANT = col("id", "integer", **{"delta.invariants": '{"expression":{"expression":"id > 0"}}'})
GENERATED = col("g", "integer", **{"delta.generationExpression": "id + 1"})
IDENTITY = col("id", "long", **{"delta.identity.start": 1, "delta.identity.step": 1})
NTZ = col("t", "timestamp_ntz")


def rw(feature: str, *more: str) -> Protocol:
    """(3,7) with `feature` (a reader-writer feature) plus writer-only extras and the defaults."""
    return P(3, 7, [feature], [feature, *more, *AO_INV])


@pytest.mark.parametrize(
    "conf,fields,expected",
    [
        ({}, None, P(1, 2)),
        ({"delta.appendOnly": "true"}, None, P(1, 2)),
        ({}, [INVARIANT], P(1, 2)),
        ({"delta.constraints.positive": "id > 0"}, None, P(1, 3)),
        ({"delta.enableChangeDataFeed": "true"}, None, P(1, 4)),
        ({}, [FIELD, GENERATED], P(1, 4)),
        ({"delta.columnMapping.mode": "name"}, None, P(2, 5)),
        ({"delta.columnMapping.mode": "id"}, None, P(2, 5)),
        ({}, [IDENTITY], P(1, 6)),
        ({}, [FIELD, NTZ], rw("timestampNtz")),
        ({"delta.enableDeletionVectors": "true"}, None, rw("deletionVectors")),
        ({"delta.enableInCommitTimestamps": "true"}, None, P(1, 7, None, ["inCommitTimestamp", *AO_INV])),
        ({"delta.checkpointPolicy": "v2"}, None, rw("v2Checkpoint")),
        ({"delta.enableTypeWidening": "true"}, None, rw("typeWidening")),
        ({"delta.feature.domainMetadata": "supported"}, None, P(1, 7, None, ["domainMetadata", *AO_INV])),
        ({"delta.feature.vacuumProtocolCheck": "supported"}, None, rw("vacuumProtocolCheck")),
        ({"delta.enableRowTracking": "true"}, None, P(1, 7, None, ["rowTracking", "domainMetadata", *AO_INV])),
        # Variant shredding: the preview name by default, as delta-spark 4.4 attaches it; the
        # stable one (which needs variantType) when asked for; a "false" property adds nothing.
        ({"delta.enableVariantShredding": "true"}, None, rw("variantShredding-preview")),
        ({"delta.enableVariantShredding": "true", "delta.feature.variantShredding": "supported"}, None,
         P(3, 7, ["variantShredding", "variantType"], ["variantShredding", "variantType", *AO_INV])),
        ({"delta.enableVariantShredding": "false"}, None, P(1, 2)),
        (
            {"delta.enableChangeDataFeed": "true", "delta.enableInCommitTimestamps": "true"},
            None,
            P(1, 7, None, ["inCommitTimestamp", "changeDataFeed", *AO_INV]),  # as delta-spark 4.3 wrote it
        ),
        (
            {"delta.columnMapping.mode": "name", "delta.enableDeletionVectors": "true"},
            None,
            P(3, 7, ["columnMapping", "deletionVectors"], ["columnMapping", "deletionVectors", *AO_INV]),
        ),
        ({"delta.minWriterVersion": "5"}, None, P(1, 5)),
        ({"delta.minReaderVersion": "2", "delta.minWriterVersion": "5"}, None, P(2, 5)),
        ({"delta.minWriterVersion": "1"}, None, P(1, 1)),
        ({"delta.ignoreProtocolDefaults": "true"}, None, P(1, 1)),
        # Explicit versions replace delta-spark's (1,2) defaults instead of adding to them.
        ({"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"}, None, P(3, 7, [], [])),
        ({"delta.feature.appendOnly": "enabled"}, None, P(1, 2)),
    ],
)
def test_required_protocol_for_new_tables(conf: dict, fields: list | None, expected: Protocol) -> None:
    assert pu.required_protocol(md_with(conf, fields), None) == expected


def test_required_protocol_never_lowers_the_current_one() -> None:
    assert pu.required_protocol(md_with(), P(2, 5)) == P(2, 5)
    assert pu.required_protocol(md_with(), P(1, 4)) == P(1, 4)
    dv = P(3, 7, ["deletionVectors"], ["deletionVectors", "appendOnly", "invariants"])
    assert pu.required_protocol(md_with(), dv) == dv  # DVs switched off: feature stays supported
    # A legacy table gaining a writer feature keeps its legacy features, listed explicitly.
    assert pu.required_protocol(md_with({"delta.enableInCommitTimestamps": "true"}), P(1, 3)) == P(
        1, 7, None, ["inCommitTimestamp", "appendOnly", "invariants", "checkConstraints"]
    )
    # Column mapping on a table-features table: reader 3 keeps it in readerFeatures.
    assert pu.required_protocol(md_with({"delta.columnMapping.mode": "name"}), dv) == P(
        3, 7, ["deletionVectors", "columnMapping"], ["deletionVectors", "appendOnly", "invariants", "columnMapping"]
    )
    assert pu.required_protocol(md_with({"delta.minWriterVersion": "4"}), P(1, 2)) == P(1, 4)


def test_existing_tables_need_manual_enablement_for_some_features() -> None:
    ntz = [FIELD, {"name": "t", "type": "timestamp_ntz", "nullable": True, "metadata": {}}]
    with pytest.raises(DeltaAnalysisError, match="timestampNtz"):
        pu.required_protocol(md_with({}, ntz), P(1, 2))
    ok = pu.required_protocol(md_with({"delta.feature.timestampNtz": "supported"}, ntz), P(1, 2))
    assert ok == P(3, 7, ["timestampNtz"], ["timestampNtz", "appendOnly", "invariants"])


def test_protocol_requests_are_validated_and_stripped() -> None:
    md, protocol = pu.metadata_and_protocol(
        md_with({"delta.minWriterVersion": "3", "delta.feature.appendOnly": "supported", "keep": "me"}), None
    )
    assert md.configuration == {"keep": "me"}
    assert protocol == P(1, 3)
    with pytest.raises(DeltaIllegalArgumentError, match="needs to be an integer"):
        pu.required_protocol(md_with({"delta.minWriterVersion": "two"}), None)
    with pytest.raises(DeltaIllegalArgumentError):
        pu.required_protocol(md_with({"delta.minWriterVersion": "8"}), None)
    with pytest.raises(DeltaIllegalArgumentError, match='to be "supported"'):
        pu.required_protocol(md_with({"delta.feature.appendOnly": "on"}), None)
    with pytest.raises(DeltaAnalysisError, match="not recognized"):
        pu.required_protocol(md_with({"delta.feature.noSuchFeature": "supported"}), None)


def test_newest_delta_spark_normalization_mode() -> None:
    """delta-spark 4.x lists exactly the needed features instead of rounding up to a legacy version."""
    newest = {"legacy_preferred": False}
    cdf = md_with({"delta.enableChangeDataFeed": "true"})
    assert pu.required_protocol(cdf, None, **newest) == P(1, 7, None, ["appendOnly", "invariants", "changeDataFeed"])
    # DeltaProtocolVersionSuite "protocol for empty folder"
    cdf_only = md_with({"delta.enableChangeDataFeed": "true", "delta.ignoreProtocolDefaults": "true"})
    assert pu.required_protocol(cdf_only, None, **newest) == P(1, 7, None, ["changeDataFeed"])
    assert pu.required_protocol(md_with({"delta.constraints.c": "id > 0"}), None, **newest) == P(1, 3)
    assert pu.required_protocol(md_with({"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"}), P(1, 2),
                                **newest) == P(1, 2)
    assert pu.required_protocol(md_with(), P(1, 4), **newest) == P(1, 4)


def test_protocol_algebra() -> None:
    assert pu.normalized(P(1, 7, None, ["appendOnly", "invariants", "checkConstraints"])) == P(1, 3)
    assert pu.normalized(P(3, 7, [], ["rowTracking", "domainMetadata"])) == P(
        1, 7, None, ["rowTracking", "domainMetadata"])
    assert pu.normalized(P(3, 7, ["columnMapping"], ["columnMapping"])) == P(2, 7, None, ["columnMapping"])
    assert pu.denormalized(P(1, 2)) == P(1, 7, None, ["appendOnly", "invariants"])
    assert pu.merge(P(1, 2), P(1, 4)) == P(1, 4)
    assert pu.merge(P(1, 2), P(1, 7, None, ["inCommitTimestamp"])) == P(
        1, 7, None, ["appendOnly", "invariants", "inCommitTimestamp"])
    assert pu.implicit_features(P(2, 5)) >= {"columnMapping", "changeDataFeed"}
    assert pu.implicit_features(P(1, 7, None, ["appendOnly"])) == frozenset()
    assert pu.can_upgrade(P(1, 2), P(1, 7, None, ["appendOnly", "invariants"]))
    assert not pu.can_upgrade(P(1, 4), P(1, 7, None, ["appendOnly", "invariants"]))
    with pytest.raises(DeltaProtocolError):
        pu.check_upgrade(P(1, 4), P(1, 2))
