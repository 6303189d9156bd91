"""The log core makes jemalloc pyarrow's default pool unless the user chose one (log/arrow_pool.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

SCRIPT = """
import sys
import pyarrow as pa
import pydelta
before = pa.default_memory_pool().backend_name
pydelta.load_snapshot(sys.argv[1])
print(before, pa.default_memory_pool().backend_name)
"""


def _pools(table: Path, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(table)], check=True, capture_output=True, text=True,
                         env={**clean, **env}).stdout
    return out.split()


def _table(root: Path) -> Path:
    """An empty table: version 0 with protocol and metadata only."""
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    actions = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
               {"metaData": {"id": "4f1c", "format": {"provider": "parquet", "options": {}},
                             "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {}}}]
    (root / "_delta_log").mkdir(parents=True)
    (root / "_delta_log" / f"{0:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
    return root


def _has(backend: str) -> bool:
    try:
        getattr(pa, f"{backend}_memory_pool")()
        return True
    except NotImplementedError:
        return False


@pytest.mark.skipif(not (_has("jemalloc") and _has("mimalloc")), reason="this pyarrow lacks jemalloc or mimalloc")
def test_first_load_prefers_jemalloc_unless_the_user_chose(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    before, after = _pools(table)
    assert after == "jemalloc" if before == "mimalloc" else after == before
    assert _pools(table, ARROW_DEFAULT_MEMORY_POOL="mimalloc") == ["mimalloc", "mimalloc"]
    assert _pools(table, ARROW_DEFAULT_MEMORY_POOL="system") == ["system", "system"]
