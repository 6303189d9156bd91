"""Publishing a prepared commit: the attempt, the conflict check and the rebase, until a version is won.

`N.json` is created with put-if-absent, so a log entry is never overwritten. When another
writer already took N, the winning commits are read and checked for real conflicts
(conflicts.py); if there are none the commit is rebased and retried at the next version.
Managed-commit tables publish through their commit owner instead (`CommitWriter.write_attempt`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydelta.errors import (
    CommitOwnerConflictError,
    CommitOwnerMismatchError,
    ConcurrentWriteException,
    StorageAccessError,
)
from pydelta.log.commit_owners.base import COMMIT_OWNER_KEY
from pydelta.log.commit_owners.registry import OwnerSpec, client_of, owner_spec
from pydelta.log.file_info import FileInfo
from pydelta.log.segment import list_log, log_dir_of
from pydelta.log.storage import FileAlreadyExistsError, Storage
from pydelta.protocol.action_types import Action, kind_and_body
from pydelta.protocol.actions import DomainMetadata, Metadata, Protocol, dumps_action
from pydelta.txn import row_tracking
from pydelta.txn.commit_info import ICT_TIMESTAMP, ICT_VERSION
from pydelta.txn.conflicts import CurrentTransaction, WinningCommit, check_conflicts

if TYPE_CHECKING:
    from pydelta.log.snapshot import Snapshot

__all__ = ["CommitWriter", "PreparedCommit", "publish_route"]

# The transaction's logger: these messages are about its commit.
logger = logging.getLogger("pydelta.txn.transaction")

# A commit file's put whose answer did not arrive (a timeout, a 5xx the store's client stopped
# retrying) may have been applied: it is sent again, this many times in all, with this backoff.
UNANSWERED_PUT_ATTEMPTS = 5
UNANSWERED_PUT_BACKOFF_S = 0.25


@dataclass
class PreparedCommit:
    """Everything fixed for all commit attempts; only ICT and ICT enablement move on retry."""

    commit_info: dict[str, Any]
    protocol_action: Protocol | None
    metadata_action: Metadata | None
    other_lines: list[str]  # txn + domainMetadata + file actions, serialized once
    ict: int | None
    enables_ict: bool
    conflict_info: CurrentTransaction
    attempts: int = field(default=0)
    route: str = "fs"  # fs | managed | to_managed | to_fs (managed commits, seed 001)
    read_owner: OwnerSpec | None = None
    new_owner: OwnerSpec | None = None
    # Row tracking: file actions get row IDs per attempt (they depend on version and mark).
    row_tracked_actions: list[Action] | None = None
    row_id_mark: int = -1
    live_row_ids: dict[str, tuple[Any, Any]] = field(default_factory=dict)


def publish_route(read: OwnerSpec | None, new: OwnerSpec | None, read_md: Metadata | None, new_md: Metadata) -> str:
    """How a commit is published: fs, managed, to_managed or to_fs; refuses an owner switch.

    A catalog-managed table is created (or a file-system table upgraded) by a file-system
    commit its catalog accepts first (to_managed, as delta-spark and delta-kernel-rs create
    version 0); it never leaves its catalog (PROTOCOL.md has no way back)."""
    if read is None:
        return "fs" if new is None else "to_managed"
    if new is None:
        if read.catalog_managed:
            raise CommitOwnerMismatchError("a catalog-managed table cannot leave its catalog: its commits must go "
                                           "through the catalog (io.pydelta.catalog cannot be unset)")
        return "to_fs"
    if not read.same_as(new):
        raise CommitOwnerMismatchError(
            f"this commit would move the table from commit owner {read.name!r} ({read.conf}) to {new.name!r} "
            f"({new.conf}); convert it to a file-system table first (unset {COMMIT_OWNER_KEY}), then set the new owner"
        )
    if read_md is not None and read_md.id != new_md.id:
        raise CommitOwnerMismatchError("a managed commit cannot change the table id; convert to the file system first")
    return "managed"


@dataclass
class CommitWriter:
    """Writes one transaction's prepared commit at the first version it can win."""

    storage: Storage
    table_root: str
    snapshot: Snapshot | None  # the transaction's read snapshot (None for a new table)
    read_version: int
    txn_id: str
    clock: Callable[[], int]
    max_commit_attempts: int
    committed_payload: bytes | None = field(default=None, init=False)  # the lines of the version won

    def commit_path(self, version: int) -> str:
        return os.path.join(log_dir_of(self.table_root), f"{version:020d}.json")

    def metadata_for(self, prepared: PreparedCommit, version: int) -> Metadata | None:
        """The metaData action for an attempt at `version`, with ICT enablement provenance."""
        md = prepared.metadata_action
        if md is None or prepared.ict is None:
            return md
        conf = dict(md.configuration)
        if prepared.enables_ict and version != 0:
            conf[ICT_VERSION] = str(version)
            conf[ICT_TIMESTAMP] = str(prepared.ict)
        elif not prepared.enables_ict and self.snapshot is not None:
            prior = self.snapshot.metadata.configuration
            if ICT_VERSION in prior and ICT_TIMESTAMP in prior and ICT_VERSION not in conf:
                conf[ICT_VERSION], conf[ICT_TIMESTAMP] = prior[ICT_VERSION], prior[ICT_TIMESTAMP]
        return replace(md, configuration=conf) if conf != md.configuration else md

    def payload(self, prepared: PreparedCommit, version: int) -> tuple[bytes, dict[str, Any]]:
        """The bytes of `<version>.json` for this attempt, and the commitInfo in them."""
        info = dict(prepared.commit_info)
        if prepared.ict is not None:
            info["inCommitTimestamp"] = prepared.ict  # already the first key
        lines = [dumps_action("commitInfo", info)]
        if prepared.protocol_action is not None:
            lines.append(dumps_action("protocol", prepared.protocol_action.to_dict()))
        md = self.metadata_for(prepared, version)
        if md is not None:
            lines.append(dumps_action("metaData", md.to_dict()))
        lines.extend(prepared.other_lines)
        if prepared.row_tracked_actions is not None:
            actions, mark = row_tracking.assign(prepared.row_tracked_actions, version, prepared.row_id_mark,
                                                prepared.live_row_ids)
            if mark > prepared.row_id_mark:
                domain = DomainMetadata(row_tracking.DOMAIN, row_tracking.domain_configuration(mark), False)
                lines.append(dumps_action("domainMetadata", domain.to_dict()))
            lines.extend(dumps_action(kind, dict(body)) for kind, body in map(kind_and_body, actions))
        return ("\n".join(lines) + "\n").encode("utf-8"), info

    def write_with_retries(self, prepared: PreparedCommit) -> tuple[int, dict[str, Any]]:
        """Attempt, check and rebase until a version is won: that version and its commitInfo."""
        attempt_version = self.read_version + 1
        started = self.clock()
        for attempt in range(1, self.max_commit_attempts + 1):
            prepared.attempts = attempt
            payload, info = self.payload(prepared, attempt_version)
            try:
                self.write_attempt(prepared, attempt_version, payload)
            except (FileAlreadyExistsError, CommitOwnerConflictError):
                if attempt == self.max_commit_attempts:
                    break
                rebased = self.rebase(prepared, attempt_version)
                if rebased is None:
                    continue
                ours, attempt_version = rebased
                if not ours:
                    continue
                # Our own commit is already there (a retried write that did land).
            self.committed_payload = payload
            return attempt_version, info
        raise ConcurrentWriteException(
            f"This commit has failed as it has been tried {self.max_commit_attempts} times but did not "
            "succeed. This can be caused by the Delta table being committed continuously by many "
            f"concurrent commits. Commit started at version: {self.read_version + 1}. Commit failed at "
            f"version: {attempt_version}. Total time spent attempting this commit: {self.clock() - started} ms"
        )

    def write_attempt(self, prepared: PreparedCommit, version: int, payload: bytes) -> None:
        """Publish one attempt; FileAlreadyExistsError / CommitOwnerConflictError when `version` is taken.

        fs: put-if-absent of `<v>.json`. to_managed (creation or conversion): the new owner
        accepts the table, then the put-if-absent of `<v>.json` is the commit point (RFC:
        ownership changes are file-system commits). managed: the owner ratifies
        `_commits/<v>.<uuid>.json`, then this client backfills everything up to v.
        to_fs: all is backfilled, the owner ratifies the commit as its last one (it
        refuses any later commit), and it is backfilled at once.
        """
        if prepared.route in ("fs", "to_managed"):
            self.backfill_read_snapshot()
        if prepared.route == "fs":
            self.put_commit_file(version, payload)
            return
        # Without a metadata change, the table's metadata is the read snapshot's.
        md = self.metadata_for(prepared, version) or (self.snapshot.metadata if self.snapshot is not None else None)
        assert md is not None
        if prepared.route == "to_managed":
            assert prepared.new_owner is not None
            owner = client_of(prepared.new_owner)
            owner.register_table(md.id, self.table_root, version)
            self.storage.put_if_absent(self.commit_path(version), payload)
            return
        assert prepared.read_owner is not None
        owner = client_of(prepared.read_owner)
        table_id = self.snapshot.metadata.id if self.snapshot is not None else md.id
        stamp = prepared.ict if prepared.ict is not None else self.clock()
        if prepared.route == "to_fs":
            owner.backfill_to_version(self.storage, self.table_root, table_id, version - 1)
        ours = owner.commit(
            self.storage, self.table_root, table_id, version, payload, stamp, release=prepared.route == "to_fs"
        )
        try:
            owner.backfill_to_version(self.storage, self.table_root, table_id, version, just_ratified=ours)
        except Exception as e:  # noqa: BLE001 - ratified is committed; the next reader or writer backfills
            logger.warning("version %d of %s is committed but its backfill failed: %s", version, self.table_root, e)

    def put_commit_file(self, version: int, payload: bytes) -> None:
        """Create `<version>.json` with `payload`, through a store that may apply a write and lose
        its answer: the same bytes are sent again, and a retry that finds the version taken is
        settled by `rebase` like any lost race (the commit there is ours when it carries our
        txnId). After the last unanswered attempt, the commit is ours if the file says so;
        otherwise the store's error is raised (and nothing of ours is in the log). A failure the
        storage knows did not apply (a local disk full or read-only) is raised at once."""
        path = self.commit_path(version)
        for attempt in range(1, UNANSWERED_PUT_ATTEMPTS + 1):
            try:
                self.storage.put_if_absent(path, payload)
                return
            except StorageAccessError as e:
                if e.not_applied:
                    raise
                logger.warning("commit %d of %s: no answer from the store (attempt %d of %d): %s", version,
                               self.table_root, attempt, UNANSWERED_PUT_ATTEMPTS, e)
                if attempt == UNANSWERED_PUT_ATTEMPTS:
                    if self._landed(path, payload):
                        return
                    raise
                time.sleep(UNANSWERED_PUT_BACKOFF_S * 2 ** (attempt - 1))

    def _landed(self, path: str, payload: bytes) -> bool:
        """Is our commit (these very bytes, our txnId among them) at `path` after all? False when
        it is not, or cannot be read."""
        try:
            return self.storage.read(path) == payload
        except Exception:  # noqa: BLE001 - unreadable counts as not there: the caller raises the store's error
            return False

    def backfill_read_snapshot(self) -> None:
        """Before a file-system commit: copy ratified commits the read snapshot got from an owner.

        Only after a conversion to the file system whose own backfill failed can the read
        snapshot hold such commits; `<v+1>.json` must never appear before `<v>.json`.
        """
        if self.snapshot is None:
            return
        for version, info in self.snapshot.unbackfilled_commits:
            target = self.commit_path(version)
            if not self.storage.exists(target):
                with contextlib.suppress(FileAlreadyExistsError):
                    self.storage.put_if_absent(target, info.read(self.storage))

    def commits_from(self, version: int) -> dict[int, FileInfo]:
        """Commit files from `version` on: the listing plus, for a managed read, the owner's commits."""
        listing = list_log(self.storage, self.table_root, version).commits
        if self.snapshot is not None and owner_spec(self.snapshot.metadata, self.snapshot.protocol) is not None:
            from pydelta.log.commit_owners.reader import owner_commits

            md, proto = self.snapshot.metadata, self.snapshot.protocol
            listing.update(owner_commits(self.storage, self.table_root, md, proto, version - 1)[0])
        return listing

    def rebase(self, prepared: PreparedCommit, attempt_version: int) -> tuple[bool, int] | None:
        """Check the winners from `attempt_version` on (raising on a real conflict).

        Returns (False, next version to try), (True, v) when the commit at v is our own,
        or None when the winner is not visible yet.
        """
        listing = self.commits_from(attempt_version)
        version = attempt_version
        found = False
        while version in listing:
            info = listing[version]
            winner = WinningCommit.read(self.storage, info, version)
            if version == attempt_version and winner.txn_id == self.txn_id:
                return (True, version)
            check_conflicts(prepared.conflict_info, winner)
            for d in winner.actions.domains:  # the winner may have assigned row IDs: go above them
                if d.domain == row_tracking.DOMAIN and not d.removed:
                    prepared.row_id_mark = max(prepared.row_id_mark,
                                               row_tracking.high_water_mark({d.domain: d.configuration}))
            if prepared.ict is not None:
                prepared.ict = max(prepared.ict, winner.timestamp + 1)
            version += 1
            found = True
        if not found:
            time.sleep(0.01)  # the winner is not listed yet; try the same version again
            return None
        return (False, version)
