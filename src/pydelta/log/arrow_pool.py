"""pyarrow's default memory pool for log work: jemalloc, where pyarrow has it and the user
chose no pool.

pyarrow's default pool on Linux is mimalloc, which pays for fresh memory page by page: the
first replay of a 1M-file log in a process took 2.3 s with it against 0.8 s with jemalloc
(later replays 0.7 s with either; `benchmarks/snapshot_vs_deltalake.py` measures both). A
Delta client mostly replays a log once per process (the CLI) or first thing (a driver), so
the first load is the one that counts. ARROW_DEFAULT_MEMORY_POOL, when set, is left alone.
"""

from __future__ import annotations

import os

import pyarrow as pa

_checked = False


def prefer_jemalloc() -> None:
    """Make jemalloc pyarrow's default pool in this process (once; see the module docstring)."""
    global _checked
    if _checked:
        return
    _checked = True
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL") or pa.default_memory_pool().backend_name != "mimalloc":
        return
    try:
        pool = pa.jemalloc_memory_pool()
    except (NotImplementedError, pa.ArrowNotImplementedError):  # a pyarrow built without jemalloc
        return
    pa.set_memory_pool(pool)
