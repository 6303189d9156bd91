"""How the Spark layer opens and finishes a transaction, in one place.

`open_transaction` is the one factory: every transaction opened from Spark records the
session's engineInfo (with its commitInfo.userMetadata) and runs at the isolation level the
table's metadata asks for (`delta.isolationLevel`). `run_post_commit_hooks` runs, in order,
the Spark-side post-commit hooks after a commit; the log core's own post-commit work
(checkpoint every `delta.checkpointInterval` versions, then log cleanup) has already run
inside the commit, as delta-spark checkpoints before its registered hooks. The hook list is
given once by the entrance (`session._post_commit_hooks`): the hooks live in floors above
this one (auto compaction is an OPTIMIZE), so this floor only knows their shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydelta.errors import DeltaError
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.actions import Metadata
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.conf import conf_bool
from pydelta.spark.base.engine import SparkEngine
from pydelta.txn.commit_info import EngineInfo
from pydelta.txn.transaction import OptimisticTransaction
from pydelta.version import __version__

# delta-spark's session confs for version checksum files (log/checksum.py), both on by default.
WRITE_CHECKSUM_CONF = "spark.databricks.delta.writeChecksumFile.enabled"
CHECKSUM_MISMATCH_FATAL_CONF = "spark.databricks.delta.checksum.mismatch.fatal"


@dataclass(frozen=True)
class PostCommitHook:
    """One post-commit hook: `run` after a commit; `check_session` before a data write starts
    (a bad session conf is refused before any file is written, as delta-spark refuses it at SET)."""

    name: str
    run: Callable[[SparkSession, OptimisticTransaction, int, Sequence[Mapping[str, Any]]], None]
    check_session: Callable[[SparkSession], None] = lambda spark: None


_HOOKS: list[PostCommitHook] = []


def install_post_commit_hooks(hooks: Sequence[PostCommitHook]) -> None:
    """Set the ordered hook list (the entrance does, once; idempotent)."""
    _HOOKS[:] = list(hooks)


def engine_info(spark: SparkSession) -> str:
    """engineInfo for a commit from `spark`, carrying the session's commitInfo.userMetadata to every commit."""
    return EngineInfo(f"pydelta/{__version__} Apache-Spark/{spark.version}",
                      spark.conf.get("spark.databricks.delta.commitInfo.userMetadata", None))


def isolation_level(metadata: Metadata | None) -> str:
    """The table's `delta.isolationLevel` (Serializable or the default WriteSerializable)."""
    level = (metadata.configuration.get("delta.isolationLevel") if metadata else None) or "WriteSerializable"
    return "Serializable" if level.lower() == "serializable" else "WriteSerializable"


def open_transaction(spark: SparkSession, snapshot: Snapshot | None, table_root: str | None = None, *,
                     writes_data: bool = False) -> OptimisticTransaction:
    """A transaction on `snapshot`'s table (or, for a new table, on `table_root`).

    `writes_data`: the caller writes data files next, so the hooks' session confs are checked first.
    """
    if writes_data:
        for hook in _HOOKS:
            hook.check_session(spark)
    root = snapshot.table_root if snapshot is not None else table_root
    if root is None:
        raise DeltaError("internal error: a transaction needs a snapshot or a table root")
    storage = snapshot.storage if snapshot is not None else SparkEngine(spark).storage(root)
    return OptimisticTransaction(root, snapshot, engine_info=engine_info(spark), storage=storage,
                                 isolation_level=isolation_level(snapshot.metadata if snapshot else None),
                                 write_checksum=conf_bool(spark, WRITE_CHECKSUM_CONF, True),
                                 checksum_mismatch_fatal=conf_bool(spark, CHECKSUM_MISMATCH_FATAL_CONF, True))


def run_post_commit_hooks(spark: SparkSession, txn: OptimisticTransaction, version: int | None,
                          actions: Iterable[Mapping[str, Any]]) -> None:
    """Run the hooks, in order, after `txn` committed `version` (nothing when it committed nothing).

    A hook that fails leaves the commit standing; its error says so, as delta-spark's
    DELTA_POST_COMMIT_HOOK_FAILED does (a pydelta error keeps its type, anything else is a DeltaError).
    """
    if version is None or spark is None:
        return
    committed = list(actions)
    for hook in _HOOKS:
        try:
            hook.run(spark, txn, version, committed)
        except DeltaError as e:
            raise type(e)(_hook_failed(hook.name, version, e)) from e
        except Exception as e:  # noqa: BLE001 - Spark job failures, I/O: the commit stands, the error says so
            raise DeltaError(_hook_failed(hook.name, version, e)) from e


def _hook_failed(name: str, version: int, error: BaseException) -> str:
    return (f"[DELTA_POST_COMMIT_HOOK_FAILED] Committing to the Delta table version {version} succeeded but "
            f"error while executing post-commit hook {name}: {error}")
