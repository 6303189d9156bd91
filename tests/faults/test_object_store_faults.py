"""The log core against a faulty S3 (issue 44): moto's server behind tests/faults/s3_faults.py,
reached over real HTTP by pydelta's object-store client, no Spark.

For every fault: the table afterwards reads exactly as before the operation or exactly as after
it, a commit is never lost nor made twice, a failure reaches the caller as a named pydelta
error, and deltalake (delta-rs) reads the table afterwards.
"""

from __future__ import annotations

import time
import uuid

import pytest

import pydelta
from pydelta.errors import StorageAccessError
from pydelta.log.storage import storage_for
from tests.faults.conftest import BUCKET
from tests.faults.s3_faults import Fault, RemoteFaults
from tests.log.test_object_store import _append, _create, _deltalake_options, _put_data, _rows
from tests.s3a._s3 import S3Server

COMMIT = r"_delta_log/\d{20}\.json$"


@pytest.fixture
def store(server: S3Server) -> RemoteFaults:
    faults = server.faults()
    faults.clear()
    yield faults
    faults.clear()


@pytest.fixture
def options(server: S3Server) -> dict[str, str]:
    """pydelta's options: a 1 s request timeout, and retries quick enough for a test."""
    return {"aws_endpoint": server.endpoint, "aws_access_key_id": "test", "aws_secret_access_key": "test",
            "aws_region": "us-east-1", "allow_http": "true", "timeout": "1s",
            "max_retries": "4", "retry_timeout": "20s", "backoff_config.init_backoff": "50ms",
            "backoff_config.max_backoff": "500ms"}


def _root() -> str:
    return f"s3://{BUCKET}/t/{uuid.uuid4().hex}"


def _versions(root: str, options: dict) -> list[int]:
    log = storage_for(root, options).list_from(f"{root}/_delta_log/")
    return sorted(int(f.name[:20]) for f in log if f.name.endswith(".json") and f.name[:20].isdigit())


def _deltalake_rows(root: str, options: dict) -> tuple[int, list[tuple]]:
    import deltalake

    dt = deltalake.DeltaTable(root, storage_options=_deltalake_options(options))
    table = dt.to_pyarrow_table()
    return dt.version(), sorted(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


def _table(options: dict) -> str:
    root = _root()
    _create(root, options)
    _append(root, options, [(1, "a")])
    return root


def test_throttling_and_server_errors_are_retried(store, options):
    root = _table(options)
    faults = [
        Fault("error", "PUT", COMMIT, status=503, code="SlowDown", times=2),
        Fault("error", "PUT", r"\.parquet$", status=500, code="InternalError", times=1),
        Fault("error", "GET", r"_delta_log/", status=503, code="ServiceUnavailable", times=2),
        Fault("error", "LIST", r"_delta_log/", status=500, code="InternalError", times=2),
    ]
    store.add(*faults)
    assert _append(root, options, [(2, "b")]) == 2
    assert store.hits() == [f.times for f in faults]  # every fault happened
    store.clear()
    assert _versions(root, options) == [0, 1, 2]
    assert _rows(root, options) == [(1, "a"), (2, "b")]
    assert _deltalake_rows(root, options) == (2, [(1, "a"), (2, "b")])


def test_a_commit_applied_whose_answer_was_lost_counts_once(store, options):
    """The store wrote `2.json` but the client timed out: the retry finds the version taken, sees
    its own commit there, and reports version 2; no second copy at version 3."""
    root = _table(options)
    store.add(Fault("applied_then_lost", "PUT", r"_delta_log/0{19}2\.json$", seconds=2.5))
    assert _append(root, options, [(2, "b")]) == 2
    assert store.hits() == [1]
    store.clear()
    assert _versions(root, options) == [0, 1, 2]
    assert _rows(root, options) == [(1, "a"), (2, "b")]
    assert _deltalake_rows(root, options) == (2, [(1, "a"), (2, "b")])


def test_a_store_that_keeps_failing_gives_a_named_error_and_no_commit(store, options):
    root = _table(options)
    store.add(Fault("error", "PUT", COMMIT, status=503, code="ServiceUnavailable", times=-1))
    with pytest.raises(StorageAccessError, match=r"00000000000000000002\.json"):
        _append(root, options, [(2, "b")])
    store.clear()
    assert _versions(root, options) == [0, 1]  # exactly as before
    assert _rows(root, options) == [(1, "a")]
    assert _append(root, options, [(3, "c")]) == 2  # the next commit takes the version
    assert _deltalake_rows(root, options) == (2, [(1, "a"), (3, "c")])


def test_a_slow_listing_only_slows(store, options):
    root = _table(options)
    store.add(Fault("delay", "LIST", r"_delta_log/", seconds=0.7, times=2))
    started = time.monotonic()
    assert pydelta.load_snapshot(root, storage_options=options).version == 1
    assert store.hits()[0] >= 1 and time.monotonic() - started >= 0.7
    assert _append(root, options, [(2, "b")]) == 2


def test_a_commit_not_listed_yet_is_neither_overwritten_nor_lost(store, options):
    """Writer A commits version 2 while the listing does not show it yet; writer B, who read
    version 1, finds version 2 taken, waits until the winner is listed, checks it for conflicts
    and commits version 3. A reader in between sees version 1 or 2, never a gap."""
    from pydelta.txn.transaction import Operation, OptimisticTransaction

    root = _table(options)
    b_read = pydelta.load_snapshot(root, storage_options=options)
    store.add(Fault("hide_new", "LIST", COMMIT, seconds=1.5))
    assert _append(root, options, [(2, "a-wins")]) == 2
    assert pydelta.load_snapshot(root, storage_options=options).version in (1, 2)
    b_add = _put_data(root, options, [(3, "b-waits")])
    assert OptimisticTransaction(root, b_read).commit([b_add], Operation.write("Append", [])) == 3
    assert store.hits()[0] >= 1  # the listing did hide version 2 for a while
    store.clear()
    assert _versions(root, options) == [0, 1, 2, 3]
    assert _rows(root, options) == [(1, "a"), (2, "a-wins"), (3, "b-waits")]
    assert _deltalake_rows(root, options) == (3, [(1, "a"), (2, "a-wins"), (3, "b-waits")])
