"""The distribution as a user gets it: `python -m build` makes an sdist and a wheel (the wheel built
from the sdist, so a file the sdist leaves out breaks it), and a fresh venv with nothing but the
wheel and its `spark` extra writes, reads, merges and shows the history of a table, outside this
checkout. Packaging mistakes (the name, package data such as `py.typed`, the CLI entry point, the
extras) fail here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DISTRIBUTION = "pydelta-spark"

pytestmark = pytest.mark.slow

_SMOKE = r"""
import json, sys, tempfile, warnings
import pydelta
from pydelta import DeltaTable
from pydelta.spark.session import local_session

root = sys.argv[1]
spark = local_session("wheel-smoke", catalog_dir=tempfile.mkdtemp())
spark.range(0, 5).selectExpr("id", "'a' AS v").write.format("delta").save(root)
table = DeltaTable.forPath(spark, root)
source = spark.range(3, 8).selectExpr("id", "'b' AS v")
(table.alias("t").merge(source.alias("s"), "t.id = s.id")
 .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
rows = sorted(tuple(r) for r in spark.read.format("delta").load(root).collect())
history = [r.operation for r in table.history().orderBy("version").collect()]
print(json.dumps({"module": pydelta.__file__, "version": pydelta.__version__, "rows": rows, "history": history}))
spark.stop()
"""


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], check=True, timeout=900,
                   capture_output=True)
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def test_the_wheel_carries_the_name_package_data_entry_point_and_extras(dists: dict[str, Path]) -> None:
    wheel = dists["wheel"]
    assert wheel.name.startswith("pydelta_spark-")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = z.read(metadata).decode()
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = z.read(entry_points).decode()
    assert f"Name: {DISTRIBUTION}\n" in meta
    for extra in ("spark", "connect", "object-store", "postgres", "uniform", "all"):
        assert f"Provides-Extra: {extra}\n" in meta
    assert "pydelta/py.typed" in names
    assert "pydelta = pydelta.cli:console" in scripts
    assert not any(n.startswith("tests/") for n in names), "the tests stay out of the wheel"
    assert {"pydelta/__init__.py", "pydelta/spark/session.py", "pydelta/log/snapshot.py",
            "pydelta/uniform/iceberg_converter.py"} <= names


def test_a_fresh_venv_with_the_wheel_runs_a_table_end_to_end(dists: dict[str, Path], tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"{dists['wheel']}[spark]"], check=True, timeout=1200)
    root = str(tmp_path / "table")
    run = subprocess.run([str(python), "-c", _SMOKE, root], capture_output=True, text=True, timeout=600,
                         cwd=tmp_path, env={"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path),
                                            "PYSPARK_PYTHON": str(python)})
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["module"].startswith(str(env_dir)), "imported from the venv, not the checkout"
    assert result["rows"] == [[i, "a"] for i in range(3)] + [[i, "b"] for i in range(3, 8)]
    assert result["history"] == ["WRITE", "MERGE"]
    cli = subprocess.run([str(env_dir / "bin" / "pydelta"), "history", root], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    assert "MERGE" in cli.stdout and "WRITE" in cli.stdout
