"""How readers merge the owner's un-backfilled commits with the `_delta_log` listing.

The owner to ask is the one named by the newest *backfilled* metadata the reader
has: an owner can only be installed or removed by a commit that is itself in
`_delta_log/` (conversions are file-system commits), and managed commits may not
change it, so that metadata is authoritative for everything after it.
"""

from __future__ import annotations

import logging

from pydelta.errors import CommitOwnerError
from pydelta.log.commit_owners.base import log_dir
from pydelta.log.commit_owners.registry import owner_of
from pydelta.log.segment import list_log
from pydelta.log.storage import FileInfo, Storage
from pydelta.protocol.actions import Metadata, Protocol

logger = logging.getLogger(__name__)


def owner_commits(
    storage: Storage,
    table_root: str,
    metadata: Metadata,
    protocol: Protocol,
    after: int,
    end: int | None = None,
    *,
    backfill: bool = True,
    held_from: int | None = None,
) -> tuple[list[tuple[int, FileInfo]], int]:
    """(commits after version `after` (up to `end`) known only to the owner, ascending and
    contiguous; the owner's latest ratified version: -1 when it has none).

    The owner's answer and the listing race with backfills: a version the owner no longer
    tracks but reports as ratified (<= latestTableVersion) is looked up in a fresh listing.
    With `backfill`, the commits found are backfilled (any client may; a process that died
    between ratification and backfill is repaired by the next reader or writer).
    `held_from`: also return, first, the commits from that version to `after` the owner still
    holds; a caller that read those versions from `_delta_log/` must use the owner's copy
    (PROTOCOL.md: the catalog's commit is authoritative over a published file).
    """
    owner = owner_of(metadata, protocol)
    if owner is None:
        return [], -1
    first = after + 1 if held_from is None else min(held_from, after + 1)
    response = owner.get_commits(metadata.id, first, end)
    tracked = {c.version: c.file_info(log_dir(table_root), owner.commits_dir) for c in response.commits}
    last = response.latest_table_version if end is None else min(end, response.latest_table_version)
    out: list[tuple[int, FileInfo]] = [(v, f) for v, f in sorted(tracked.items()) if v <= after]
    listed: dict[int, FileInfo] | None = None
    for version in range(after + 1, last + 1):
        info = tracked.get(version)
        if info is None:
            if listed is None:
                listed = list_log(storage, table_root, after + 1).commits
            info = listed.get(version)
        if info is None:
            raise CommitOwnerError(
                f"the commit owner of {table_root} ratified version {version} but it is neither tracked by the "
                "owner nor backfilled in _delta_log"
            )
        out.append((version, info))
    unbackfilled = [v for v, f in out if f"/{owner.commits_dir}/" in f.path.replace("\\", "/")]
    if backfill and unbackfilled:
        try:
            owner.backfill_to_version(storage, table_root, metadata.id, unbackfilled[-1])
        except Exception as e:  # noqa: BLE001 - a reader must not fail because it could not help
            logger.warning("backfill of %s to version %d failed: %s", table_root, unbackfilled[-1], e)
    return out, response.latest_table_version
