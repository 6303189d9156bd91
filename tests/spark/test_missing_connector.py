"""s3a:// through Spark without the Hadoop S3A connector: a pydelta error naming it, no Java trace.

The test session has no hadoop-aws jar (pip cannot install it). Every request that could
leave the machine is pointed at a closed loopback port, though the check runs before any I/O.
"""

from __future__ import annotations

import pytest

from pydelta.errors import MissingConnectorError

pytestmark = pytest.mark.spark

URI = "s3a://pydelta-no-connector/table"


@pytest.fixture
def loopback_only(monkeypatch):
    for key, value in {"AWS_ENDPOINT": "http://127.0.0.1:9", "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
                       "AWS_ALLOW_HTTP": "true", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
                       "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)


def _check(error: MissingConnectorError, spark) -> None:
    hadoop = spark._jvm.org.apache.hadoop.util.VersionInfo.getVersion()
    text = str(error)
    assert f"org.apache.hadoop:hadoop-aws:{hadoop}" in text and URI in text
    assert "S3AFileSystem" in text and "ClassNotFoundException" not in text


def test_write_names_the_missing_connector(spark, loopback_only):
    with pytest.raises(MissingConnectorError) as info:
        spark.range(3).write.format("delta").save(URI)
    _check(info.value, spark)


def test_read_and_sql_name_the_missing_connector(spark, loopback_only):
    with pytest.raises(MissingConnectorError) as info:
        spark.read.format("delta").load(URI).collect()
    _check(info.value, spark)
    with pytest.raises(MissingConnectorError):
        spark.sql(f"SELECT * FROM delta.`{URI}`").collect()
