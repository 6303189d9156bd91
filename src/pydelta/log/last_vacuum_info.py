"""`_delta_log/_last_vacuum_info`: where VACUUM LITE resumes (delta-spark's LastVacuumInfo).

A VACUUM that deleted files records the latest commit version outside its retention window
(LITE runs; a full VACUUM records none, as delta-spark does). The next LITE run reads only the
commits after that version, so it still works once log cleanup has removed the commits before
it; without the file it needs the log from commit 0. The file is a hint of delta-spark's
format, `{"latestCommitVersionOutsideOfRetentionWindow":10}` (`{}` for none), overwritten by
each run, never part of the table's state.
"""

from __future__ import annotations

import json
import posixpath

from pydelta.log.storage import Storage

FILE_NAME = "_last_vacuum_info"
_KEY = "latestCommitVersionOutsideOfRetentionWindow"


def _path(table_root: str) -> str:
    return posixpath.join(table_root.rstrip("/"), "_delta_log", FILE_NAME)


def read_watermark(storage: Storage, table_root: str) -> int | None:
    """The last VACUUM's latest commit version outside its retention window, or None (no file,
    a full VACUUM's record, or a file this reader cannot parse: then LITE needs the whole log)."""
    path = _path(table_root)
    if not storage.exists(path):
        return None
    try:
        value = json.loads(storage.read(path)).get(_KEY)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and value >= 0 else None


def write_watermark(storage: Storage, table_root: str, version: int | None) -> None:
    """Record `version` (None: none) for the next VACUUM LITE, replacing the previous record."""
    body = {} if version is None else {_KEY: int(version)}
    storage.put(_path(table_root), (json.dumps(body, separators=(",", ":")) + "\n").encode())
