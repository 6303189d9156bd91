"""The DataFrameWriter options delta-spark understands, parsed and validated once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from pydelta.errors import DeltaIllegalArgumentError

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


@dataclass
class WriteOptions:
    mode: str = "ErrorIfExists"  # Append, Overwrite, ErrorIfExists, Ignore
    partition_by: list[str] | None = None
    replace_where: str | None = None
    dynamic_partition_overwrite: bool = False
    merge_schema: bool = False
    overwrite_schema: bool = False
    user_metadata: str | None = None
    txn_app_id: str | None = None
    txn_version: int | None = None
    data_change: bool = True
    max_records_per_file: int | None = None
    compression: str | None = None
    table_properties: dict[str, str] = field(default_factory=dict)


def parse_write_options(
    mode: str | None,
    partition_by: list[str] | None,
    options: Mapping[str, Any],
    session_conf: Mapping[str, str] | None = None,
) -> WriteOptions:
    conf = dict(session_conf or {})
    mode_key = (mode or "errorifexists").lower()
    if mode_key not in MODES:
        raise DeltaIllegalArgumentError(f"unknown save mode {mode!r}; use append, overwrite, errorifexists or ignore")
    out = WriteOptions(mode=MODES[mode_key], partition_by=list(partition_by) if partition_by else None)
    out.replace_where = _get(options, "replaceWhere")
    pom = _get(options, "partitionOverwriteMode") or conf.get("spark.sql.sources.partitionOverwriteMode")
    if pom is not None:
        if str(pom).lower() not in ("static", "dynamic"):
            raise DeltaIllegalArgumentError(f"partitionOverwriteMode must be static or dynamic, got {pom!r}")
        out.dynamic_partition_overwrite = str(pom).lower() == "dynamic" and out.mode == "Overwrite"
        if _get(options, "partitionOverwriteMode") is not None and str(pom).lower() == "dynamic" and out.mode != "Overwrite":
            out.dynamic_partition_overwrite = False
    merge = _get(options, "mergeSchema")
    if merge is None:
        merge = conf.get("spark.databricks.delta.schema.autoMerge.enabled", "false")
    out.merge_schema = _bool(merge, "mergeSchema")
    ow = _get(options, "overwriteSchema")
    out.overwrite_schema = _bool(ow, "overwriteSchema") if ow is not None else False
    out.user_metadata = _get(options, "userMetadata") or conf.get("spark.databricks.delta.commitInfo.userMetadata")
    app, ver = _get(options, "txnAppId"), _get(options, "txnVersion")
    if (app is None) != (ver is None):
        raise DeltaIllegalArgumentError("txnAppId and txnVersion must be given together")
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
    out.table_properties = {
        k: str(v) for k, v in options.items() if k.lower().startswith("delta.") and k.lower() != "delta.columnmapping.maxcolumnid"
    }
    if out.replace_where and out.mode != "Overwrite":
        raise DeltaIllegalArgumentError("replaceWhere can only be used with mode('overwrite')")
    if out.replace_where and out.dynamic_partition_overwrite and _get(options, "partitionOverwriteMode"):
        raise DeltaIllegalArgumentError("replaceWhere cannot be combined with partitionOverwriteMode=dynamic")
    if out.overwrite_schema and out.mode != "Overwrite":
        raise DeltaIllegalArgumentError("overwriteSchema can only be used with mode('overwrite')")
    if out.overwrite_schema and out.dynamic_partition_overwrite:
        raise DeltaIllegalArgumentError("overwriteSchema cannot be used with dynamic partition overwrite")
    return out
