"""Spark with Apache Iceberg's runtime (jar from Maven Central, its own PySpark) as an
independent reader of the Iceberg metadata pydelta's UniForm writes. Setup: setup_iceberg.sh.
Each call is one short-lived process (the reads are few)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tests.witness.delta_spark import _env, run_setup

HERE = Path(__file__).resolve().parent


def setup(timeout: float = 1800) -> tuple[str, str]:
    """Run setup_iceberg.sh (idempotent); return (runtime jar, python)."""
    values = run_setup("setup_iceberg.sh", timeout)
    return values["jar"], values["python"]


def iceberg_read(metadata_location: str, snapshot_ids: Sequence[int] = (), timeout: float = 600) -> dict:
    """{"current": {"schema", "rows"}, "snapshots": {id: {...}}} as Spark's Iceberg reader sees the table."""
    jar, python = setup()
    p = subprocess.run([python, str(HERE / "_iceberg_reader.py"), jar, metadata_location, *map(str, snapshot_ids)],
                       capture_output=True, text=True, timeout=timeout, env=_env(python))
    if p.returncode != 0:
        raise RuntimeError(f"Iceberg reader exited {p.returncode}:\n{p.stderr[-4000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["snapshots"] = {int(k): v for k, v in out["snapshots"].items()}
    return out

