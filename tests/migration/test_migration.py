"""delta-spark programs run on pydelta with only the guide's changes (docs/guide/migration.md).

Each program in programs/ is written for delta-spark, in the style of delta-io's
examples/python: its session confs name delta-spark's extension and catalog, it imports from
`delta`. The test reads the guide's import table and its `pydelta.enable` block, applies them
(the imports; the enable line after a session built without configure_spark_with_delta_pip),
runs the program in a fresh Python process and checks what it printed. The program as written
fails here, since no `delta` package is installed: the guide's change is what makes it run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).parent / "programs"
GUIDE = REPO / "docs" / "guide" / "migration.md"

pytestmark = pytest.mark.spark


def _between(text: str, marker: str) -> str:
    match = re.search(rf"<!-- {marker} -->\n(.*?)<!-- /{marker} -->", text, re.S)
    assert match, f"the guide has no {marker} block"
    return match.group(1)


def import_table() -> list[tuple[str, str]]:
    """(delta-spark line start, pydelta line start) rows of the guide's table, in order."""
    rows = []
    for line in _between(GUIDE.read_text(), "migration-imports").splitlines():
        cells = re.findall(r"`([^`]+)`", line)
        if len(cells) == 2:
            rows.append((cells[0], cells[1]))
    return rows


def enable_lines() -> list[str]:
    block = _between(GUIDE.read_text(), "migration-enable")
    code = re.search(r"```python\n(.*?)```", block, re.S)
    assert code
    return [line for line in code.group(1).splitlines() if line.strip()]


def _starts_with(line: str, start: str) -> bool:
    """`line` starts with `start` as whole words (`import delta` is not `import deltalake`)."""
    rest = line[len(start):]
    return line.startswith(start) and (not rest or not (rest[0].isalnum() or rest[0] in "._"))


def migrate(source: str) -> str:
    """The program with the guide's changes applied."""
    table = import_table()
    out = []
    for line in source.splitlines():
        for old, new in table:
            if _starts_with(line, old):
                line = new + line[len(old):]
                break
        out.append(line)
        if "configure_spark_with_delta_pip" not in source and line.rstrip().endswith(".getOrCreate()"):
            out += enable_lines()
    return "\n".join(out) + "\n"


def _run(script: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=600,
                          env=env, cwd=script.parent)


def _printed(stdout: str) -> dict[str, str]:
    out = {}
    for line in stdout.splitlines():
        key, _, value = line.partition(" ")
        out[key] = value
    return out


EXPECTED = {
    "quickstart": {
        "read": "[0, 1, 2, 3, 4]", "after": "merge 20", "now": "[5, 7, 9]", "version": "0 [0, 1, 2, 3, 4]",
        "history": "['WRITE', 'MERGE', 'WRITE', 'UPDATE', 'DELETE']",
    },
    "sql_on_paths": {
        "rows": "[(1, 'a'), (2, 'B'), (4, 'd')]", "by": "name 3", "detail": "files 1",
        "history": "['CREATE TABLE', 'WRITE', 'UPDATE', 'DELETE', 'MERGE']",
    },
    "utilities": {
        "detail": "True", "restored": "[0, 1, 2, 3, 4, 5, 6, 7]", "manifest": "True",
        "history": "['CONVERT', 'WRITE', 'DELETE', 'RESTORE', 'VACUUM START', 'VACUUM END']",
        "exceptions": "True", "is": "delta True",
    },
    "streaming": {"streamed": "10", "totals": "[(0, 4), (1, 3), (2, 3)]"},
    "change_data_feed": {
        "changes": "[(1, 'insert', 1), (1, 'update_postimage', 2), (1, 'update_preimage', 2), (2, 'delete', 3), "
                   "(2, 'insert', 1)]",
    },
}


def test_the_guide_maps_every_delta_import():
    starts = [old for old, _ in import_table()]
    assert starts == ["from delta.tables import", "from delta.exceptions import", "from delta import", "import delta"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_delta_spark_program_runs_after_the_guides_change(name, tmp_path):
    source = (PROGRAMS / f"{name}.py").read_text()
    assert "spark.sql.catalog.spark_catalog" in source and "DeltaCatalog" in source  # delta-spark's confs, kept
    as_written = tmp_path / f"{name}_delta_spark.py"
    as_written.write_text(source)
    before = _run(as_written, str(tmp_path / "before"))
    assert before.returncode != 0 and "No module named 'delta'" in before.stderr

    migrated = tmp_path / f"{name}.py"
    migrated.write_text(migrate(source))
    assert "from delta" not in migrated.read_text() and "import delta\n" not in migrated.read_text()
    run = _run(migrated, str(tmp_path / "table"))
    assert run.returncode == 0, run.stderr[-4000:]
    printed = _printed(run.stdout)
    for key, value in EXPECTED[name].items():
        assert printed.get(key) == value, (key, run.stdout)
    assert "DeltaSparkConfWarning" in run.stderr
    assert "CANNOT_LOAD_CATALOG" not in run.stderr
