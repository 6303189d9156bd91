"""local_session's catalog: a stable per-user default, and a short error when it is locked.

Real processes: one holds the embedded Derby metastore while a second, started from
another working directory, tries to open the same catalog.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pydelta.spark.session import default_catalog_dir

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

HOLDER = r'''
import sys
from pydelta.spark.session import local_session
spark = local_session("holder")
spark.sql("CREATE TABLE held (id BIGINT) USING delta")
spark.sql("INSERT INTO held VALUES (7)")
print("READY", flush=True)
sys.stdin.readline()  # hold the catalog until the parent says so
'''

SECOND = r'''
from pydelta.spark.session import local_session
spark = local_session("second")
print("ROWS", [r.id for r in spark.table("held").collect()], flush=True)
'''


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYDELTA_CATALOG_DIR", "XDG_DATA_HOME")}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", ""),
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    return env


def test_default_catalog_is_per_user_not_per_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("PYDELTA_CATALOG_DIR", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert default_catalog_dir() == str(tmp_path / ".local" / "share" / "pydelta" / "catalog")
    monkeypatch.setenv("PYDELTA_CATALOG_DIR", "cat")
    assert default_catalog_dir() == str(tmp_path / "cat")


def test_second_process_gets_a_short_error_then_sees_the_tables_from_elsewhere(tmp_path):
    home, first_dir, second_dir = tmp_path / "home", tmp_path / "a", tmp_path / "b"
    for d in (home, first_dir, second_dir):
        d.mkdir()
    env = _env(home)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], cwd=first_dir, env=env, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert holder.stdout.readline().strip() == "READY"
        locked = subprocess.run([sys.executable, "-c", SECOND], cwd=second_dir, env=env, text=True,
                                capture_output=True, timeout=300)
        assert locked.returncode != 0
        catalog = str(home / ".local" / "share" / "pydelta" / "catalog")
        assert "CatalogLockedError" in locked.stderr and catalog in locked.stderr
        assert len(locked.stderr.splitlines()) < 40, locked.stderr  # no Derby / DataNucleus traces
        assert "DataNucleus" not in locked.stderr and "derby" not in locked.stderr.lower().replace(
            "embedded derby", "")
    finally:
        holder.communicate("\n", timeout=120)
    # the holder is gone: from another working directory, the same per-user catalog has the table
    seen = subprocess.run([sys.executable, "-c", SECOND], cwd=second_dir, env=env, text=True,
                          capture_output=True, timeout=300)
    assert seen.returncode == 0, seen.stderr[-3000:]
    assert "ROWS [7]" in seen.stdout
    assert not (second_dir / "metastore_db").exists() and not (second_dir / "spark-warehouse").exists()
