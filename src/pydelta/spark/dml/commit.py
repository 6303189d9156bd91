"""DELETE, UPDATE and MERGE's transaction: the checks before it, row counts and timing,
and the commit (dml/conditions.py and dml/files.py hold the rest they share).

Every DML command here runs in one OptimisticTransaction: plan on one snapshot,
let Spark find the touched files and write their replacements (and change
data files when delta.enableChangeDataFeed is on), then commit adds, removes
and cdc actions together. Nothing is committed before the last step, so any
failure leaves the table as it was; files written by a command that then fails
or loses a commit race are deleted (best effort; VACUUM removes any left).

Commands are split into `prepare_*` (everything but the commit, returning a
PreparedCommit) and `PreparedCommit.commit()`, so concurrent commits can be
interleaved deterministically (tests, conflict handling).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydelta.errors import (
    DeltaAnalysisError,
    DeltaConcurrentModificationException,
    DeltaError,
)
from pydelta.log.snapshot import Snapshot
from pydelta.log.storage import Storage
from pydelta.protocol import properties as P
from pydelta.protocol.action_types import Action
from pydelta.protocol.actions import Metadata
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.transactions import open_transaction
from pydelta.txn.commit_info import Operation
from pydelta.txn.transaction import OptimisticTransaction

# ---- the transaction ------------------------------------------------------------------------


def check_dml_supported(snapshot: Snapshot, operation: str, *, removes_rows: bool = True) -> None:
    """Refuse early (before writing anything) what the commit would refuse."""
    if removes_rows:
        check_not_append_only(snapshot)


def check_not_append_only(snapshot: Snapshot) -> None:
    if P.APPEND_ONLY.get(snapshot.configuration):
        raise DeltaAnalysisError(
            "This table is configured to only allow appends. If you would like to permit updates or deletes, use "
            "'ALTER TABLE <table_name> SET TBLPROPERTIES (delta.appendOnly=false)'."
        )


def transaction_metadata(txn: OptimisticTransaction) -> Metadata:
    """The metadata `txn` commits with; a DML transaction starts from a table's snapshot, so it has one."""
    metadata = txn.metadata
    if metadata is None:
        raise DeltaError(f"internal error: no table metadata in the transaction on {txn.table_root}")
    return metadata


def new_transaction(spark: SparkSession, snapshot: Snapshot) -> OptimisticTransaction:
    return open_transaction(spark, snapshot, writes_data=True)


# ---- counts and timing --------------------------------------------------------------------------------


def observation() -> Any:
    import uuid

    from pyspark.sql import Observation

    return Observation(f"pydelta_dml_{uuid.uuid4().hex[:12]}")


def observed(obs: Any, wait_s: float = 5.0) -> dict[str, Any] | None:
    """The metrics of an Observation whose query has run, or None if Spark never reported them.

    Spark skips reporting when the optimizer removed the observed part of the
    plan (e.g. a join with an empty side); callers then fall back to counting.
    """
    jo = getattr(obs, "_jo", None)
    if jo is None:
        return None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            done = bool(jo.future().isCompleted())
        except Exception:
            done = True  # older API without a future: get() is safe after the action
        if done:
            break
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)
    try:
        return {k: (0 if v is None else v) for k, v in obs.get.items()}
    except Exception:
        return None


def elapsed_ms(since: float) -> int:
    return int((time.monotonic() - since) * 1000)


# ---- the commit ------------------------------------------------------------------------------------------


@dataclass
class PreparedCommit:
    """A DML command whose data files are written; `commit()` publishes it.

    Split in two so tests (and callers) can interleave other commits between
    the read and the commit, which is what conflict detection is about.
    """

    txn: OptimisticTransaction
    actions: list[Action]
    operation: Operation
    metrics: dict[str, Any]
    started: float = field(default_factory=time.monotonic)
    result: Any = None
    spark: SparkSession | None = None  # runs the post-commit hooks (auto compaction)

    def commit(self) -> int | None:
        """Commit; returns the version, or None when the command changed nothing.

        When the commit loses to a conflicting transaction, the files this command
        wrote are deleted (nothing references them) and the conflict is re-raised.
        """
        if "executionTimeMs" in self.metrics:
            self.metrics["executionTimeMs"] = max(
                int(self.metrics["executionTimeMs"]), int((time.monotonic() - self.started) * 1000)
            )
        if self.spark is not None and self._idempotent_run_done(self.spark):
            discard_files(self.txn.storage, self.txn.table_root, self.actions)
            return None
        if not self.actions and not self.txn.metadata_changed and not self.txn.has_app_transactions:
            # delta-spark's DML commits with commitIfNeeded: a DELETE, UPDATE or MERGE that touched no row
            # (no file action, no schema change) records no version, at any isolation level, DVs and CDF or not.
            return None
        try:
            version = self.txn.commit(self.actions, self.operation, operation_metrics=self.metrics, data_change=True)
        except DeltaConcurrentModificationException:
            discard_files(self.txn.storage, self.txn.table_root, self.actions)
            raise
        return version

    def _idempotent_run_done(self, spark: SparkSession) -> bool:
        """delta-spark's idempotent DML (session confs spark.databricks.delta.write.txnAppId and
        txnVersion): a version that app already committed makes this run a no-op; otherwise the
        commit records it (a txn action). The confs' autoReset applies as for writes."""
        from pydelta.spark.base.conf import conf_value
        from pydelta.spark.write.options import (
            TXN_APP_ID_CONF,
            TXN_AUTO_RESET_CONF,
            TXN_VERSION_CONF,
            session_transaction,
        )

        applied = session_transaction({key: value for key in (TXN_APP_ID_CONF, TXN_VERSION_CONF)
                                       if (value := conf_value(spark, key)) is not None})
        if applied is None:
            return False
        app_id, version = applied
        if conf_value(spark, TXN_AUTO_RESET_CONF, "false").lower() == "true":
            spark.conf.unset(TXN_VERSION_CONF)
        seen = self.txn.app_transaction_version(app_id)
        if seen is not None and seen >= version:
            return True
        self.txn.set_app_transaction(app_id, version)
        return False


def discard_files(storage: Storage, table_root: str, actions: Iterable[Action]) -> None:
    """Delete the data / change files of uncommitted `add` and `cdc` actions (best effort).

    An `add` of a path the same actions remove is an existing file getting a new deletion
    vector: the data file stays, only the new DV file goes.
    """
    from pydelta.log.replay import canonical_path
    from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor

    actions = list(actions)
    removed = {a["remove"]["path"] for a in actions if a.get("remove")}
    for action in actions:
        for kind in ("add", "cdc"):
            body: Mapping[str, Any] | None = action.get(kind)  # type: ignore[assignment]  # add or cdc
            if not body or not body.get("path"):
                continue
            path: str | None = canonical_path(body["path"], table_root)
            if kind == "add" and body["path"] in removed:
                dv = body.get("deletionVector")
                path = DeletionVectorDescriptor.from_dict(dv).absolute_path(table_root) if dv else None
            if path is None:
                continue
            # Through the table's storage (its Hadoop options, its object-store settings); best
            # effort, often inside an error being raised already.
            with contextlib.suppress(Exception):
                storage.delete(path)
