"""delta-spark, the reference Delta implementation, as an independent test witness.

It runs in its own process, from its own venv (pyspark 4.2) with delta-spark's jars
(see setup.sh), never inside pydelta's venv or JVM. Two ways to use it:

    with DeltaSparkWitness.start() as ds:       # one long-lived JVM (the pytest fixture)
        ds.rows(path, version=1)  -> {"schema": [[name, type, nullable]...], "rows": [...]}
        ds.history(path), ds.detail(path), ds.sql("DELETE FROM delta.`...` WHERE ..."),
        ds.changes(path, start=0), ds.schema(path), ds.exec("result = spark.version"),
        ds.stream(path, checkpoint, readChangeFeed="true")

    run_delta_spark(script_path, *args) -> the JSON the script leaves in `result`
                                           (a fresh JVM each call: slow, but simple)

Rows and schemas come back in the canonical forms of _canon.py; `canon_rows(df)` gives
pydelta's side in the same form.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import _canon  # noqa: E402


class WitnessUnavailable(RuntimeError):
    """delta-spark could not be set up (no mvn, no Maven Central, no PyPI, no java)."""


class WitnessError(RuntimeError):
    """delta-spark refused or failed a request; .error_class holds Spark's condition."""

    def __init__(self, reply: dict):
        super().__init__(reply.get("error", "?") + "\n" + reply.get("traceback", ""))
        self.error_class = reply.get("error_class")
        self.reply = reply


def run_setup(script: str, timeout: float = 1800) -> dict[str, str]:
    """Run a witness setup script of this folder (idempotent); the `key=value` lines it prints."""
    try:
        p = subprocess.run(["bash", str(HERE / script)], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise WitnessUnavailable(f"tests/witness/{script} failed: {e}") from e
    if p.returncode != 0:
        raise WitnessUnavailable(f"tests/witness/{script} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)


def setup(timeout: float = 1800) -> tuple[str, str]:
    """Run setup.sh; return (jars_dir, witness_python)."""
    vals = run_setup("setup.sh", timeout)
    return vals["jars"], vals["python"]


def _env(python: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_HOME", "PYTHONPATH", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "VIRTUAL_ENV")}
    env["PYSPARK_PYTHON"] = python
    env["PYSPARK_DRIVER_PYTHON"] = python
    env["PYTHONUNBUFFERED"] = "1"
    return env


class DeltaSparkWitness:
    """A long-lived delta-spark process speaking JSON lines over stdin/stdout."""

    def __init__(self, proc: subprocess.Popen, log_path: str, start_seconds: float):
        self._proc = proc
        self._lock = threading.Lock()
        self.log_path = log_path
        self.start_seconds = start_seconds
        self.info = self._call({"op": "ping"})

    @classmethod
    def start(cls, jars_dir: str | None = None, python: str | None = None, timeout: float = 300):
        if jars_dir is None or python is None:
            jars_dir, python = setup()
        t0 = time.time()
        # the server's stderr: the child keeps its own copy of the handle; the file stays (delete=False)
        with tempfile.NamedTemporaryFile("w", prefix="delta-spark-witness-", suffix=".log", delete=False) as log:
            proc = subprocess.Popen([python, str(HERE / "_server.py"), jars_dir], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=log, text=True, env=_env(python), bufsize=1)
        ready = _readline(proc, timeout)
        if not ready or not json.loads(ready).get("ready"):
            proc.kill()
            raise WitnessUnavailable(f"delta-spark witness did not start; its log {log.name}:\n"
                                     + Path(log.name).read_text()[-3000:])
        return cls(proc, log.name, time.time() - t0)

    def _call(self, req: dict, timeout: float = 600) -> dict:
        with self._lock:
            if self._proc.poll() is not None:
                raise WitnessUnavailable(f"delta-spark witness exited; see {self.log_path}")
            self._proc.stdin.write(json.dumps(req) + "\n")
            self._proc.stdin.flush()
            line = _readline(self._proc, timeout)
        if not line:
            raise WitnessUnavailable(f"delta-spark witness gave no reply to {req}; see {self.log_path}")
        reply = json.loads(line)
        if not reply.pop("ok"):
            raise WitnessError(reply)
        return reply

    # -- operations -------------------------------------------------------------------
    def rows(self, path: str, version: int | None = None, timestamp: str | None = None) -> dict:
        return self._call({"op": "rows", "path": str(path), "version": version, "timestamp": timestamp})

    def rows_many(self, path: str, versions) -> list[dict]:
        """rows(path, version=v) for each v, in one request."""
        return self._call({"op": "rows_many", "path": str(path), "versions": [int(v) for v in versions]})["versions"]

    def schema(self, path: str, version: int | None = None) -> dict:
        return self._call({"op": "schema", "path": str(path), "version": version})

    def history(self, path: str) -> list[dict]:
        return self._call({"op": "history", "path": str(path)})["history"]

    def detail(self, path: str) -> dict:
        return self._call({"op": "detail", "path": str(path)})["detail"]

    def protocol(self, path: str) -> dict:
        d = self.detail(path)
        return {k: d.get(k) for k in ("minReaderVersion", "minWriterVersion", "tableFeatures")}

    def changes(self, path: str, start: int = 0, end: int | None = None) -> dict:
        return self._call({"op": "changes", "path": str(path), "start": start, "end": end})

    def stream(self, path: str, checkpoint: str, **options) -> list[dict]:
        """delta-spark's streaming source over the table (Trigger.AvailableNow, checkpoint
        at `checkpoint`): [{"batch": id, "schema": ..., "rows": ...}] for each micro-batch."""
        return self._call({"op": "stream", "path": str(path), "checkpoint": str(checkpoint),
                           "options": options})["batches"]

    def sql(self, statement: str, collect: bool = True) -> dict:
        return self._call({"op": "sql", "sql": statement, "collect": collect})

    def exec(self, code: str, **kw):
        """Run `code` in the witness with `spark`, `req` (kw), and `state` (a dict kept across
        calls); returns what the code leaves in `result`."""
        return self._call({"op": "exec", "code": code, **kw})["result"]

    def close(self):
        if self._proc.poll() is None:
            try:
                self._call({"op": "stop"}, timeout=60)
                self._proc.wait(timeout=60)
            except Exception:
                self._proc.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _readline(proc: subprocess.Popen, timeout: float) -> str:
    box: list[str] = []
    t = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        proc.kill()
        raise WitnessUnavailable(f"delta-spark witness timed out after {timeout}s")
    return box[0] if box else ""


def run_delta_spark(script: str, *args: str, timeout: float = 900) -> dict:
    """Run a Python script once in a fresh delta-spark process. The script sees `spark`
    (delta-spark configured), `args` and `canon`, and sets `result` (JSON-able)."""
    jars_dir, python = setup()
    p = subprocess.run([python, str(HERE / "_server.py"), jars_dir, "--script", str(script), *map(str, args)],
                       capture_output=True, text=True, timeout=timeout, env=_env(python))
    if p.returncode != 0:
        raise RuntimeError(f"delta-spark script {script} exited {p.returncode}:\n{p.stderr[-4000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


# -- pydelta's side in the same canonical forms --------------------------------------------
def canon(df) -> dict:
    """A (pydelta) DataFrame as {"schema": ..., "rows": ...}, comparable with rows()."""
    return {"schema": _canon.schema(df.schema), "rows": _canon.rows(df.collect())}
