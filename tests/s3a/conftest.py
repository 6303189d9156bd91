"""Fixtures of the s3a tests: hadoop-aws for this pyspark's Hadoop (Maven, tests/s3a/setup.sh)
and a moto S3 server on 127.0.0.1.

When the jars cannot be fetched (no mvn, Maven Central unreachable or refusing an artifact)
the tests that need them fail if $PYDELTA_REQUIRE_WITNESS is set (CI sets it) and are
otherwise skipped, loudly, with the reason in the skip message."""

from __future__ import annotations

import os
import sys

import pytest

from tests.s3a._s3 import JarsUnavailable, S3Server, fetch_jars, hadoop_version


def unavailable(what: str, error: Exception) -> None:
    """Fail under $PYDELTA_REQUIRE_WITNESS, else skip saying so on stderr and in the skip reason."""
    msg = f"{what} unavailable: {error}"
    if os.environ.get("PYDELTA_REQUIRE_WITNESS"):
        pytest.fail(msg + "\n($PYDELTA_REQUIRE_WITNESS is set: the s3a tests may not skip)", pytrace=False)
    print(f"\n*** SKIPPING s3a tests: {msg}", file=sys.stderr)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def s3a_jars() -> list[str]:
    """hadoop-aws matching this venv's pyspark, and its runtime dependencies (the AWS SDK bundle)."""
    try:
        return fetch_jars(hadoop_version())
    except JarsUnavailable as e:
        unavailable("hadoop-aws (Spark's s3a:// connector)", e)
        raise  # not reached: unavailable() fails or skips


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    server = S3Server(tmp_path_factory.mktemp("s3") / "moto.log")
    yield server
    server.stop()
