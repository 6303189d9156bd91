# Run by tests/witness/test_catalog_managed_witness.py in a delta-spark process (run_delta_spark):
# delta-spark reads pydelta catalog-managed tables through pydelta's SQLite or PostgreSQL catalog.
# args: (table path, "sqlite" or "postgres", the catalog's SQLite file or DSN, the table id) per
# table. `spark`, `canon`, `result` come from _server.py.
#
# delta-spark 4.4 refuses path access to catalog-managed tables unless a catalog-owned commit
# coordinator is registered for spark_catalog, which it consults only in test mode
# (spark.testing). The coordinator here answers getCommits from the catalog's own database
# (read with sqlite3 or psycopg, not through pydelta), as a catalog server would. delta-spark's client API
# takes every ratified commit as a staged file (it refuses one anywhere else): an inline commit
# (content held by the catalog) is handed over as the staged file the catalog recorded its name
# for, written from the catalog's content, as a catalog client serving delta-spark would have to.
import os
import sqlite3
from typing import ClassVar

from pyspark.java_gateway import ensure_callback_server_started

jvm = spark._jvm  # noqa: F821
jvm.java.lang.System.setProperty("spark.testing", "true")
ensure_callback_server_started(spark.sparkContext._gateway)  # noqa: F821
tables = {}  # the table's log path -> (catalog kind, its file or DSN, table id)
for i in range(0, len(args), 4):  # noqa: F821 - given by _server.py
    path, kind, where, table_id = args[i:i + 4]  # noqa: F821
    tables[os.path.realpath(os.path.join(path, "_delta_log"))] = (kind, where, table_id)
calls = []
inline_served = []


def _catalog_state(kind, where, table_id, start):
    """(latest ratified version, [(version, staged file name, inline content or None)] held)."""
    if kind == "sqlite":
        connect, prefix, mark = sqlite3.connect, "", "?"
    else:
        import psycopg

        connect, prefix, mark = psycopg.connect, "pydelta_", "%s"
    with connect(where) as db:
        latest = db.execute(f"SELECT latest_version FROM {prefix}owned_tables WHERE table_id = {mark}",
                            (table_id,)).fetchone()[0]
        rows = db.execute(f"SELECT version, file_name, content FROM {prefix}commits WHERE table_id = {mark} "
                          f"AND NOT backfilled AND version >= {mark} ORDER BY version", (table_id, start)).fetchall()
    return latest, [(v, name, None if content is None else bytes(content)) for v, name, content in rows]


def _status(path):
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p.getFileSystem(spark._jsc.hadoopConfiguration()).getFileStatus(p)  # noqa: F821


class CatalogClient:
    """io.delta.storage.commit.CommitCoordinatorClient over pydelta's SQLite catalog (read-only)."""

    def registerTable(self, *a):
        return jvm.java.util.HashMap()

    def commit(self, *a):
        raise RuntimeError("the witness only reads")

    def getCommits(self, table_desc, start, end):
        log_path = str(table_desc.getLogPath().toUri().getPath())
        kind, where, table_id = tables[os.path.realpath(log_path)]
        calls.append([start, end])
        latest, rows = _catalog_state(kind, where, table_id, start or 0)
        commits = jvm.java.util.ArrayList()
        for version, name, content in rows:
            if end is not None and version > end:
                continue
            staged = f"{log_path}/_staged_commits/{name}"
            if content is not None:
                os.makedirs(os.path.dirname(staged), exist_ok=True)
                with open(staged, "wb") as f:
                    f.write(content)
                inline_served.append(version)
            status = _status(f"file://{staged}")
            commits.add(jvm.io.delta.storage.commit.Commit(version, status, status.getModificationTime()))
        return jvm.io.delta.storage.commit.GetCommitsResponse(commits, latest)

    def backfillToVersion(self, *a):
        return None

    def semanticEquals(self, other):
        return True

    class Java:
        implements: ClassVar[list[str]] = ["io.delta.storage.commit.CommitCoordinatorClient"]


client = CatalogClient()


class Builder:
    def getName(self):
        return "pydelta-sqlite"

    def build(self, session, conf):
        return client

    def buildForCatalog(self, session, name):
        return client

    class Java:
        implements: ClassVar[list[str]] = [
            "org.apache.spark.sql.delta.coordinatedcommits.CatalogOwnedCommitCoordinatorBuilder"]


jvm.org.apache.spark.sql.delta.coordinatedcommits.CatalogOwnedCommitCoordinatorProvider.registerBuilder(
    "spark_catalog", Builder())
result = []  # noqa: F841 - read by _server.py
for i in range(0, len(args), 4):  # noqa: F821
    path = args[i]  # noqa: F821
    calls.clear()
    inline_served.clear()
    df = spark.read.format("delta").load(path)  # noqa: F821
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]  # noqa: F821
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()  # noqa: F821
    result.append({
        "rows": canon.rows(df.collect()),  # noqa: F821
        "features": sorted(detail.tableFeatures),
        "versions": sorted(r.version for r in history),
        "asked_catalog": bool(calls),
        "inline_served": sorted(set(inline_served)),
    })
