"""Table properties: one typed definition of every `delta.*` key pydelta knows.

Each property has its key (in delta-spark's canonical case), its default, the parser that
turns the stored text into a value, and delta-spark's words for a value it refuses
(DeltaConfigs.scala). Readers ask `PROPERTY.get(configuration)`; writers of new values go
through `validate_properties`, which also gives known keys their canonical case, as
delta-spark's validateConfigurations does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydelta.errors import DeltaAnalysisError, DeltaIllegalArgumentError

T = TypeVar("T")

CONSTRAINT_PREFIX = "delta.constraints."
FEATURE_PREFIX = "delta.feature."
UNIVERSAL_FORMAT_CONFIG_PREFIX = "delta.universalformat.config."
ALLOW_ARBITRARY_PROPERTIES_CONF = "spark.databricks.delta.allowArbitraryProperties.enabled"


# ---- value parsers --------------------------------------------------------------------------


def parse_bool(text: str) -> bool:
    """delta-spark's `_.toBoolean`: "true" or "false" in any case."""
    lowered = str(text).strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError(f"not a boolean: {text!r}")
    return lowered == "true"


def _int_in(test: Callable[[int], bool]) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(str(text).strip())
        if not test(value):
            raise ValueError(f"out of range: {text!r}")
        return value

    return parse


def _one_of(*values: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        lowered = str(text).strip().lower()
        if lowered not in values:
            raise ValueError(f"not one of {values}: {text!r}")
        return lowered

    return parse


def _text(text: str) -> str:
    return str(text)


_MICROS = {
    "microsecond": 1,
    "millisecond": 1_000,
    "second": 1_000_000,
    "minute": 60_000_000,
    "hour": 3_600_000_000,
    "day": 86_400_000_000,
    "week": 7 * 86_400_000_000,
}
_MONTH_UNITS = frozenset({"month", "year"})
_INTERVAL_PART = re.compile(r"([+-]?)(\d+(?:\.\d*)?|\.\d+)\s*([a-z]+)")


def parse_interval_ms(text: str) -> int:
    """Milliseconds in a delta-spark calendar interval ("interval 1 week", "7 days", "168 hours").

    Table properties such as `delta.logRetentionDuration` use Spark's interval syntax: an
    optional `interval` prefix, then `<number> <unit>` pairs (units singular or plural,
    microsecond to week). Like delta-spark, months and years are refused (their length
    varies), a fraction is only allowed for seconds, and the total must not be negative.
    """
    if not isinstance(text, str) or not text.strip():
        raise DeltaIllegalArgumentError("an interval must not be empty")
    body = text.strip().lower()
    if body == "interval" or body.startswith("interval "):
        body = body[len("interval") :].strip()
    if not body:
        raise DeltaIllegalArgumentError(f"invalid interval {text!r}: no value")
    total, pos = 0, 0
    while pos < len(body):
        m = _INTERVAL_PART.match(body, pos)
        if m is None:
            raise DeltaIllegalArgumentError(f"invalid interval {text!r}")
        total += _interval_part_micros(m.group(1), m.group(2), m.group(3), text)
        pos = m.end()
        while pos < len(body) and body[pos].isspace():
            pos += 1
        if pos < len(body) and pos == m.end():
            raise DeltaIllegalArgumentError(f"invalid interval {text!r}")
    if total < 0:
        raise DeltaIllegalArgumentError(f"invalid interval {text!r}: it must not be negative")
    return total // 1000


def _interval_part_micros(sign: str, number: str, unit: str, text: str) -> int:
    unit = unit[:-1] if unit.endswith("s") else unit
    if unit in _MONTH_UNITS:
        raise DeltaIllegalArgumentError(
            f"invalid interval {text!r}: months and years are not accepted; use days (e.g. '365 days')"
        )
    if unit not in _MICROS:
        raise DeltaIllegalArgumentError(f"invalid interval {text!r}: unknown unit {unit!r}")
    if "." in number:
        if unit != "second":
            raise DeltaIllegalArgumentError(f"invalid interval {text!r}: only seconds may have a fraction")
        whole, _, frac = number.partition(".")
        micros = int(whole or "0") * _MICROS["second"] + int((frac + "000000")[:6])
    else:
        micros = int(number) * _MICROS[unit]
    return -micros if sign == "-" else micros


def _interval(text: str) -> int:
    try:
        return parse_interval_ms(text)
    except DeltaIllegalArgumentError as e:
        raise ValueError(str(e)) from None


# ---- the properties ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TableProperty(Generic[T]):
    """One `delta.*` table property: key, default, parser, and delta-spark's text for a bad value."""

    key: str
    default: T
    parse: Callable[[str], T]
    help: str = ""

    def get(self, configuration: Mapping[str, str] | None) -> T:
        """The property's value in `configuration`; the default when unset or unreadable (a table
        written by another client must stay readable)."""
        raw = (configuration or {}).get(self.key)
        if raw is None:
            return self.default
        try:
            return self.parse(raw)
        except (ValueError, TypeError):
            return self.default

    def is_set(self, configuration: Mapping[str, str] | None) -> bool:
        return self.key in (configuration or {})

    def valid(self, text: str) -> bool:
        try:
            self.parse(text)
        except (ValueError, TypeError):
            return False
        return True


_BOOL_HELP = "needs to be a boolean."
_INTERVAL_HELP = ("needs to be provided as a calendar interval such as '2 weeks'. Months and years are not "
                  "accepted. You may specify '365 days' for a year instead.")


def _flag(name: str, default: bool = False) -> TableProperty[bool]:
    return TableProperty(f"delta.{name}", default, parse_bool, _BOOL_HELP)


def _duration(name: str, default: str) -> TableProperty[int]:
    return TableProperty(f"delta.{name}", parse_interval_ms(default), _interval, _INTERVAL_HELP)


def _free(name: str) -> TableProperty[str | None]:
    return TableProperty(f"delta.{name}", None, _text)


APPEND_ONLY = _flag("appendOnly")
ENABLE_CHANGE_DATA_FEED = _flag("enableChangeDataFeed")
ENABLE_DELETION_VECTORS = _flag("enableDeletionVectors")
ENABLE_ROW_TRACKING = _flag("enableRowTracking")
ROW_TRACKING_SUSPENDED = _flag("rowTrackingSuspended")
ENABLE_TYPE_WIDENING = _flag("enableTypeWidening")
ENABLE_IN_COMMIT_TIMESTAMPS = _flag("enableInCommitTimestamps")
ENABLE_EXPIRED_LOG_CLEANUP = _flag("enableExpiredLogCleanup", True)
AUTO_OPTIMIZE = _flag("autoOptimize")  # legacy: turns auto compaction on
AUTO_OPTIMIZE_OPTIMIZE_WRITE = _flag("autoOptimize.optimizeWrite")
AUTO_OPTIMIZE_AUTO_COMPACT = TableProperty("delta.autoOptimize.autoCompact", None, _one_of("true", "false"),
                                           '"needs to be one of: true,false')
CHECKPOINT_WRITE_STATS_AS_JSON = _flag("checkpoint.writeStatsAsJson", True)
CHECKPOINT_WRITE_STATS_AS_STRUCT = _flag("checkpoint.writeStatsAsStruct")

LOG_RETENTION_DURATION = _duration("logRetentionDuration", "interval 30 days")
DELETED_FILE_RETENTION_DURATION = _duration("deletedFileRetentionDuration", "interval 1 week")
CHECKPOINT_RETENTION_DURATION = _duration("checkpointRetentionDuration", "interval 2 days")
SET_TRANSACTION_RETENTION_DURATION = TableProperty("delta.setTransactionRetentionDuration", None, _interval,
                                                   _INTERVAL_HELP)

CHECKPOINT_INTERVAL = TableProperty("delta.checkpointInterval", 10, _int_in(lambda n: n > 0),
                                    "needs to be a positive integer.")
DATA_SKIPPING_NUM_INDEXED_COLS = TableProperty("delta.dataSkippingNumIndexedCols", 32, _int_in(lambda n: n >= -1),
                                               "needs to be larger than or equal to -1.")
DATA_SKIPPING_STATS_COLUMNS = _free("dataSkippingStatsColumns")
COLUMN_MAPPING_MODE = TableProperty("delta.columnMapping.mode", "none", _one_of("none", "id", "name"),
                                    "needs to be one of: none, id, name.")
CHECKPOINT_POLICY = TableProperty("delta.checkpointPolicy", "classic", _one_of("classic", "v2"),
                                  "can be one of the following: classic, v2")
ISOLATION_LEVEL = TableProperty("delta.isolationLevel", "serializable", _one_of("serializable"), "must be Serializable")

_OTHER_FLAGS = (
    "ignoreProtocolDefaults", "enableFullRetentionRollback", "randomizeFilePrefixes", "enableVariantShredding",
    "compatibility.symlinkFormatManifest.enabled", "enableChangeDataCapture",
    "enableIcebergCompatV1", "enableIcebergCompatV2", "enableIcebergCompatV3",
    "universalFormat.iceberg.atomicConversion.supported", "castIcebergTimeType", "ignoreIcebergBucketPartition",
    "enableMaterializePartitionColumnsFeature", "writePartitionColumnsToParquet",
)
_OTHER_DURATIONS = (("sampleRetentionDuration", "interval 7 days"),
                    ("dropFeatureTruncateHistory.retentionDuration", "interval 1 day"))
_OTHER_FREE = (
    "redirectReaderWriter-preview", "redirectWriterOnly-preview", "parquet.format.version",
    "universalFormat.enabledFormats", "coordinatedCommits.commitCoordinator-preview",
    "coordinatedCommits.commitCoordinatorConf-preview", "coordinatedCommits.tableConf-preview",
    "managedCommit.commitOwner", "managedCommit.commitOwnerConf",  # seed 001; txn validates them
)
_OTHER_INTS: tuple[TableProperty[int | None], ...] = (
    TableProperty("delta.minReaderVersion", None, _int_in(lambda n: 1 <= n <= 3), "needs to be one of 1, 2, 3."),
    TableProperty("delta.minWriterVersion", None, _int_in(lambda n: 1 <= n <= 7),
                  "needs to be one of 1, 2, 3, 4, 5, 6, 7."),
    TableProperty("delta.randomPrefixLength", 2, _int_in(lambda n: n > 0), "needs to be greater than 0."),
    TableProperty("delta.dataSkippingStringPrefixLength", 32, _int_in(lambda n: n >= 0),
                  "needs to be greater or equal to zero."),
    TableProperty("delta.columnMapping.maxColumnId", 0, _int_in(lambda n: n >= 0), "needs to be a long."),
    TableProperty("delta.inCommitTimestampEnablementVersion", None, _int_in(lambda n: True), "needs to be a long."),
    TableProperty("delta.inCommitTimestampEnablementTimestamp", None, _int_in(lambda n: True),
                  "needs to be a long."),
    TableProperty("delta.requireCheckpointProtectionBeforeVersion", None, _int_in(lambda n: n >= 0),
                  "needs to be greater or equal to zero."),
)

#: Every known property.
_ALL_PROPERTIES: tuple[TableProperty[Any], ...] = (
    APPEND_ONLY, ENABLE_CHANGE_DATA_FEED, ENABLE_DELETION_VECTORS, ENABLE_ROW_TRACKING, ROW_TRACKING_SUSPENDED,
    ENABLE_TYPE_WIDENING, ENABLE_IN_COMMIT_TIMESTAMPS, ENABLE_EXPIRED_LOG_CLEANUP, AUTO_OPTIMIZE,
    AUTO_OPTIMIZE_OPTIMIZE_WRITE, AUTO_OPTIMIZE_AUTO_COMPACT, CHECKPOINT_WRITE_STATS_AS_JSON,
    CHECKPOINT_WRITE_STATS_AS_STRUCT, LOG_RETENTION_DURATION, DELETED_FILE_RETENTION_DURATION,
    CHECKPOINT_RETENTION_DURATION, SET_TRANSACTION_RETENTION_DURATION, CHECKPOINT_INTERVAL,
    DATA_SKIPPING_NUM_INDEXED_COLS, DATA_SKIPPING_STATS_COLUMNS, COLUMN_MAPPING_MODE, CHECKPOINT_POLICY,
    ISOLATION_LEVEL,
    *(_flag(name) for name in _OTHER_FLAGS),
    *(_duration(name, default) for name, default in _OTHER_DURATIONS),
    *(_free(name) for name in _OTHER_FREE),
    *_OTHER_INTS,
)
#: Every known property by lower-cased key.
PROPERTIES: dict[str, TableProperty[Any]] = {p.key.lower(): p for p in _ALL_PROPERTIES}


def flag(configuration: Mapping[str, str] | None, key: str, default: bool = False) -> bool:
    """A boolean property by key: its registered definition's value, or `default` when unset or not a boolean."""
    prop = PROPERTIES.get(key.lower())
    raw = (configuration or {}).get(prop.key if prop is not None else key)
    if raw is None:
        return default
    try:
        return parse_bool(raw)
    except ValueError:
        return default


def known_property(key: str) -> TableProperty[Any] | None:
    """The definition of `key` (any case), or None for a key pydelta does not know."""
    return PROPERTIES.get(key.lower())


def validate_properties(properties: Mapping[str, str], allow_arbitrary: bool = False) -> dict[str, str]:
    """delta-spark's validateConfigurations: known `delta.*` keys get their canonical case and a
    valid value, `delta.feature.*` keys are lower-cased, unknown `delta.*` keys are refused."""
    out: dict[str, str] = {}
    for key, value in properties.items():
        lower = key.lower()
        if lower.startswith(CONSTRAINT_PREFIX):
            out[key] = value
        elif lower.startswith(FEATURE_PREFIX):
            out[lower] = value
        elif lower.startswith("delta."):
            prop = PROPERTIES.get(lower)
            if prop is not None:
                if not prop.valid(value):
                    raise DeltaIllegalArgumentError(f"requirement failed: {prop.key} {prop.help}")
                out[prop.key] = value
            elif lower.startswith(UNIVERSAL_FORMAT_CONFIG_PREFIX):
                out[lower] = value
            elif allow_arbitrary:
                out[key] = value
            else:
                raise DeltaAnalysisError(
                    f"[DELTA_UNKNOWN_CONFIGURATION] Unknown configuration was specified: {key}\n"
                    f"To disable this check, set {ALLOW_ARBITRARY_PROPERTIES_CONF}=true in the Spark session "
                    "configuration."
                )
        else:
            out[key] = value
    if LOG_RETENTION_DURATION.key in out or DELETED_FILE_RETENTION_DURATION.key in out:
        _check_retentions(out)
    return out


def _check_retentions(properties: Mapping[str, str]) -> None:
    """delta-spark: the log must be kept at least as long as removed files."""
    log_key, deleted_key = LOG_RETENTION_DURATION.key, DELETED_FILE_RETENTION_DURATION.key
    log = properties.get(log_key, "interval 30 days")
    deleted = properties.get(deleted_key, "interval 1 week")
    if parse_interval_ms(log) >= parse_interval_ms(deleted):
        return
    if log_key in properties:
        message = f"The table property {log_key}({log}) needs to be greater than or equal to {deleted_key}({deleted})."
    else:
        message = f"The table property {deleted_key}({deleted}) needs to be less than or equal to {log_key}({log})."
    raise DeltaIllegalArgumentError(f"requirement failed: {message}")


def normalize_keys(keys: Iterable[str]) -> list[str]:
    """delta-spark's normalizeConfigKeys: canonical case for known `delta.*` keys."""
    out = []
    for key in keys:
        lower = key.lower()
        if lower.startswith(FEATURE_PREFIX):
            out.append(lower)
        elif lower in PROPERTIES:
            out.append(PROPERTIES[lower].key)
        else:
            out.append(key)
    return out
