"""The client side of a commit owner (managed commits, seed 001) or a catalog (catalogManaged).

The file system stays the source of truth for a commit's *content*; the owner
is the source of truth for *which* `_delta_log/_commits/<v>.<uuid>.json` is
version v. A backend only has to store, atomically, "the latest version of
table T" and "version v of T is file F"; everything that touches files (writing
the commit file, backfilling in order) lives here so every owner behaves alike.

PROTOCOL.md's catalog-managed tables are the same contract under other names: the
catalog *ratifies* a *staged* commit `_delta_log/_staged_commits/<v>.<uuid>.json` and
ratified commits are *published* (backfilled) to `<v>.json` in order. pydelta's SQLite
and PostgreSQL owners serve as the catalog of such tables: a client built for a
catalogManaged table stages its commits in `_staged_commits` (`commits_dir`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass

from pydelta.errors import CommitOwnerError, CommitOwnerUnavailableError
from pydelta.log.file_info import InlineCommit
from pydelta.log.storage import FileAlreadyExistsError, FileInfo, Storage

logger = logging.getLogger(__name__)

COMMIT_OWNER_KEY = "delta.managedCommit.commitOwner"
COMMIT_OWNER_CONF_KEY = "delta.managedCommit.commitOwnerConf"
FEATURE = "managedCommit"
COMMITS_DIR = "_commits"
STAGED_COMMITS_DIR = "_staged_commits"  # catalogManaged (PROTOCOL.md)
# Directories a ratified, not yet published commit may live in.
UNPUBLISHED_DIRS = (COMMITS_DIR, STAGED_COMMITS_DIR)
_UNBACKFILLED = re.compile(r"^(\d{20})\.([0-9a-fA-F-]{36})\.json$")


@dataclass(frozen=True)
class Commit:
    """One ratified commit: its version and the un-backfilled file holding its actions, or, for an
    inline commit (PROTOCOL.md), the actions themselves as the catalog stores them."""

    version: int
    file_name: str  # basename in _delta_log/_commits (an inline commit: the name a staged copy would have)
    size: int
    modification_time: int  # ms, when the commit file was written (or the inline commit proposed)
    commit_timestamp: int  # ms, the in-commit timestamp (or ratification time)
    content: bytes | None = None  # an inline commit's bytes

    def file_info(self, log_dir: str, directory: str = COMMITS_DIR) -> FileInfo:
        path = os.path.join(log_dir, directory, self.file_name)
        if self.content is not None:
            return InlineCommit(path, self.size, self.modification_time, self.content)
        return FileInfo(path, self.size, self.modification_time)


@dataclass(frozen=True)
class GetCommitsResponse:
    """Un-backfilled ratified commits (ascending, contiguous) and the latest ratified version (-1: none)."""

    commits: list[Commit]
    latest_table_version: int


def parse_unbackfilled_name(name: str) -> int | None:
    """Version of a `_commits/<20 digits>.<uuid>.json` name, else None."""
    m = _UNBACKFILLED.match(name)
    return int(m.group(1)) if m else None


def log_dir(table_root: str) -> str:
    return os.path.join(table_root, "_delta_log")


def backfilled_path(table_root: str, version: int) -> str:
    return os.path.join(log_dir(table_root), f"{version:020d}.json")


def parse_owner_conf(raw: str | None, key: str = COMMIT_OWNER_CONF_KEY) -> dict[str, str]:
    """`delta.managedCommit.commitOwnerConf` (or `key`): a JSON string-to-string map (absent: empty)."""
    if raw is None or not str(raw).strip():
        return {}
    try:
        conf = json.loads(raw)
    except ValueError as e:
        raise CommitOwnerError(f"{key} is not valid JSON: {e}") from None
    if not isinstance(conf, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in conf.items()):
        raise CommitOwnerError(f"{key} must be a JSON map of strings to strings, got {raw!r}")
    return conf


class CommitOwnerClient(ABC):
    """commit / get_commits / backfill_to_version / register_table over an abstract ratification store."""

    name: str = "?"
    commits_dir: str = COMMITS_DIR  # STAGED_COMMITS_DIR for a catalogManaged table's catalog
    # Commits of at most this many bytes go to the catalog inline instead of to a staged file
    # (catalogManaged only; a backend that can store content sets `stores_inline_commits`).
    inline_commit_bytes: int = 0
    stores_inline_commits: bool = False

    # ---- what a backend implements (one atomic operation each) -------------------------
    @abstractmethod
    def _register(self, table_id: str, table_root: str, version: int) -> None:
        """Accept ownership proposed by the file-system commit `version` (idempotent, never lowers)."""

    @abstractmethod
    def _ratify(self, table_id: str, commit: Commit, release: bool) -> None:
        """Atomically: latest == version-1 and not released -> latest = version, record `commit`.

        Raise CommitOwnerConflictError(latest) otherwise. `release` marks the table as no
        longer owned after this version (the commit converting it to the file system).
        """

    @abstractmethod
    def _unbackfilled(self, table_id: str, start: int, end: int | None) -> GetCommitsResponse: ...

    @abstractmethod
    def _mark_backfilled(self, table_id: str, first: int, last: int) -> None:
        """Forget (stop returning, and drop the content of) commits first..last: they are in `_delta_log/` now."""

    @abstractmethod
    def ratified_commits(self, table_id: str) -> list[Commit]:
        """Every commit this owner ever ratified for the table (backfilled or not), for audits."""

    def close(self) -> None:  # noqa: B027 - optional
        """Release connections."""

    def permits(self, table_id: str, operation: str) -> bool:
        """Whether the catalog allows a maintenance `operation` (metadataCleanup, vacuum, optimize,
        reorg) on a catalogManaged table; PROTOCOL.md: none unless the catalog says so."""
        return False

    # ---- the client API -------------------------------------------------------------------
    def register_table(self, table_id: str, table_root: str, version: int) -> None:
        """Phase one of an ownership change: the owner accepts the table from `version` on.

        The put-if-absent of `<version>.json` that follows is the real commit point. If it
        fails, the registration is simply superseded by the next proposal (it never lowers
        the owner's latest version), so a stale one cannot harm the table.
        """
        self._register(table_id, table_root, version)

    def commit(
        self, storage: Storage, table_root: str, table_id: str, version: int, payload: bytes,
        commit_timestamp: int, *, release: bool = False,
    ) -> Commit:
        """Write `payload` as an un-backfilled commit file and have the owner ratify it as `version`.

        A payload of at most `inline_commit_bytes` goes to the owner itself (an inline commit:
        no file is written before it is published). Raises CommitOwnerConflictError when
        another writer already has `version`. The commit file of a refused attempt is deleted;
        after CommitOwnerUnavailableError it is kept (the owner may have ratified it before the
        connection broke), and after an error that says it may have been ratified (`maybe_ratified`).
        """
        name = f"{version:020d}.{uuid.uuid4()}.json"
        path = os.path.join(log_dir(table_root), self.commits_dir, name)
        inline = len(payload) <= self.inline_commit_bytes
        if not inline:
            storage.put_if_absent(path, payload)
        commit = Commit(version, name, len(payload), int(time.time() * 1000), int(commit_timestamp),
                        payload if inline else None)
        try:
            self._ratify(table_id, commit, release)
        except CommitOwnerUnavailableError:
            if self._was_ratified(table_id, commit):
                return commit  # the answer was lost, not the commit
            raise  # unknown or refused: keep the file (cleanup removes it if unratified)
        except CommitOwnerError as e:
            if not inline and not e.maybe_ratified:
                storage.delete(path)  # refused for sure: nobody will ever point at this file
            raise
        return commit

    def _was_ratified(self, table_id: str, commit: Commit) -> bool:
        """After a broken connection: ask once more whether `commit` made it (False if still unknown)."""
        try:
            found = self._unbackfilled(table_id, commit.version, commit.version).commits
            ratified = found or [c for c in self.ratified_commits(table_id) if c.version == commit.version]
        except CommitOwnerError:
            return False
        return any(c.file_name == commit.file_name for c in ratified)

    def get_commits(self, table_id: str, start: int, end: int | None = None) -> GetCommitsResponse:
        """Un-backfilled commits with start <= version (<= end), and the latest ratified version."""
        return self._unbackfilled(table_id, start, end)

    def backfill_to_version(
        self, storage: Storage, table_root: str, table_id: str, version: int | None = None,
        just_ratified: Commit | None = None,
    ) -> int:
        """Copy every ratified commit <= `version` (all when None) to `_delta_log/<v>.json`, in order.

        Any client may do this at any time: put-if-absent of identical bytes makes a
        duplicate backfill harmless. `just_ratified`: the caller's own commit at `version`,
        which saves asking the owner when `<version-1>.json` is already there. Returns the
        highest version backfilled by this call (-1: none).
        """
        if just_ratified is not None and just_ratified.version == version and (
            version == 0 or storage.exists(backfilled_path(table_root, version - 1))
        ):
            commits = [just_ratified]  # everything before it is backfilled: skip asking the owner
        else:
            commits = self._unbackfilled(table_id, 0, version).commits
        done = -1
        try:
            for c in commits:
                if version is not None and c.version > version:
                    break
                info = c.file_info(log_dir(table_root), self.commits_dir)
                try:
                    data = info.read(storage)
                except FileNotFoundError:
                    if storage.exists(backfilled_path(table_root, c.version)):
                        done = c.version
                        continue  # backfilled and cleaned up meanwhile
                    raise CommitOwnerError(
                        f"ratified commit file {info.path} of version {c.version} is missing") from None
                publish(storage, table_root, c.version, data)
                done = c.version
        finally:
            if done >= 0:  # only what this call published: a version held below it may differ from its file
                self._mark_backfilled(table_id, commits[0].version, done)
        return done


def publish(storage: Storage, table_root: str, version: int, data: bytes) -> None:
    """Put-if-absent of a ratified commit's bytes as `_delta_log/<version>.json`.

    Another client may have published it first (the same bytes: done). A different file there
    was written past the catalog or owner, which PROTOCOL.md forbids: it stays unpublished, so
    readers go on reading the ratified copy, and the error names the file.
    """
    target = backfilled_path(table_root, version)
    try:
        storage.put_if_absent(target, data)
    except FileAlreadyExistsError:
        if storage.read(target) != data:
            raise CommitOwnerError(
                f"{target} differs from the ratified commit of version {version}: it was written without going "
                "through the table's commit owner or catalog; readers use the ratified commit") from None
