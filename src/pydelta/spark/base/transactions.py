"""How the Spark layer opens and finishes a transaction, in one place.

`open_transaction` is the one factory: every transaction opened from Spark records the
session's engineInfo (with its commitInfo.userMetadata) and runs at the isolation level the
table's metadata asks for (`delta.isolationLevel`), and carries the Spark-side post-commit
hooks, bound to the session, which the transaction runs after its commit behind the log
core's own steps (checksum, checkpoint with log cleanup, UniForm): one list, in delta-spark's
order (`OptimisticTransaction.run_post_commit_hooks`). The hook list is given once by the
entrance (`session._post_commit_hooks`): the hooks live in floors above this one (auto
compaction is an OPTIMIZE), so this floor only knows their shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
from pydelta.txn.transaction import PostCommitHook as TxnPostCommitHook
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
                                 checksum_mismatch_fatal=conf_bool(spark, CHECKSUM_MISMATCH_FATAL_CONF, True),
                                 engine_hooks=tuple(_on_session(hook, spark) for hook in _HOOKS))


def _on_session(hook: PostCommitHook, spark: SparkSession) -> TxnPostCommitHook:
    """`hook` as the transaction runs it after each commit: on this session."""
    return TxnPostCommitHook(hook.name, lambda txn, version, actions: hook.run(spark, txn, version, actions))
