"""What the s3a tests share: hadoop-aws jars (setup.sh), a moto S3 server on 127.0.0.1, the
Spark settings users give S3A, and Spark scripts run in their own process.

The test process's own Spark session (tests/conftest.py) has no hadoop-aws jar, so every Spark
run on s3a:// is a subprocess (`run_script`) with the jars on its class path and the endpoint
and credentials only in its fs.s3a.* settings: no AWS_* variable reaches it, so pydelta's
log client can reach the bucket only through what it derives from the session.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ACCESS_KEY = "pydelta-s3a-key"
SECRET_KEY = "pydelta-s3a-secret"
REGION = "us-east-1"


class JarsUnavailable(RuntimeError):
    """hadoop-aws could not be fetched (no mvn, Maven Central unreachable or refusing)."""


def hadoop_version(python: str | None = None) -> str:
    """The Hadoop version of the pyspark of `python` (default: this one), from its hadoop-client-api jar."""
    if python is None:
        import pyspark

        jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    else:
        jars = subprocess.run([python, "-c", "import os, pyspark; print(os.path.join(os.path.dirname("
                               "pyspark.__file__), 'jars'))"],
                              capture_output=True, text=True, check=True).stdout.strip()
    found = glob.glob(os.path.join(jars, "hadoop-client-api-*.jar"))
    if len(found) != 1:
        raise JarsUnavailable(f"cannot tell the Hadoop version of the pyspark in {jars}: {found}")
    return os.path.basename(found[0])[len("hadoop-client-api-"):-len(".jar")]


def fetch_jars(version: str, timeout: float = 1800) -> list[str]:
    """tests/s3a/setup.sh for Hadoop `version` (idempotent): the jars of hadoop-aws and its dependencies."""
    try:
        p = subprocess.run(["bash", str(HERE / "setup.sh"), version], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise JarsUnavailable(f"tests/s3a/setup.sh {version} failed: {e}") from e
    if p.returncode != 0:
        raise JarsUnavailable(f"tests/s3a/setup.sh {version} exited {p.returncode}:\n{p.stderr[-3000:]}")
    values = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
    jars = sorted(glob.glob(os.path.join(values["jars"], "*.jar")))
    if not any(os.path.basename(j) == f"hadoop-aws-{version}.jar" for j in jars):
        raise JarsUnavailable(f"setup.sh left no hadoop-aws-{version}.jar in {values['jars']}")
    return jars


def split_jars(jars: list[str]) -> tuple[list[str], list[str]]:
    """(the connector and its small dependencies, for spark.jars; the AWS SDK bundle, ~700 MB).

    The bundle goes on the JVMs' class path (as cluster images ship it): spark.jars would copy
    it to every executor, which takes longer than the whole workload here.
    """
    bundle = [j for j in jars if os.path.basename(j).startswith("bundle-")]
    return [j for j in jars if j not in bundle], bundle


class S3Server:
    """moto's S3 API in its own process, on 127.0.0.1 and a port it picks (logging into `log`),
    with conditional writes made atomic as S3's are (moto_server.py says why).

    Not in a thread of the test process: deltalake's DataFusion reader holds the GIL while it
    waits for its requests, which a server thread sharing that GIL could then never answer.
    """

    def __init__(self, log: Path, timeout: float = 60) -> None:
        import re
        import time

        self.log = log
        self._proc = subprocess.Popen([sys.executable, "-m", "tests.s3a.moto_server"], cwd=ROOT,
                                      stdout=subprocess.DEVNULL, stderr=log.open("w"))
        deadline = time.time() + timeout
        while True:
            found = re.search(r"Running on (http://127\.0\.0\.1:\d+)", log.read_text(errors="replace"))
            if found:
                self.endpoint = found.group(1)
                break
            if self._proc.poll() is not None or time.time() > deadline:
                self._proc.kill()
                raise RuntimeError(f"moto's server did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def faults(self) -> Any:
        """The server's fault injection (tests/faults/s3_faults.py), steered over HTTP."""
        from tests.faults.s3_faults import RemoteFaults

        return RemoteFaults(self.endpoint)

    def objects(self, bucket: str, prefix: str) -> dict[str, bytes]:
        """Every object under `prefix`, by key, with its bytes."""
        client = self.client()
        return {key: client.get_object(Bucket=bucket, Key=key)["Body"].read() for key in self.keys(bucket, prefix)}

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str) -> list[str]:
        """Every object key under `prefix`."""
        out: list[str] = []
        for page in self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            out += [o["Key"] for o in page.get("Contents", [])]
        return sorted(out)

    def storage_options(self) -> dict[str, str]:
        """What pydelta's log core (obstore) and deltalake take to reach this server."""
        return {"aws_endpoint": self.endpoint, "aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY,
                "aws_region": REGION, "allow_http": "true"}

    def stop(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()


def s3a_settings(endpoint: str) -> dict[str, str]:
    """The Hadoop settings a user gives S3A for an S3-compatible store (spark.hadoop.* strips to these)."""
    return {"fs.s3a.endpoint": endpoint, "fs.s3a.access.key": ACCESS_KEY, "fs.s3a.secret.key": SECRET_KEY,
            "fs.s3a.path.style.access": "true", "fs.s3a.endpoint.region": REGION,
            "fs.s3a.connection.ssl.enabled": "false"}


def script_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A child's environment without any AWS_* setting, with two loopback-only guards: were the
    session's settings not applied, credential lookups would go to a closed local port instead
    of the instance-metadata address (obstore's AWS_METADATA_ENDPOINT, the AWS SDK's switch)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_METADATA_ENDPOINT="http://127.0.0.1:9", AWS_EC2_METADATA_DISABLED="true",
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    env.update(extra or {})
    return env


def run_script(module: str, *args: str, env: dict[str, str] | None = None, timeout: float = 900,
               keep_output: bool = False) -> dict:
    """`python -m module args...` from the repository root; the JSON object on its last stdout line
    (with everything the program printed under "output" when `keep_output`)."""
    p = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env or script_env(),
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"{module} exited {p.returncode}:\n{p.stderr[-6000:]}")
    report: dict = json.loads(p.stdout.strip().splitlines()[-1])
    if keep_output:
        report["output"] = p.stdout + p.stderr
    return report


def spark_session(master: str, endpoint: str, jars: list[str], app: str = "pydelta-s3a") -> Any:
    """A pydelta Spark session that reaches s3a:// as users set it up: hadoop-aws in spark.jars,
    the store's endpoint and credentials in spark.hadoop.fs.s3a.*, nothing else."""
    from pyspark.sql import SparkSession

    import pydelta

    connector, bundle = split_jars(jars)
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.jars", ",".join(connector))
               .config("spark.driver.extraClassPath", os.pathsep.join(bundle))
               .config("spark.executor.extraClassPath", os.pathsep.join(bundle))
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
               .config("spark.executor.memory", "768m").config("spark.sql.session.timeZone", "UTC"))
    for key, value in s3a_settings(endpoint).items():
        builder = builder.config(f"spark.hadoop.{key}", value)
    spark = pydelta.enable(pydelta.configure_spark(builder).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def connect_session(endpoint: str, jars: list[str], app: str = "pydelta-s3a-connect") -> tuple[Any, Any]:
    """(server, client session): a Spark Connect server from pyspark's distribution set up as users
    set a cluster up for S3A (hadoop-aws in spark.jars, the store in spark.hadoop.fs.s3a.*), and a
    pydelta client session to it. The client is given no S3 setting: it reads the server's."""
    import pydelta
    from pydelta.spark.connect.server import LocalConnectServer

    connector, bundle = split_jars(jars)
    conf = {"spark.jars": ",".join(connector), "spark.driver.extraClassPath": os.pathsep.join(bundle),
            "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
            "spark.sql.session.timeZone": "UTC"}
    conf.update({f"spark.hadoop.{key}": value for key, value in s3a_settings(endpoint).items()})
    server = LocalConnectServer.start(conf=conf)
    try:
        return server, pydelta.remote_session(server.url, app_name=app)
    except BaseException:
        server.stop()
        raise
