"""OptimisticTransaction: read a snapshot, stage actions, commit the next version exactly once.

The commit protocol is delta-spark's. `N.json` is created with put-if-absent,
so a log entry is never overwritten. When another writer already took N, the
winning commits are read and checked for real conflicts (conflicts.py); if
there are none the transaction is rebased and retried at the next version.

This module stages changes and prepares the commit; commit_checks.py validates what is
staged, commit_writer.py publishes the prepared commit (attempts, conflicts, rebases).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from pydelta.errors import (
    DeltaAnalysisError,
    DeltaConcurrentModificationException,
    DeltaError,
    DeltaIllegalArgumentError,
    DeltaMissingDependencyError,
    DeltaProtocolError,
    InvalidTableError,
    TableAlreadyExistsError,
)
from pydelta.log.commit_owners.base import COMMIT_OWNER_KEY
from pydelta.log.commit_owners.registry import owner_spec
from pydelta.log.segment import LogSegment, list_log, log_dir_of
from pydelta.log.storage import Storage, storage_for, to_local_path
from pydelta.protocol import iceberg_compat
from pydelta.protocol import properties as P
from pydelta.protocol.action_types import Action, kind_and_body
from pydelta.protocol.actions import DomainMetadata, Metadata, Protocol, Txn, dumps_action
from pydelta.protocol.predicates import Predicate
from pydelta.txn import protocol_upgrade as pu
from pydelta.txn import row_tracking
from pydelta.txn.commit_checks import (
    refuse_catalog_managed,
    validate_file_actions,
    validate_metadata,
    with_managed_commit_requirements,
    without_managed_commit,
)
from pydelta.txn.commit_info import (
    ICT_ENABLED,
    Operation,
    build_commit_info,
    in_commit_timestamp,
    is_blind_append,
    new_txn_id,
)
from pydelta.txn.commit_writer import CommitWriter, PreparedCommit, publish_route
from pydelta.txn.conflicts import (
    SERIALIZABLE,
    SNAPSHOT_ISOLATION,
    WRITE_SERIALIZABLE,
    CurrentTransaction,
)

if TYPE_CHECKING:
    from pydelta.log.snapshot import Snapshot

__all__ = ["DEFAULT_MAX_COMMIT_ATTEMPTS", "Operation", "OptimisticTransaction", "PostCommitHook"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_COMMIT_ATTEMPTS = 10_000
DEFAULT_CHECKPOINT_INTERVAL = 10
_FILE_KINDS = ("add", "remove", "cdc")


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class PostCommitHook:
    """An engine's step after each commit of a transaction (the Spark layer's: symlink manifests,
    auto compaction), run after the log core's own (`OptimisticTransaction.run_post_commit_hooks`)
    with the committed version and file actions. Its failure leaves the commit standing and says
    so (DELTA_POST_COMMIT_HOOK_FAILED)."""

    name: str
    run: Callable[[OptimisticTransaction, int, Sequence[Action]], None]


class OptimisticTransaction:
    """One atomic change to a Delta table, committed with optimistic concurrency control."""

    def __init__(
        self,
        table_root: str,
        snapshot: Snapshot | None,
        *,
        isolation_level: str = WRITE_SERIALIZABLE,
        engine_info: str | None = None,
        storage: Storage | None = None,
        max_commit_attempts: int = DEFAULT_MAX_COMMIT_ATTEMPTS,
        legacy_protocols: bool = True,
        post_commit_hooks: bool = True,
        engine_hooks: Sequence[PostCommitHook] = (),
        clock: Callable[[], int] | None = None,
        write_checksum: bool = True,
        checksum_mismatch_fatal: bool = True,
    ) -> None:
        if isolation_level not in (SERIALIZABLE, WRITE_SERIALIZABLE):
            raise DeltaIllegalArgumentError(
                f"isolation level must be {SERIALIZABLE} or {WRITE_SERIALIZABLE}, got {isolation_level!r}"
            )
        if max_commit_attempts < 1:
            raise DeltaIllegalArgumentError("max_commit_attempts must be at least 1")
        self.snapshot = snapshot
        if snapshot is not None:
            self.table_root = snapshot.table_root
        else:
            self.table_root = to_local_path(table_root).rstrip("/") or "/"
        self.storage: Storage = storage or (snapshot.storage if snapshot is not None else storage_for(table_root))
        self.read_version: int = snapshot.version if snapshot is not None else -1
        self.isolation_level = isolation_level
        self.engine_info = engine_info
        self.max_commit_attempts = max_commit_attempts
        self.legacy_protocols = legacy_protocols
        self.post_commit_hooks = post_commit_hooks
        self.engine_hooks = tuple(engine_hooks)
        # Version checksum files (log/checksum.py): written after each commit (delta-spark's
        # spark.databricks.delta.writeChecksumFile.enabled); a checksum that disagrees with the
        # replayed state stops a checkpoint (spark.databricks.delta.checksum.mismatch.fatal).
        self.write_checksum = write_checksum
        self.checksum_mismatch_fatal = checksum_mismatch_fatal
        self.txn_id = new_txn_id()
        self._clock = clock or _now_ms
        self._new_metadata: Metadata | None = None
        self._new_protocol: Protocol | None = None
        self._txns: dict[str, Txn] = {}
        self._domains: dict[str, DomainMetadata] = {}
        self._read_predicates: list[Predicate] = []
        self._read_files: set[str] = set()
        self._read_whole_table = False
        self._read_app_ids: set[str] = set()
        self.committed_version: int | None = None
        self.committed_commit_info: dict[str, Any] | None = None
        self._post_snapshot: Snapshot | None = None
        self._committed_payload: bytes | None = None
        if snapshot is not None:
            # Refuse early, before the caller writes any data file.
            refuse_catalog_managed(snapshot.protocol, snapshot.metadata)
            snapshot.protocol.check_writable()
            owner_spec(snapshot.metadata, snapshot.protocol)  # invalid managed-commit states
        else:
            self._refuse_existing_table()

    def _refuse_existing_table(self) -> None:
        """A new table's transaction over a log that already has versions could only fail at commit,
        on version 0, with the creation race's ProtocolChangedException: say what it is, now."""
        listing = list_log(self.storage, self.table_root, 0)
        if listing.commits or listing.checkpoints:
            raise TableAlreadyExistsError(
                f"[DELTA_TABLE_ALREADY_EXISTS] Table delta.`{self.table_root}` already exists.")

    # ---- state ------------------------------------------------------------------------
    @property
    def metadata(self) -> Metadata | None:
        if self._new_metadata is not None:
            return self._new_metadata
        return self.snapshot.metadata if self.snapshot is not None else None

    @property
    def protocol(self) -> Protocol | None:
        if self._new_protocol is not None:
            return self._new_protocol
        return self.snapshot.protocol if self.snapshot is not None else None

    @property
    def metadata_changed(self) -> bool:
        return self._new_metadata is not None

    def _read_protocol(self) -> Protocol | None:
        return self.snapshot.protocol if self.snapshot is not None else None

    # ---- staging ----------------------------------------------------------------------
    def update_metadata(self, metadata: Metadata, *, replace_previous: bool = False) -> None:
        """Set the table's new metadata; the protocol follows what its features need.

        `replace_previous`: a second, final version of this transaction's own metadata change
        (a write records its identity high-water marks once its data is written).
        """
        self._check_open()
        if self._new_metadata is not None and not replace_previous:
            raise DeltaIllegalArgumentError("Cannot change the metadata more than once in a transaction.")
        if replace_previous:
            self._new_metadata = None
        validate_metadata(metadata)
        metadata = with_managed_commit_requirements(metadata)
        metadata = iceberg_compat.with_requirements(metadata, self.snapshot.metadata if self.snapshot else None)
        current = self._new_protocol or self._read_protocol()
        if current is not None and COMMIT_OWNER_KEY not in metadata.configuration:
            current = without_managed_commit(current)  # converting to the file system drops the feature
        stored, protocol = pu.metadata_and_protocol(metadata, current, legacy_preferred=self.legacy_protocols)
        stored = row_tracking.with_materialized_column_names(stored, protocol)
        refuse_catalog_managed(protocol, stored)
        protocol.check_writable()
        pu.check_upgrade(current, protocol)
        owner_spec(stored, protocol)  # the owner property and the feature go together
        self._new_metadata = stored
        if protocol != self._read_protocol():
            self._new_protocol = protocol

    def update_protocol(self, protocol: Protocol) -> None:
        """Upgrade the protocol explicitly (never a downgrade)."""
        self._check_open()
        current = self._new_protocol or self._read_protocol()
        pu.check_upgrade(current, protocol)
        if self._new_metadata is not None:
            protocol = pu.required_protocol(self._new_metadata, protocol, legacy_preferred=self.legacy_protocols)
        refuse_catalog_managed(protocol, self.metadata)
        protocol.check_writable()
        self._new_protocol = protocol if protocol != self._read_protocol() else None

    def downgrade_protocol(self, protocol: Protocol, metadata: Metadata) -> None:
        """DROP FEATURE: a protocol with fewer features, and the metadata that no longer needs them."""
        self._check_open()
        if self._new_metadata is not None or self._new_protocol is not None:
            raise DeltaIllegalArgumentError("a protocol downgrade must be the only protocol/metadata change")
        validate_metadata(metadata)
        needed, _ = pu.required_features(metadata, protocol)
        missing = sorted(needed - set(pu.all_features(protocol)))
        if missing:
            raise DeltaProtocolError(f"the metadata still needs the feature(s) {', '.join(missing)}")
        protocol.check_writable()
        self._new_metadata = metadata
        self._new_protocol = protocol

    def set_app_transaction(self, app_id: str, version: int) -> None:
        """Record an idempotent writer's progress (a txn action); it also becomes a read dependency."""
        self._check_open()
        self._txns[app_id] = Txn(app_id, int(version), self._clock())
        self._read_app_ids.add(app_id)

    @property
    def has_app_transactions(self) -> bool:
        """Whether this commit records an idempotent writer's progress (txn actions)."""
        return bool(self._txns)

    def app_transaction_version(self, app_id: str) -> int | None:
        """The last version committed by `app_id` in the read snapshot (None if never)."""
        self._read_app_ids.add(app_id)
        if self.snapshot is None:
            return None
        return self.snapshot.transactions.get(app_id)

    def add_domain_metadata(self, domain: str, configuration: str, removed: bool = False) -> None:
        self._check_open()
        if domain in self._domains:
            raise DeltaIllegalArgumentError(
                f"Internal error: two DomainMetadata actions within the same transaction have the same domain {domain}"
            )
        self._domains[domain] = DomainMetadata(domain, configuration, removed)

    def read_predicate(self, predicate: Predicate | None) -> None:
        """Record a filtered read (None: the whole table) so later appends to it conflict."""
        if predicate is None:
            self.read_whole_table()
        else:
            self._read_predicates.append(predicate)

    def read_files(self, paths: Iterable[str]) -> None:
        """Record files this transaction read, so their concurrent removal conflicts."""
        from pydelta.log.replay import canonical_path

        self._read_files.update(canonical_path(p, self.table_root) for p in paths)

    def read_whole_table(self) -> None:
        self._read_whole_table = True

    def _read_anything(self) -> bool:
        return bool(self._read_predicates or self._read_files or self._read_whole_table)

    def _check_open(self) -> None:
        if self.committed_version is not None:
            raise DeltaIllegalArgumentError("Transaction already committed.")

    # ---- commit ------------------------------------------------------------------------
    def commit(
        self,
        actions: Sequence[Action],
        operation: Operation | str,
        *,
        operation_metrics: Mapping[str, int | str] | None = None,
        user_metadata: str | None = None,
        tags: Mapping[str, str] | None = None,
        data_change: bool = True,
    ) -> int:
        """Commit `actions` as the next version; returns the version written.

        `data_change` says whether the operation changes data (delta-spark's
        `Operation.changesData`); a no-data-change commit of dataChange=false
        files runs under SnapshotIsolation, like OPTIMIZE.
        """
        self._check_open()
        if isinstance(operation, str):
            operation = Operation(operation)
        file_actions = self._absorb(actions)
        prepared = self._prepare(file_actions, operation, operation_metrics, user_metadata, tags, data_change)
        version = self._write_with_retries(prepared)
        self.committed_version = version
        logger.info("committed version %d of %s (%d attempts)", version, self.table_root, prepared.attempts)
        self.run_post_commit_hooks(version, operation.name, file_actions)
        return version

    def run_post_commit_hooks(self, version: int, operation: str, actions: Sequence[Action]) -> None:
        """Every step after the commit, in delta-spark's order: the checksum (ChecksumHook), the
        checkpoint with log cleanup (CheckpointHook), the UniForm conversion (IcebergConverterHook),
        then the engine's hooks (symlink manifests, auto compaction). The log core's steps never
        fail the committed write; an engine hook's failure is raised after the commit, and never
        as a concurrent modification, which callers would take for this commit's own conflict."""
        self._write_version_checksum(version, operation)
        self._checkpoint_and_clean_up(version)
        self._convert_to_iceberg(version)
        for hook in self.engine_hooks:
            try:
                hook.run(self, version, actions)
            except DeltaConcurrentModificationException as e:
                raise DeltaError(_hook_failed(hook.name, version, e)) from e
            except DeltaError as e:
                raise type(e)(_hook_failed(hook.name, version, e)) from e
            except Exception as e:  # Spark job failures, I/O: the commit stands, the error says so
                raise DeltaError(_hook_failed(hook.name, version, e)) from e

    def _absorb(self, actions: Iterable[Mapping[str, Any]]) -> list[Action]:
        """Split caller actions: file actions stay, others go through the transaction's own API."""
        file_actions: list[Action] = []
        for action in actions:
            if not isinstance(action, Mapping) or len(action) != 1:
                raise DeltaIllegalArgumentError(
                    f"an action must be a one-key dict like {{'add': {{...}}}}, got {action!r:.200}"
                )
            kind, body = next(iter(action.items()))
            if kind in _FILE_KINDS:
                if not isinstance(body, Mapping):
                    raise DeltaIllegalArgumentError(f"{kind} action body must be a dict, got {body!r:.200}")
                file_actions.append(cast("Action", {kind: body}))  # checked by validate_file_actions
            elif kind == "metaData":
                self.update_metadata(body if isinstance(body, Metadata) else Metadata.from_dict(body))
            elif kind == "protocol":
                self.update_protocol(body if isinstance(body, Protocol) else Protocol.from_dict(body))
            elif kind == "txn":
                self.set_app_transaction(body["appId"], body["version"])
            elif kind == "domainMetadata":
                removed = bool(body.get("removed", False))
                self.add_domain_metadata(body["domain"], body.get("configuration", ""), removed)
            elif kind == "commitInfo":
                raise DeltaIllegalArgumentError("commitInfo is written by the transaction itself")
            else:
                raise DeltaIllegalArgumentError(f"unsupported action kind {kind!r} in a commit")
        return file_actions

    def _prepare(
        self,
        file_actions: list[Action],
        operation: Operation,
        operation_metrics: Mapping[str, int | str] | None,
        user_metadata: str | None,
        tags: Mapping[str, str] | None,
        data_change: bool,
    ) -> PreparedCommit:
        """Validate everything and build what every attempt writes. Nothing touches the table here."""
        if self.read_version < 0 and self._new_metadata is None:
            raise InvalidTableError("Couldn't find Metadata while committing the first version of the Delta table.")
        metadata, protocol = self.metadata, self.protocol
        assert metadata is not None and protocol is not None
        protocol.check_writable()
        read_owner = owner_spec(self.snapshot.metadata, self.snapshot.protocol) if self.snapshot is not None else None
        new_owner = owner_spec(metadata, protocol)
        read_md = self.snapshot.metadata if self.snapshot is not None else None
        route = publish_route(read_owner, new_owner, read_md, metadata)
        removed = validate_file_actions(file_actions, metadata, protocol, self.table_root, read_md)
        iceberg_compat.check_commit(
            metadata, protocol, read_md, self._read_protocol(),
            [body for kind, body in map(kind_and_body, file_actions) if kind == "add"])
        if iceberg_compat.uniform_iceberg_enabled(metadata.configuration):
            _require_pyiceberg()
        self._validate_domains(protocol)

        isolation = self._isolation_for(file_actions, data_change)
        blind = is_blind_append(file_actions, self._read_anything())
        now = self._clock()
        ict_on = P.flag(metadata.configuration, ICT_ENABLED)
        previous_ts = self.snapshot.timestamp if self.snapshot is not None else None
        ict = in_commit_timestamp(now, previous_ts) if ict_on else None
        was_on = self.snapshot is not None and P.flag(self.snapshot.metadata.configuration, ICT_ENABLED)
        enables_ict = ict_on and not was_on
        commit_info = build_commit_info(
            timestamp=now,
            operation=operation,
            read_version=self.read_version,
            isolation_level=isolation,
            is_blind_append=blind,
            operation_metrics=operation_metrics,
            # an explicit value (the userMetadata write option) wins over the engine session's default
            user_metadata=(user_metadata if user_metadata is not None
                           else getattr(self.engine_info, "user_metadata", None)),
            tags=tags,
            engine_info=self.engine_info,
            txn_id=self.txn_id,
            in_commit_timestamp=ict,
        )
        other = [
            dumps_action("txn", {"appId": t.app_id, "version": t.version, "lastUpdated": t.last_updated})
            for t in self._txns.values()
        ]
        other += [dumps_action("domainMetadata", d.to_dict()) for d in self._domains.values()]
        tracked = row_tracking.assigns_row_ids(protocol, metadata) and any(
            "add" in a or "remove" in a for a in file_actions)
        if not tracked:
            other += [dumps_action(*_line(a)) for a in file_actions]
        conflict_info = CurrentTransaction(
            table_root=self.table_root,
            read_snapshot=self.snapshot,
            isolation_level=isolation,
            is_blind_append=blind,
            protocol=protocol,
            metadata_changed=self._new_metadata is not None,
            has_protocol_action=self._new_protocol is not None,
            read_predicates=list(self._read_predicates),
            read_files=set(self._read_files),
            read_whole_table=self._read_whole_table,
            read_app_ids=set(self._read_app_ids),
            removed_files=removed,
            domains=set(self._domains),
        )
        prepared = PreparedCommit(
            commit_info, self._new_protocol, self._new_metadata, other, ict, enables_ict, conflict_info,
            route=route, read_owner=read_owner, new_owner=new_owner,
        )
        if tracked:
            prepared.row_tracked_actions = file_actions
            prepared.row_id_mark = row_tracking.high_water_mark(self.snapshot.domain_metadata if self.snapshot else {})
            prepared.live_row_ids = row_tracking.live_row_tracking(self.snapshot)
        return prepared

    def _validate_domains(self, protocol: Protocol) -> None:
        if self._domains and "domainMetadata" not in pu.all_features(protocol):
            raise DeltaAnalysisError(
                f"Detected DomainMetadata action(s) for domains {sorted(self._domains)}, but "
                "DomainMetadataTableFeature is not enabled."
            )

    def _isolation_for(self, file_actions: list[Action], op_changes_data: bool) -> str:
        """delta-spark: no-data-change commits of only file actions may use SnapshotIsolation."""
        if self._new_metadata is not None or self._new_protocol is not None or self._txns or self._domains:
            return self.isolation_level
        data_changed = any(body.get("dataChange", True) for kind, body in map(kind_and_body, file_actions)
                           if kind != "cdc")
        # SnapshotIsolation needs no data change; below Serializable, also an operation that changes no data
        allowed = not data_changed and (self.isolation_level == SERIALIZABLE or not op_changes_data)
        return SNAPSHOT_ISOLATION if allowed else self.isolation_level

    # ---- writing ------------------------------------------------------------------------
    def _write_with_retries(self, prepared: PreparedCommit) -> int:
        writer = CommitWriter(self.storage, self.table_root, self.snapshot, self.read_version, self.txn_id,
                              self._clock, self.max_commit_attempts)
        version, info = writer.write_with_retries(prepared)
        self.committed_commit_info = info
        self._committed_payload = writer.committed_payload
        if prepared.metadata_action is not None:
            self._new_metadata = writer.metadata_for(prepared, version)
        return version

    # ---- after the commit -----------------------------------------------------------------
    def post_commit_snapshot(self) -> Snapshot:
        """The snapshot at the committed version, replaying only the commits since the read."""
        if self.committed_version is None:
            raise DeltaIllegalArgumentError("the transaction has not committed yet")
        if self._post_snapshot is None:
            self._post_snapshot = self._snapshot_at(self.committed_version)
        return self._post_snapshot

    def _snapshot_at(self, version: int) -> Snapshot:
        from pydelta.log.snapshot import load_snapshot

        if self.snapshot is not None:
            try:
                if owner_spec(self.snapshot.metadata, self.snapshot.protocol) is not None:
                    return _advance(self.snapshot, version)  # backfilled by us: no owner round trip
                latest = self.snapshot.update()
                if latest.version == version:
                    return latest
                return _advance(self.snapshot, version)
            except Exception as e:  # fall back to a full load below
                logger.debug("incremental post-commit snapshot failed, reloading: %s", e)
        return load_snapshot(self.table_root, version=version, storage=self.storage,
                             replayer=self.snapshot.replayer if self.snapshot is not None else None)

    def _write_version_checksum(self, version: int, operation: str) -> None:
        """Leave `<version>.crc`, derived from the previous version's checksum and this commit's own
        lines (from the post-commit snapshot where there is none to derive from). Like delta-spark's
        checksum hook it runs right after the commit, before the checkpoint, never overwrites a file
        and never fails the committed write."""
        if not self.write_checksum or self._committed_payload is None:
            return
        from pydelta.log import checksum as crc

        try:
            if owner_spec(self.metadata, self.protocol) is not None and not self.storage.exists(
                    f"{log_dir_of(self.table_root)}/{version:020d}.json"):
                # A commit its owner (or catalog) holds unpublished: the protocol allows its checksum
                # now, but readers that list only _delta_log (delta-rs' kernel) refuse a checksum
                # newer than the last published commit, so there is none for it.
                return
            actions = [json.loads(line) for line in self._committed_payload.decode("utf-8").splitlines() if line]
            previous = crc.EMPTY_TABLE if version == 0 else crc.read_checksum(self.storage, self.table_root,
                                                                                version - 1)
            derived = None if previous is None else crc.derive_checksum(previous, actions, operation=operation,
                                                                          txn_id=self.txn_id)
            if derived is None:
                derived = crc.compute_checksum(self.post_commit_snapshot(), txn_id=self.txn_id)
            crc.write_checksum(self.storage, self.table_root, version, derived)
        except Exception as e:  # noqa: BLE001 - the commit stands whatever happens here
            logger.warning("no checksum for version %d of %s (the commit stands): %s", version, self.table_root, e)

    def _convert_to_iceberg(self, version: int) -> None:
        """UniForm: the Iceberg metadata of the committed version (and of any commit before it that
        was not converted), after the checkpoint. Never fails the committed write: a conversion
        left behind is caught up by the next commit's."""
        if not self.post_commit_hooks or self.metadata is None or \
                not iceberg_compat.uniform_iceberg_enabled(self.metadata.configuration):
            return
        if owner_spec(self.metadata, self.protocol) is not None:
            logger.warning("UniForm (Iceberg) is not converted for tables whose commits a catalog or commit owner "
                           "holds (%s): delta-spark converts those through its catalog", self.table_root)
            return
        try:
            from pydelta.uniform.iceberg_converter import convert

            convert(self.post_commit_snapshot(), self.storage)
        except Exception as e:  # noqa: BLE001 - the commit stands whatever happens here
            logger.warning("UniForm (Iceberg) conversion of version %d of %s failed (the commit stands; the next "
                           "commit catches up): %s", version, self.table_root, e)

    def _checkpoint_and_clean_up(self, version: int) -> None:
        """Checkpoint every `delta.checkpointInterval` versions, then clean up expired log entries;
        never fails the committed write."""
        if not self.post_commit_hooks or version <= 0:
            return
        conf = (self.metadata.configuration if self.metadata is not None else {}) or {}
        try:
            interval = int(conf.get("delta.checkpointInterval", DEFAULT_CHECKPOINT_INTERVAL))
        except ValueError:
            interval = DEFAULT_CHECKPOINT_INTERVAL
        if interval <= 0 or version % interval != 0:
            return
        write_checkpoint = _optional("pydelta.log.checkpoint_writer", "write_checkpoint")
        if write_checkpoint is None:
            return
        try:
            snapshot = self.post_commit_snapshot()
            write_checkpoint(snapshot, checksum_mismatch_fatal=self.checksum_mismatch_fatal)
        except Exception as e:
            logger.warning("checkpoint of %s at version %d failed; the commit stands: %s", self.table_root, version, e)
            return
        if not P.flag(conf, "delta.enableExpiredLogCleanup", default=True):
            return
        cleanup = _optional("pydelta.log.cleanup", "cleanup_expired_logs")
        if cleanup is None:
            return
        try:
            cleanup(snapshot)
        except Exception as e:
            logger.warning("log cleanup of %s after version %d failed: %s", self.table_root, version, e)


# ---- helpers ------------------------------------------------------------------------------


def _hook_failed(name: str, version: int, error: BaseException) -> str:
    return (f"[DELTA_POST_COMMIT_HOOK_FAILED] Committing to the Delta table version {version} succeeded but "
            f"error while executing post-commit hook {name}: {error}")


def _require_pyiceberg() -> None:
    """UniForm's conversion writes Iceberg metadata with pyiceberg: without it, refuse before committing."""
    import importlib.util

    if importlib.util.find_spec("pyiceberg") is None:
        raise DeltaMissingDependencyError(
            "UniForm (delta.universalFormat.enabledFormats = iceberg) writes Iceberg metadata with pyiceberg, "
            "which is not installed: pip install 'pydelta-spark[uniform]'")


def _line(action: Action) -> tuple[str, dict[str, Any]]:
    kind, body = kind_and_body(action)
    return kind, dict(body)


def _optional(module: str, name: str) -> Callable[..., Any] | None:
    """A function from a module that may not exist yet (written in parallel)."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name == module:
            logger.debug("%s is not available; skipping", module)
            return None
        logger.warning("cannot import %s: %s", module, e)
        return None
    except Exception as e:
        logger.warning("cannot import %s: %s", module, e)
        return None
    return getattr(mod, name, None)


def _advance(snapshot: Snapshot, version: int) -> Snapshot:
    """`snapshot` moved forward to exactly `version` by applying the commits in between."""
    from pydelta.log.replay import apply_commits, read_commits
    from pydelta.log.snapshot import Snapshot

    commits = list_log(snapshot.storage, snapshot.table_root, snapshot.version + 1).commits
    wanted = list(range(snapshot.version + 1, version + 1))
    if any(v not in commits for v in wanted) and owner_spec(snapshot.metadata, snapshot.protocol) is not None:
        from pydelta.log.commit_owners.reader import owner_commits

        commits.update(owner_commits(
            snapshot.storage, snapshot.table_root, snapshot.metadata, snapshot.protocol, snapshot.version, version
        )[0])
    missing = [v for v in wanted if v not in commits]
    if missing:
        raise FileNotFoundError(f"commits {missing} are not in the log")
    new_commits = [(v, commits[v]) for v in wanted]
    old = snapshot.segment
    partial = LogSegment(old.log_dir, version, None, new_commits)
    state = apply_commits(snapshot.state, read_commits(snapshot.storage, partial), snapshot.table_root, version)
    segment = LogSegment(old.log_dir, version, old.checkpoint, list(old.commits) + new_commits, list(old.compactions))
    return Snapshot(snapshot.table_root, snapshot.storage, segment, state, replayer=snapshot.replayer)

