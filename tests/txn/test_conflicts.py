"""The conflict matrix: two transactions from the same read version, the second one to commit loses
the race for the next version and must either raise delta-spark's exception or rebase."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pydelta
from pydelta.errors import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    DeltaConcurrentModificationException,
    MetadataChangedException,
    ProtocolChangedException,
)
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.protocol.predicates import Cmp, Col, Lit, Unknown
from pydelta.txn.transaction import Operation, OptimisticTransaction

from .writers import append, create_table, make_metadata, remove_action, rows_of, write_data_file

PART_A = Cmp("=", Col(("part",)), Lit("a"))
PART_B = Cmp("=", Col(("part",)), Lit("b"))


@pytest.fixture
def table(tmp_path: Path) -> str:
    """Partitioned by `part`: two files in a, one in b (version 3)."""
    root = str(tmp_path / "t")
    create_table(root)
    append(root, [{"id": 1, "part": "a", "value": "a1"}])
    append(root, [{"id": 2, "part": "a", "value": "a2"}])
    append(root, [{"id": 3, "part": "b", "value": "b1"}])
    return root


def two(root: str, **kwargs: Any) -> tuple[OptimisticTransaction, OptimisticTransaction]:
    snap = pydelta.load_snapshot(root)
    return OptimisticTransaction(root, snap, **kwargs), OptimisticTransaction(root, snap, **kwargs)


def files_in(txn: OptimisticTransaction, part: str) -> list[dict]:
    assert txn.snapshot is not None
    return [f for f in txn.snapshot.files().to_pylist() if dict(f["partition_values"] or []).get("part") == part]


def removal(f: dict, data_change: bool = True) -> dict:
    return remove_action({"add": {"path": f["path"], "partitionValues": dict(f["partition_values"]),
                                  "size": f["size"]}}, data_change)


def blind_append(txn: OptimisticTransaction, part: str, ident: int) -> int:
    add = write_data_file(txn.table_root, [{"id": ident, "part": part, "value": f"new-{ident}"}])
    return txn.commit([add], Operation.write("Append", []))


def delete_partition(txn: OptimisticTransaction, part: str, *, record_files: bool = True, rewrite: bool = False) -> int:
    """DELETE WHERE part = <part>, like delta-spark records it (predicate + files read)."""
    txn.read_predicate(Cmp("=", Col(("part",)), Lit(part)))
    files = files_in(txn, part)
    if record_files:
        txn.read_files(f["path"] for f in files)
    actions = [removal(f) for f in files]
    if rewrite:
        actions.append(write_data_file(txn.table_root, [{"id": 99, "part": part, "value": "rewritten"}]))
    return txn.commit(actions, Operation.delete([f"(part = '{part}')"]))


# ---- appends ------------------------------------------------------------------------------


def test_blind_appends_never_conflict(table: str) -> None:
    a, b = two(table)
    assert blind_append(a, "a", 10) == 4
    assert blind_append(b, "a", 11) == 5  # rebased over 4
    info = json.loads((Path(table) / "_delta_log" / f"{5:020d}.json").read_text().splitlines()[0])["commitInfo"]
    assert info["readVersion"] == 3 and info["isBlindAppend"] is True
    assert len(rows_of(table)) == 5


def test_blind_appends_never_conflict_even_serializable(table: str) -> None:
    a, b = two(table, isolation_level="Serializable")
    blind_append(a, "a", 10)
    assert blind_append(b, "a", 11) == 5


def test_write_serializable_reader_does_not_conflict_with_blind_append(table: str) -> None:
    winner, loser = two(table)
    blind_append(winner, "a", 10)
    assert delete_partition(loser, "a") == 5
    # The delete only removed the files it read; the concurrent append survives.
    assert set(rows_of(table)) == {(3, "b", "b1"), (10, "a", "new-10")}


def test_serializable_reader_conflicts_with_blind_append_in_its_partition(table: str) -> None:
    winner, loser = two(table, isolation_level="Serializable")
    blind_append(winner, "a", 10)
    with pytest.raises(ConcurrentAppendException) as err:
        delete_partition(loser, "a")
    message = str(err.value)
    assert "committed at version 4" in message
    assert "a concurrent WRITE added data" in message
    assert "in the partition [part=a]" in message
    assert err.value.version == 4  # type: ignore[attr-defined]
    assert err.value.path.startswith("part=a/")  # type: ignore[attr-defined]


def test_serializable_reader_ignores_appends_to_other_partitions(table: str) -> None:
    winner, loser = two(table, isolation_level="Serializable")
    blind_append(winner, "b", 10)
    assert delete_partition(loser, "a") == 5


def test_non_blind_adds_in_the_read_partition_conflict(table: str) -> None:
    winner, loser = two(table)
    delete_partition(winner, "a", rewrite=True)  # rewrite: removes + adds in partition a
    with pytest.raises(ConcurrentAppendException, match=r"DELETE added data .* version 4.*\[part=a\]"):
        delete_partition(loser, "a")


def test_non_blind_adds_elsewhere_do_not_conflict(table: str) -> None:
    winner, loser = two(table)
    delete_partition(winner, "b", rewrite=True)
    assert delete_partition(loser, "a") == 5
    assert sorted(r[2] for r in rows_of(table)) == ["rewritten"]


# ---- deletes --------------------------------------------------------------------------------


def test_deleting_a_file_the_loser_read(table: str) -> None:
    winner, loser = two(table)
    target = files_in(winner, "a")[0]
    winner.read_files([target["path"]])
    winner.commit([removal(target)], Operation.delete(["(id = 1)"]))
    loser.read_files(f["path"] for f in files_in(loser, "a"))
    loser_add = write_data_file(table, [{"id": 50, "part": "b", "value": "x"}])
    with pytest.raises(ConcurrentDeleteReadException) as err:
        loser.commit([loser_add], Operation.update("(part = 'a')"))
    message = str(err.value)
    assert "a concurrent DELETE deleted data from table" in message
    assert "(committed at version 4) that this transaction read" in message
    assert "in the partition [part=a]" in message
    assert target["path"] in message


def test_whole_table_readers_conflict_with_any_delete(table: str) -> None:
    winner, loser = two(table)
    delete_partition(winner, "b")
    loser.read_whole_table()
    with pytest.raises(ConcurrentDeleteReadException, match="version 4"):
        blind_append(loser, "a", 20)


def test_whole_table_readers_conflict_with_non_blind_adds_only(table: str) -> None:
    winner, loser = two(table)
    blind_append(winner, "b", 10)
    loser.read_predicate(None)  # None = the whole table
    assert blind_append(loser, "a", 11) == 5
    winner, loser = two(table)
    delete_partition(winner, "b", rewrite=True)
    loser.read_whole_table()
    with pytest.raises(ConcurrentAppendException, match="version 6"):
        blind_append(loser, "a", 12)


def test_deleting_the_same_file_twice(table: str) -> None:
    winner, loser = two(table)
    target = files_in(winner, "b")[0]
    winner.commit([removal(target)], Operation.delete([]))
    with pytest.raises(ConcurrentDeleteDeleteException) as err:
        loser.commit([removal(target)], Operation.delete([]))
    assert "that this transaction attempted to delete" in str(err.value)
    assert "[part=b]" in str(err.value)


def test_appends_come_before_deletes_in_the_checks(table: str) -> None:
    """A winner that removed what the loser read *and* added to its partition: append wins, as in delta-spark."""
    winner, loser = two(table)
    delete_partition(winner, "a", rewrite=True)
    with pytest.raises(ConcurrentAppendException):
        delete_partition(loser, "a")


# ---- compaction (dataChange = false) ----------------------------------------------------------


def compact(txn: OptimisticTransaction, part: str) -> int:
    files = files_in(txn, part)
    txn.read_predicate(Cmp("=", Col(("part",)), Lit(part)))
    txn.read_files(f["path"] for f in files)
    rows = []
    for f in files:
        import pyarrow.parquet as pq

        rows += [{**r, "part": part} for r in pq.read_table(txn.snapshot.absolute_path(f["path"])).to_pylist()]  # type: ignore[union-attr]
    new = write_data_file(txn.table_root, rows, data_change=False)
    return txn.commit([removal(f, data_change=False) for f in files] + [new], Operation.optimize(), data_change=False)


def test_compaction_does_not_conflict_with_inserts(table: str) -> None:
    winner, loser = two(table)
    delete_partition(winner, "a", rewrite=True)  # not even blind: compaction uses SnapshotIsolation
    winner2 = OptimisticTransaction(table, loser.snapshot)
    blind_append(winner2, "b", 30)
    with pytest.raises(ConcurrentDeleteReadException):  # but the DELETE removed the files it read
        compact(loser, "a")
    _, loser = two(table)
    append(table, [{"id": 31, "part": "b", "value": "x"}])  # a blind append into the partition compacted
    assert compact(loser, "b") == 7
    assert sorted(r[0] for r in rows_of(table)) == [3, 30, 31, 99]


def test_delete_conflicts_with_concurrent_compaction(table: str) -> None:
    winner, loser = two(table)
    compact(winner, "a")
    with pytest.raises(ConcurrentAppendException):  # compaction added files in the partition read
        delete_partition(loser, "a")


# ---- metadata, protocol, app ids, domains ------------------------------------------------------


def test_metadata_change_conflicts_with_everything(table: str) -> None:
    winner, loser = two(table)
    snap = winner.snapshot
    assert snap is not None
    winner.update_metadata(Metadata(snap.metadata.id, snap.metadata.schema_string, ("part",),
                                    {"delta.appendOnly": "true"}))
    winner.commit([], Operation.set_table_properties({"delta.appendOnly": "true"}))
    with pytest.raises(MetadataChangedException) as err:
        blind_append(loser, "a", 10)
    assert "has been changed by a concurrent update" in str(err.value)
    assert '"operation":"SET TBLPROPERTIES"' in str(err.value)
    assert '"version":4' in str(err.value)


def test_loser_metadata_change_conflicts_with_blind_appends_it_read(table: str) -> None:
    winner, loser = two(table)
    blind_append(winner, "a", 10)
    snap = loser.snapshot
    assert snap is not None
    loser.read_whole_table()
    loser.update_metadata(Metadata(snap.metadata.id, snap.metadata.schema_string, ("part",), {"x": "y"}))
    with pytest.raises(ConcurrentAppendException):
        loser.commit([removal(f) for f in snap.files().to_pylist()], Operation.write("Overwrite", []))


def test_two_creators_conflict_with_protocol_changed(tmp_path: Path) -> None:
    root = str(tmp_path / "new")
    a, b = OptimisticTransaction(root, None), OptimisticTransaction(root, None)
    for txn in (a, b):
        txn.update_metadata(make_metadata())
    a.commit([], "CREATE TABLE")
    with pytest.raises(ProtocolChangedException, match="multiple writers are writing to an empty directory"):
        b.commit([write_data_file(root, [{"id": 1, "part": "a", "value": "x"}])], Operation.write())


def test_compatible_protocol_upgrade_is_adopted(table: str) -> None:
    winner, loser = two(table)
    new = Protocol(3, 7, frozenset({"vacuumProtocolCheck"}),
                   frozenset({"appendOnly", "invariants", "vacuumProtocolCheck"}))
    winner.update_protocol(new)
    winner.commit([], Operation.upgrade_protocol(new))
    assert blind_append(loser, "a", 10) == 5
    assert pydelta.load_snapshot(table).protocol == new


def test_protocol_change_conflicts_with_protocol_change(table: str) -> None:
    winner, loser = two(table)
    winner.update_protocol(Protocol(1, 7, None, frozenset({"appendOnly", "invariants", "inCommitTimestamp"})))
    winner.commit([], "UPGRADE PROTOCOL")
    loser.update_protocol(Protocol(1, 7, None, frozenset({"appendOnly", "invariants", "domainMetadata"})))
    with pytest.raises(ProtocolChangedException, match="protocol version of the Delta table has been changed"):
        loser.commit([], "UPGRADE PROTOCOL")


def test_unsafe_feature_upgrade_fails_concurrent_writers(table: str) -> None:
    winner, loser = two(table)
    # checkpointProtection, like checkConstraints, binds every writer from its upgrade on.
    winner.update_protocol(Protocol(1, 7, None, frozenset({"appendOnly", "invariants", "checkpointProtection"})))
    winner.commit([], "UPGRADE PROTOCOL")
    with pytest.raises(ProtocolChangedException):
        blind_append(loser, "a", 10)


def test_same_app_id_conflicts(table: str) -> None:
    winner, loser = two(table)
    for txn in (winner, loser):
        assert txn.app_transaction_version("stream-1") is None
        txn.set_app_transaction("stream-1", 0)
    blind_append(winner, "a", 10)
    with pytest.raises(ConcurrentTransactionException, match="multiple streaming queries"):
        blind_append(loser, "a", 11)


def test_different_app_ids_do_not_conflict(table: str) -> None:
    winner, loser = two(table)
    winner.set_app_transaction("stream-1", 0)
    loser.set_app_transaction("stream-2", 0)
    blind_append(winner, "a", 10)
    assert blind_append(loser, "a", 11) == 5
    assert pydelta.load_snapshot(table).transactions == {"stream-1": 0, "stream-2": 0}


def test_same_domain_conflicts(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration={"delta.feature.domainMetadata": "supported"})
    winner, loser = two(root)
    winner.add_domain_metadata("d", "1")
    loser.add_domain_metadata("d", "2")
    winner.commit([], "MANUAL")
    with pytest.raises(ConcurrentTransactionException, match="conflicting metadata domain d"):
        loser.commit([], "MANUAL")
    winner, loser = two(root)
    winner.add_domain_metadata("x", "1")
    loser.add_domain_metadata("y", "2")
    winner.commit([], "MANUAL")
    assert loser.commit([], "MANUAL") == 3


# ---- predicates over the winners' files --------------------------------------------------------


@pytest.fixture
def flat(tmp_path: Path) -> str:
    root = str(tmp_path / "flat")
    create_table(root, partition_columns=())
    for i in (1, 2):
        append(root, [{"id": i, "part": "p", "value": "v"}], partition_columns=())
    return root


def rewrite_flat(txn: OptimisticTransaction, ids: list[int]) -> int:
    files = txn.snapshot.files().to_pylist()  # type: ignore[union-attr]
    target = files[0]
    txn.read_files([target["path"]])
    add = write_data_file(txn.table_root, [{"id": i, "part": "p", "value": "w"} for i in ids], partition_columns=())
    return txn.commit([removal(target), add], Operation.update("(id = 1)"))


def test_data_predicates_use_the_winners_stats(flat: str) -> None:
    winner, loser = two(flat)
    rewrite_flat(winner, [100, 101])  # non-blind adds with ids 100..101
    loser.read_predicate(Cmp("<", Col(("id",)), Lit(50)))  # cannot match the winner's new file
    add = write_data_file(flat, [{"id": 7, "part": "p", "value": "x"}], partition_columns=())
    assert loser.commit([add], Operation.update("(id < 50)")) == 4


def test_data_predicates_matching_the_winners_stats_conflict(flat: str) -> None:
    winner, loser = two(flat)
    rewrite_flat(winner, [100, 101])
    loser.read_predicate(Cmp(">", Col(("id",)), Lit(50)))
    with pytest.raises(ConcurrentAppendException) as err:
        loser.commit([write_data_file(flat, [{"id": 7, "part": "p", "value": "x"}], partition_columns=())],
                     Operation.update())
    assert "The concurrent operation modified data that should have been read" in str(err.value)
    assert "partition" not in str(err.value).split("version 3.")[1].split("Conflicting file")[0]


def test_unknown_predicates_are_conservative(flat: str) -> None:
    winner, loser = two(flat)
    rewrite_flat(winner, [100])
    loser.read_predicate(Unknown("udf(id)"))
    with pytest.raises(ConcurrentAppendException):
        loser.commit([], Operation.update())


def test_exact_file_reads_on_an_unpartitioned_table_conflict_with_any_add(flat: str) -> None:
    winner, loser = two(flat)
    rewrite_flat(winner, [100])
    loser.read_files([f["path"] for f in loser.snapshot.files().to_pylist()][1:])  # type: ignore[union-attr]
    with pytest.raises(ConcurrentAppendException):
        loser.commit([], Operation.update())


# ---- in-commit timestamps across a rebase ------------------------------------------------------


def test_rebased_commit_gets_a_later_in_commit_timestamp(tmp_path: Path) -> None:
    root = str(tmp_path / "ict")
    create_table(root, configuration={"delta.enableInCommitTimestamps": "true"})
    snap = pydelta.load_snapshot(root)
    future = snap.timestamp + 1_000_000
    winner = OptimisticTransaction(root, snap, clock=lambda: future)
    loser = OptimisticTransaction(root, snap, clock=lambda: snap.timestamp + 5)
    blind_append(winner, "a", 1)
    assert blind_append(loser, "a", 2) == 2
    stamps = [
        json.loads((Path(root) / "_delta_log" / f"{v:020d}.json").read_text().splitlines()[0])["commitInfo"][
            "inCommitTimestamp"]
        for v in (1, 2)
    ]
    assert stamps == [future, future + 1]


def test_every_conflict_is_a_concurrent_modification(table: str) -> None:
    for cls in (
        ConcurrentAppendException,
        ConcurrentDeleteReadException,
        ConcurrentDeleteDeleteException,
        ConcurrentTransactionException,
        MetadataChangedException,
        ProtocolChangedException,
    ):
        assert issubclass(cls, DeltaConcurrentModificationException)
