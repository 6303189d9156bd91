"""The s3a workload (workload.py) on a standalone Spark cluster: a master and two workers on
127.0.0.1 (tests/cluster/launcher.py), so the data files are written and read by two executor
JVMs and their Python workers (the stream's reads), all against the same moto S3 server.
Executors get hadoop-aws from the driver (spark.jars) and the AWS SDK bundle from their class
path, as a cluster image ships it; no process has AWS_* variables."""

from __future__ import annotations

import uuid

import pytest

from tests.cluster.launcher import cluster_env, standalone_cluster
from tests.s3a import _checks
from tests.s3a._s3 import run_script, script_env

pytestmark = [pytest.mark.slow, pytest.mark.spark]

BUCKET = "pydelta-s3a-cluster"


def test_workload_on_a_standalone_cluster(s3_server, s3a_jars, tmp_path):
    s3_server.create_bucket(BUCKET)
    prefix = f"cluster-{uuid.uuid4().hex[:8]}"
    root = f"s3a://{BUCKET}/{prefix}"
    env = script_env({"SPARK_HOME": cluster_env()["SPARK_HOME"]})
    with standalone_cluster(tmp_path, env) as master:
        report = run_script("tests.s3a.workload", master, s3_server.endpoint, root, *s3a_jars, env=env, timeout=1500)
    print(f"\ns3a workload on the cluster: {report['seconds']}s, steps {report['steps']}")
    assert report["executors"] == 2  # two executor JVMs, not the driver
    _checks.whole_workload(report, s3_server, BUCKET, prefix, root)
