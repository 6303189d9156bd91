# Run by tests/witness/test_catalog_managed_witness.py in a delta-spark process (run_delta_spark):
# delta-spark reads a pydelta catalog-managed table through pydelta's SQLite catalog.
# args: table path, the catalog's SQLite file, the table id. `spark`, `canon`, `result` come
# from _server.py.
#
# delta-spark 4.4 refuses path access to catalog-managed tables unless a catalog-owned commit
# coordinator is registered for spark_catalog, which it consults only in test mode
# (spark.testing). The coordinator here answers getCommits from the catalog's own database
# (read with sqlite3, not through pydelta), as a catalog server would.
import sqlite3

from pyspark.java_gateway import ensure_callback_server_started

path, db_path, table_id = args  # noqa: F821 - given by _server.py
jvm = spark._jvm  # noqa: F821
jvm.java.lang.System.setProperty("spark.testing", "true")
ensure_callback_server_started(spark.sparkContext._gateway)  # noqa: F821
calls = []


class CatalogClient:
    """io.delta.storage.commit.CommitCoordinatorClient over pydelta's SQLite catalog (read-only)."""

    def registerTable(self, *a):
        return jvm.java.util.HashMap()

    def commit(self, *a):
        raise RuntimeError("the witness only reads")

    def getCommits(self, table_desc, start, end):
        calls.append([start, end])
        with sqlite3.connect(db_path) as db:
            latest = db.execute("SELECT latest_version FROM owned_tables WHERE table_id = ?", (table_id,)).fetchone()[0]
            rows = db.execute("SELECT version, file_name FROM commits WHERE table_id = ? AND NOT backfilled "
                              "AND version >= ? ORDER BY version", (table_id, start or 0)).fetchall()
        commits = jvm.java.util.ArrayList()
        for version, name in rows:
            if end is not None and version > end:
                continue
            staged = jvm.org.apache.hadoop.fs.Path(f"{table_desc.getLogPath()}/_staged_commits/{name}")
            status = staged.getFileSystem(spark._jsc.hadoopConfiguration()).getFileStatus(staged)  # noqa: F821
            commits.add(jvm.io.delta.storage.commit.Commit(version, status, status.getModificationTime()))
        return jvm.io.delta.storage.commit.GetCommitsResponse(commits, latest)

    def backfillToVersion(self, *a):
        return None

    def semanticEquals(self, other):
        return True

    class Java:
        implements = ["io.delta.storage.commit.CommitCoordinatorClient"]


client = CatalogClient()


class Builder:
    def getName(self):
        return "pydelta-sqlite"

    def build(self, session, conf):
        return client

    def buildForCatalog(self, session, name):
        return client

    class Java:
        implements = ["org.apache.spark.sql.delta.coordinatedcommits.CatalogOwnedCommitCoordinatorBuilder"]


jvm.org.apache.spark.sql.delta.coordinatedcommits.CatalogOwnedCommitCoordinatorProvider.registerBuilder(
    "spark_catalog", Builder())
df = spark.read.format("delta").load(path)  # noqa: F821
detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]  # noqa: F821
history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()  # noqa: F821
result = {  # noqa: F841 - read by _server.py
    "rows": canon.rows(df.collect()),  # noqa: F821
    "features": sorted(detail.tableFeatures),
    "versions": sorted(r.version for r in history),
    "asked_catalog": bool(calls),
}
