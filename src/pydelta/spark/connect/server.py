"""A local Spark Connect server from PySpark's own distribution, for trying pydelta over Connect.

pip's pyspark ships Spark itself, including the Connect server (`spark-connect_*.jar`): this
starts it on 127.0.0.1 with no jar and no setting of pydelta's. The server's Python workers
(which run pydelta's streaming source) use `python`, which must have pydelta installed.

    with LocalConnectServer.start() as server:
        spark = pydelta.remote_session(server.url)
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pydelta.errors import DeltaError

_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectServerError(DeltaError):
    """The local Spark Connect server did not start."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalConnectServer:
    """A Spark Connect server process on 127.0.0.1 (local mode)."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    _log: object = field(repr=False, default=None)

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @classmethod
    def start(cls, *, cores: int = 2, python: str | None = None, conf: dict[str, str] | None = None,
              timeout: float = 180) -> LocalConnectServer:
        """Start the server and wait until it accepts clients."""
        import pyspark

        from pydelta.spark.base.jvm import check_java

        check_java()
        spark_home = os.path.dirname(pyspark.__file__)
        port = _free_port()
        python = python or sys.executable
        settings = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port),
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": str(max(2, cores)),
            **(conf or {}),
        }
        args = [os.path.join(spark_home, "bin", "spark-submit"), "--class", _SERVER_CLASS,
                "--master", f"local[{cores}]", "--name", "pydelta-connect-server"]
        for key, value in settings.items():
            args += ["--conf", f"{key}={value}"]
        env = {**os.environ, "SPARK_HOME": spark_home, "PYSPARK_PYTHON": python}
        env.pop("SPARK_CONNECT_MODE_ENABLED", None)
        env.pop("SPARK_REMOTE", None)
        log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - the server's output, held open as long as the server lives
            "w", prefix="pydelta-connect-server-", suffix=".log", delete=False)
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        server = cls(process, port, Path(log.name), log)
        server._wait(timeout)
        return server

    def _wait(self, timeout: float) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise ConnectServerError(f"the Spark Connect server exited ({self.process.returncode}):\n"
                                         + self.log_path.read_text(errors="replace")[-3000:])
            if "Spark Connect server started" in self.log_path.read_text(errors="replace"):
                return
            time.sleep(0.5)
        self.stop()
        raise ConnectServerError(f"the Spark Connect server did not start in {timeout:.0f}s; log {self.log_path}")

    def stop(self) -> None:
        """Stop the server (its whole process group: spark-submit and the JVM)."""
        if self.process.poll() is None:
            import signal

            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)

    def __enter__(self) -> LocalConnectServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
