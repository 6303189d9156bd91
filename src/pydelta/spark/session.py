"""Making a SparkSession Delta-capable without any JVM Delta jar.

`enable(spark)` installs (once, process-wide) small hooks on PySpark's
DataFrameReader/DataFrameWriter so `format("delta")` is served by pydelta,
and sets the session options the Delta read path needs.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from pydelta.errors import CatalogLockedError
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.jvm import check_java

SESSION_CONF = {
    # Column mapping "id" mode resolves Parquet columns by field id.
    "spark.sql.parquet.fieldId.read.enabled": "true",
    # Delta timestamp stats and readers expect microseconds, never INT96.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


_installed = False


def _post_commit_hooks() -> tuple[Any, ...]:
    """The Spark-side post-commit hooks, in the order they run after a commit (the log core has
    already checkpointed): the symlink manifests first, so they describe the committed version,
    then auto compaction (whose own OPTIMIZE commit runs the list again)."""
    from pydelta.spark.maintenance.auto_compact import AUTO_COMPACTION
    from pydelta.spark.maintenance.manifest import SYMLINK_MANIFEST

    return (SYMLINK_MANIFEST, AUTO_COMPACTION)


def _install_hooks() -> None:
    """Everything pydelta patches into PySpark, in one list: the DataFrameReader/Writer and
    SparkSession.table hooks (spark/patches/), spark.sql's router for Delta statements, the
    DataFrameWriterV2 hooks, catalog listing, the streaming sink and streaming table reads."""
    global _installed
    if _installed:
        return
    from pydelta.spark import catalog_listing
    from pydelta.spark.base.transactions import install_post_commit_hooks
    from pydelta.spark.datasource import register as register_source
    from pydelta.spark.patches import reader as hooks
    from pydelta.spark.patches import sql as sql_patch
    from pydelta.spark.patches import writer_v2
    from pydelta.spark.streaming import sink, source_storage, stream_table

    install_post_commit_hooks(_post_commit_hooks())
    hooks.install()
    sql_patch.install()
    writer_v2.install()
    catalog_listing.install()
    sink.install(register_source)
    stream_table.install()
    source_storage.install()
    _installed = True


def enable(spark: SparkSession) -> Any:
    """Make `spark` Delta-capable (idempotent). Returns the same session.

    A session set up for delta-spark without its jars cannot run a statement (its catalog
    class is missing): pydelta unsets that catalog first, with one warning (migration.py)."""
    from pydelta.spark.migration import take_over_session

    take_over_session(spark)
    _install_hooks()
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    from pydelta.spark import datasource
    from pydelta.spark.base import hadoop_storage
    from pydelta.spark.base.connect_session import is_connect

    datasource.register(spark)  # spark.readStream.format("delta") reaches pydelta's source
    if is_connect(spark):  # no JVM on this side: the log is read and committed here, in Python
        hadoop_storage.install_s3a_options(spark)  # s3a:// logs with the server's fs.s3a.* settings
        return spark
    hadoop_storage.install(spark)  # hdfs:// and other Hadoop-only schemes through the session
    return spark


def configure_spark(builder: Any) -> Any:
    """Add pydelta's settings to a SparkSession builder; its `.getOrCreate()` then returns an
    enabled session (the hooks are process-wide, but the data source and storage are per session)."""
    check_java()
    _install_hooks()
    for key, value in SESSION_CONF.items():
        builder = builder.config(key, value)
    create = builder.getOrCreate
    if not getattr(create, "_pydelta_enables", False):
        def get_or_create() -> Any:
            return enable(create())

        get_or_create._pydelta_enables = True  # type: ignore[attr-defined]
        builder.getOrCreate = get_or_create  # this builder only: SparkSession.builder makes a new one each time
    return builder


def configure_spark_with_delta_pip(builder: Any, extra_packages: list[str] | None = None) -> Any:
    """delta-spark's `configure_spark_with_delta_pip` for pydelta: delta-spark's confs and jars off the
    builder (migration.py), `extra_packages` on it, pydelta's settings added."""
    from pydelta.spark.migration import strip_builder

    strip_builder(builder, extra_packages)
    return configure_spark(builder)


def catalog_settings(catalog_dir: str) -> dict[str, str]:
    """Spark settings that keep the Hive metastore (embedded Derby) and the warehouse in one directory.

    Tables registered there persist across sessions and processes. To use an external
    Hive metastore instead, leave `catalog_dir` out and set `spark.hadoop.hive.metastore.uris`
    (thrift://host:9083) and `spark.sql.warehouse.dir` on your own builder.
    """
    root = os.path.abspath(catalog_dir)
    os.makedirs(root, exist_ok=True)
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": os.path.join(root, "spark-warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={os.path.join(root, 'metastore_db')};create=true",
        "spark.hadoop.hive.metastore.warehouse.dir": os.path.join(root, "spark-warehouse"),
    }


def default_catalog_dir() -> str:
    """Where `local_session()` keeps table names when not told: one place per user.

    $PYDELTA_CATALOG_DIR, else $XDG_DATA_HOME/pydelta/catalog (~/.local/share/pydelta/catalog),
    so a script sees the same tables from whatever directory it runs in.
    """
    configured = os.environ.get("PYDELTA_CATALOG_DIR")
    if configured:
        return os.path.abspath(configured)
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data_home, "pydelta", "catalog")


def derby_lock_holder(catalog_dir: str) -> bool:
    """True when another process has the embedded Derby metastore under `catalog_dir` open.

    Derby holds an OS file lock on metastore_db/dbex.lck while the database is booted (the
    file stays behind after a clean exit, unlocked). Probing it takes the lock for an instant.
    """
    import fcntl

    lock = os.path.join(catalog_dir, "metastore_db", "dbex.lck")
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases the probe's lock
    return False


def _check_catalog_free(root: str) -> None:
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        return  # this process's own session holds it; getOrCreate returns that session
    if derby_lock_holder(root):
        raise CatalogLockedError(
            f"the table catalog at {root} (an embedded Derby metastore) is in use by another process; "
            "embedded Derby serves one process at a time. Use another directory "
            "(local_session(catalog_dir=...) or $PYDELTA_CATALOG_DIR), hive=False for names that "
            "live only in this session, or a shared Hive metastore (see the README, 'The catalog')"
        )


def local_session(app_name: str = "pydelta", cores: int = 2, *, catalog_dir: str | None = None,
                  hive: bool = True, **conf: str) -> Any:
    """A local-mode SparkSession with pydelta enabled and sane small-machine defaults.

    With `hive` (the default), table names live in Spark's Hive metastore on embedded
    Derby, under `catalog_dir` (default: `default_catalog_dir()`, one directory per user),
    so they persist across sessions. An embedded Derby metastore serves one process at
    a time: a second process gets a CatalogLockedError. Settings passed in `conf` win over
    pydelta's (`spark.sql.warehouse.dir`; `spark.hadoop.hive.metastore.uris` for a shared
    metastore replaces the Derby one). `hive=False` keeps names in memory for the session only.
    """
    check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(max(2, cores * 2)))
        .config("spark.driver.memory", conf.pop("spark.driver.memory", "4g"))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    settings: dict[str, str] = {}
    if hive:
        root = os.path.abspath(catalog_dir) if catalog_dir else default_catalog_dir()
        settings.update(catalog_settings(root))
        own_metastore = not any(k in conf for k in ("spark.hadoop.hive.metastore.uris",
                                                     "spark.hadoop.javax.jdo.option.ConnectionURL"))
        if own_metastore:
            _check_catalog_free(root)
            derby_home = f"-Dderby.system.home={root}"
            java_opts = conf.pop("spark.driver.extraJavaOptions", "")
            settings["spark.driver.extraJavaOptions"] = f"{java_opts} {derby_home}".strip()
        else:
            settings.pop("spark.hadoop.javax.jdo.option.ConnectionURL")
    settings.update(conf)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = configure_spark(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return enable(spark)


def remote_session(url: str | None = None, app_name: str = "pydelta") -> Any:
    """A Spark Connect session to `url` (default $SPARK_REMOTE) with pydelta enabled.

    Nothing needs installing on the server but pydelta's Python package, where its Python
    workers run: no jars, no server configuration.
    """
    from pyspark.sql import SparkSession as PySparkSession

    remote = url or os.environ.get("SPARK_REMOTE")
    if not remote:
        from pydelta.errors import DeltaIllegalArgumentError

        raise DeltaIllegalArgumentError("remote_session needs a Spark Connect URL (sc://host:port) or $SPARK_REMOTE")
    spark = PySparkSession.builder.remote(remote).appName(app_name).getOrCreate()
    return enable(spark)
