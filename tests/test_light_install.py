"""The light install: `pip install pydelta-spark` without extras runs the log core with no pyspark.

A fresh venv gets pydelta from this checkout with no extras; in it the CLI reads a table,
transactions create and append to one, and the Spark API and object stores say which extra
they need. deltalake (in the test venv) then reads the table the light install wrote.
"""

from __future__ import annotations

import json
import subprocess
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from tests.txn.writers import append, create_table, rows_of
root = sys.argv[2]
create_table(root)
append(root, [{"id": 1, "part": "a", "value": "x"}, {"id": 2, "part": "a", "value": "y"}])
result = {"rows": rows_of(root)}
try:
    import pydelta.tables  # noqa: F401
except ImportError as e:
    result["spark_error"] = str(e)
import pydelta
try:
    pydelta.load_snapshot("s3://bucket/table")
except Exception as e:
    result["s3_error"] = f"{type(e).__name__}: {e}"
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def light_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env_dir = tmp_path_factory.mktemp("light") / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(REPO)], check=True, timeout=900)
    return python


def test_core_installs_without_pyspark(light_venv: Path) -> None:
    probe = subprocess.run([str(light_venv), "-c", "import pyspark"], capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'pyspark'" in probe.stderr
    for module in ("obstore", "psycopg"):
        assert subprocess.run([str(light_venv), "-c", f"import {module}"], capture_output=True).returncode != 0


def test_log_core_and_cli_work_without_pyspark(light_venv: Path, tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    out = subprocess.run([str(light_venv), "-c", _SCRIPT, str(REPO), root], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert [tuple(r) for r in result["rows"]] == [(1, "a", "x"), (2, "a", "y")]
    assert "pip install 'pydelta-spark[spark]'" in result["spark_error"]
    assert "pip install 'pydelta-spark[object-store]'" in result["s3_error"]

    cli = Path(light_venv).parent / "pydelta"
    described = subprocess.run([str(cli), "describe", root, "--json"], capture_output=True, text=True,
                               timeout=120)
    assert described.returncode == 0, described.stderr
    assert json.loads(described.stdout)["version"] == 1

    import deltalake  # an independent reader of what the light install wrote

    table = deltalake.DeltaTable(root)
    assert table.version() == 1
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == [1, 2]

