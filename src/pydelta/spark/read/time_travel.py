"""Time travel, in one place: delta-spark's `@v` suffix, timestamp parsing, the session zone.

A time-travel timestamp without a zone is a wall-clock time of the Spark session's time zone
(`spark.sql.session.timeZone`), as delta-spark reads `timestampAsOf`, `TIMESTAMP AS OF`,
`restoreToTimestamp`, `cloneAtTimestamp` and the change feed's `startingTimestamp` /
`endingTimestamp`; the log core (`pydelta.log.timestamps`) then resolves epoch milliseconds
to a version. `t@v5` and `t@yyyyMMddHHmmssSSS` name table `t` at a version or a timestamp
(delta-spark's DeltaTableUtils.extractIfPathContainsTimeTravel).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, tzinfo
from typing import Any

from pydelta.errors import DeltaAnalysisError, DeltaIllegalArgumentError
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.conf import session_time_zone
from pydelta.spark.base.spark_errors import _path_exists

#: The body of an `@` suffix: `v<version>` or 17 digits of yyyyMMddHHmmssSSS.
AT_BODY = r"(?:[vV](\d+)|(\d{17}))"
_AT_END = re.compile(r"@" + AT_BODY + r"$")
RESOLVE_ON_IDENTIFIER_CONF = "spark.databricks.delta.timeTravel.resolveOnIdentifier.enabled"


def at_suffix(name: str) -> tuple[str, str]:
    """(`name` without its `@v5` / `@yyyyMMddHHmmssSSS` suffix, the suffix); ("name", "") without one."""
    at = _AT_END.search(name)
    return (name, "") if at is None else (name[: at.start()], at.group(0))


def stamp_text(digits: str) -> str:
    """yyyyMMddHHmmssSSS as a timestamp literal's text ('yyyy-MM-dd HH:mm:ss.SSS')."""
    return f"{digits[0:4]}-{digits[4:6]}-{digits[6:8]} {digits[8:10]}:{digits[10:12]}:{digits[12:14]}.{digits[14:]}"


def split_at_syntax(spark: SparkSession, path: str) -> tuple[str, int | None, int | None]:
    """(real path, version, timestamp in epoch ms) of `/path@v123` or `/path@yyyyMMddHHmmssSSS`.
    A path that exists as written is not time travel."""
    if str(spark.conf.get(RESOLVE_ON_IDENTIFIER_CONF, "true")).lower() != "true":
        return path, None, None
    at = _AT_END.search(path)
    if at is None or _path_exists(path, spark):
        return path, None, None
    version, digits = at.groups()
    if version is not None:
        return path[: at.start()], int(version), None
    try:
        dt = datetime.strptime(digits[:14], "%Y%m%d%H%M%S").replace(
            microsecond=int(digits[14:]) * 1000, tzinfo=session_zone(spark))
    except ValueError:
        raise DeltaAnalysisError(f"[DELTA_INVALID_TIMESTAMP_FORMAT] The provided timestamp {digits} does not "
                                 "match the expected syntax yyyyMMddHHmmssSSS.") from None
    return path[: at.start()], None, int(dt.timestamp() * 1000)


def session_zone(spark: SparkSession) -> tzinfo:
    """The Spark session's time zone (UTC when Python does not know its name)."""
    return zone_named(session_time_zone(spark))


def zone_named(name: str | None) -> tzinfo:
    """The time zone of a Spark zone name (UTC when Python does not know it)."""
    from zoneinfo import ZoneInfo

    try:
        return ZoneInfo(str(name))
    except Exception:
        return UTC


def parse_timestamp(spark: SparkSession, timestamp: Any) -> datetime:
    """A timestamp string (session time zone when it has none), date, datetime or epoch ms."""
    return parse_timestamp_in(session_zone(spark), timestamp)


def parse_timestamp_in(zone: tzinfo | None, timestamp: Any) -> datetime:
    """`parse_timestamp` where there is no session (a streaming source's process): `zone` for a
    zone-less one (None: the process's own zone)."""
    if isinstance(timestamp, bool):
        raise DeltaIllegalArgumentError(
            f"The provided timestamp ({timestamp!r}) cannot be converted to a valid timestamp.")
    if isinstance(timestamp, (int, float)):
        return datetime.fromtimestamp(timestamp / 1000, tz=UTC)
    if isinstance(timestamp, datetime):
        return timestamp if timestamp.tzinfo else timestamp.replace(tzinfo=zone)
    text = str(timestamp).strip()
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:  # delta-spark: DeltaErrors.timestampInvalid(Literal(timestamp)), an AnalysisException
        literal = "'" + str(timestamp).replace("\\", "\\\\").replace("'", "\\'") + "'"
        raise DeltaAnalysisError(
            f"[DELTA_TIMESTAMP_INVALID] The provided timestamp ({literal}) cannot be converted to a valid timestamp."
        ) from None
    return dt if dt.tzinfo else dt.replace(tzinfo=zone)


def timestamp_ms(spark: SparkSession, timestamp: Any) -> int:
    """`timestamp` (see `parse_timestamp`) as epoch milliseconds."""
    return timestamp_ms_in(session_zone(spark), timestamp)


def timestamp_ms_in(zone: tzinfo | None, timestamp: Any) -> int:
    """`timestamp_ms` where there is no session: `zone` for a zone-less one."""
    if isinstance(timestamp, int) and not isinstance(timestamp, bool):
        return timestamp
    return int(parse_timestamp_in(zone, timestamp).timestamp() * 1000)


def java_timestamp_string(dt: datetime, zone: tzinfo) -> str:
    """java.sql.Timestamp#toString in the session time zone: 'yyyy-mm-dd hh:mm:ss.f'."""
    local = dt.astimezone(zone)
    frac = f"{local.microsecond:06d}".rstrip("0") or "0"
    return local.strftime("%Y-%m-%d %H:%M:%S") + "." + frac
