"""Storage options as users bring them (deltalake's spellings), and store failures as pydelta errors.

A real S3 API (moto's server) on 127.0.0.1; no request leaves the machine (the credential
lookup of the missing-credentials case is pointed at a closed loopback port).
"""

from __future__ import annotations

import uuid

import pytest

import pydelta
from pydelta.errors import DeltaIllegalArgumentError, StorageAccessError
from pydelta.log.object_store import split_options
from tests.log.test_object_store import BUCKET, _append, _create, _deltalake_options, _rows, s3  # noqa: F401


def _delta_rs_style(s3_options: dict) -> dict:
    """The options a deltalake user passes, upper-case, with its own S3 commit keys."""
    return _deltalake_options(s3_options)


def test_split_options_accepts_every_spelling():
    config, client = split_options({"AWS_ALLOW_HTTP": "true", "aws_endpoint_url": "http://h", "Timeout": 30,
                                    "AWS_S3_ALLOW_UNSAFE_RENAME": "true", "google_allow_http": True})
    assert client == {"allow_http": "true", "timeout": "30s"}
    assert config == {"aws_endpoint_url": "http://h"}


@pytest.mark.parametrize("spelling", ["AWS_ALLOW_HTTP", "aws_allow_http", "allow_http", "ALLOW_HTTP"])
def test_deltalake_spellings_reach_the_table(s3, spelling):  # noqa: F811
    root = f"s3://{BUCKET}/tables/{uuid.uuid4().hex}"
    _create(root, s3)
    _append(root, s3, [(1, "a")])
    options = {k: v for k, v in _delta_rs_style(s3).items() if k != "AWS_ALLOW_HTTP"}
    options[spelling] = "true"
    snap = pydelta.load_snapshot(root, storage_options=options)
    assert snap.version == 1
    assert _rows(root, options) == [(1, "a")]
    from deltalake import DeltaTable

    assert DeltaTable(root, storage_options=_delta_rs_style(s3)).version() == 1  # the same options, delta-rs


def test_unknown_option_is_a_clear_error(s3):  # noqa: F811
    with pytest.raises(DeltaIllegalArgumentError, match="aws_no_such_setting"):
        pydelta.load_snapshot(f"s3://{BUCKET}/t", storage_options={**s3, "aws_no_such_setting": "1"})


def test_client_option_in_a_store_prefix_does_not_panic(s3):  # noqa: F811
    # obstore panics (a BaseException, not an Exception) when a client key reaches the store config
    with pytest.raises(DeltaIllegalArgumentError):
        pydelta.load_snapshot(f"s3://{BUCKET}/t", storage_options={**s3, "aws_http2_only": "maybe"})


def test_missing_bucket_names_the_uri(s3):  # noqa: F811
    uri = "s3://no-such-bucket-here/t"
    with pytest.raises(StorageAccessError, match=r"no-such-bucket-here.*bucket does not exist"):
        pydelta.load_snapshot(uri, storage_options=s3)


def test_missing_credentials_names_the_uri_and_the_cause(s3):  # noqa: F811
    options = {k: v for k, v in s3.items() if "key" not in k}
    options["aws_metadata_endpoint"] = "http://127.0.0.1:9"  # the credential lookup stays on loopback
    uri = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    with pytest.raises(StorageAccessError, match="no credentials were found") as info:
        pydelta.load_snapshot(uri, storage_options=options)
    assert uri in str(info.value)
    assert isinstance(info.value, OSError)


def test_a_given_client_option_keeps_the_environments(s3, monkeypatch):  # noqa: F811
    # obstore drops the HTTP client settings it read from AWS_* variables when given any:
    # a timeout in storage_options must not lose AWS_ALLOW_HTTP (the endpoint is http://).
    for key, value in {"AWS_ENDPOINT": s3["aws_endpoint"], "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                       "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}.items():
        monkeypatch.setenv(key, value)
    root = f"s3://{BUCKET}/tables/{uuid.uuid4().hex}"
    _create(root, s3)
    assert pydelta.load_snapshot(root, storage_options={"timeout": "20s"}).version == 0


def test_retry_options_take_deltalakes_names():
    from datetime import timedelta

    from pydelta.log.object_store import retry_config

    assert retry_config({"aws_region": "x"}) is None
    assert retry_config({"MAX_RETRIES": "3", "retry_timeout": "2m", "backoff_config.init_backoff": "50ms",
                         "backoff_config.max_backoff": 5, "backoff_config.base": "1.5"}) == {
        "max_retries": 3, "retry_timeout": timedelta(minutes=2),
        "backoff": {"init_backoff": timedelta(milliseconds=50), "max_backoff": timedelta(seconds=5), "base": 1.5}}
    assert split_options({"max_retries": "3", "timeout": "5"}) == ({}, {"timeout": "5s"})  # not a store key
    with pytest.raises(DeltaIllegalArgumentError, match="retry_timeout"):
        retry_config({"retry_timeout": "soon"})
