"""A real multi-process Spark cluster: a standalone master and two workers started from pyspark's
own launcher on 127.0.0.1 (separate executor JVMs and Python workers). The same workload (write,
MERGE, DELETE, UPDATE, OPTIMIZE, a Delta-to-Delta stream) runs there and on local[2], and the
results must be equal.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(log: Path, text: str, timeout: float = 90) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise AssertionError(f"{log.name} never said {text!r}:\n{log.read_text(errors='replace')[-3000:]}")


def _workload(master: str, work: Path, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-m", "tests.cluster.workload", master, str(work)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_workload_on_a_standalone_cluster_matches_local(tmp_path: Path) -> None:
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    env = dict(os.environ, SPARK_HOME=home, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    launcher = os.path.join(home, "bin", "spark-class")
    port = _free_port()
    master_log = tmp_path / "master.log"
    procs = [subprocess.Popen([launcher, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(_free_port())],
                              env=env, stdout=subprocess.DEVNULL, stderr=master_log.open("w"))]
    try:
        _wait_for(master_log, "I have been elected leader")
        for i in range(2):
            log = tmp_path / f"worker{i}.log"
            procs.append(subprocess.Popen(
                [launcher, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                 "--memory", "1g", "--webui-port", str(_free_port()), "--work-dir", str(tmp_path / f"work{i}"),
                 f"spark://127.0.0.1:{port}"], env=env, stdout=subprocess.DEVNULL, stderr=log.open("w")))
            _wait_for(log, "Successfully registered with master")
        on_cluster = _workload(f"spark://127.0.0.1:{port}", tmp_path / "cluster", env)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    local = _workload("local[2]", tmp_path / "local", env)
    assert on_cluster["executors"] == 2  # two executor JVMs, not the driver
    assert on_cluster["copied_equal"] and local["copied_equal"]
    assert on_cluster["rows"] == local["rows"] and len(local["rows"]) > 2000
    assert on_cluster["history"] == local["history"]
    assert on_cluster["history"][:2] == ["WRITE", "MERGE"]
