"""pydelta: Delta Lake tables for PySpark, implemented in Python."""

from __future__ import annotations

from pydelta.errors import DeltaError

__all__ = ["DeltaError", "load_snapshot"]
__version__ = "0.1.0"


def load_snapshot(path: str, version: int | None = None, timestamp: object | None = None):
    """Load the table state at `path` (latest, or at `version` / `timestamp`) without Spark."""
    from pydelta.log.snapshot import load_snapshot as _load

    return _load(path, version=version, timestamp=timestamp)
