"""The `delta_spark` fixture: one delta-spark witness process per pytest session.

When the witness cannot be set up (no mvn, Maven Central or PyPI unreachable, java
missing) the witness tests fail if $PYDELTA_REQUIRE_WITNESS is set (CI sets it) and
are otherwise skipped, with the reason in the skip message."""

from __future__ import annotations

import os
import sys

import pytest

from tests.witness.delta_spark import DeltaSparkWitness, WitnessUnavailable


def _unavailable(name: str, error: Exception) -> None:
    """Fail under $PYDELTA_REQUIRE_WITNESS (CI), else skip loudly."""
    msg = f"{name} witness unavailable: {error}"
    if os.environ.get("PYDELTA_REQUIRE_WITNESS"):
        pytest.fail(msg + "\n($PYDELTA_REQUIRE_WITNESS is set: the witness tests may not skip)", pytrace=False)
    print(f"\n*** SKIPPING {name} witness tests: " + msg, file=sys.stderr)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def delta_spark():
    try:
        witness = DeltaSparkWitness.start()
    except WitnessUnavailable as e:
        _unavailable("delta-spark", e)
    print(f"\ndelta-spark witness: pyspark {witness.info['pyspark']}, started in {witness.start_seconds:.1f}s,"
          f" log {witness.log_path}", file=sys.stderr)
    yield witness
    witness.close()


@pytest.fixture(scope="session")
def iceberg_spark():
    """Spark with Apache Iceberg's runtime (tests/witness/iceberg_spark.py): set up once, same policy."""
    from tests.witness import iceberg_spark as witness

    try:
        witness.setup()
    except WitnessUnavailable as e:
        _unavailable("Iceberg", e)
    return witness.iceberg_read
