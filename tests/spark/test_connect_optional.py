"""pydelta without PySpark's Connect extras (grpcio and friends): classic sessions work as before.

PySpark's Connect package checks its dependencies on import and, in a process whose main
module has no file (`python -c`, pytest-xdist workers), exits the process with status 0
instead of raising. pydelta's hooks look for the Connect classes on every session start, so
a missing grpcio must read as "no Connect", never end the user's program.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

# `python -c` (no __main__ file) is where PySpark exits; grpc is hidden as if not installed.
_PROGRAM = """
import sys
sys.modules["grpc"] = None
from pydelta.spark.base.connect_session import connect_classes
from pydelta.spark.session import _install_hooks
print("connect classes:", connect_classes())
_install_hooks()
print("hooks installed")
"""


@pytest.mark.parametrize("hidden", ["grpc", "grpc_status", "google.rpc"])
def test_hooks_install_without_connect_dependencies(hidden):
    program = _PROGRAM.replace('"grpc"', repr(hidden))
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["connect classes: None", "hooks installed"], done.stderr


def test_connect_classes_found_when_installed():
    """The test extra installs pyspark[connect], so here the classes load."""
    from pydelta.spark.base.connect_session import connect_classes

    classes = connect_classes()
    assert classes is not None and classes.session.__module__ == "pyspark.sql.connect.session"
