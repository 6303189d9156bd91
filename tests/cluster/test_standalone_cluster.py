"""A real multi-process Spark cluster: a standalone master and two workers started from pyspark's
own launcher on 127.0.0.1 (separate executor JVMs and Python workers). The workload (write,
MERGE, DELETE, UPDATE, OPTIMIZE, a Delta-to-Delta stream) runs there, and its rows must be
those a model of the same statements gives (`expected_rows`; the default suite runs every one
of the statements on local mode).
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


def expected_rows() -> list[list[int]]:
    """The workload's statements (tests/cluster/workload.py) applied to Python rows."""
    rows = {i: (i % 5, i * 2) for i in range(0, 2000)}  # the first write
    for i in range(1500, 2500):  # MERGE: matched rows get v = -id, the rest are inserted
        rows[i] = (i % 5, -i)
    rows = {i: pv for i, pv in rows.items() if i % 7 != 0}  # DELETE
    rows = {i: (p, v + 1 if p == 1 else v) for i, (p, v) in rows.items()}  # UPDATE
    return sorted([i, p, v] for i, (p, v) in rows.items())


def test_workload_on_a_standalone_cluster_matches_the_model(tmp_path: Path) -> None:
    env = cluster_env()
    with standalone_cluster(tmp_path, env) as master:
        on_cluster = _workload(master, tmp_path / "cluster", env)
    assert on_cluster["executors"] == 2  # two executor JVMs, not the driver
    assert on_cluster["copied_equal"]  # the stream copied the table whole
    assert on_cluster["rows"] == expected_rows()
    assert on_cluster["history"] == ["WRITE", "MERGE", "DELETE", "UPDATE", "OPTIMIZE"]
