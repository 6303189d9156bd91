"""Reading Spark SQL confs: pydelta's session flags (spark.databricks.delta.*) and sizes, parsed one way."""

from __future__ import annotations

from typing import overload

from pydelta.spark.base._typing import SparkSession


@overload
def conf_value(spark: SparkSession, key: str, default: str) -> str: ...
@overload
def conf_value(spark: SparkSession, key: str, default: None = None) -> str | None: ...
def conf_value(spark: SparkSession, key: str, default: str | None = None) -> str | None:
    """A Spark SQL conf value, or `default` when it is unset (or the session cannot say)."""
    try:
        value = spark.conf.get(key, None)
    except Exception:
        value = None
    return default if value is None else str(value)


def conf_bool(spark: SparkSession, key: str, default: bool) -> bool:
    """A boolean conf, as Spark reads one: "true" in any case is true."""
    raw = conf_value(spark, key)
    if raw is None:
        return default
    return raw.strip().lower() == "true"


def conf_bytes(spark: SparkSession, key: str, default: int) -> int:
    """A size conf: plain bytes or a JVM byte string ("1g", "128m", "512k", "1024b")."""
    raw = conf_value(spark, key)
    if raw is None or not raw.strip():
        return default
    text = raw.strip().lower()
    units = {"b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
             "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix) and text[: -len(suffix)].strip().isdigit():
            return int(text[: -len(suffix)]) * units[suffix]
    try:
        return int(text)
    except ValueError:
        from pydelta.errors import DeltaIllegalArgumentError

        raise DeltaIllegalArgumentError(f"{key} must be a size in bytes, got {raw!r}") from None


def session_time_zone(spark: SparkSession) -> str:
    """The session time zone (timestamp partition values are written in it); UTC when unset."""
    return conf_value(spark, "spark.sql.session.timeZone") or "UTC"
