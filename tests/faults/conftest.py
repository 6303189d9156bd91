"""The faulty S3 the fault tests share: moto's S3 in its own process behind the fault injection
(tests/faults/s3_faults.py), with one bucket, `BUCKET`. Not in a thread of the test process: a
deltalake read holding the GIL could starve it (tests/s3a/_s3.py)."""

from __future__ import annotations

import pytest

from tests.s3a._s3 import S3Server

BUCKET = "pydelta-faults"


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> S3Server:
    server = S3Server(tmp_path_factory.mktemp("faulty-s3") / "moto.log")
    server.create_bucket(BUCKET)
    yield server
    server.stop()
