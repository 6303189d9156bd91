"""Hooks on DataFrameWriter for `format("delta")` (filled in by the write path)."""

from __future__ import annotations

from typing import Any


def install(writer_class: Any) -> None:
    """Installed by the write path; reads work without it."""
    return None
