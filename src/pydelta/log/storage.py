"""Storage for a table directory.

The log core only talks to `Storage`, so an object store (S3 with
conditional puts, ...) can be added by implementing the same five methods.
Paths given to a Storage are absolute file-system paths or `file:` URIs.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Iterator, Protocol
from urllib.parse import unquote, urlparse

from pydelta.errors import DeltaError


@dataclass(frozen=True)
class FileInfo:
    """A listed file: absolute path, size in bytes, modification time in ms."""

    path: str
    size: int
    modification_time: int

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


class FileAlreadyExistsError(DeltaError):
    """put_if_absent found the target already there (another writer won)."""


class Storage(Protocol):
    def list_from(self, path: str) -> Iterator[FileInfo]:
        """Files in the directory of `path` whose names sort >= basename(path), in order."""

    def read(self, path: str) -> bytes: ...

    def put_if_absent(self, path: str, data: bytes) -> None:
        """Atomically create `path` with `data`; FileAlreadyExistsError if it exists."""

    def put(self, path: str, data: bytes) -> None:
        """Create or atomically replace `path` (for hints like `_last_checkpoint`)."""

    def delete(self, path: str) -> None: ...

    def exists(self, path: str) -> bool: ...


def to_local_path(path_or_uri: str) -> str:
    """Turn `file:/x`, `file:///x` or a plain path into an absolute local path."""
    if path_or_uri.startswith("file:"):
        return os.path.abspath(unquote(urlparse(path_or_uri).path))
    return os.path.abspath(path_or_uri)


class LocalStorage:
    """The local file system. Atomic creates use a temp file plus hard link."""

    def list_from(self, path: str) -> Iterator[FileInfo]:
        directory, start = os.path.split(to_local_path(path))
        try:
            entries = [e for e in os.scandir(directory) if e.name >= start]
        except FileNotFoundError:
            return iter(())
        entries.sort(key=lambda e: e.name)
        out = []
        for entry in entries:
            try:
                if not entry.is_file():
                    continue
                st = entry.stat()
            except FileNotFoundError:
                continue
            out.append(FileInfo(entry.path, st.st_size, int(st.st_mtime * 1000)))
        return iter(out)

    def read(self, path: str) -> bytes:
        with open(to_local_path(path), "rb") as f:
            return f.read()

    def put_if_absent(self, path: str, data: bytes) -> None:
        target = to_local_path(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise FileAlreadyExistsError(f"{target} already exists") from None
        finally:
            os.unlink(tmp)

    def put(self, path: str, data: bytes) -> None:
        target = to_local_path(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, target)

    def delete(self, path: str) -> None:
        try:
            os.unlink(to_local_path(path))
        except FileNotFoundError:
            pass

    def exists(self, path: str) -> bool:
        return os.path.exists(to_local_path(path))

    def file_info(self, path: str) -> FileInfo:
        p = to_local_path(path)
        st = os.stat(p)
        return FileInfo(p, st.st_size, int(st.st_mtime * 1000))


def storage_for(path: str) -> LocalStorage:
    """The storage serving `path`. Only local paths for now."""
    scheme = urlparse(path).scheme
    if scheme not in ("", "file") and len(scheme) > 1:
        from pydelta.errors import DeltaIllegalArgumentError

        raise DeltaIllegalArgumentError(f"storage scheme '{scheme}' is not supported yet (only local paths)")
    return LocalStorage()
