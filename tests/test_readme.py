"""The README's Quick start runs verbatim, twice in a row, as a new user would paste it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


def quick_start_code() -> str:
    """Every ```python block of the README's "Quick start" section, in order."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    assert len(section.splitlines()) <= 30, "the README's quick start stays short: the guide holds the rest"
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) >= 2, "the Quick start lost its code blocks"
    return "\n".join(blocks)


def test_quick_start_runs_twice(tmp_path):
    script = tmp_path / "quick_start.py"
    script.write_text(quick_start_code() + '\nprint("FINAL", [tuple(r) for r in '
                      'spark.table("employees").orderBy("id").select("id", "name").collect()])\n')
    env = {k: v for k, v in os.environ.items() if k not in ("PYDELTA_CATALOG_DIR", "XDG_DATA_HOME")}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT / "src"),
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    for run in (1, 2):
        out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, text=True,
                             capture_output=True, timeout=600)
        assert out.returncode == 0, f"run {run}:\n{out.stderr[-4000:]}"
        assert "FINAL [(1, 'John Doe'), (2, 'Jane Smith'), (5, 'Ann Lee')]" in out.stdout, out.stdout[-2000:]
