"""A real Spark Connect server from pyspark's own distribution, on 127.0.0.1, for the whole run,
and a Connect client session to it with pydelta enabled.

A process that opens a Connect session switches PySpark's functions to Connect mode, so these
tests run in a pytest process of their own: `make test` runs them after the rest
(`pytest tests/connect`), and the rest of the suite leaves this directory out."""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def connect_server():
    from pydelta.spark.connect.server import LocalConnectServer

    server = LocalConnectServer.start(conf={"spark.sql.session.timeZone": "UTC"})
    yield server
    server.stop()


@pytest.fixture(scope="session")
def spark(connect_server):
    import pydelta

    session = pydelta.remote_session(connect_server.url, app_name="pydelta-connect-tests")
    yield session
    session.stop()
