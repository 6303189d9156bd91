"""pydelta's log client takes a Spark session's S3A settings: what users give Spark for s3a://
(spark.hadoop.fs.s3a.*, per-bucket fs.s3a.bucket.<b>.*, DeltaTable.forPath's hadoopConf) reaches
the bucket for the log too, without AWS_* variables; the variables still work without them.

The translation itself needs no Spark; the rest runs on the test session (which has no hadoop-aws:
only operations that read the log alone) against moto's S3 server on 127.0.0.1.
"""

from __future__ import annotations

import os
import uuid

import pytest

import pydelta
from pydelta.errors import DeltaNotImplementedError, StorageAccessError
from pydelta.spark.base.hadoop_storage import s3a_storage_options
from tests.s3a._s3 import REGION, s3a_settings

BUCKET = "pydelta-s3a-settings"
CLOSED = "http://127.0.0.1:9"  # nothing listens there (only the credential lookup is pointed at it)


def _elsewhere(endpoint: str) -> str:
    """An endpoint of the same server under which the bucket does not exist: an answer at once
    (a closed port would have obstore retry for minutes)."""
    return f"{endpoint}/elsewhere"


# ---- the translation --------------------------------------------------------------------------


def test_an_s3_compatible_store_with_path_style_requests():
    options = s3a_storage_options(s3a_settings("http://127.0.0.1:9000"), "b")
    assert options == {"aws_endpoint": "http://127.0.0.1:9000", "aws_virtual_hosted_style_request": "false",
                       "allow_http": "true", "aws_region": REGION, "aws_access_key_id": "pydelta-s3a-key",
                       "aws_secret_access_key": "pydelta-s3a-secret"}


def test_per_bucket_settings_win_over_the_general_ones():
    settings = {"fs.s3a.endpoint": "https://general.example", "fs.s3a.access.key": "general",
                "fs.s3a.bucket.logs.endpoint": "https://logs.example", "fs.s3a.bucket.logs.access.key": "logs",
                "fs.s3a.bucket.other.access.key": "other", "fs.s3a.path.style.access": "true"}
    logs = s3a_storage_options(settings, "logs")
    assert logs["aws_endpoint"] == "https://logs.example" and logs["aws_access_key_id"] == "logs"
    data = s3a_storage_options(settings, "data")
    assert data["aws_endpoint"] == "https://general.example" and data["aws_access_key_id"] == "general"


def test_virtual_hosted_requests_by_default_and_the_region_of_an_aws_endpoint():
    # S3A's default (path.style.access=false): the bucket is in the host name, as obstore needs it.
    options = s3a_storage_options({"fs.s3a.endpoint": "s3.eu-west-3.amazonaws.com",
                                   "fs.s3a.path.style.access": "false"}, "b")
    assert options == {"aws_endpoint": "https://b.s3.eu-west-3.amazonaws.com",
                       "aws_virtual_hosted_style_request": "true", "aws_region": "eu-west-3"}
    assert s3a_storage_options({"fs.s3a.endpoint": "store.internal:9000", "fs.s3a.connection.ssl.enabled": "false",
                                "fs.s3a.endpoint.region": "r1"}, "b")["aws_endpoint"] == "http://b.store.internal:9000"


def test_nothing_given_leaves_obstore_its_own_sources():
    # Hadoop's defaults alone (no endpoint, keys or region): environment variables and instance
    # credentials stay in charge, as they do for S3A's default credential chain.
    defaults = {"fs.s3a.path.style.access": "false", "fs.s3a.connection.ssl.enabled": "true",
                "fs.s3a.connection.establish.timeout": "30s", "fs.s3a.connection.timeout": "200s",
                "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider,"
                " org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider", "fs.s3a.endpoint": " "}
    assert s3a_storage_options(defaults, "b") == {"connect_timeout": "30s"}


@pytest.mark.parametrize(("settings", "expected"), [
    ({"fs.s3a.encryption.algorithm": "SSE-KMS", "fs.s3a.encryption.key": "arn:k"},
     {"aws_server_side_encryption": "aws:kms", "aws_sse_kms_key_id": "arn:k"}),
    ({"fs.s3a.server-side-encryption-algorithm": "SSE-S3"}, {"aws_server_side_encryption": "AES256"}),
    ({"fs.s3a.encryption.algorithm": "SSE-C", "fs.s3a.encryption.key": "a2V5"},
     {"aws_server_side_encryption": "sse-c", "aws_sse_customer_key_base64": "a2V5"}),
    ({"fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"},
     {"aws_skip_signature": "true"}),
    ({"fs.s3a.session.token": "tok", "fs.s3a.requester.pays.enabled": "true"},
     {"aws_session_token": "tok", "aws_request_payer": "true"}),
    ({"fs.s3a.proxy.host": "proxy.internal", "fs.s3a.proxy.port": "3128", "fs.s3a.proxy.username": "u@x",
      "fs.s3a.proxy.password": "p w"}, {"proxy_url": "http://u%40x:p%20w@proxy.internal:3128"}),
    ({"fs.s3a.connection.establish.timeout": "5000", "fs.s3a.connection.request.timeout": "2m"},
     {"connect_timeout": "5000ms", "timeout": "2m"}),
    ({"fs.s3a.connection.request.timeout": "0"}, {}),
])
def test_other_settings(settings, expected):
    assert s3a_storage_options(settings, "b") == expected


def test_client_side_encryption_is_refused():
    with pytest.raises(DeltaNotImplementedError, match="CSE-KMS"):
        s3a_storage_options({"fs.s3a.encryption.algorithm": "CSE-KMS"}, "b")


def test_credential_providers_the_log_client_cannot_follow_are_refused(monkeypatch):
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    assumed = {"fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider"}
    with pytest.raises(DeltaNotImplementedError, match="names AssumedRoleCredentialProvider, which pydelta's log"):
        s3a_storage_options(assumed, "b")
    profile = {"fs.s3a.aws.credentials.provider": "software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider"}
    with pytest.raises(DeltaNotImplementedError, match="ProfileCredentialsProvider"):
        s3a_storage_options(profile, "b")
    # keys of its own, a provider it follows in the list, or AWS_* variables: no refusal
    keys = {"fs.s3a.access.key": "k", "fs.s3a.secret.key": "s"}
    assert s3a_storage_options({**assumed, **keys}, "b") == {"aws_access_key_id": "k", "aws_secret_access_key": "s"}
    mixed = assumed["fs.s3a.aws.credentials.provider"] + ", com.amazonaws.auth.EnvironmentVariableCredentialsProvider"
    assert s3a_storage_options({"fs.s3a.aws.credentials.provider": mixed}, "b") == {}
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    assert s3a_storage_options(assumed, "b") == {}


@pytest.mark.spark
def test_secrets_in_a_hadoop_credential_provider_reach_the_log(spark, session_conf, tmp_path):
    """Keys kept in a JCEKS keystore (hadoop.security.credential.provider.path), as S3A reads them
    through Configuration.getPassword: per-bucket ones win, and the keystore's path stays out."""
    from pydelta.spark.base.hadoop_storage import session_s3a_settings

    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    keystore = f"jceks://file{tmp_path}/s3a.jceks"
    conf = jvm.org.apache.hadoop.conf.Configuration()
    conf.set("hadoop.security.credential.provider.path", keystore)
    provider = jvm.org.apache.hadoop.security.alias.CredentialProviderFactory.getProviders(conf).get(0)
    for alias, secret in {"fs.s3a.access.key": "AKIAFROMJCEKS", "fs.s3a.secret.key": "general-secret",
                          f"fs.s3a.bucket.{BUCKET}.secret.key": "bucket-secret"}.items():
        chars = gateway.new_array(jvm.char, len(secret))
        for i, c in enumerate(secret):
            chars[i] = c
        provider.createCredentialEntry(alias, chars)
    provider.flush()
    assert "fs.s3a.access.key" not in session_s3a_settings(spark, bucket=BUCKET)
    session_conf({"hadoop.security.credential.provider.path": keystore})
    settings = session_s3a_settings(spark, bucket=BUCKET)
    assert "hadoop.security.credential.provider.path" not in settings
    options = s3a_storage_options(settings, BUCKET)
    assert (options["aws_access_key_id"], options["aws_secret_access_key"]) == ("AKIAFROMJCEKS", "bucket-secret")
    assert s3a_storage_options(session_s3a_settings(spark, bucket="other"), "other")["aws_secret_access_key"] == (
        "general-secret")


# ---- a session's settings reach the log -----------------------------------------------------------


@pytest.fixture(scope="module")
def table(s3_server):
    """A one-commit table in the bucket, made by pydelta's log core with explicit options."""
    from pydelta.log.storage import storage_for
    from pydelta.protocol.actions import Metadata
    from pydelta.txn.transaction import Operation, OptimisticTransaction

    s3_server.create_bucket(BUCKET)
    uri = f"s3a://{BUCKET}/{uuid.uuid4().hex}/t"
    schema = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
    md = Metadata(id=str(uuid.uuid4()), schema_string=schema, partition_columns=(), configuration={},
                  created_time=0)
    txn = OptimisticTransaction(uri, None, storage=storage_for(uri, s3_server.storage_options()))
    txn.update_metadata(md)
    txn.commit([], Operation.create_table(md))
    return uri


@pytest.fixture
def session_conf(spark, monkeypatch):
    """Set SQL confs on the test session (Spark copies them into its Hadoop configurations); undone after.
    No AWS_* variable is in the environment meanwhile."""
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", CLOSED)  # a missed setting never leaves loopback
    set_keys: list[str] = []

    def put(settings: dict[str, str]) -> None:
        for key, value in settings.items():
            spark.conf.set(key, value)
            set_keys.append(key)

    yield put
    for key in set_keys:
        spark.conf.unset(key)


@pytest.mark.spark
def test_the_sessions_settings_reach_the_bucket(spark, table, s3_server, session_conf):
    session_conf(s3a_settings(s3_server.endpoint))
    assert pydelta.load_snapshot(table).version == 0  # no storage_options: the session's


@pytest.mark.spark
def test_a_per_bucket_endpoint_wins(spark, table, s3_server, session_conf):
    wrong = _elsewhere(s3_server.endpoint)
    session_conf({**s3a_settings(wrong), f"fs.s3a.bucket.{BUCKET}.endpoint": s3_server.endpoint})
    assert pydelta.load_snapshot(table).version == 0
    session_conf({f"fs.s3a.bucket.{BUCKET}.endpoint": wrong})
    with pytest.raises(StorageAccessError, match="bucket does not exist"):
        pydelta.load_snapshot(table)


@pytest.mark.spark
def test_for_path_hadoop_conf_reaches_the_log(spark, table, s3_server, session_conf):
    from pydelta.tables import DeltaTable

    wrong = _elsewhere(s3_server.endpoint)
    session_conf(s3a_settings(wrong))  # the session's own settings lead elsewhere
    delta = DeltaTable.forPath(spark, table, hadoopConf={"fs.s3a.endpoint": s3_server.endpoint})
    assert [r.operation for r in delta.history().collect()] == ["CREATE TABLE"]
    assert delta.snapshot().version == 0
    assert spark.conf.get("fs.s3a.endpoint") == wrong  # the table's options were set only meanwhile
    with pytest.raises(StorageAccessError, match="bucket does not exist"):
        DeltaTable.forPath(spark, table)


@pytest.mark.spark
def test_environment_variables_still_work(spark, table, s3_server, session_conf, monkeypatch):
    for key, value in {"AWS_ENDPOINT": s3_server.endpoint, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
                       "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true"}.items():
        monkeypatch.setenv(key, value)
    assert pydelta.load_snapshot(table).version == 0
