"""Reading Spark SQL confs: pydelta's session flags (spark.databricks.delta.*) and sizes, parsed one way;
and holding the two that Spark reads from the session only (`held_session_conf`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
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


# ---- session confs Spark reads from the session only ------------------------------------------
#
# Two settings pydelta needs for its own reads and writes have no per-relation form in Spark:
# Parquet's output timestamp type (ParquetFileFormat.prepareWrite copies the session's value over
# the write's options) and the file-listing threshold (InMemoryFileIndex reads the session's).
# They are held here, in one place: a hold sets the value while the first holder needs it and
# restores the session's own when the last one is done, so concurrent operations of one session
# never restore a value under each other; a hold of another value for the same key waits.

_HOLDS_LOCK = threading.Condition()
_HOLDS: dict[tuple[object, str], tuple[str, int, str | None]] = {}  # (session, key) -> (value, holders, saved)


def _session_identity(spark: SparkSession) -> object:
    """The session behind `spark` (two Python wrappers of one JVM session are one session)."""
    connect_id = getattr(spark, "session_id", None)
    if connect_id is not None:
        return connect_id
    return int(spark._jsparkSession.hashCode())


@contextlib.contextmanager
def held_session_conf(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """`key` set to `value` in the session's conf for the block (shared with concurrent holders of
    the same value), then the session's own value back."""
    slot = (_session_identity(spark), key)
    with _HOLDS_LOCK:
        while slot in _HOLDS and _HOLDS[slot][0] != value:
            _HOLDS_LOCK.wait()
        if slot in _HOLDS:
            held, holders, saved = _HOLDS[slot]
            _HOLDS[slot] = (held, holders + 1, saved)
        else:
            saved = spark.conf.get(key, None)
            spark.conf.set(key, value)
            _HOLDS[slot] = (value, 1, saved)
    try:
        yield
    finally:
        with _HOLDS_LOCK:
            held, holders, saved = _HOLDS[slot]
            if holders > 1:
                _HOLDS[slot] = (held, holders - 1, saved)
            else:
                del _HOLDS[slot]
                if saved is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, saved)
                _HOLDS_LOCK.notify_all()
