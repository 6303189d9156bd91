"""LocalStorage's file times are the exact milliseconds Java's File.lastModified gives.

Without in-commit timestamps a commit file's modification time is the commit's timestamp
(DESCRIBE HISTORY, time travel by timestamp), so pydelta must read the millisecond delta-spark reads. A float `st_mtime`
cannot hold a 2026 time to the nanosecond: `int(st_mtime * 1000)` rounds some times up a ms.
"""

from __future__ import annotations

import mmap
import os

import pytest

from pydelta.log import storage as storage_module
from pydelta.log.storage import LocalStorage

# 123.999999 ms past a second in 2025: as a float this rounds to 124 ms.
MTIME_NS = 1_764_000_000_123_999_999


def test_file_times_truncate_nanoseconds_to_milliseconds(tmp_path):
    assert int(MTIME_NS / 1e9 * 1000) != MTIME_NS // 1_000_000  # the float path is wrong here
    log = tmp_path / "_delta_log"
    log.mkdir()
    commit = log / "00000000000000000000.json"
    commit.write_text("{}\n")
    os.utime(commit, ns=(MTIME_NS, MTIME_NS))
    storage = LocalStorage()
    assert storage.file_info(str(commit)).modification_time == 1_764_000_000_123
    listed = [f for f in storage.list_from(str(log / "00000000000000000000")) if f.path.endswith(".json")]
    assert [f.modification_time for f in listed] == [1_764_000_000_123]


def test_read_mapped_gives_the_file_bytes(tmp_path, monkeypatch):
    """Large files come back memory-mapped (read-only), small and empty ones as bytes; the content is the file's."""
    store = LocalStorage()
    big, small, empty = tmp_path / "big.json", tmp_path / "small.json", tmp_path / "empty.json"
    big.write_bytes(b'{"add":{"path":"a"}}\n' * 1000)
    small.write_bytes(b'{"add":{"path":"b"}}\n')
    empty.write_bytes(b"")
    monkeypatch.setattr(storage_module, "MAPPED_FROM_BYTES", 1024)
    mapped = store.read_mapped(str(big))
    assert isinstance(mapped, mmap.mmap) and mapped[:] == big.read_bytes()
    with pytest.raises(TypeError):
        mapped[0:1] = b"x"  # read-only
    assert store.read_mapped(str(small)) == small.read_bytes()
    assert store.read_mapped(str(empty)) == b""
