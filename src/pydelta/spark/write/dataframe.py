"""`df.write.format("delta").save(path)` and friends: one write, one transaction.

Order of work: load the table, decide the schema and the files to replace,
let Spark write the new files (with constraints checked inline), then commit
adds and removes in one OptimisticTransaction. Any failure before the commit
leaves the log untouched.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from typing import Any

import pyarrow as pa

from pydelta.errors import (
    DeltaAnalysisError,
    InvalidTableError,
    TableAlreadyExistsError,
)
from pydelta.log.data_skipping import FileSkipper
from pydelta.log.snapshot import Snapshot
from pydelta.log.storage import to_local_path
from pydelta.protocol.action_types import as_add, as_remove
from pydelta.protocol.actions import Metadata
from pydelta.protocol.partition_values import deserialize_partition_value
from pydelta.protocol.predicates import And, Cmp, Col, IsNull, Lit, Or, Predicate, Unknown, columns_of
from pydelta.protocol.schema import StructType, column_mapping_mode, parse_schema, physical_name
from pydelta.protocol.schema_evolution import as_nullable, assign_column_mapping, merge_schema
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.conf import session_time_zone
from pydelta.spark.base.engine import try_table_snapshot
from pydelta.spark.base.hadoop_storage import table_hadoop_options
from pydelta.spark.base.transactions import open_transaction
from pydelta.spark.read.partitions import partition_rows_dataframe
from pydelta.spark.read.scan import build_dataframe
from pydelta.spark.write.conform import conform
from pydelta.spark.write.constraints import constraint_checks, violations_as_errors, with_checks
from pydelta.spark.write.data_files import (
    file_rows_to_adds,
    remove_action,
    write_data_files,
)
from pydelta.spark.write.options import (
    AUTO_MERGE_CONF,
    TXN_APP_ID_CONF,
    TXN_AUTO_RESET_CONF,
    TXN_VERSION_CONF,
    WriteOptions,
    parse_write_options,
)
from pydelta.txn.commit_checks import replacing_metadata
from pydelta.txn.commit_info import Operation
from pydelta.txn.transaction import OptimisticTransaction

# ---- schema ---------------------------------------------------------------------------


def _resolve_partition_columns(schema: StructType, partition_by: list[str]) -> list[str]:
    out = []
    for name in partition_by:
        match = [f.name for f in schema.fields if f.name.lower() == name.lower()]
        if not match:
            raise DeltaAnalysisError(
                f"[DELTA_PARTITION_COLUMN_NOT_FOUND] Partition column `{name}` not found in schema "
                f"[{', '.join(schema.field_names)}]")
        out.append(match[0])
    if out and len(out) == len(schema.fields):
        raise InvalidTableError("cannot use all columns as partition columns")
    return out


def new_table_metadata(
    schema: StructType, partition_by: list[str], properties: dict[str, str], *, table_id: str | None = None,
    name: str | None = None, description: str | None = None,
) -> Metadata:
    config = dict(properties)
    if column_mapping_mode(config) != "none":
        schema, config = assign_column_mapping(schema, config)
    return Metadata(
        id=table_id or str(uuid.uuid4()),
        schema_string=schema.to_json(),
        partition_columns=tuple(_resolve_partition_columns(schema, partition_by)),
        configuration=config,
        name=name,
        description=description,
        created_time=int(time.time() * 1000),
    )


@dataclass(frozen=True)
class NewTableSpec:
    """What CREATE/REPLACE TABLE ... AS SELECT says of the table besides its data."""

    properties: dict[str, str] = dataclass_field(default_factory=dict)
    description: str | None = None
    replace: bool = False  # the new definition replaces an existing table's metadata
    cluster_by: list[str] | None = None  # CLUSTER BY columns (liquid clustering)


def _plan_metadata(snapshot: Snapshot | None, incoming: StructType, opts: WriteOptions,
                   spark: SparkSession | None = None, spec: NewTableSpec | None = None) -> Metadata:
    """The metadata after this write (the existing one when nothing changes)."""
    if snapshot is None or (spec is not None and spec.replace):
        # Only a creation applies the session's table defaults (never overwriteSchema), as delta-spark.
        from pydelta.spark.write.options import session_conf, with_table_defaults

        explicit = {**(spec.properties if spec else {}), **opts.table_properties}
        if spec is not None and spec.cluster_by:
            from pydelta.protocol import clustering

            explicit[clustering.FEATURE_PROPERTY] = "supported"
        properties = with_table_defaults(explicit, session_conf(spark))
        md = new_table_metadata(as_nullable(incoming), opts.partition_by or [], properties,
                                description=spec.description if spec else None)
        return md if snapshot is None else replacing_metadata(snapshot.metadata, md)
    current = snapshot.metadata
    if opts.overwrite_schema and opts.mode == "Overwrite" and not opts.replace_where:
        config = {**current.configuration, **opts.table_properties}
        partition_by = opts.partition_by or []  # delta-spark: the new partitioning replaces the old one
        md = new_table_metadata(as_nullable(incoming), partition_by, config, table_id=current.id,
                                name=current.name, description=current.description)
        return md
    if opts.partition_by is not None:
        wanted = [c.lower() for c in opts.partition_by]
        if wanted != [c.lower() for c in current.partition_columns]:
            raise DeltaAnalysisError(
                f"Partition columns do not match the partition columns of the table. "
                f"Given: {opts.partition_by}; table: {list(current.partition_columns)}"
            )
    from pydelta.protocol import type_widening

    widen = opts.merge_schema and type_widening.enabled(current.configuration)
    merged = merge_schema(current.schema, incoming, allow_new_columns=opts.merge_schema, widen_types=widen)
    if merged == current.schema:
        return current
    config = dict(current.configuration)
    if column_mapping_mode(config) != "none":
        merged, config = assign_column_mapping(merged, config)
    return Metadata(
        id=current.id, schema_string=merged.to_json(), partition_columns=current.partition_columns,
        configuration=config, format=current.format, name=current.name, description=current.description,
        created_time=current.created_time,
    )


def _predicate_of(spark: SparkSession, snapshot: Snapshot, sql: str) -> Predicate:
    from pydelta.spark.base.predicates import filter_condition, translate

    base = build_dataframe(spark, snapshot, snapshot.files().slice(0, 0))
    from pydelta.spark.base.connect_session import is_connect

    if is_connect(spark):  # the server checks the predicate; the client translates what it can of it
        from pydelta.spark.read.conditions import analyze

        return analyze(base, sql, "the predicate").predicate()
    try:
        return translate(filter_condition(base._jdf, sql))
    except Exception as e:
        raise DeltaAnalysisError(f"cannot resolve the predicate {sql!r} against the table: {e}") from None


def _is_partition_only(predicate: Predicate, partition_cols: list[str]) -> bool:
    def has_unknown(p: Any) -> bool:
        if isinstance(p, Unknown):
            return True
        return any(has_unknown(getattr(p, a)) for a in ("left", "right", "child") if hasattr(p, a))

    lowered = {c.lower() for c in partition_cols}
    cols = columns_of(predicate)
    return bool(cols) and not has_unknown(predicate) and all(len(c) == 1 and c[0].lower() in lowered for c in cols)


def files_matching_partitions(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, condition: Any, alias: str | None = None
) -> pa.Table:
    """Files whose partition values satisfy `condition` (SQL or Column on partition columns only)."""
    if files.num_rows == 0:
        return files
    df = partition_rows_dataframe(spark, snapshot, files)
    if alias:
        df = df.alias(alias)
    rows = df.filter(condition).select("__pydelta_idx").collect()
    return files.take(pa.array(sorted(r[0] for r in rows), pa.int64()))


def _partition_predicate(snapshot_md: Metadata, touched: set[tuple[str | None, ...]]) -> Predicate:
    schema = snapshot_md.schema
    cols = list(snapshot_md.partition_columns)
    disjuncts: list[Predicate] = []
    for values in touched:
        conj: Predicate | None = None
        for name, raw in zip(cols, values, strict=True):
            field = schema.field(name)
            typed = deserialize_partition_value(raw, field.type)
            leaf: Predicate = IsNull(Col((name,))) if typed is None else Cmp("=", Col((name,)), Lit(typed))
            conj = leaf if conj is None else And(conj, leaf)
        if conj is not None:
            disjuncts.append(conj)
    if not disjuncts:
        return Unknown("no partitions")
    out = disjuncts[0]
    for d in disjuncts[1:]:
        out = Or(out, d)
    return out


# ---- the write itself ------------------------------------------------------------------------


def _clustering_columns(snapshot: Snapshot) -> list[str]:
    """The table's clustering columns by logical (dotted) name; [] when it is not clustered."""
    from pydelta.protocol import clustering

    metadata = snapshot.metadata
    return clustering.logical_names(metadata.schema, metadata.configuration,
                                    clustering.columns_of(snapshot.domain_metadata) or [])


def _check_same_clustering(snapshot: Snapshot, cluster_by: Sequence[str], display: str) -> None:
    """A write's clusterBy on an existing table must name its clustering columns, in order."""
    existing = _clustering_columns(snapshot)
    if [c.lower() for c in cluster_by] != [c.lower() for c in existing]:
        def as_text(names: Sequence[str]) -> str:
            return json.dumps([n.split(".") for n in names], separators=(",", ":"))

        raise DeltaAnalysisError(
            f"[CLUSTERING_COLUMNS_MISMATCH] Specified clustering does not match that of the existing table "
            f"{display}. Specified clustering columns: {as_text(cluster_by)}. Existing clustering columns: "
            f"{as_text(existing)}.")


def define_clustering(txn: OptimisticTransaction, snapshot: Snapshot | None, cluster_by: list[str] | None) -> None:
    """A new table definition's clustering, after `txn.update_metadata` (physical names exist
    then): the `delta.clustering` domain for CLUSTER BY (columns checked as delta-spark does),
    or, without it, the replaced table's domain removed."""
    from pydelta.protocol import clustering

    metadata = txn.metadata
    assert metadata is not None
    if cluster_by is not None:
        columns = clustering.resolve(metadata.schema, metadata.partition_columns, metadata.configuration, cluster_by)
        txn.add_domain_metadata(clustering.DOMAIN, clustering.domain_configuration(columns))
    elif snapshot is not None and clustering.DOMAIN in snapshot.domain_metadata:
        txn.add_domain_metadata(clustering.DOMAIN, snapshot.domain_metadata[clustering.DOMAIN], removed=True)


@dataclass(frozen=True)
class SaveAsTableOverwrite:
    """`df.write.mode("overwrite").saveAsTable(name)` of an existing table: in delta-spark a data
    overwrite (replaceWhere, dynamic partitions, schema checks as `save(path)`), not a
    redefinition, recorded as CREATE OR REPLACE TABLE AS SELECT with isV1SaveAsTableOverwrite."""

    managed: bool


def _save_as_table_operation(snapshot: Snapshot, metadata: Metadata, opts: WriteOptions,
                             spec: SaveAsTableOverwrite) -> Operation | None:
    """delta-spark's record of a saveAsTable overwrite (CreateDeltaTableCommand.getOperation);
    None with replaceWhere, which delta-spark records as a plain WRITE."""
    if opts.replace_where:
        return None
    op = Operation.table_definition(
        "CREATE OR REPLACE TABLE AS SELECT", is_managed=spec.managed, description=metadata.description,
        partition_by=metadata.partition_columns, properties=metadata.configuration,
        cluster_by=_clustering_columns(snapshot))
    flags = {"isDynamicPartitionOverwrite": opts.dynamic_mode_requested, "canOverwriteSchema": opts.overwrite_schema,
             "canMergeSchema": opts.merge_schema, "isV1SaveAsTableOverwrite": True}
    return Operation(op.name, {**op.parameters, **{k: True for k, v in flags.items() if v}})


def _write_operation(metadata: Metadata, opts: WriteOptions) -> Operation:
    """The WRITE delta-spark records: the writer's own partitionBy (`[]` when it gave none, whatever
    the table's partitioning), flags only when set, dynamic mode whenever it is requested."""
    return Operation.write(
        mode=opts.mode, partition_by=list(opts.partition_by or []),
        predicate=json.dumps([opts.replace_where]) if opts.replace_where else None,
        is_dynamic_partition_overwrite=True if opts.dynamic_mode_requested else None,
        can_overwrite_schema=True if opts.overwrite_schema else None,
        can_merge_schema=True if opts.merge_schema else None,
    )


_WRITE_CONFS = (
    "spark.sql.sources.partitionOverwriteMode",
    AUTO_MERGE_CONF,
    "spark.databricks.delta.commitInfo.userMetadata",
    "spark.pydelta.options.ignoreUnknown",
    TXN_APP_ID_CONF,
    TXN_VERSION_CONF,
    "spark.databricks.delta.optimizeWrite.enabled",
)


def _after_session_txn(spark: SparkSession, opts: WriteOptions) -> None:
    """delta-spark's txnVersion.autoReset: a session-conf txnVersion is used once, then unset."""
    if opts.txn_from_session and str(spark.conf.get(TXN_AUTO_RESET_CONF, "false")).lower() == "true":
        spark.conf.unset(TXN_VERSION_CONF)


def write_dataframe(
    df: DataFrame,
    path: str,
    mode: str | None = None,
    partition_by: list[str] | None = None,
    options: dict[str, Any] | None = None,
    *,
    operation: Operation | None = None,
    new_table: NewTableSpec | None = None,
    cluster_by: list[str] | None = None,
    display: str | None = None,
    save_as_table: SaveAsTableOverwrite | None = None,
) -> int | None:
    """Write `df` to the Delta table at `path`; returns the committed version (None if skipped).

    `new_table` carries a CREATE/REPLACE TABLE AS SELECT's properties and comment.
    `cluster_by` (the writer's clusterBy): the clustering of a table this write creates; an
    existing table's clustering must be the same. `display` names the table in errors.
    `save_as_table`: this is a saveAsTable overwrite of an existing table (how it is recorded).
    """
    spark = df.sparkSession
    from pydelta.spark.base.hadoop_storage import require_connector

    require_connector(spark, path)
    conf = {k: spark.conf.get(k, None) for k in _WRITE_CONFS}
    opts = parse_write_options(mode, partition_by, options or {}, {k: v for k, v in conf.items() if v is not None})
    root = to_local_path(path)
    snapshot = try_table_snapshot(spark, root)
    if snapshot is not None:
        if opts.mode == "ErrorIfExists":
            raise TableAlreadyExistsError(f"Cannot write to already existent path {path} without setting "
                                          "mode('overwrite') or mode('append')", error_class="DELTA_PATH_EXISTS")
        if opts.mode == "Ignore":
            return None
    if cluster_by:
        if snapshot is None:
            new_table = replace(new_table or NewTableSpec(), cluster_by=list(cluster_by))
        else:
            _check_same_clustering(snapshot, cluster_by, display or f"delta.`{path}`")
    txn = open_transaction(spark, snapshot, root, writes_data=True)
    if opts.txn_app_id is not None:
        seen = txn.app_transaction_version(opts.txn_app_id)
        _after_session_txn(spark, opts)
        if seen is not None and seen >= (opts.txn_version or 0):
            return None  # this (appId, version) already committed: idempotent no-op
        txn.set_app_transaction(opts.txn_app_id, int(opts.txn_version))  # type: ignore[arg-type]

    incoming = parse_schema(df.schema.json())
    planned = _plan_metadata(snapshot, incoming, opts, spark, new_table)
    if snapshot is None or planned != snapshot.metadata:
        txn.update_metadata(planned)
    metadata = txn.metadata  # protocol properties stripped, ICT settings, ...
    assert metadata is not None
    if new_table is not None:
        define_clustering(txn, snapshot, new_table.cluster_by or None)
    from pydelta.spark.write import identity as identity_values

    generate = identity_values.columns_to_generate(df, metadata)
    new_data = conform(identity_values.with_identity_values(df, generate), metadata.schema)
    checks = constraint_checks(metadata.schema, metadata.configuration)
    new_checks = list(checks)
    if opts.replace_where:
        new_checks.append((opts.replace_where, "Written data does not conform to partial table overwrite condition "
                                               f"or constraint ({opts.replace_where})"))
    to_write = with_checks(new_data, new_checks)

    # delta-spark ignores dynamic partition overwrite on an unpartitioned table and when a table
    # is replaced (REPLACE TABLE AS SELECT): either replaces it all
    replacing = new_table is not None and new_table.replace
    dynamic = opts.dynamic_partition_overwrite and bool(metadata.partition_columns) and not replacing
    removed: pa.Table | None = None
    if snapshot is not None and opts.mode == "Overwrite":
        files = snapshot.files()
        if opts.replace_where:
            predicate = _predicate_of(spark, snapshot, opts.replace_where)
            if _is_partition_only(predicate, snapshot.partition_columns):
                removed = files_matching_partitions(spark, snapshot, files, opts.replace_where)
                txn.read_predicate(predicate)
            else:
                candidates = FileSkipper.for_metadata(files, snapshot.metadata).prune(predicate)
                kept = build_dataframe(spark, snapshot, candidates).filter(
                    f"NOT COALESCE(({opts.replace_where}), false)")
                to_write = to_write.unionByName(with_checks(conform(kept, metadata.schema), checks))
                removed = candidates
                txn.read_predicate(predicate)
                txn.read_files(candidates.column("path").to_pylist())
        elif not dynamic:
            removed = files
            txn.read_whole_table()

    from pydelta.spark.write import optimized_write

    if optimized_write.enabled(opts.optimize_write, metadata.configuration):
        to_write = optimized_write.optimized(to_write, list(metadata.partition_columns))
    with violations_as_errors():
        adds = write_data_files(
            to_write, root, metadata, data_change=opts.data_change,
            max_records_per_file=opts.max_records_per_file, compression=opts.compression,
            session_time_zone=session_time_zone(spark), hadoop_options=table_hadoop_options(txn.storage),
            protocol=txn.protocol,
        )

    marks = identity_values.high_water_marks(spark, metadata, generate, adds, root)
    if marks:
        from pydelta.protocol.identity import with_high_water_marks

        txn.update_metadata(with_high_water_marks(metadata, marks), replace_previous=True)

    if snapshot is not None and opts.mode == "Overwrite" and dynamic:
        cols = list(metadata.partition_columns)
        mode_cm = column_mapping_mode(metadata.configuration)
        keys = [physical_name(metadata.schema.field(c)) if mode_cm != "none" else c for c in cols]
        touched = {tuple(a["partitionValues"].get(k) for k in keys) for a in adds}
        touched_keys = {tuple(v or None for v in t) for t in touched}
        files = snapshot.files()
        pvs = [dict(pv or []) for pv in files.column("partition_values").to_pylist()]
        mask = [tuple(pv.get(k) or None for k in keys) in touched_keys for pv in pvs]
        removed = files.filter(pa.array(mask, pa.bool_()))
        txn.read_predicate(_partition_predicate(metadata, touched))

    now = int(time.time() * 1000)
    removes = ([remove_action(a, data_change=opts.data_change, timestamp_ms=now) for a in file_rows_to_adds(removed)]
               if removed is not None else [])
    actions = [as_add(a) for a in adds] + [as_remove(r) for r in removes]
    metrics = {
        "numFiles": len(adds),
        "numOutputRows": sum(json.loads(stats).get("numRecords", 0) if (stats := a.get("stats")) else 0 for a in adds),
        "numOutputBytes": sum(a["size"] for a in adds),
    }
    if opts.mode == "Overwrite" and snapshot is not None:
        metrics["numRemovedFiles"] = len(removes)
        metrics["numRemovedBytes"] = sum(r.get("size") or 0 for r in removes)
    if operation is not None and operation.name == "STREAMING UPDATE":  # delta-spark's STREAMING_UPDATE metrics
        metrics = {"numAddedFiles": len(adds), "numRemovedFiles": len(removes),
                   "numOutputRows": metrics["numOutputRows"], "numOutputBytes": metrics["numOutputBytes"]}
    if operation is None and save_as_table is not None and snapshot is not None:
        operation = _save_as_table_operation(snapshot, metadata, opts, save_as_table)
    if operation is None:
        operation = _write_operation(metadata, opts)
    return txn.commit(actions, operation, operation_metrics=metrics, user_metadata=opts.user_metadata,
                      data_change=opts.data_change)
