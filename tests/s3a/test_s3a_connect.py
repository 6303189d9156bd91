"""The s3a workload (workload.py) over Spark Connect: the server (pyspark's own distribution)
has hadoop-aws and the store's endpoint and credentials in spark.hadoop.fs.s3a.*; the client has
pydelta, the server's URL and its own credentials in AWS_* variables (Spark Connect never hands a
client the server's secrets). The client reads and commits the logs in the bucket with the
endpoint, region and addressing it reads from the server's confs; the server's Python workers
(the stream's source and Delta sink) get those too. Same checks as the classic run, delta-spark's and deltalake's reads
included."""

from __future__ import annotations

import uuid

import pytest

from tests.s3a import _checks
from tests.s3a._s3 import ACCESS_KEY, REGION, SECRET_KEY, run_script, script_env

pytestmark = [pytest.mark.slow, pytest.mark.spark]

BUCKET = "pydelta-s3a-connect"


def test_workload_over_spark_connect(s3_server, s3a_jars):
    s3_server.create_bucket(BUCKET)
    prefix = f"connect-{uuid.uuid4().hex[:8]}"
    root = f"s3a://{BUCKET}/{prefix}"
    client_credentials = script_env({"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                                     "AWS_DEFAULT_REGION": REGION})
    report = run_script("tests.s3a.workload", "connect", s3_server.endpoint, root, *s3a_jars,
                        env=client_credentials, timeout=1500)
    print(f"\ns3a workload over Spark Connect: {report['seconds']}s, steps {report['steps']}")
    # from the server's confs: where the store is and how to address it, no secret
    assert {"aws_endpoint", "aws_region", "allow_http", "aws_virtual_hosted_style_request"} \
        == set(report["derived_option_keys"])
    _checks.whole_workload(report, s3_server, BUCKET, prefix, root)
    _checks.delta_spark_reads(report, s3_server, root)
