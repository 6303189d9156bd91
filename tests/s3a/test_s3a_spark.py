"""pydelta on Spark's own S3 path: s3a:// tables end to end on a real S3 API (moto's server on
127.0.0.1), with hadoop-aws from Maven (setup.sh).

The workload (workload.py) runs once, in its own process with hadoop-aws, a session configured
only through spark.hadoop.fs.s3a.* (no AWS_* variables: pydelta's log client derives its
settings from the session). Each test checks one part of what it did against a plain-Python
model of the operations (_model.py), the objects in the bucket, the log (read here by pydelta's
log core), deltalake, and delta-spark in its own process with the same jars.
"""

from __future__ import annotations

import uuid

import pytest

from tests.faults.s3_faults import Fault
from tests.s3a import _checks
from tests.s3a._s3 import SECRET_KEY, run_script

pytestmark = pytest.mark.spark

BUCKET = "pydelta-s3a-workload"


# Failures the store answers with while the workload runs (issue 44): Spark's S3A connector
# (data files) and pydelta's log client (commits, log reads, listings) must retry through them.
STORE_FAULTS = (
    Fault("error", "PUT", r"\.parquet$", status=503, code="SlowDown", times=3),
    Fault("error", "PUT", r"_delta_log/\d{20}\.json$", status=503, code="SlowDown", times=2),
    Fault("error", "GET", r"_delta_log/", status=500, code="InternalError", times=2),
    Fault("error", "LIST", r"_delta_log/", status=503, code="ServiceUnavailable", times=2),
)


@pytest.fixture(scope="module")
def workload(s3_server, s3a_jars):
    """The workload's report (with what the injected faults did), and where its tables are."""
    s3_server.create_bucket(BUCKET)
    prefix = f"local {uuid.uuid4().hex[:8]} %zz #h +p lit%20"  # a prefix URIs escape: each key is its name
    root = f"s3a://{BUCKET}/{prefix}"
    faults = s3_server.faults()
    faults.add(*STORE_FAULTS)
    try:
        report = run_script("tests.s3a.workload", "local[2]", s3_server.endpoint, root, *s3a_jars,
                            keep_output=True)
        report["fault_hits"] = faults.hits()
    finally:
        faults.clear()
    print(f"\ns3a workload: {report['seconds']}s, steps {report['steps']}")
    return report, root, prefix


def test_the_secret_key_is_written_nowhere(workload, s3_server):
    """The session's fs.s3a.secret.key reaches neither the program's output (log lines, errors)
    nor any object of the tables: commits, commitInfo, checkpoints, checksums, data."""
    report, _, prefix = workload
    secret = SECRET_KEY.encode()
    assert SECRET_KEY not in report["output"]
    objects = s3_server.objects(BUCKET, prefix)
    assert any(key.endswith(".json") for key in objects)
    assert [key for key, data in objects.items() if secret in data] == []


def test_the_store_failed_requests_and_the_workload_retried_them(workload):
    """Every injected failure happened; the other tests show the workload's results are whole."""
    assert workload[0]["fault_hits"] == [f.times for f in STORE_FAULTS]


def test_the_log_client_took_its_settings_from_the_session(workload):
    report, _, _ = workload
    assert {"aws_endpoint", "aws_access_key_id", "aws_secret_access_key", "aws_region", "allow_http"} \
        <= set(report["derived_option_keys"])


def test_writes_and_dml_leave_the_modelled_rows(workload):
    report, _, _ = workload
    _checks.dml_rows(report)


def test_for_path_hadoop_conf_reads_the_table(workload):
    _checks.hadoop_conf(workload[0])


def test_filtered_read_plans_only_the_files_its_stats_allow(workload):
    _checks.skipping(workload[0])


def test_deletion_vectors_are_written_to_the_bucket(workload, s3_server):
    report, root, prefix = workload
    _checks.deletion_vectors(report, s3_server, BUCKET, prefix, root)


def test_optimize_and_vacuum_leave_only_the_live_files(workload, s3_server):
    report, root, prefix = workload
    _checks.optimize_and_vacuum(report, s3_server, BUCKET, prefix, root)


def test_checkpoints_are_in_the_bucket(workload, s3_server):
    report, root, prefix = workload
    _checks.checkpoints(report, s3_server, BUCKET, prefix, root)


def test_change_feed_matches_time_travel(workload):
    _checks.change_feed(workload[0])


def test_stream_from_s3a_to_s3a(workload, s3_server):
    report, _, prefix = workload
    _checks.stream(report, s3_server, BUCKET, prefix)


def test_deltalake_reads_the_tables_equal(workload, s3_server):
    report, root, _ = workload
    _checks.deltalake_reads(report, s3_server, root)


def test_delta_spark_reads_the_tables_equal(workload, s3_server):
    report, root, _ = workload
    _checks.delta_spark_reads(report, s3_server, root)
