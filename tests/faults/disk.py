"""Small file systems for the disk-fault tests (issue 44): a tmpfs of a given size mounted for the
test (root can mount one; CI runs as root), filled up to make writes fail with ENOSPC, and made
read-only in place."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(args: list[str], what: str) -> None:
    mounted = subprocess.run(["mount", *args], capture_output=True, text=True)
    if mounted.returncode != 0:
        why = f"cannot mount {what} (mount needs root): {mounted.stderr.strip()}"
        if os.environ.get("PYDELTA_REQUIRE_WITNESS"):  # CI: these tests may not skip
            pytest.fail(why, pytrace=False)
        pytest.skip(why)


@contextlib.contextmanager
def small_disk(path: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` (created), unmounted afterwards."""
    path.mkdir(parents=True, exist_ok=True)
    _mount(["-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], "a tmpfs")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[Path]:
    """`directory` read-only for real while inside (root ignores file modes: a read-only bind mount)."""
    _mount(["--bind", "-o", "ro", str(directory), str(directory)], "a read-only bind mount")
    try:
        yield directory
    finally:
        subprocess.run(["umount", str(directory)], check=False)


def fill(disk: Path) -> Path:
    """Fill `disk` to the last byte; returns the filler file (delete it to free the space)."""
    filler = disk / "filler.bin"
    with open(filler, "wb", buffering=0) as f:
        for size in (1 << 20, 1 << 16, 1 << 12, 1):
            while True:
                try:
                    f.write(b"\0" * size)
                except OSError:
                    break
    return filler
