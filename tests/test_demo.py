"""`make demo` runs end to end (small data): what it prints is what ran."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_demo_runs_and_tells_the_truth(tmp_path):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    out = subprocess.run(
        [sys.executable, "-m", "pydelta.demo", "--rows", "20000", "--dir", str(tmp_path / "demo")],
        capture_output=True, text=True, timeout=900, env=env,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert "--> RESTORE mydb.employees TO VERSION AS OF 1" in text and "num_restored_files" in text
    assert "VACUUM itself commits twice" in text
    latest = int(text.split("latest version now ")[1].split()[0])
    assert f"deltalake: version {latest}," in text, "the delta-rs witness sees the version the demo announced"
    history = text.split("--> DESCRIBE HISTORY mydb.employees")[1].split("--> SELECT")[0]
    assert "DELETE" in history and not re.search(r"\w#\d+", history), "no expression ids in history"
    location = text.split("location: ")[1].split()[0]
    assert (tmp_path / "demo") in Path(location).parents
