"""The DataFrameWriter options delta-spark understands, parsed and validated once.

Implemented write options: mode, partitionBy, path, replaceWhere, partitionOverwriteMode,
mergeSchema, overwriteSchema, userMetadata, txnAppId/txnVersion, dataChange,
maxRecordsPerFile, compression, and `delta.*` table properties (used when the write
creates the table). As in delta-spark, session confs stand in for some of them on every
write path (SQL INSERT has no options): spark.sql.sources.partitionOverwriteMode,
spark.databricks.delta.schema.autoMerge.enabled, ...commitInfo.userMetadata and
...write.txnAppId/txnVersion. delta-spark options pydelta does not implement are refused by name
(`WRITE_UNSUPPORTED`) rather than ignored, because ignoring them would change what the
write means. Any other key is refused too (delta-spark ignores unknown keys, so a typo
would silently do nothing); spark.pydelta.options.ignoreUnknown=true restores that.

New tables also get the session's `spark.databricks.delta.properties.defaults.*` confs
(`with_table_defaults`), as delta-spark's `DeltaConfigs.mergeGlobalConfigs` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.option_keys import IGNORE_UNKNOWN_CONF, reject_unsupported_options

# The write options pydelta implements (besides `delta.*` table properties); keys are case-insensitive.
WRITE_SUPPORTED = (
    "path", "replaceWhere", "partitionOverwriteMode", "mergeSchema", "overwriteSchema", "userMetadata",
    "txnAppId", "txnVersion", "dataChange", "maxRecordsPerFile", "compression", "optimizeWrite",
)

# delta-spark options pydelta does not implement, mapped to the one value that means
# "pydelta's behaviour anyway" (accepted), or None when every value is refused.
WRITE_UNSUPPORTED: dict[str, str | None] = {
    "writePartitionColumns": "false",
    "useNullIntolerantEqualityWithDPO": "false",
    "replaceOn": None,
    "replaceUsing": None,
    "targetAlias": None,
}

TABLE_DEFAULTS_PREFIX = "spark.databricks.delta.properties.defaults."
# Session confs giving a new table's protocol when nothing else asks for one (delta-spark's
# DeltaSQLConf.DELTA_PROTOCOL_DEFAULT_READER_VERSION / _WRITER_VERSION).
PROTOCOL_DEFAULT_CONFS = {
    "spark.databricks.delta.protocol.minReaderVersion": "delta.minReaderVersion",
    "spark.databricks.delta.protocol.minWriterVersion": "delta.minWriterVersion",
}
_IGNORE_PROTOCOL_DEFAULTS = "delta.ignoreProtocolDefaults"


# delta-spark's DeltaSQLConf.DELTA_IDEMPOTENT_DML_TXN_APP_ID / _TXN_VERSION / _AUTO_RESET_ENABLED
TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
TXN_AUTO_RESET_CONF = "spark.databricks.delta.write.txnVersion.autoReset.enabled"


def _session_txn_confs(conf: Mapping[str, Any]) -> tuple[Any, Any]:
    app, ver = conf.get(TXN_APP_ID_CONF), conf.get(TXN_VERSION_CONF)
    if (app is None) != (ver is None):
        raise DeltaIllegalArgumentError(
            f"[DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS] Invalid options for idempotent Dataframe writes: "
            f"both {TXN_APP_ID_CONF} and {TXN_VERSION_CONF} must be set")
    return app, ver


def session_transaction(conf: Mapping[str, Any]) -> tuple[str, int] | None:
    """The (appId, version) of delta-spark's idempotent-write session confs, or None when unset
    (writes and DML alike: DELETE, UPDATE and MERGE honour them too)."""
    app, ver = _session_txn_confs(conf)
    if app is None:
        return None
    try:
        return str(app), int(ver)
    except (TypeError, ValueError):
        raise DeltaIllegalArgumentError(f"{TXN_VERSION_CONF} must be an integer, got {ver!r}") from None


def session_conf(spark: SparkSession | None = None) -> dict[str, str]:
    """All SQL confs of `spark`; without one, of the active (else the first) SparkSession."""
    if spark is None:
        from pyspark.sql import SparkSession

        # No public accessor for the default session when this thread has no active one.
        spark = SparkSession.getActiveSession() or SparkSession._instantiatedSession
        if spark is None:
            return {}
    get_all = spark.conf.getAll  # a method in PySpark 4.0+, a dict property in some builds
    return dict(get_all() if callable(get_all) else get_all)


def checked_table_properties(spark: SparkSession, properties: Mapping[str, str]) -> dict[str, str]:
    """A new table's explicit properties checked as delta-spark's validateConfigurations does
    (unknown `delta.*` keys refused unless allowArbitraryProperties; known keys canonical)."""
    from pydelta.protocol.properties import ALLOW_ARBITRARY_PROPERTIES_CONF, validate_properties
    from pydelta.spark.base.conf import conf_bool

    return validate_properties(properties, conf_bool(spark, ALLOW_ARBITRARY_PROPERTIES_CONF, False))


def with_table_defaults(properties: Mapping[str, str], conf: Mapping[str, str]) -> dict[str, str]:
    """The properties of a NEW table: session defaults as `delta.<key>`, explicit properties win.

    As delta-spark's mergeGlobalConfigs: `spark.databricks.delta.properties.defaults.<key>`
    becomes `delta.<key>` (so `...defaults.feature.<name>` becomes `delta.feature.<name>`).
    Protocol requests (minReaderVersion, minWriterVersion, feature.*) are not stored by
    the transaction but raise the new table's protocol; with `ignoreProtocolDefaults`
    true (table property first, else session default) they are not copied. Unlike
    delta-spark, keys it does not know are copied too (pydelta has no property registry).
    """
    from pydelta.txn.protocol_upgrade import is_protocol_property

    explicit = {k.lower() for k in properties}
    ignore = _get(properties, _IGNORE_PROTOCOL_DEFAULTS)
    if ignore is None:
        ignore = conf.get(TABLE_DEFAULTS_PREFIX + "ignoreProtocolDefaults", "false")
    ignore_protocol = str(ignore).strip().lower() == "true"
    defaults: dict[str, str] = {}
    if not ignore_protocol:
        defaults.update({prop: str(conf[key]) for key, prop in PROTOCOL_DEFAULT_CONFS.items() if key in conf})
    for key, value in conf.items():
        if not key.startswith(TABLE_DEFAULTS_PREFIX) or key == TABLE_DEFAULTS_PREFIX:
            continue
        prop = "delta." + key[len(TABLE_DEFAULTS_PREFIX):]
        if ignore_protocol and is_protocol_property(prop) and prop != _IGNORE_PROTOCOL_DEFAULTS:
            continue
        defaults[prop] = str(value)
    merged = {k: v for k, v in defaults.items() if k.lower() not in explicit}
    merged.update(properties)
    return merged


MODES = {
    "append": "Append",
    "overwrite": "Overwrite",
    "error": "ErrorIfExists",
    "errorifexists": "ErrorIfExists",
    "default": "ErrorIfExists",
    "ignore": "Ignore",
}


def _bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise DeltaIllegalArgumentError(f"option {name} must be true or false, got {value!r}")


def _get(options: Mapping[str, Any], name: str) -> Any:
    for key, value in options.items():
        if key.lower() == name.lower():
            return value
    return None


AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"


def merge_schema_requested(options: Mapping[str, Any], conf: Mapping[str, str]) -> bool:
    """Schema evolution for a write: the mergeSchema option, else the session's autoMerge conf."""
    merge = _get(options, "mergeSchema")
    if merge is None:
        merge = conf.get(AUTO_MERGE_CONF, "false")
    return _bool(merge, "mergeSchema")


@dataclass
class WriteOptions:
    mode: str = "ErrorIfExists"  # Append, Overwrite, ErrorIfExists, Ignore
    partition_by: list[str] | None = None
    replace_where: str | None = None
    dynamic_partition_overwrite: bool = False  # this overwrite replaces only the partitions it writes
    dynamic_mode_requested: bool = False  # partitionOverwriteMode (option, else session conf) is dynamic
    merge_schema: bool = False
    overwrite_schema: bool = False
    user_metadata: str | None = None
    txn_app_id: str | None = None
    txn_version: int | None = None
    txn_from_session: bool = False  # txnAppId/txnVersion came from the session confs
    data_change: bool = True
    max_records_per_file: int | None = None
    compression: str | None = None
    optimize_write: bool | None = None  # None: the table property decides
    table_properties: dict[str, str] = field(default_factory=dict)


def parse_write_options(
    mode: str | None,
    partition_by: list[str] | None,
    options: Mapping[str, Any],
    session_conf: Mapping[str, str] | None = None,
) -> WriteOptions:
    conf = dict(session_conf or {})
    reject_unsupported_options(options, WRITE_UNSUPPORTED, "write", WRITE_SUPPORTED,
                               str(conf.get(IGNORE_UNKNOWN_CONF, "false")).lower() == "true")
    mode_key = (mode or "errorifexists").lower()
    if mode_key not in MODES:
        raise DeltaIllegalArgumentError(f"unknown save mode {mode!r}; use append, overwrite, errorifexists or ignore")
    out = WriteOptions(mode=MODES[mode_key], partition_by=list(partition_by) if partition_by else None)
    out.replace_where = _get(options, "replaceWhere")
    pom = _get(options, "partitionOverwriteMode") or conf.get("spark.sql.sources.partitionOverwriteMode")
    if pom is not None:
        if str(pom).lower() not in ("static", "dynamic"):
            raise DeltaIllegalArgumentError(f"partitionOverwriteMode must be static or dynamic, got {pom!r}")
        out.dynamic_mode_requested = str(pom).lower() == "dynamic"
    # delta-spark: replaceWhere wins over a dynamic mode from the session (from an option: an error, below)
    out.dynamic_partition_overwrite = out.dynamic_mode_requested and out.mode == "Overwrite" and not out.replace_where
    out.merge_schema = merge_schema_requested(options, conf)
    ow = _get(options, "overwriteSchema")
    out.overwrite_schema = _bool(ow, "overwriteSchema") if ow is not None else False
    out.user_metadata = _get(options, "userMetadata") or conf.get("spark.databricks.delta.commitInfo.userMetadata")
    app, ver = _get(options, "txnAppId"), _get(options, "txnVersion")
    if (app is None) != (ver is None):
        raise DeltaIllegalArgumentError("txnAppId and txnVersion must be given together")
    if app is None:  # delta-spark's idempotent writes by session conf (SQL INSERT has no options)
        app, ver = _session_txn_confs(conf)
        out.txn_from_session = app is not None
    if app is not None:
        try:
            out.txn_app_id, out.txn_version = str(app), int(ver)
        except (TypeError, ValueError):
            raise DeltaIllegalArgumentError(f"txnVersion must be an integer, got {ver!r}") from None
    dc = _get(options, "dataChange")
    out.data_change = _bool(dc, "dataChange") if dc is not None else True
    mrpf = _get(options, "maxRecordsPerFile")
    if mrpf is not None:
        try:
            out.max_records_per_file = int(mrpf)
        except (TypeError, ValueError):
            raise DeltaIllegalArgumentError(f"maxRecordsPerFile must be an integer, got {mrpf!r}") from None
    out.compression = _get(options, "compression")
    ow_opt = _get(options, "optimizeWrite")
    ow_conf = conf.get("spark.databricks.delta.optimizeWrite.enabled")
    if ow_opt is not None or ow_conf is not None:
        out.optimize_write = _bool(ow_opt if ow_opt is not None else ow_conf, "optimizeWrite")
    out.table_properties = {
        k: str(v) for k, v in options.items()
        if k.lower().startswith("delta.") and k.lower() != "delta.columnmapping.maxcolumnid"
    }
    if out.replace_where and out.mode != "Overwrite":
        raise DeltaIllegalArgumentError("replaceWhere can only be used with mode('overwrite')")
    if out.replace_where and out.dynamic_mode_requested and _get(options, "partitionOverwriteMode"):
        raise DeltaIllegalArgumentError("replaceWhere cannot be combined with partitionOverwriteMode=dynamic")
    if out.overwrite_schema and out.mode != "Overwrite":
        raise DeltaIllegalArgumentError("overwriteSchema can only be used with mode('overwrite')")
    if out.overwrite_schema and out.dynamic_partition_overwrite:
        raise DeltaIllegalArgumentError("overwriteSchema cannot be used with dynamic partition overwrite")
    return out
