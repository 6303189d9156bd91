"""Row-tracking backfills: recommitting live files so they gain (BACKFILL) or lose (UNBACKFILL)
their row-tracking fields, as delta-spark does when the feature is enabled on a table with data
or dropped."""

from __future__ import annotations

import pyarrow.compute as pc

from pydelta.log.file_actions import add_action_from_file_row
from pydelta.log.snapshot import Snapshot
from pydelta.protocol import properties
from pydelta.protocol.action_types import Action, AddFile, as_add
from pydelta.txn import protocol_upgrade as pu
from pydelta.txn.commit_info import Operation
from pydelta.txn.row_tracking import enabled, has_row_ids
from pydelta.txn.transaction import OptimisticTransaction


def unbackfill(snapshot: Snapshot, engine_info: str | None = None) -> Snapshot:
    """Recommit every file that carries row-tracking fields without them (delta-spark's ROW TRACKING
    UNBACKFILL, the last step before dropping the feature); row IDs must be suspended first."""
    if enabled(snapshot.metadata) or not properties.ROW_TRACKING_SUSPENDED.get(snapshot.metadata.configuration):
        raise AssertionError("unbackfill needs row tracking disabled and suspended")
    if not has_row_ids(snapshot):
        return snapshot
    files = snapshot.files()
    tracked = files.filter(pc.or_(files.column("base_row_id").is_valid(),
                                  files.column("default_row_commit_version").is_valid()))
    adds: list[Action] = []
    for row in tracked.to_pylist():
        add = add_action_from_file_row(row)
        add["dataChange"] = False
        add.pop("baseRowId", None)
        add.pop("defaultRowCommitVersion", None)
        adds.append({"add": add})
    txn = OptimisticTransaction(snapshot.table_root, snapshot, engine_info=engine_info)
    txn.read_files([a["add"]["path"] for a in adds])
    txn.commit(adds, Operation("ROW TRACKING UNBACKFILL", {"batchId": "0"}), data_change=False)
    return snapshot.update()


def _recommitted(row: dict[str, object]) -> AddFile:
    """A live file's add action again, as a recommit of the same data (dataChange=false)."""
    add = add_action_from_file_row(row)
    add["dataChange"] = False
    return add


def backfill(snapshot: Snapshot, engine_info: str | None = None) -> Snapshot:
    """Before `delta.enableRowTracking` goes on for a table with data: support the feature, then
    recommit every file without a `baseRowId` so it gets one (delta-spark's ROW TRACKING BACKFILL)."""
    if "rowTracking" not in pu.all_features(snapshot.protocol):
        wanted = pu.merge(snapshot.protocol, pu.features_protocol(1, {"rowTracking", "domainMetadata"}))
        txn = OptimisticTransaction(snapshot.table_root, snapshot, engine_info=engine_info)
        txn.update_protocol(wanted)
        txn.commit([], Operation.upgrade_protocol(wanted))
        snapshot = snapshot.update()
    files = snapshot.files()
    missing = files.filter(files.column("base_row_id").is_null()) if "base_row_id" in files.column_names else files
    if missing.num_rows:
        adds = [_recommitted(row) for row in missing.to_pylist()]
        txn = OptimisticTransaction(snapshot.table_root, snapshot, engine_info=engine_info)
        txn.read_files([a["path"] for a in adds])
        txn.commit([as_add(a) for a in adds], Operation("ROW TRACKING BACKFILL", {"batchId": "0"}), data_change=False)
        snapshot = snapshot.update()
    return snapshot
