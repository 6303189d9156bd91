"""A listed file, as every storage returns it."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class FileInfo:
    """A listed file: absolute path, size in bytes, modification time in ms."""

    path: str
    size: int
    modification_time: int

    @property
    def name(self) -> str:
        return os.path.basename(self.path)
