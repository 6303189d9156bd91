"""Shared fixtures: one local SparkSession for the whole run, golden table paths."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
from tests.golden_paths import GOLDEN  # noqa: E402

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def golden() -> Path:
    if not GOLDEN.is_dir():
        pytest.fail(f"golden tables not found at {GOLDEN} (set PYDELTA_GOLDEN)")
    return GOLDEN


@pytest.fixture(scope="session")
def spark():
    from pydelta.spark.session import local_session

    session = local_session(
        "pydelta-tests",
        **{
            "spark.sql.session.timeZone": "America/Los_Angeles",
            "spark.driver.extraJavaOptions": "-Duser.timezone=America/Los_Angeles",
            "spark.executor.extraJavaOptions": "-Duser.timezone=America/Los_Angeles",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
        },
        catalog_dir=tempfile.mkdtemp(prefix="pydelta-catalog-"),
    )
    yield session
    session.stop()


@pytest.fixture
def copy_table(tmp_path):
    """Copy a (read-only) golden table into tmp_path and return the copy's path."""

    def _copy(src: Path) -> Path:
        dst = tmp_path / src.name
        shutil.copytree(src, dst)
        return dst

    return _copy


CONNECT_DIR = ROOT / "tests" / "connect"


# The test files that take longest (measured: minutes each, mostly waiting on delta-spark's JVM
# or a program's own Spark), run first: pytest-xdist hands whole files (--dist loadfile) to the
# worker that is free, so long files at the end of the order would leave one worker running
# them alone while the other idles. (The Makefile passes --no-loadscope-reorder: xdist's own
# order, files with the most tests first, put the few long migration programs last.)
LONG_FIRST = (
    "tests/witness/test_pydelta_reads_delta_spark.py",
    "tests/witness/test_delta_spark_reads_pydelta.py",
    "tests/migration/test_migration.py",
    "tests/s3a/test_s3a_spark.py",
    "tests/witness/test_witness_change_feed.py",
    "tests/witness/test_delta_spark_reads_pydelta_features.py",
    "tests/spark/test_stream_source.py",
    "tests/test_guide.py",
    "tests/witness/test_odd_paths_witness.py",
    "tests/witness/test_variant_shredding_witness.py",
    "tests/witness/test_iceberg_compat_witness.py",
    "tests/golden/test_golden_spark_reads.py",
)


def _file_rank(item: pytest.Item) -> int:
    relative = Path(str(item.fspath)).relative_to(ROOT).as_posix()
    return LONG_FIRST.index(relative) if relative in LONG_FIRST else len(LONG_FIRST)


def pytest_collection_modifyitems(config, items):
    """tests/connect needs a pytest process of its own (a Connect session switches PySpark's
    functions to Connect mode for the whole process): when other tests are collected too,
    leave the Connect tests out, and say so. `make test` runs them separately. The long files
    go first (`LONG_FIRST`); a file's tests keep their order and stay together."""
    connect = [i for i in items if CONNECT_DIR in Path(str(i.fspath)).parents]
    if connect and len(connect) < len(items):
        config.hook.pytest_deselected(items=connect)
        items[:] = [i for i in items if i not in connect]
        print(f"\n{len(connect)} Spark Connect tests left out of this run: "
              "run them on their own (pytest tests/connect, part of `make test`)", file=sys.stderr)
    items.sort(key=_file_rank)  # stable: the rest keep pytest's order


@pytest.fixture(scope="session")
def uc_server(tmp_path_factory: pytest.TempPathFactory):
    """One real Unity Catalog server (olai-uc-server, tests/uc/server.py) per test session, with
    the catalog `unity` and its schema `default`. Without the binary (bash tests/uc/setup.sh) the
    tests that use it skip loudly; under PYDELTA_REQUIRE_UC (CI) they fail instead."""
    from tests.uc.server import UcServer, binary

    path = binary()
    if path is None:
        reason = "!!! uc-server is NOT INSTALLED - Unity Catalog tests NOT RUN: run bash tests/uc/setup.sh"
        if os.environ.get("PYDELTA_REQUIRE_UC"):
            pytest.fail(reason + " (PYDELTA_REQUIRE_UC is set)")
        pytest.skip(reason)
    server = UcServer(tmp_path_factory.mktemp("uc-server"), path)
    server.start()
    server.prepare()
    yield server
    server.stop()
