"""A real Unity Catalog server for tests: olai-uc-server's `uc-server` (installed by tests/uc/setup.sh),
on 127.0.0.1, with its SQLite database and managed storage in a directory of its own.

`UcServer.start()` migrates the database, starts `uc-server serve` and waits for /health;
`stop()` kills it (SIGKILL: a crash, the database stays) and `start()` again brings the same
catalog back, which is how the concurrency test restarts the catalog mid-run.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

VERSION = "0.0.11"
CATALOG = "unity"  # the catalog and schema every test session's server holds
SCHEMA = "default"
BINARY_ENV = "PYDELTA_UC_SERVER"
# The server's development key (32 bytes, base64): it encrypts stored secrets; tests store none.
_KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="


def binary() -> str | None:
    """The uc-server binary: $PYDELTA_UC_SERVER, else where tests/uc/setup.sh installs it, else PATH."""
    candidates = [os.environ.get(BINARY_ENV),
                  os.path.expanduser(f"~/.cache/pydelta/uc-server-{VERSION}/bin/uc-server"),
                  shutil.which("uc-server")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class UcServer:
    """One uc-server process over a state directory (database + managed storage)."""

    def __init__(self, state_dir: Path, binary_path: str) -> None:
        self.dir = Path(os.path.realpath(state_dir))  # the server compares real paths
        self.binary = binary_path
        self.storage = self.dir / "storage"
        self.storage.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.config = self.dir / "uc.yaml"
        self.config.write_text(
            f"host: 127.0.0.1\nport: {self.port}\n"
            f"backend:\n  engine: sqlite\n  path: {self.dir / 'uc.db'}\n"
            f"encryption:\n  active:\n    id: test\n    key: \"{_KEY}\"\n"
            f"local_storage:\n  allowed-roots:\n    - {self.storage}\n"
            f"managed_storage_root: \"file://{self.storage}\"\n"
            "ui:\n  serve: false\n")
        self.process: subprocess.Popen[bytes] | None = None
        self.log = self.dir / "server.log"

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60) -> None:
        subprocess.run([self.binary, "migrate", "-c", str(self.config)], check=True, capture_output=True,
                       timeout=120)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen([self.binary, "serve", "-c", str(self.config), "--no-ui"],
                                            stdout=log, stderr=subprocess.STDOUT, cwd=self.dir)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"uc-server exited with {self.process.returncode}: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"uc-server did not answer /health within {timeout_s} s: {self.log.read_text()[-2000:]}")

    def prepare(self) -> None:
        """The catalog and schema the tests use."""
        from pydelta.txn.unity_catalog import UnityCatalog

        rest = UnityCatalog(self.uri).rest
        rest.create_catalog(CATALOG)
        rest.create_schema(CATALOG, SCHEMA)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self.process = None
