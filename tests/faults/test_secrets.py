"""Secrets never leak (issue 44): a storage option's credential is written into no log file,
commitInfo, checkpoint or checksum, no error message and no log line, whatever pydelta does
with the table, failures included. Against moto's S3 behind the fault injection."""

from __future__ import annotations

import logging
import uuid

import pytest

import pydelta
from pydelta.errors import DeltaError
from pydelta.log.checkpoint_writer import write_checkpoint
from tests.faults.conftest import BUCKET
from tests.faults.s3_faults import Fault
from tests.log.test_object_store import _append, _create, _rows
from tests.s3a._s3 import S3Server

SECRET = "pydelta-SECRET-" + uuid.uuid4().hex


def test_no_secret_in_the_table_errors_or_log_lines(server: S3Server, caplog: pytest.LogCaptureFixture) -> None:
    options = {"aws_endpoint": server.endpoint, "aws_access_key_id": "test", "aws_secret_access_key": SECRET,
               "aws_region": "us-east-1", "allow_http": "true", "timeout": "1s", "max_retries": "1",
               "backoff_config.init_backoff": "10ms"}
    root = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    caplog.set_level(logging.DEBUG)
    messages: list[str] = []
    _create(root, options)
    _append(root, options, [(1, "a")])
    write_checkpoint(pydelta.load_snapshot(root, storage_options=options))
    faults = server.faults()
    faults.add(Fault("error", "PUT", r"_delta_log/\d{20}\.json$", status=503, code="SlowDown", times=-1),
               Fault("error", "GET", r"_delta_log/", status=403, code="AccessDenied", times=-1))
    try:
        for failing in (lambda: _append(root, options, [(2, "b")]),
                        lambda: pydelta.load_snapshot(root, storage_options=options),
                        lambda: pydelta.load_snapshot(root, storage_options={**options, "aws_bogus_key": SECRET})):
            with pytest.raises(DeltaError) as failed:
                failing()
            messages.append(str(failed.value) + repr(failed.value.__cause__))
    finally:
        faults.clear()
    assert _rows(root, options) == [(1, "a")]
    assert all(SECRET not in m for m in messages), messages
    assert [r.getMessage() for r in caplog.records if SECRET in r.getMessage()] == []
    objects = server.objects(BUCKET, root.split("/", 3)[3])
    assert any(k.endswith(".checkpoint.parquet") for k in objects)
    assert [k for k, data in objects.items() if SECRET.encode() in data] == []
