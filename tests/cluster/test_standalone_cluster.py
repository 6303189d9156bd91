"""A real multi-process Spark cluster: a standalone master and two workers started from pyspark's
own launcher on 127.0.0.1 (separate executor JVMs and Python workers). The same workload (write,
MERGE, DELETE, UPDATE, OPTIMIZE, a Delta-to-Delta stream) runs there and on local[2], and the
results must be equal.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.launcher import ROOT, cluster_env, standalone_cluster

pytestmark = pytest.mark.slow


def _workload(master: str, work: Path, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-m", "tests.cluster.workload", master, str(work)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_workload_on_a_standalone_cluster_matches_local(tmp_path: Path) -> None:
    env = cluster_env()
    with standalone_cluster(tmp_path, env) as master:
        on_cluster = _workload(master, tmp_path / "cluster", env)
    local = _workload("local[2]", tmp_path / "local", env)
    assert on_cluster["executors"] == 2  # two executor JVMs, not the driver
    assert on_cluster["copied_equal"] and local["copied_equal"]
    assert on_cluster["rows"] == local["rows"] and len(local["rows"]) > 2000
    assert on_cluster["history"] == local["history"]
    assert on_cluster["history"][:2] == ["WRITE", "MERGE"]
