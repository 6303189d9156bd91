"""Checks of one run of the s3a workload (workload.py), shared by the local and the cluster run."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow as pa

import pydelta
from tests.s3a import _model as M
from tests.s3a._s3 import S3Server, fetch_jars, hadoop_version, s3a_settings

HERE = Path(__file__).resolve().parent


def dml_rows(report: dict) -> None:
    assert report["t"]["rows"] == M.table_t()
    assert report["t"]["history"][:6] == ["CREATE TABLE", "WRITE", "DELETE", "UPDATE", "MERGE", "OPTIMIZE"]
    assert report["dv"]["rows"] == M.table_dv()
    assert report["dv"]["history"] == ["CREATE TABLE", "WRITE", "DELETE", "UPDATE", "MERGE"]


def hadoop_conf(report: dict) -> None:
    """forPath's hadoopConf read the table as it is, and the session got its own setting back."""
    seen = report["hadoop_conf"]
    assert seen["rows"] == report["t"]["rows"] and seen["history"] == report["t"]["history"]
    assert seen["session_endpoint_after"] is None


def skipping(report: dict) -> None:
    s = report["skipping"]
    assert s["rows"] == list(range(M.SKIP_BELOW))
    assert s["all"] == 3 and s["read"] == s["by_stats"] < s["all"]


def _log(server: S3Server, root: str, name: str) -> pydelta.Snapshot:
    """The table's latest snapshot as pydelta's log core reads it here, with explicit options."""
    return pydelta.load_snapshot(f"{root}/{name}", storage_options=server.storage_options())


def deletion_vectors(report: dict, server: S3Server, bucket: str, prefix: str, root: str) -> None:
    assert report["dv"]["with_dv"] > 0
    snapshot = _log(server, root, "dv")
    from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor

    stored = [DeletionVectorDescriptor.from_dict(d)
              for d in snapshot.files().column("deletion_vector").to_pylist() if d]
    assert len(stored) == report["dv"]["with_dv"]
    in_bucket = {f"s3a://{bucket}/{k}" for k in server.keys(bucket, f"{prefix}/dv/")}
    on_disk = {d.absolute_path(snapshot.table_root) for d in stored if not d.is_inline}
    assert on_disk and on_disk <= in_bucket
    assert all(p.rsplit("/", 1)[-1].startswith("deletion_vector_") for p in on_disk)


def optimize_and_vacuum(report: dict, server: S3Server, bucket: str, prefix: str, root: str) -> None:
    assert report["optimize"]["before"] > report["optimize"]["after"] == 1
    assert "VACUUM END" in report["t"]["history"]
    data = {k[len(f"{prefix}/t/"):] for k in server.keys(bucket, f"{prefix}/t/") if "/_delta_log/" not in f"/{k}"}
    assert data == set(report["t"]["files"])  # every file of an older version is gone from the bucket
    assert sorted(_log(server, root, "t").files().column("path").to_pylist()) == report["t"]["files"]


def checkpoints(report: dict, server: S3Server, bucket: str, prefix: str, root: str) -> None:
    keys = [k.rsplit("/", 1)[-1] for k in server.keys(bucket, f"{prefix}/t/_delta_log/")]
    written = sorted(int(k.split(".")[0]) for k in keys if k.endswith(".checkpoint.parquet"))
    assert written and all(v % 3 == 0 for v in written)  # delta.checkpointInterval = 3
    assert "_last_checkpoint" in keys
    snapshot = _log(server, root, "t")
    assert snapshot.version == report["t"]["version"]
    assert snapshot.segment.checkpoint is not None and snapshot.segment.checkpoint.version == written[-1]


def change_feed(report: dict) -> None:
    """Each version's changes are the difference of its rows and the previous version's (time travel)."""
    versions = {int(v): rows for v, rows in report["versions"].items()}
    by_version: dict[int, dict[str, list]] = {}
    for version, kind, *row in report["changes"]:
        by_version.setdefault(version, {}).setdefault(kind, []).append(row)
    assert by_version, "no changes at all"
    for v in sorted(versions):
        before = Counter(map(tuple, versions.get(v - 1, [])))
        after = Counter(map(tuple, versions[v]))
        got = by_version.get(v, {})
        added = Counter(map(tuple, got.get("insert", []) + got.get("update_postimage", [])))
        removed = Counter(map(tuple, got.get("delete", []) + got.get("update_preimage", [])))
        assert added - removed == after - before and removed - added == before - after, f"version {v}"
    assert set(by_version) <= set(versions)
    kinds = {k for v in by_version.values() for k in v}
    assert kinds == {"insert", "delete", "update_preimage", "update_postimage"}


def stream(report: dict, server: S3Server, bucket: str, prefix: str) -> None:
    s = report["stream"]
    assert s["first"] == M.first_events()
    assert s["events"] == s["copy"] == M.events()
    assert s["copy_history"] == ["STREAMING UPDATE"] * len(s["copy_history"]) and len(s["copy_history"]) >= 2
    checkpoint = server.keys(bucket, f"{prefix}/checkpoint/")
    assert any("/offsets/" in k for k in checkpoint) and any("/commits/" in k for k in checkpoint)


def expected_tables(report: dict) -> dict[str, list]:
    return {"t": report["t"]["rows"], "dv": report["dv"]["rows"], "events": report["stream"]["events"],
            "copy": report["stream"]["copy"]}


def _deltalake_uri(server: S3Server, path: str) -> str:
    """The s3:// URL deltalake opens for the table at the decoded s3a path `path`.

    deltalake 1.6 decodes a location once too often (the key `lit%20` is looked up as `lit `),
    so a table under such a key is read from a byte-for-byte copy under a plain prefix: its log
    holds relative paths only."""
    from urllib.parse import quote

    bucket, _, key = path.split("://", 1)[1].partition("/")
    if "%" not in key:
        return f"s3://{bucket}/{quote(key)}"
    client = server.client()
    plain = f"deltalake-copy/{abs(hash(key))}"
    for k in server.keys(bucket, key + "/"):
        client.copy_object(Bucket=bucket, Key=plain + k[len(key):], CopySource={"Bucket": bucket, "Key": k})
    return f"s3://{bucket}/{plain}"


def deltalake_reads(report: dict, server: S3Server, root: str) -> None:
    """deltalake (delta-rs) through its DataFusion reader, which applies deletion vectors."""
    from deltalake import DeltaTable, QueryBuilder

    for name, rows in expected_tables(report).items():
        table = DeltaTable(_deltalake_uri(server, f"{root}/{name}"), storage_options=server.storage_options())
        assert table.version() == report["versions_latest"][name], name
        batches = pa.table(QueryBuilder().register("t", table).execute("SELECT * FROM t").read_all())
        got = sorted(list(r.values()) for r in batches.to_pylist())
        assert got == rows, name


def delta_spark_reads(report: dict, server: S3Server, root: str) -> None:
    """delta-spark 4.4 (tests/witness) in its own process, with hadoop-aws for its own pyspark's Hadoop."""
    import json

    from tests.s3a._s3 import JarsUnavailable, split_jars
    from tests.s3a.conftest import unavailable
    from tests.witness.delta_spark import WitnessUnavailable, run_delta_spark, setup

    try:
        _, python = setup()
        jars = fetch_jars(hadoop_version(python))
    except (WitnessUnavailable, JarsUnavailable) as e:
        unavailable("delta-spark witness with hadoop-aws", e)
    connector, bundle = split_jars(jars)
    names = sorted(expected_tables(report))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"settings": s3a_settings(server.endpoint), "tables": {n: f"{root}/{n}" for n in names}}, f)
    previous = os.environ.get("PYDELTA_WITNESS_EXTRA_CLASSPATH")
    os.environ["PYDELTA_WITNESS_EXTRA_CLASSPATH"] = os.pathsep.join(connector + bundle)
    try:
        seen = run_delta_spark(str(HERE / "witness_read.py"), f.name)
    finally:
        if previous is None:
            os.environ.pop("PYDELTA_WITNESS_EXTRA_CLASSPATH", None)
        else:
            os.environ["PYDELTA_WITNESS_EXTRA_CLASSPATH"] = previous
        os.unlink(f.name)
    assert seen["spark"].startswith("4.2")
    for name, rows in expected_tables(report).items():
        assert seen["rows"][name] == rows, name
    assert seen["versions"] == report["versions_latest"]


def whole_workload(report: dict, server: S3Server, bucket: str, prefix: str, root: str) -> None:
    """Every check above but delta-spark's read: for the runs checked in one test each."""
    dml_rows(report)
    skipping(report)
    deletion_vectors(report, server, bucket, prefix, root)
    optimize_and_vacuum(report, server, bucket, prefix, root)
    checkpoints(report, server, bucket, prefix, root)
    change_feed(report)
    stream(report, server, bucket, prefix)
    deltalake_reads(report, server, root)
    hadoop_conf(report)
