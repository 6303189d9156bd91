"""Making a SparkSession Delta-capable without any JVM Delta jar.

`enable(spark)` installs (once, process-wide) small hooks on PySpark's
DataFrameReader/DataFrameWriter so `format("delta")` is served by pydelta,
and sets the session options the Delta read path needs.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from pydelta.errors import DeltaError

SESSION_CONF = {
    # Column mapping "id" mode resolves Parquet columns by field id.
    "spark.sql.parquet.fieldId.read.enabled": "true",
    # Delta timestamp stats and readers expect microseconds, never INT96.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


class JavaNotFoundError(DeltaError):
    """Spark needs Java 17; it is not installed or not on PATH / JAVA_HOME."""


def check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.path.exists(os.path.join(java_home, "bin", "java")):
        return
    if shutil.which("java") is None:
        raise JavaNotFoundError(
            "pydelta runs on Apache Spark, which needs Java 17: install it "
            "(e.g. `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME"
        )


_installed = False


def _install_hooks() -> None:
    global _installed
    if _installed:
        return
    from pydelta.spark import hooks

    hooks.install()
    _installed = True


def enable(spark: Any) -> Any:
    """Make `spark` Delta-capable (idempotent). Returns the same session."""
    _install_hooks()
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    return spark


def configure_spark(builder: Any) -> Any:
    """Add pydelta's settings to a SparkSession builder (call `.getOrCreate()` after)."""
    check_java()
    _install_hooks()
    for key, value in SESSION_CONF.items():
        builder = builder.config(key, value)
    return builder


def local_session(app_name: str = "pydelta", cores: int = 2, **conf: str) -> Any:
    """A local-mode SparkSession with pydelta enabled and sane small-machine defaults."""
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
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = configure_spark(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return enable(spark)
