"""A standalone Spark cluster on 127.0.0.1 from pyspark's own launcher: a master and workers
in their own JVMs (separate executor JVMs and Python workers), for the cluster tests
(tests/cluster, tests/s3a).

    env = cluster_env()
    with standalone_cluster(tmp_path, env) as master:   # "spark://127.0.0.1:<port>"
        ... run a driver against `master` with `env` ...
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(log: Path, text: str, timeout: float = 90) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise AssertionError(f"{log.name} never said {text!r}:\n{log.read_text(errors='replace')[-3000:]}")


def cluster_env(**extra: str) -> dict[str, str]:
    """The environment of the cluster's JVMs and of drivers run against it (this venv's pyspark and Python)."""
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    return dict(os.environ, SPARK_HOME=home, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]), **extra)


@contextlib.contextmanager
def standalone_cluster(work: Path, env: dict[str, str], workers: int = 2, memory: str = "1g") -> Iterator[str]:
    """A master and `workers` workers (one core each) logging into `work`; yields the master URL."""
    launcher = os.path.join(env["SPARK_HOME"], "bin", "spark-class")
    port = free_port()
    master_log = work / "master.log"
    procs = [subprocess.Popen([launcher, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(free_port())],
                              env=env, stdout=subprocess.DEVNULL, stderr=master_log.open("w"))]
    try:
        wait_for(master_log, "I have been elected leader")
        for i in range(workers):
            log = work / f"worker{i}.log"
            procs.append(subprocess.Popen(
                [launcher, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                 "--memory", memory, "--webui-port", str(free_port()), "--work-dir", str(work / f"work{i}"),
                 f"spark://127.0.0.1:{port}"], env=env, stdout=subprocess.DEVNULL, stderr=log.open("w")))
            wait_for(log, "Successfully registered with master")
        yield f"spark://127.0.0.1:{port}"
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
