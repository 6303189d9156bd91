"""Sessions and builders set up for delta-spark, taken over by pydelta.

A delta-spark program names delta-spark's JVM classes in its confs: the session extension,
the session catalog, and its jars in `spark.jars.packages`. Without delta-spark's jars the
catalog setting makes every statement fail (CANNOT_LOAD_CATALOG.PLUGIN_CLASS_NOT_FOUND), so
`enable` unsets it on a live session and `configure_spark_with_delta_pip` strips all three
from a builder before the session exists, each saying once, in one warning, what it changed.
"""

from __future__ import annotations

import warnings
from typing import Any

from pydelta.errors import DeltaSparkConfWarning

EXTENSIONS_KEY = "spark.sql.extensions"
SESSION_CATALOG_KEY = "spark.sql.catalog.spark_catalog"
PACKAGES_KEY = "spark.jars.packages"
DELTA_SPARK_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_SPARK_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
_DELTA_SPARK_GROUP = "io.delta:"  # delta-spark_2.13, delta-storage, delta-connect-*: every artifact of the group


def _split(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def take_over_session(spark: Any) -> list[str]:
    """Unset delta-spark's session catalog on `spark` (a runtime conf); returns what was changed or found.

    `spark.sql.extensions` is a static conf: a session built with delta-spark's extension keeps
    it (Spark skipped it with a warning when the jar is missing; with the jar it stays
    installed beside pydelta), so it is reported, not changed.
    """
    notes = []
    if (spark.conf.get(SESSION_CATALOG_KEY, None) or "").strip() == DELTA_SPARK_CATALOG:
        spark.conf.unset(SESSION_CATALOG_KEY)
        notes.append(f"unset {SESSION_CATALOG_KEY}={DELTA_SPARK_CATALOG} (Spark's own session catalog now "
                     "holds Delta tables, as pydelta registers them)")
    try:
        extensions = _split(spark.conf.get(EXTENSIONS_KEY, None))
    except Exception:  # noqa: BLE001 - a Connect server may refuse to show static confs
        extensions = []
    if DELTA_SPARK_EXTENSION in extensions:
        notes.append(f"{EXTENSIONS_KEY} names {DELTA_SPARK_EXTENSION}, a static conf this session keeps: "
                     "remove it where the session is built")
    if _delta_spark_on_classpath(spark):
        notes.append("delta-spark's jars are on this session's classpath (spark.jars.packages or --packages): "
                     "remove them, or delta-spark's own extension and pydelta both serve Delta statements")
    _warn(notes, "pydelta.enable")
    return notes


def _delta_spark_on_classpath(spark: Any) -> bool:
    """Whether the session's JVM can load delta-spark's catalog class (never over Connect: no JVM here)."""
    from pydelta.spark.base.connect_session import is_connect

    if is_connect(spark):
        return False
    try:
        return bool(spark._jvm.org.apache.spark.util.Utils.classIsLoadable(DELTA_SPARK_CATALOG))
    except Exception:  # noqa: BLE001 - a JVM without Spark's Utils: nothing to say
        return False


def strip_builder(builder: Any, extra_packages: list[str] | None = None) -> list[str]:
    """Remove delta-spark's extension, catalog and jars from a SparkSession builder's confs, and add
    `extra_packages` (Maven coordinates) to `spark.jars.packages`; returns what was changed."""
    options: dict[str, Any] = builder._options  # PySpark keeps a builder's confs here until getOrCreate
    notes = []
    extensions = _split(options.get(EXTENSIONS_KEY))
    if DELTA_SPARK_EXTENSION in extensions:
        kept = [e for e in extensions if e != DELTA_SPARK_EXTENSION]
        if kept:
            options[EXTENSIONS_KEY] = ",".join(kept)
        else:
            del options[EXTENSIONS_KEY]
        notes.append(f"removed {DELTA_SPARK_EXTENSION} from {EXTENSIONS_KEY}")
    if (options.get(SESSION_CATALOG_KEY) or "").strip() == DELTA_SPARK_CATALOG:
        del options[SESSION_CATALOG_KEY]
        notes.append(f"removed {SESSION_CATALOG_KEY}={DELTA_SPARK_CATALOG}")
    packages = _split(options.get(PACKAGES_KEY))
    delta_jars = [p for p in packages if p.startswith(_DELTA_SPARK_GROUP)]
    if delta_jars:
        notes.append(f"removed delta-spark's jars from {PACKAGES_KEY} ({', '.join(delta_jars)})")
    packages = [p for p in packages if p not in delta_jars] + [p for p in extra_packages or [] if p not in packages]
    if packages:
        options[PACKAGES_KEY] = ",".join(packages)
    else:
        options.pop(PACKAGES_KEY, None)
    _warn(notes, "pydelta.configure_spark_with_delta_pip")
    return notes


def _warn(notes: list[str], who: str) -> None:
    if notes:
        warnings.warn(f"{who}: this session was set up for delta-spark; pydelta serves Delta itself and "
                      + "; ".join(notes), DeltaSparkConfWarning, stacklevel=5)
