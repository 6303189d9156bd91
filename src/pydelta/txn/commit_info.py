"""The `commitInfo` action: what DESCRIBE HISTORY shows, laid out as delta-spark writes it.

delta-spark JSON-encodes each operation parameter and then writes it raw
(`JsonMapSerializer`), so strings stay strings, booleans and numbers stay bare,
and lists/maps are pre-encoded JSON *strings* ("partitionBy":"[\\"a\\"]").
Metrics are always strings. Keys come in delta-spark's order.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydelta.protocol.actions import Metadata, Protocol
from pydelta.version import __version__


def _json(value: Any) -> str:
    """Compact JSON as Jackson writes it (no spaces, non-ASCII kept)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Operation:
    """An operation as DESCRIBE HISTORY names it, with its parameters (see DeltaOperations.scala)."""

    name: str
    parameters: dict[str, object] = field(default_factory=dict)

    def encoded_parameters(self) -> dict[str, Any]:
        return encode_parameters(self.parameters)

    # ---- delta-spark's common operations ------------------------------------------
    @classmethod
    def write(
        cls,
        mode: str = "Append",
        partition_by: Iterable[str] | None = (),
        predicate: str | None = None,
        *,
        is_dynamic_partition_overwrite: bool | None = None,
        can_overwrite_schema: bool | None = None,
        can_merge_schema: bool | None = None,
    ) -> Operation:
        params: dict[str, object] = {"mode": mode}
        if partition_by is not None:
            params["partitionBy"] = _json(list(partition_by))
        optional = {
            "predicate": predicate,
            "isDynamicPartitionOverwrite": is_dynamic_partition_overwrite,
            "canOverwriteSchema": can_overwrite_schema,
            "canMergeSchema": can_merge_schema,
        }
        params.update({k: v for k, v in optional.items() if v is not None})
        return cls("WRITE", params)

    @classmethod
    def create_table(
        cls,
        metadata: Metadata,
        *,
        is_managed: bool = False,
        or_replace: bool = False,
        replace: bool = False,
        as_select: bool = False,
        cluster_by: Iterable[str] | None = None,
    ) -> Operation:
        """CREATE TABLE / REPLACE TABLE / CREATE OR REPLACE TABLE [AS SELECT]."""
        if or_replace:
            name = "CREATE OR REPLACE TABLE"
        elif replace:
            name = "REPLACE TABLE"
        else:
            name = "CREATE TABLE"
        if as_select:
            name += " AS SELECT"
        return cls.table_definition(name, is_managed=is_managed, description=metadata.description,
                                    partition_by=metadata.partition_columns, cluster_by=list(cluster_by or []),
                                    properties=metadata.configuration)

    @classmethod
    def table_definition(
        cls,
        name: str,
        *,
        is_managed: bool,
        description: str | None,
        partition_by: Iterable[str],
        properties: Mapping[str, str],
        cluster_by: Iterable[str] | None = None,
    ) -> Operation:
        """The parameters every CREATE / REPLACE TABLE operation records (`clusterBy` only when given)."""
        params: dict[str, object] = {
            "isManaged": "true" if is_managed else "false",
            "description": description,
            "partitionBy": _json(list(partition_by)),
        }
        if cluster_by is not None:
            params["clusterBy"] = _json(list(cluster_by))
        params["properties"] = _json(dict(properties))
        return cls(name, params)

    @classmethod
    def delete(cls, predicates: Iterable[str] = ()) -> Operation:
        return cls("DELETE", {"predicate": _json(list(predicates))})

    @classmethod
    def update(cls, predicate: str | None = None) -> Operation:
        return cls("UPDATE", {"predicate": _json([predicate] if predicate else [])})

    @classmethod
    def merge(
        cls,
        predicate: str | None,
        matched: Iterable[Mapping[str, str]] = (),
        not_matched: Iterable[Mapping[str, str]] = (),
        not_matched_by_source: Iterable[Mapping[str, str]] = (),
    ) -> Operation:
        """Clauses are {"actionType": "update"|"delete"|"insert", "predicate": "..." (optional)}."""

        def clauses(items: Iterable[Mapping[str, str]]) -> str:
            return _json([{k: v for k, v in c.items() if v is not None} for c in items])

        return cls(
            "MERGE",
            {
                "predicate": _json([predicate] if predicate else []),
                "matchedPredicates": clauses(matched),
                "notMatchedPredicates": clauses(not_matched),
                "notMatchedBySourcePredicates": clauses(not_matched_by_source),
            },
        )

    @classmethod
    def reorg_purge(cls, predicates: Iterable[str] = (), apply_purge: bool = True) -> Operation:
        """REORG TABLE ... APPLY (PURGE): delta-spark's Reorg operation (an OPTIMIZE that purges DVs)."""
        return cls("REORG", {"predicate": _json(list(predicates)), "applyPurge": apply_purge})

    @classmethod
    def optimize(
        cls,
        predicates: Iterable[str] = (),
        zorder_by: Iterable[str] = (),
        *,
        auto: bool = False,
        cluster_by: Iterable[str] | None = None,
        is_full: bool = False,
    ) -> Operation:
        cluster = list(cluster_by) if cluster_by is not None else None
        params: dict[str, object] = {
            "predicate": _json(list(predicates)),
            "zOrderBy": _json([] if cluster is not None else list(zorder_by)),
            "clusterBy": _json(cluster or []),
            "auto": auto,
        }
        if cluster:
            params["isFull"] = is_full
        return cls("OPTIMIZE", params)

    @classmethod
    def set_table_properties(cls, properties: Mapping[str, str]) -> Operation:
        return cls("SET TBLPROPERTIES", {"properties": _json(dict(properties))})

    @classmethod
    def unset_table_properties(cls, keys: Iterable[str], if_exists: bool) -> Operation:
        return cls("UNSET TBLPROPERTIES", {"properties": _json(list(keys)), "ifExists": if_exists})

    @classmethod
    def streaming_update(cls, output_mode: str, query_id: str, epoch_id: int) -> Operation:
        return cls(
            "STREAMING UPDATE", {"outputMode": output_mode, "queryId": query_id, "epochId": str(epoch_id)}
        )

    @classmethod
    def restore(cls, version: int | None = None, timestamp: str | None = None) -> Operation:
        return cls("RESTORE", {"version": version, "timestamp": timestamp})

    @classmethod
    def convert(
        cls,
        num_files: int,
        partition_by: Iterable[str],
        collect_stats: bool,
        catalog_table: str | None = None,
        source_format: str | None = None,
    ) -> Operation:
        params: dict[str, object] = {
            "numFiles": num_files,
            "partitionedBy": _json(list(partition_by)),
            "collectStats": collect_stats,
        }
        if catalog_table is not None:
            params["catalogTable"] = catalog_table
        if source_format is not None:
            params["sourceFormat"] = source_format
        return cls("CONVERT", params)

    @classmethod
    def upgrade_protocol(cls, protocol: Protocol) -> Operation:
        body: dict[str, object] = {
            "minReaderVersion": protocol.min_reader_version,
            "minWriterVersion": protocol.min_writer_version,
        }
        if protocol.reader_features is not None:
            body["readerFeatures"] = sorted(protocol.reader_features)
        if protocol.writer_features is not None:
            body["writerFeatures"] = sorted(protocol.writer_features)
        return cls("UPGRADE PROTOCOL", {"newProtocol": _json(body)})

    @classmethod
    def clone(cls, source: str, source_version: int) -> Operation:
        return cls("CLONE", {"source": source, "sourceVersion": source_version})

    @classmethod
    def truncate(cls) -> Operation:
        return cls("TRUNCATE", {})


def encode_parameters(parameters: Mapping[str, object]) -> dict[str, Any]:
    """operationParameters as delta-spark serializes them.

    Strings, booleans, numbers and null are written as they are (delta-spark's
    JsonMapSerializer writes each JSON-encoded value raw); lists, tuples and maps
    become compact JSON strings, as delta-spark pre-encodes them.
    """
    out: dict[str, Any] = {}
    for key, value in parameters.items():
        if value is None or isinstance(value, (str, bool, int, float)):
            out[key] = value
        elif isinstance(value, (list, tuple, dict, set, frozenset)):
            out[key] = _json(sorted(value) if isinstance(value, (set, frozenset)) else value)
        else:
            out[key] = str(value)
    return out


def encode_metrics(metrics: Mapping[str, object] | None) -> dict[str, str]:
    """operationMetrics: every value a string ("3", "true"), as delta-spark records SQLMetrics."""
    out: dict[str, str] = {}
    for key, value in (metrics or {}).items():
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        else:
            out[key] = str(value)
    return out


def new_txn_id() -> str:
    return str(uuid.uuid4())


class EngineInfo(str):
    """An engineInfo string that also carries the engine session's default commitInfo.userMetadata
    (delta-spark reads spark.databricks.delta.commitInfo.userMetadata at every commit)."""

    user_metadata: str | None

    def __new__(cls, text: str, user_metadata: str | None = None) -> EngineInfo:
        made = super().__new__(cls, text)
        made.user_metadata = user_metadata
        return made


def default_engine_info() -> str:
    return f"pydelta/{__version__}"


#: In-commit timestamps: the table property, and the provenance of their enablement.
ICT_ENABLED = "delta.enableInCommitTimestamps"
ICT_VERSION = "delta.inCommitTimestampEnablementVersion"
ICT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"


def in_commit_timestamp(now_ms: int, previous_commit_ms: int | None) -> int:
    """PROTOCOL.md: the larger of the attempt time and one ms after the previous commit."""
    if previous_commit_ms is None:
        return now_ms
    return max(now_ms, previous_commit_ms + 1)


def is_blind_append(file_actions: Iterable[Mapping[str, Any]], read_anything: bool) -> bool:
    """delta-spark: every file action (add, remove, cdc) is an add and the transaction read nothing."""
    if read_anything:
        return False
    return all("add" in a for a in file_actions)


def build_commit_info(
    *,
    timestamp: int,
    operation: Operation,
    read_version: int,
    isolation_level: str,
    is_blind_append: bool,
    operation_metrics: Mapping[str, object] | None = None,
    user_metadata: str | None = None,
    tags: Mapping[str, str] | None = None,
    engine_info: str | None = None,
    txn_id: str | None = None,
    in_commit_timestamp: int | None = None,
) -> dict[str, Any]:
    """The commitInfo body, keys in delta-spark's order; readVersion omitted for new tables."""
    info: dict[str, Any] = {}
    if in_commit_timestamp is not None:
        info["inCommitTimestamp"] = int(in_commit_timestamp)
    info["timestamp"] = int(timestamp)
    info["operation"] = operation.name
    info["operationParameters"] = operation.encoded_parameters()
    if read_version >= 0:
        info["readVersion"] = read_version
    info["isolationLevel"] = isolation_level
    info["isBlindAppend"] = bool(is_blind_append)
    info["operationMetrics"] = encode_metrics(operation_metrics)
    if user_metadata is not None:
        info["userMetadata"] = user_metadata
    if tags:
        info["tags"] = {str(k): str(v) for k, v in tags.items()}
    info["engineInfo"] = engine_info if engine_info is not None else default_engine_info()
    info["txnId"] = txn_id or new_txn_id()
    return info
