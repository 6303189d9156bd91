"""Concurrent writers of one s3a:// table in separate pydelta Spark processes (writer.py): every
blind append lands in its own version, the versions are contiguous, no row is lost; of two
DELETEs of the same files planned on the same snapshot, one commits and the other fails.

A commit is an S3 PUT with If-None-Match: * (obstore's create mode), which moto's server
honours as S3 does (412 for an existing key): no lock, no rename, no DynamoDB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections import Counter

import pytest

import pydelta
from tests.s3a._s3 import ROOT, script_env
from tests.s3a.writer import ROWS_PER_APPEND

pytestmark = [pytest.mark.slow, pytest.mark.spark]

BUCKET = "pydelta-s3a-concurrency"
WRITERS = 3
APPENDS = 3


def _create(uri: str, options: dict) -> None:
    from pydelta.log.storage import storage_for
    from pydelta.protocol.actions import Metadata
    from pydelta.txn.transaction import Operation, OptimisticTransaction

    schema = json.dumps({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "writer", "type": "integer", "nullable": True, "metadata": {}}]})
    md = Metadata(id=str(uuid.uuid4()), schema_string=schema, partition_columns=(), configuration={},
                  created_time=int(time.time() * 1000))
    txn = OptimisticTransaction(uri, None, storage=storage_for(uri, options))
    txn.update_metadata(md)
    txn.commit([], Operation.create_table(md))


def _commit_info(uri: str, options: dict, version: int) -> dict:
    from pydelta.log.storage import storage_for

    lines = storage_for(uri, options).read(f"{uri}/_delta_log/{version:020d}.json").decode().splitlines()
    return next(json.loads(line)["commitInfo"] for line in lines if '"commitInfo"' in line)


def _rows(uri: str, options: dict, version: int | None = None) -> list[tuple[int, int]]:
    """(id, writer) of every row of the version, read file by file through pydelta's log core."""
    import io

    import pyarrow.parquet as pq

    snapshot = pydelta.load_snapshot(uri, version=version, storage_options=options)
    out: list[tuple[int, int]] = []
    for path in snapshot.files().column("path").to_pylist():
        data = pq.read_table(io.BytesIO(snapshot.storage.read(snapshot.absolute_path(path))))
        out += zip(data.column("id").to_pylist(), data.column("writer").to_pylist(), strict=True)
    return sorted(out)


def test_writer_processes_commit_atomically(s3_server, s3a_jars, tmp_path):
    s3_server.create_bucket(BUCKET)
    uri = f"s3a://{BUCKET}/{uuid.uuid4().hex}/t"
    options = s3_server.storage_options()
    _create(uri, options)
    procs = [subprocess.Popen([sys.executable, "-m", "tests.s3a.writer", s3_server.endpoint, uri, str(i), str(WRITERS),
                               str(APPENDS), str(tmp_path), *s3a_jars], cwd=ROOT, env=script_env(),
                              stdout=subprocess.PIPE, stderr=(tmp_path / f"writer{i}.log").open("w"), text=True)
             for i in range(WRITERS)]
    reports = []
    for i, p in enumerate(procs):
        stdout, _ = p.communicate(timeout=1200)
        assert p.returncode == 0, (tmp_path / f"writer{i}.log").read_text()[-6000:]
        reports.append(json.loads(stdout.strip().splitlines()[-1]))

    # Every append is one version of its own, 1..WRITERS*APPENDS, whoever won each race.
    appended = WRITERS * APPENDS
    tags = Counter(_commit_info(uri, options, v).get("userMetadata") for v in range(1, appended + 1))
    assert tags == Counter(t for r in reports for t in r["tags"])
    assert len(tags) == appended and set(tags.values()) == {1}
    rows = _rows(uri, options, appended)
    assert [i for i, _ in rows] == list(range(appended * ROWS_PER_APPEND))  # none lost, none twice
    assert all(w == i // (APPENDS * ROWS_PER_APPEND) for i, w in rows)

    # The two DELETEs of writer 2's rows planned on the same snapshot: one winner, one loser.
    outcomes = [r["dml"] for r in reports if "dml" in r]
    won = [o for o in outcomes if "version" in o]
    lost = [o for o in outcomes if "error" in o]
    assert len(won) == 1 and len(lost) == 1, outcomes
    assert won[0]["version"] == appended + 1
    assert lost[0]["error"] in ("ConcurrentDeleteDeleteException", "ConcurrentDeleteReadException"), lost
    assert pydelta.load_snapshot(uri, storage_options=options).version == appended + 1  # the loser committed nothing
    assert _rows(uri, options) == [(i, w) for i, w in rows if w != 2]
