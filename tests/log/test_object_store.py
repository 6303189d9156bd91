"""Delta tables in an object store: a real S3 API (moto's server) on 127.0.0.1, no Spark.

pydelta's log core commits through obstore with `If-None-Match: *`; processes racing for
one version have exactly one winner; checkpoints, time travel, log cleanup and VACUUM run
against the bucket; deltalake (delta-rs) reads pydelta's commits and pydelta reads its.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pydelta
from pydelta.log.checkpoint_writer import write_checkpoint
from pydelta.log.cleanup import cleanup_expired_logs
from pydelta.log.storage import FileAlreadyExistsError, storage_for
from pydelta.log.vacuum_plan import execute_plan, plan_vacuum
from pydelta.protocol.actions import Metadata
from pydelta.txn.transaction import Operation, OptimisticTransaction

BUCKET = "pydelta-test"
SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "v", "type": "string", "nullable": True, "metadata": {}}]})


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on loopback and the options pydelta / deltalake need to reach it.

    moto's own ThreadedMotoServer decides `If-None-Match: *` in two steps, so two racing commits
    of one version could both win (tests/s3a/moto_server.py): this one serializes them, as S3 does.
    """
    import logging
    import threading

    from tests.s3a.moto_server import make_atomic_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_atomic_server()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_port}"
    import boto3

    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                 region_name="us-east-1").create_bucket(Bucket=BUCKET)
    options = {"aws_endpoint": endpoint, "aws_access_key_id": "test", "aws_secret_access_key": "test",
               "aws_region": "us-east-1", "allow_http": "true"}
    yield options
    server.shutdown()
    server.server_close()  # shutdown() only stops serving; this closes the listening socket


def _root() -> str:
    return f"s3://{BUCKET}/tables/{uuid.uuid4().hex}"


def _put_data(root: str, options: dict, rows: list[tuple[int, str]]) -> dict:
    """One Parquet data file in the bucket and its add action (with stats)."""
    table = pa.table({"id": pa.array([r[0] for r in rows], pa.int64()), "v": pa.array([r[1] for r in rows])})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    storage_for(root, options).put(f"{root}/{name}", buf.getvalue())
    stats = {"numRecords": len(rows), "minValues": {"id": min(r[0] for r in rows)},
             "maxValues": {"id": max(r[0] for r in rows)}, "nullCount": {"id": 0, "v": 0}}
    return {"add": {"path": name, "partitionValues": {}, "size": len(buf.getvalue()),
                    "modificationTime": int(time.time() * 1000), "dataChange": True, "stats": json.dumps(stats)}}


def _create(root: str, options: dict) -> None:
    md = Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=(), configuration={},
                  created_time=int(time.time() * 1000))
    txn = OptimisticTransaction(root, None, storage=storage_for(root, options))
    txn.update_metadata(md)
    txn.commit([], Operation.create_table(md))


def _append(root: str, options: dict, rows: list[tuple[int, str]]) -> int:
    snap = pydelta.load_snapshot(root, storage_options=options)
    return OptimisticTransaction(root, snap).commit([_put_data(root, options, rows)], Operation.write("Append", []))


def _rows(root: str, options: dict, version: int | None = None) -> list[tuple]:
    snap = pydelta.load_snapshot(root, version=version, storage_options=options)
    out = []
    for path in snap.files().column("path").to_pylist():
        data = pq.read_table(io.BytesIO(snap.storage.read(snap.absolute_path(path))))
        out += list(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True))
    return sorted(out)


def _deltalake_options(options: dict) -> dict:
    return {"AWS_ENDPOINT_URL": options["aws_endpoint"], "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
            "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}


def test_create_append_time_travel_checkpoint(s3):
    root = _root()
    _create(root, s3)
    _append(root, s3, [(1, "a"), (2, "b")])
    _append(root, s3, [(3, "c")])
    snap = pydelta.load_snapshot(root, storage_options=s3)
    assert snap.version == 2 and snap.table_root == root
    assert _rows(root, s3) == [(1, "a"), (2, "b"), (3, "c")]
    assert _rows(root, s3, version=1) == [(1, "a"), (2, "b")]
    write_checkpoint(snap)
    storage = storage_for(root, s3)
    assert storage.exists(f"{root}/_delta_log/00000000000000000002.checkpoint.parquet")
    assert json.loads(storage.read(f"{root}/_delta_log/_last_checkpoint"))["version"] == 2
    _append(root, s3, [(4, "d")])
    after = pydelta.load_snapshot(root, storage_options=s3)
    assert after.segment.checkpoint is not None and after.segment.checkpoint.version == 2
    assert _rows(root, s3) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    # Log cleanup with the retention passed: commits before the checkpoint go, the table still reads.
    deleted = cleanup_expired_logs(after, now_ms=int(time.time() * 1000) + 40 * 86_400_000)
    assert f"{root}/_delta_log/00000000000000000000.json" in deleted
    assert _rows(root, s3) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    with pytest.raises(pydelta.DeltaError):
        pydelta.load_snapshot(f"s3://{BUCKET}/tables/none", storage_options=s3)


def test_put_if_absent_has_one_winner(s3):
    storage = storage_for(f"s3://{BUCKET}/x", s3)
    key = f"s3://{BUCKET}/race/{uuid.uuid4().hex}/00000000000000000000.json"
    storage.put_if_absent(key, b"first")
    with pytest.raises(FileAlreadyExistsError):
        storage.put_if_absent(key, b"second")
    assert storage.read(key) == b"first"


_WORKER = """
import json, sys
sys.path.insert(0, {src!r})
sys.path.insert(0, {tests!r})
from tests.log.test_object_store import _append
options = json.loads(sys.argv[2])
versions = [_append(sys.argv[1], options, [(int(sys.argv[3]) * 100 + i, "w")]) for i in range(5)]
print(json.dumps(versions))
"""


def test_concurrent_processes_commit_each_version_once(s3):
    root = _root()
    _create(root, s3)
    here = os.path.dirname(os.path.abspath(__file__))
    project = os.path.dirname(os.path.dirname(here))
    script = _WORKER.format(src=os.path.join(project, "src"), tests=project)
    procs = [subprocess.Popen([sys.executable, "-c", script, root, json.dumps(s3), str(w)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for w in range(4)]
    versions = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        versions += json.loads(out.strip().splitlines()[-1])
    assert sorted(versions) == list(range(1, 21))  # 20 commits, one per version
    snap = pydelta.load_snapshot(root, storage_options=s3)
    assert snap.version == 20 and snap.num_files == 20
    assert sorted(r[0] for r in _rows(root, s3)) == sorted(w * 100 + i for w in range(4) for i in range(5))


def test_vacuum_deletes_unreferenced_objects(s3):
    root = _root()
    _create(root, s3)
    _append(root, s3, [(1, "a")])
    snap = pydelta.load_snapshot(root, storage_options=s3)
    stray = f"{root}/part-stray-{uuid.uuid4()}.parquet"
    snap.storage.put(stray, b"not referenced")
    plan = plan_vacuum(snap, retention_hours=0, now_ms=int(time.time() * 1000) + 60_000, check_enabled=False)
    assert [f.path for f in plan.files] == [stray]  # the live file and the log are kept
    assert execute_plan(plan) == 1
    assert not snap.storage.exists(stray)
    assert _rows(root, s3) == [(1, "a")]


def test_deltalake_reads_and_writes_the_same_bucket_table(s3):
    import deltalake

    root = _root()
    _create(root, s3)
    _append(root, s3, [(1, "a"), (2, "b")])
    dl_options = _deltalake_options(s3)
    dt = deltalake.DeltaTable(root, storage_options=dl_options)
    assert dt.version() == 1
    assert sorted(dt.to_pyarrow_table().column("id").to_pylist()) == [1, 2]
    deltalake.write_deltalake(root, pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}), mode="append",
                              storage_options=dl_options)
    assert pydelta.load_snapshot(root, storage_options=s3).version == 2
    assert _rows(root, s3) == [(1, "a"), (2, "b"), (3, "c")]
    _append(root, s3, [(4, "d")])
    assert sorted(deltalake.DeltaTable(root, storage_options=dl_options).to_pyarrow_table().column("id").to_pylist()) \
        == [1, 2, 3, 4]
