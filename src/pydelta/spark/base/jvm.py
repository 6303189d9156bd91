"""The py4j gateway behind a classic SparkSession, for the paths that work on Spark's JVM objects.

Parsed plans, catalyst expressions and Hadoop configurations are reached through the session's
py4j JVM view. A session without one (Spark Connect, or a stopped context) gets a clear error here
instead of an AttributeError deep inside a statement.
"""

from __future__ import annotations

import os
import shutil

from pydelta.errors import DeltaNotImplementedError, JavaNotFoundError
from pydelta.spark.base._typing import JavaObject, SparkSession


def jvm(spark: SparkSession) -> JavaObject:
    """The session's py4j JVM view (`spark._jvm`)."""
    view = getattr(spark, "_jvm", None)
    if view is None:
        raise DeltaNotImplementedError(
            f"this operation needs a classic (py4j) SparkSession with a running JVM; got {type(spark).__name__}")
    return view


def gateway(spark: SparkSession) -> JavaObject:
    """The session's py4j gateway (to build Java arrays)."""
    jvm(spark)
    return spark.sparkContext._gateway


def java_session(spark: SparkSession) -> JavaObject:
    """The JVM SparkSession behind `spark` (`spark._jsparkSession`)."""
    jvm(spark)
    return spark._jsparkSession


def check_java() -> None:
    """Refuse to start Spark without Java, with the command that installs it."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.path.exists(os.path.join(java_home, "bin", "java")):
        return
    if shutil.which("java") is None:
        raise JavaNotFoundError(
            "pydelta runs on Apache Spark, which needs Java 17: install it "
            "(e.g. `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME"
        )
