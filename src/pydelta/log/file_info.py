"""A listed file, as every storage returns it, and a commit that has no file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol


class Readable(Protocol):
    """What reading a listed file needs of a storage (every `Storage` is one)."""

    def read(self, path: str) -> bytes: ...


@dataclass(frozen=True)
class FileInfo:
    """A listed file: absolute path, size in bytes, modification time in ms."""

    path: str
    size: int
    modification_time: int

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def read(self, storage: Readable) -> bytes:
        """The file's bytes."""
        return storage.read(self.path)


@dataclass(frozen=True)
class InlineCommit(FileInfo):
    """A ratified commit whose content the catalog holds itself (PROTOCOL.md's inline commit).

    No file exists until it is published: `path` is where a staged copy would be (it names the
    version and the staging directory), and `read` gives the catalog's bytes.
    """

    content: bytes = b""

    def read(self, storage: Readable) -> bytes:
        return self.content
