"""Row tracking on commit: baseRowId / defaultRowCommitVersion / the delta.rowTracking high-water mark.

Checked on real tables: new files get row IDs above the mark (raised in the same commit), a
transaction that loses a race takes the winner's mark, re-added files keep theirs, suspension
stops assignment, checkpoints keep the fields, and deltalake reads the tables.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pydelta
from pydelta.log.checkpoint_writer import write_checkpoint
from pydelta.txn.transaction import Operation, OptimisticTransaction

from .writers import append, create_table, deltalake_rows, rows_of, write_data_file

ROW_TRACKING = {"delta.enableRowTracking": "true"}


def _ids(root: str) -> list[tuple[int, int, int]]:
    """(baseRowId, numRecords, defaultRowCommitVersion) of every live file, by baseRowId."""
    files = pydelta.load_snapshot(root).files()
    return sorted(zip(files.column("base_row_id").to_pylist(), files.column("num_records").to_pylist(),
                      files.column("default_row_commit_version").to_pylist(), strict=True))


def _mark(root: str) -> int:
    return json.loads(pydelta.load_snapshot(root).domain_metadata["delta.rowTracking"])["rowIdHighWaterMark"]


def _check_unique(root: str) -> None:
    spans = _ids(root)
    for (b1, n1, _), (b2, _, _) in pairwise(spans):
        assert b1 + n1 <= b2, f"row ID ranges overlap: {spans}"
    assert _mark(root) >= spans[-1][0] + spans[-1][1] - 1


def test_appends_get_row_ids_and_commit_versions(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration=ROW_TRACKING)
    snap = pydelta.load_snapshot(root)
    assert {"rowTracking", "domainMetadata"} <= set(snap.protocol.writer_features or ())
    v1 = append(root, [{"id": 1, "part": "a", "value": "x"}, {"id": 2, "part": "a", "value": "y"}])
    v2 = append(root, [{"id": 3, "part": "b", "value": "z"}])
    assert _ids(root) == [(0, 2, v1), (2, 1, v2)]
    assert _mark(root) == 2
    commit = (Path(root) / "_delta_log" / f"{v2:020d}.json").read_text().splitlines()
    domains = [json.loads(line)["domainMetadata"] for line in commit if "domainMetadata" in line]
    assert domains == [{"domain": "delta.rowTracking", "configuration": '{"rowIdHighWaterMark":2}', "removed": False}]
    write_checkpoint(pydelta.load_snapshot(root))
    assert _ids(root) == [(0, 2, v1), (2, 1, v2)]  # read back from the checkpoint
    version, rows = deltalake_rows(root)
    assert version == v2 and sorted(rows, key=repr) == rows_of(root)


def test_a_losing_transaction_takes_the_winners_mark(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration=ROW_TRACKING)
    snap = pydelta.load_snapshot(root)
    first = OptimisticTransaction(root, snap)
    second = OptimisticTransaction(root, snap)
    a = write_data_file(root, [{"id": i, "part": "a", "value": "a"} for i in range(3)])
    b = write_data_file(root, [{"id": i, "part": "b", "value": "b"} for i in range(4)])
    first.commit([a], Operation.write("Append", []))
    second.commit([b], Operation.write("Append", []))  # both blind appends: rebased, not failed
    assert [(base, n) for base, n, _ in _ids(root)] == [(0, 3), (3, 4)]
    assert _mark(root) == 6
    _check_unique(root)


def test_recommitted_files_keep_their_row_ids_and_suspension_stops_assignment(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root, configuration=ROW_TRACKING)
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    before = _ids(root)
    snap = pydelta.load_snapshot(root)
    row = snap.files().to_pylist()[0]
    from pydelta.log.file_actions import add_action_from_file_row

    readd = {**add_action_from_file_row(row), "dataChange": False}
    for key in ("baseRowId", "defaultRowCommitVersion"):
        readd.pop(key, None)  # the writer forgot them: the transaction restores the live file's values
    OptimisticTransaction(root, snap).commit([{"add": readd}], Operation("OPTIMIZE"), data_change=False)
    assert _ids(root) == before
    snap = pydelta.load_snapshot(root)
    conf = {**snap.metadata.configuration, "delta.enableRowTracking": "false", "delta.rowTrackingSuspended": "true"}
    from dataclasses import replace

    txn = OptimisticTransaction(root, snap)
    txn.update_metadata(replace(snap.metadata, configuration=conf))
    txn.commit([], Operation.set_table_properties({"delta.rowTrackingSuspended": "true"}))
    append(root, [{"id": 2, "part": "b", "value": "y"}])
    files = pydelta.load_snapshot(root).files()
    assert sorted(files.column("base_row_id").to_pylist(), key=lambda x: (x is None, x)) == [before[0][0], None]
