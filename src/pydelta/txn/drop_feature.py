"""Dropping a table feature: `ALTER TABLE ... DROP FEATURE` / `DeltaTable.dropFeatureSupport`.

delta-spark 4's rules (AlterTableDropFeatureDeltaCommand, the checkpoint-protection RFC):

1. Only removable features may go; each has *invariants* (no traces in the latest
   version, e.g. no deletion vectors and `delta.enableDeletionVectors` off) and a
   *pre-downgrade* step that brings the table there (unset the property, purge the DVs).
2. Writer features drop in one commit: protocol without the feature, normalized
   ((1,7,[appendOnly, invariants, checkConstraints]) becomes (1,3)).
3. Reader-writer features leave traces in history that older readers cannot read.
   By default (*fast drop*) three barrier checkpoints are written on empty commits after
   the traces are gone, and the drop commit adds the `checkpointProtection` writer feature
   with `delta.requireCheckpointProtectionBeforeVersion` = the drop version, so nobody
   removes those checkpoints while the history before them remains.
4. With TRUNCATE HISTORY (the older journey) the first call removes the traces and fails
   with DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD; a later call cleans up the log
   with `delta.dropFeatureTruncateHistory.retentionDuration` (24 hours, minute granularity)
   and drops the feature only if no retained version uses it.

Steps that rewrite data (purging deletion vectors) belong to the engine: the caller
passes a `DataRewriter`; without one such a step raises DeltaNotImplementedError.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from typing import Protocol as TypingProtocol

from pydelta.errors import (
    DeltaAnalysisError,
    DeltaConcurrentModificationException,
    DeltaNotImplementedError,
    DeltaTableFeatureError,
)
from pydelta.log.checkpoint_writer import interval_property_ms, write_checkpoint
from pydelta.log.cleanup import cleanup_expired_logs
from pydelta.log.segment import list_log
from pydelta.log.snapshot import Snapshot, load_snapshot
from pydelta.log.storage import Storage
from pydelta.protocol import geospatial, properties, type_widening
from pydelta.protocol.action_types import Action
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.protocol.features import FEATURES, feature_spec
from pydelta.protocol.schema import (
    COLUMN_MAPPING_ID_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    TYPE_CHANGES_KEY,
    StructType,
    column_mapping_mode,
    contains_geospatial,
    walk_fields,
)
from pydelta.txn import protocol_upgrade as pu
from pydelta.txn import row_tracking, row_tracking_backfill
from pydelta.txn.commit_info import Operation

if TYPE_CHECKING:
    from pydelta.txn.transaction import OptimisticTransaction

PROTECTION_VERSION_KEY = "delta.requireCheckpointProtectionBeforeVersion"
TRUNCATE_RETENTION_KEY = "delta.dropFeatureTruncateHistory.retentionDuration"
DEFAULT_TRUNCATE_RETENTION = "interval 24 hours"
LOG_RETENTION_KEY = "delta.logRetentionDuration"
DEFAULT_LOG_RETENTION = "interval 30 days"
BARRIER_CHECKPOINTS = 3
_COMMIT_ATTEMPTS = 5
_MINUTE_MS = 60_000

DV_KEY = "delta.enableDeletionVectors"
ICT_KEYS = ("delta.inCommitTimestampEnablementVersion", "delta.inCommitTimestampEnablementTimestamp")
ICT_ENABLED = "delta.enableInCommitTimestamps"
TYPE_WIDENING_KEY = "delta.enableTypeWidening"
CHECKPOINT_POLICY_KEY = "delta.checkpointPolicy"
CONSTRAINT_PREFIX = "delta.constraints."


class DataRewriter(TypingProtocol):
    """The engine's part of a drop: rewriting data files (Spark in pydelta.spark)."""

    def purge_deletion_vectors(self) -> None:
        """REORG TABLE ... APPLY (PURGE): rewrite every file that has a deletion vector."""

    def rewrite_files(self, paths: list[str]) -> None:
        """Rewrite these data files as they read now (e.g. in their widened types); data unchanged."""

    def remove_column_mapping(self, metadata: Metadata) -> None:
        """Rewrite every data file under `metadata` (no column mapping) and commit both together."""


@dataclass(frozen=True)
class _Context:
    table_root: str
    engine_info: str | None
    rewriter: DataRewriter | None
    now_ms: Callable[[], int]
    storage: Storage | None = None  # the table's (None: the one its path selects)

    def snapshot(self, version: int | None = None) -> Snapshot:
        return load_snapshot(self.table_root, version=version, storage=self.storage)

    def commit_metadata(self, snapshot: Snapshot, metadata: Metadata, operation: Operation) -> int:
        txn = self.transaction(snapshot)
        txn.update_metadata(metadata)
        return txn.commit([], operation)

    def transaction(self, snapshot: Snapshot) -> OptimisticTransaction:
        from pydelta.txn.transaction import OptimisticTransaction

        return OptimisticTransaction(self.table_root, snapshot, engine_info=self.engine_info)


def _unset(ctx: _Context, snapshot: Snapshot, keys: list[str]) -> int | None:
    """UNSET TBLPROPERTIES of those `keys` the table has (None: nothing to do)."""
    present = [k for k in keys if k in snapshot.metadata.configuration]
    if not present:
        return None
    conf = {k: v for k, v in snapshot.metadata.configuration.items() if k not in present}
    return ctx.commit_metadata(snapshot, replace(snapshot.metadata, configuration=conf),
                               Operation.unset_table_properties(present, True))


# ---- the removable features ---------------------------------------------------------------------


@dataclass(frozen=True)
class Removable:
    """What delta-spark's RemovableFeature says about one feature."""

    name: str
    history_protection: bool  # reader-writer features: traces in history matter
    clean: Callable[[Snapshot], bool]  # validateDropInvariants
    pre_downgrade: Callable[[_Context], bool]  # removes traces; True when it changed the table
    metadata_uses: Callable[[Metadata], bool] = lambda m: False  # actionUsesFeature for metadata
    file_uses: Callable[[dict[str, Any]], bool] = lambda a: False  # ... for add/remove/cdc
    checkpoint_uses: Callable[[str], bool] = lambda kind: False  # ... for a checkpoint of this kind
    properties_at_downgrade: tuple[str, ...] = ()
    domains_at_downgrade: tuple[str, ...] = ()  # domain metadata removed by the drop commit itself


def _dv_clean(s: Snapshot) -> bool:
    files = s.files()
    has_dvs = "deletion_vector" in files.column_names and files.column("deletion_vector").null_count < files.num_rows
    return not properties.flag(s.metadata.configuration, DV_KEY) and not has_dvs


def _dv_pre(ctx: _Context) -> bool:
    snapshot = ctx.snapshot()
    if _dv_clean(snapshot):
        return False
    _unset(ctx, snapshot, [DV_KEY])
    if not _dv_clean(ctx.snapshot()):
        if ctx.rewriter is None:
            raise DeltaNotImplementedError(
                "dropping deletionVectors needs its deletion vectors purged (REORG TABLE ... APPLY (PURGE)), "
                "which needs Spark: use DeltaTable.dropFeatureSupport or ALTER TABLE ... DROP FEATURE in Spark")
        ctx.rewriter.purge_deletion_vectors()
    _dv_tombstones(ctx)
    return True


def _dv_tombstones(ctx: _Context) -> None:
    """Deletion vector files of removed files become tombstones of their own (delta-spark's
    "Deletion Vector Tombstones"), so a VACUUM by a client without DV support deletes them too."""
    snapshot = ctx.snapshot()
    tomb = snapshot.tombstones()
    if "deletionVector" not in tomb.column_names:
        return
    listed = set(tomb.column("path").to_pylist())
    now = ctx.now_ms()
    actions: list[Action] = []
    for dv in tomb.column("deletionVector").to_pylist():
        path = _relative_dv_path(dv)
        if path and path not in listed:
            listed.add(path)
            actions.append({"remove": {"path": path, "deletionTimestamp": now, "dataChange": False}})
    if actions:
        ctx.transaction(snapshot).commit(actions, Operation("Deletion Vector Tombstones"), data_change=False)


def _relative_dv_path(dv: dict[str, Any] | None) -> str | None:
    """The table-relative path of a stored ('u') deletion vector file, None for others."""
    from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor

    if not dv or dv.get("storageType") != "u":
        return None
    d = DeletionVectorDescriptor.from_dict(dv)
    prefix = d.path_or_inline_dv[:-20]
    name = f"deletion_vector_{d.file_uuid}.bin"
    return f"{prefix}/{name}" if prefix else name


def _v2_clean(s: Snapshot) -> bool:
    policy = str(s.metadata.configuration.get(CHECKPOINT_POLICY_KEY, "classic")).strip().lower()
    return policy != "v2" and (s.segment.checkpoint is None or s.segment.checkpoint.kind != "v2")


def _v2_pre(ctx: _Context) -> bool:
    snapshot = ctx.snapshot()
    if _v2_clean(snapshot):
        return False
    policy = str(snapshot.metadata.configuration.get(CHECKPOINT_POLICY_KEY, "classic")).strip().lower()
    if policy == "v2":
        conf = {**snapshot.metadata.configuration, CHECKPOINT_POLICY_KEY: "classic"}
        ctx.commit_metadata(snapshot, replace(snapshot.metadata, configuration=conf),
                            Operation.set_table_properties({CHECKPOINT_POLICY_KEY: "classic"}))
    return True


def _ict_clean(s: Snapshot) -> bool:
    conf = s.metadata.configuration
    return not properties.flag(conf, ICT_ENABLED) and not any(k in conf for k in ICT_KEYS)


def _ict_pre(ctx: _Context) -> bool:
    snapshot = ctx.snapshot()
    if _ict_clean(snapshot):
        return False
    conf = {k: v for k, v in snapshot.metadata.configuration.items() if k not in ICT_KEYS}
    changed = [k for k in ICT_KEYS if k in snapshot.metadata.configuration]
    if properties.flag(conf, ICT_ENABLED):
        conf[ICT_ENABLED] = "false"
        changed.append(ICT_ENABLED)
    ctx.commit_metadata(snapshot, replace(snapshot.metadata, configuration=conf),
                        Operation.unset_table_properties(changed, True))
    return True


def _constraint_names(s: Snapshot) -> list[str]:
    return sorted(k[len(CONSTRAINT_PREFIX):] for k in s.metadata.configuration if k.startswith(CONSTRAINT_PREFIX))


def _constraints_pre(ctx: _Context) -> bool:
    names = _constraint_names(ctx.snapshot())
    if names:
        raise DeltaAnalysisError(
            "[DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE] Cannot drop the CHECK constraints table feature. "
            f"The following constraints must be dropped first: {', '.join(names)}.")
    return False


def _domains_pre(ctx: _Context) -> bool:
    snapshot = ctx.snapshot()
    domains = snapshot.domain_metadata
    if not domains:
        return False
    actions: list[Action] = [{"domainMetadata": {"domain": d, "configuration": c, "removed": True}}
                             for d, c in domains.items()]
    ctx.transaction(snapshot).commit(
        actions, Operation("DOMAIN METADATA CLEANUP", {"domainMetadataRemovedCount": len(actions)}))
    return True


def _type_changes(m: Metadata) -> bool:
    return any(TYPE_CHANGES_KEY in f.metadata for f in walk_fields(m.schema))


def _widening_clean(s: Snapshot) -> bool:
    return not properties.flag(s.metadata.configuration, TYPE_WIDENING_KEY) and not _type_changes(s.metadata)


def _widening_pre(ctx: _Context) -> bool:
    """Disable widening, rewrite the files written before a type change, then forget the changes."""
    snapshot = ctx.snapshot()
    if _widening_clean(snapshot):
        return False
    _unset(ctx, snapshot, [TYPE_WIDENING_KEY])
    snapshot = ctx.snapshot()
    if _type_changes(snapshot.metadata):
        stale = files_with_older_types(snapshot)
        if stale:
            if ctx.rewriter is None:
                raise DeltaNotImplementedError(
                    "dropping typeWidening rewrites the files written before a type change, which needs Spark: "
                    "use DeltaTable.dropFeatureSupport or ALTER TABLE ... DROP FEATURE in Spark")
            ctx.rewriter.rewrite_files(stale)
            snapshot = ctx.snapshot()
        changed = [f for f in snapshot.metadata.schema.fields if type_widening.has_type_changes(f)]
        schema = type_widening.without_type_changes(snapshot.metadata.schema)
        assert isinstance(schema, StructType)  # stripping field metadata keeps the struct a struct
        columns = [{"name": f.name, "type": f.type.name if hasattr(f.type, "name") else "struct",
                    "nullable": f.nullable, "metadata": {}} for f in changed]
        ctx.commit_metadata(snapshot, replace(snapshot.metadata, schema_string=schema.to_json()),
                            Operation("DROP FEATURE", {"columns": json.dumps(columns, separators=(",", ":"))}))
    return True


def files_with_older_types(snapshot: Snapshot) -> list[str]:
    """Data files whose Parquet types differ from the table's in a column that went through a type change."""
    import pyarrow.parquet as pq

    from pydelta.protocol.schema import data_type_to_arrow, physical_name, to_physical_schema

    mode = column_mapping_mode(snapshot.metadata.configuration)
    logical = snapshot.metadata.schema
    physical = to_physical_schema(logical, mode, field_ids=False) if mode != "none" else logical
    watched = {}
    for lf, pf in zip(logical.fields, physical.fields, strict=True):
        if type_widening.has_type_changes(lf) and lf.name not in snapshot.partition_columns:
            watched[physical_name(lf) if mode != "none" else lf.name] = data_type_to_arrow(pf.type)
    if not watched:
        return []
    stale = []
    for path in snapshot.files().column("path").to_pylist():
        schema = pq.read_schema(snapshot.absolute_path(path))
        for name, expected in watched.items():
            index = schema.get_field_index(name)
            if index >= 0 and not _same_arrow_shape(schema.field(index).type, expected):
                stale.append(path)
                break
    return stale


def _same_arrow_shape(a: Any, b: Any) -> bool:
    """Arrow types equal up to field names and nullability (struct children by position)."""
    import pyarrow as pa

    if pa.types.is_struct(a) and pa.types.is_struct(b):
        return a.num_fields == b.num_fields and all(
            _same_arrow_shape(a.field(i).type, b.field(i).type) for i in range(a.num_fields))
    if pa.types.is_map(a) and pa.types.is_map(b):
        return _same_arrow_shape(a.key_type, b.key_type) and _same_arrow_shape(a.item_type, b.item_type)
    if (pa.types.is_list(a) or pa.types.is_large_list(a)) and (pa.types.is_list(b) or pa.types.is_large_list(b)):
        return _same_arrow_shape(a.value_type, b.value_type)
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        return (a.tz is None) == (b.tz is None)  # units differ between writers (INT96, micros, millis)
    return bool(a == b)


def _mapping_in_schema(m: Metadata) -> bool:
    keys = (COLUMN_MAPPING_ID_KEY, COLUMN_MAPPING_PHYSICAL_NAME_KEY)
    return any(k in f.metadata for f in walk_fields(m.schema) for k in keys)


def _mapping_clean(s: Snapshot) -> bool:
    return column_mapping_mode(s.metadata.configuration) == "none" and not _mapping_in_schema(s.metadata)


_NAME_CHARS_NEEDING_MAPPING = set(" ,;{}()\n\t=")


def without_column_mapping(metadata: Metadata) -> Metadata:
    """`metadata` as a table without column mapping has it: mode `none`, no ids or physical
    names in the schema, no max column id (the files must hold the logical names)."""
    from pydelta.protocol.column_mapping_removal import metadata_without_mapping

    return metadata_without_mapping(metadata, unset=False)


def _mapping_pre(ctx: _Context) -> bool:
    """Rewrite every data file with the logical column names under a metadata without mapping."""
    snapshot = ctx.snapshot()
    if _mapping_clean(snapshot):
        return False
    bad = [f.name for f in walk_fields(snapshot.metadata.schema) if set(f.name) & _NAME_CHARS_NEEDING_MAPPING]
    if bad:
        raise DeltaAnalysisError(
            f"[DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES] Found invalid character(s) among ' ,;{{}}()\\n\\t=' in "
            f"the column names of your schema ({', '.join(bad)}): columnMapping cannot be dropped. Please rename "
            "these columns first.")
    if ctx.rewriter is None:
        raise DeltaNotImplementedError(
            "dropping columnMapping rewrites every data file with its logical column names, which needs Spark: "
            "use DeltaTable.dropFeatureSupport or ALTER TABLE ... DROP FEATURE in Spark")
    ctx.rewriter.remove_column_mapping(without_column_mapping(snapshot.metadata))
    return True


def _protection_pre(ctx: _Context) -> bool:
    snapshot = ctx.snapshot()
    if not _history_before_protection_truncated(snapshot):
        _empty_commit_and_checkpoint(ctx)
        _truncate_history(ctx, ctx.snapshot())
        if not _history_before_protection_truncated(ctx.snapshot()):
            retention = snapshot.metadata.configuration.get(TRUNCATE_RETENTION_KEY, DEFAULT_TRUNCATE_RETENTION)
            raise DeltaTableFeatureError(
                "[DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD] The operation did not "
                "succeed because there are still traces of dropped features in the table history. "
                "CheckpointProtection cannot be dropped until these historical versions have expired. To drop "
                "CheckpointProtection, please wait for the historical versions to expire, and then repeat this "
                f"command. The retention period for historical versions is currently configured to {retention}.")
    _unset(ctx, ctx.snapshot(), [PROTECTION_VERSION_KEY])
    return False


def _row_tracking_clean(s: Snapshot) -> bool:
    conf = s.metadata.configuration
    return (not properties.flag(conf, row_tracking.ENABLE_KEY) and properties.flag(conf, row_tracking.SUSPENDED_KEY)
            and not row_tracking.has_row_ids(s))


def _row_tracking_pre(ctx: _Context) -> bool:
    """Disable and suspend row IDs (one SET TBLPROPERTIES), then strip them from every file."""
    snapshot = ctx.snapshot()
    if _row_tracking_clean(snapshot):
        return False
    wanted = {row_tracking.ENABLE_KEY: "false", row_tracking.SUSPENDED_KEY: "true"}
    if any(snapshot.metadata.configuration.get(k) != v for k, v in wanted.items()):
        conf = {**snapshot.metadata.configuration, **wanted}
        ctx.commit_metadata(snapshot, replace(snapshot.metadata, configuration=conf),
                            Operation.set_table_properties(wanted))
    row_tracking_backfill.unbackfill(ctx.snapshot(), ctx.engine_info)
    return True


def _no_traces(ctx: _Context) -> bool:
    return False


def _geo_clean(s: Snapshot) -> bool:
    return not contains_geospatial(s.metadata.schema)


def _geo_pre(ctx: _Context) -> bool:
    """GeospatialPreDowngradeCommand: nothing to clean up, but geo columns must be dropped first."""
    geospatial.check_droppable(ctx.snapshot().metadata.schema)
    return False


REMOVABLE: dict[str, Removable] = {
    r.name: r
    for r in (
        Removable("deletionVectors", True, _dv_clean, _dv_pre,
                  metadata_uses=lambda m: properties.flag(m.configuration, DV_KEY),
                  file_uses=lambda a: bool(a.get("deletionVector"))),
        Removable("v2Checkpoint", True, _v2_clean, _v2_pre,
                  metadata_uses=lambda m: str(m.configuration.get(CHECKPOINT_POLICY_KEY, "")).lower() == "v2",
                  checkpoint_uses=lambda kind: kind == "v2"),
        Removable("typeWidening", True, _widening_clean, _widening_pre, metadata_uses=_type_changes),
        Removable("typeWidening-preview", True, _widening_clean, _widening_pre, metadata_uses=_type_changes),
        Removable("columnMapping", True, _mapping_clean, _mapping_pre,
                  metadata_uses=lambda m: column_mapping_mode(m.configuration) != "none"),
        Removable("vacuumProtocolCheck", True, lambda s: True, _no_traces),
        # Reader-writer features whose actions never count as traces (actionUsesFeature is false).
        Removable(geospatial.FEATURE, True, _geo_clean, _geo_pre),
        Removable(geospatial.PREVIEW_FEATURE, True, _geo_clean, _geo_pre),
        Removable("inCommitTimestamp", False, _ict_clean, _ict_pre),
        Removable("checkConstraints", False, lambda s: not _constraint_names(s), _constraints_pre),
        Removable("rowTracking", False, _row_tracking_clean, _row_tracking_pre,
                  properties_at_downgrade=(row_tracking.ENABLE_KEY, row_tracking.SUSPENDED_KEY,
                                           row_tracking.ROW_ID_COLUMN_KEY, row_tracking.COMMIT_VERSION_COLUMN_KEY),
                  domains_at_downgrade=(row_tracking.DOMAIN,)),
        Removable("domainMetadata", False, lambda s: not s.domain_metadata, _domains_pre),
        Removable("checkpointProtection", False, lambda s: PROTECTION_VERSION_KEY not in s.metadata.configuration,
                  _protection_pre),
    )
}


# ---- the command ------------------------------------------------------------------------------


def resolve_removable(protocol: Protocol, feature_name: str, truncate_history: bool) -> Removable:
    """The feature to drop, or delta-spark's error for the name (checked before anything changes)."""
    if not isinstance(feature_name, str) or not feature_name.strip():
        raise DeltaTableFeatureError(f"[DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE] Cannot drop {feature_name!r} "
                                     "because it is not supported by this Delta version.")
    names = pu.all_features(protocol)
    spec = FEATURES.get(feature_name) or {n.lower(): s for n, s in FEATURES.items()}.get(feature_name.lower())
    present = spec is not None and spec.name in names
    if not present and feature_name.lower().startswith("delta."):
        raise DeltaTableFeatureError(f"[DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY] Cannot drop `{feature_name}` "
                                     "from this table because this is a delta table property and not a table feature.")
    if spec is None:
        raise DeltaTableFeatureError(f"[DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE] Cannot drop {feature_name} "
                                     "because it is not supported by this Delta version. Consider using Delta with a "
                                     "higher version.")
    if not present:
        raise DeltaTableFeatureError(f"[DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT] Cannot drop {spec.name} from this "
                                     "table because it is not currently present in the table's protocol.")
    removable = REMOVABLE.get(spec.name)
    if removable is None:
        raise DeltaTableFeatureError(f"[DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE] Cannot drop {spec.name} because "
                                     "dropping this feature is not supported.")
    if truncate_history and not (removable.history_protection or removable.name == "checkpointProtection"):
        raise DeltaTableFeatureError("[DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED] The particular feature "
                                     "does not require history truncation.")
    if removable.name == "checkpointProtection" and not truncate_history:
        raise DeltaTableFeatureError(
            "[DELTA_FEATURE_CAN_ONLY_DROP_CHECKPOINT_PROTECTION_WITH_HISTORY_TRUNCATION] Cannot drop Checkpoint "
            "Protection feature. This feature can only be dropped by truncating history. Please try again with the "
            "TRUNCATE HISTORY option: ALTER TABLE table_name DROP FEATURE checkpointProtection TRUNCATE HISTORY")
    dependents = sorted(n for n in names if spec.name in feature_spec(n).requires)
    if dependents:
        raise DeltaTableFeatureError(
            f"[DELTA_FEATURE_DROP_DEPENDENT_FEATURE] Cannot drop table feature `{spec.name}` because some other "
            f"features ({', '.join(dependents)}) in this table depends on `{spec.name}`. Consider dropping them "
            "first before dropping this feature.")
    return removable


def drop_feature(
    table_root: str,
    feature_name: str,
    truncate_history: bool = False,
    *,
    engine_info: str | None = None,
    rewriter: DataRewriter | None = None,
    now_ms: Callable[[], int] | None = None,
    storage: Storage | None = None,
) -> int:
    """Drop `feature_name` from the table's protocol; returns the version of the drop commit.

    `storage`: the table's (an engine's, carrying the table's own store settings)."""
    ctx = _Context(table_root, engine_info, rewriter, now_ms or (lambda: int(time.time() * 1000)), storage)
    snapshot = ctx.snapshot()
    snapshot.protocol.check_writable()
    feature = resolve_removable(snapshot.protocol, feature_name, truncate_history)
    if truncate_history:
        return _drop_with_history_truncation(ctx, feature)
    return _drop_with_checkpoint_protection(ctx, feature)


def _drop_with_checkpoint_protection(ctx: _Context, feature: Removable) -> int:
    feature.pre_downgrade(ctx)
    if feature.history_protection:
        for _ in range(BARRIER_CHECKPOINTS):
            _empty_commit_and_checkpoint(ctx)
    version = _commit_downgrade(ctx, feature, truncate_history=False, protect=feature.history_protection)
    if feature.history_protection:
        write_checkpoint(ctx.snapshot(version))  # a protected checkpoint
    return version


def _drop_with_history_truncation(ctx: _Context, feature: Removable) -> int:
    changed = feature.pre_downgrade(ctx)
    if feature.history_protection:
        _empty_commit_and_checkpoint(ctx)
        if changed:
            raise _wait_for_retention(ctx.snapshot(), feature, "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD")
        snapshot = ctx.snapshot()
        _truncate_history(ctx, snapshot)
        if _history_uses(ctx.snapshot(), feature):
            raise _wait_for_retention(snapshot, feature, "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST")
    return _commit_downgrade(ctx, feature, truncate_history=True, protect=False)


def _wait_for_retention(snapshot: Snapshot, feature: Removable, error_class: str) -> DeltaTableFeatureError:
    conf = snapshot.metadata.configuration
    log_retention = conf.get(LOG_RETENTION_KEY, DEFAULT_LOG_RETENTION)
    truncate = conf.get(TRUNCATE_RETENTION_KEY, DEFAULT_TRUNCATE_RETENTION)
    tail = (f"The retention period for historical versions is currently configured as {LOG_RETENTION_KEY}="
            f"{log_retention}. Alternatively, please wait for the TRUNCATE HISTORY retention period to expire "
            f"({truncate}) and then run: ALTER TABLE table_name DROP FEATURE feature_name TRUNCATE HISTORY")
    if error_class == "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD":
        return DeltaTableFeatureError(
            f"[{error_class}] Dropping {feature.name} was partially successful. The feature is now no longer used in "
            "the current version of the table. However, the feature is still present in historical versions of the "
            "table. The table feature cannot be dropped from the table protocol until these historical versions "
            "have expired. To drop the table feature from the protocol, please wait for the historical versions to "
            f"expire, and then repeat this command. {tail}")
    return DeltaTableFeatureError(
        f"[{error_class}] Cannot drop {feature.name} because the Delta log contains historical versions that use "
        f"the feature. Please wait until the history retention period ({LOG_RETENTION_KEY}={log_retention}) has "
        f"passed since the feature was last active. Alternatively, please wait for the TRUNCATE HISTORY retention "
        f"period to expire ({truncate}) and then run: ALTER TABLE table_name DROP FEATURE feature_name "
        "TRUNCATE HISTORY")


def _empty_commit_and_checkpoint(ctx: _Context) -> None:
    snapshot = ctx.snapshot()
    version = ctx.transaction(snapshot).commit([], Operation("Empty Commit"), data_change=False)
    write_checkpoint(ctx.snapshot(version))


def _truncate_history(ctx: _Context, snapshot: Snapshot) -> None:
    retention = interval_property_ms(snapshot.metadata.configuration, TRUNCATE_RETENTION_KEY,
                                     DEFAULT_TRUNCATE_RETENTION)
    cleanup_expired_logs(snapshot, now_ms=ctx.now_ms(), retention_ms=retention, granularity_ms=_MINUTE_MS)


def _history_before_protection_truncated(snapshot: Snapshot) -> bool:
    """No commit before the protected version is left, and a checkpoint at or after it exists."""
    raw = snapshot.metadata.configuration.get(PROTECTION_VERSION_KEY)
    if raw is None or "checkpointProtection" not in pu.all_features(snapshot.protocol):
        return True
    protected = int(raw)
    if protected <= 0:
        return True
    listing = list_log(snapshot.storage, snapshot.table_root, 0)
    earliest_checkpoint = min(listing.checkpoints, default=None)
    return (earliest_checkpoint is not None and earliest_checkpoint >= protected
            and not any(v < protected for v in listing.commits))


def _history_uses(snapshot: Snapshot, feature: Removable) -> bool:
    """Does any retained version use the feature (the earliest checkpoint's state, every commit file)?"""
    listing = list_log(snapshot.storage, snapshot.table_root, 0)
    if listing.checkpoints:
        earliest = min(listing.checkpoints)
        if any(feature.checkpoint_uses(c.kind) for c in listing.checkpoints[earliest]):
            return True
        old = load_snapshot(snapshot.table_root, version=earliest, storage=snapshot.storage)
        if feature.metadata_uses(old.metadata):
            return True
        files = old.files()
        if "deletion_vector" in files.column_names and any(
                feature.file_uses({"deletionVector": dv}) for dv in files.column("deletion_vector").to_pylist()):
            return True
    for version, info in sorted(listing.commits.items()):
        if version > snapshot.version:
            break
        for line in info.read(snapshot.storage).splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "metaData" in action and feature.metadata_uses(Metadata.from_dict(action["metaData"])):
                return True
            for kind in ("add", "remove", "cdc"):
                if kind in action and feature.file_uses(action[kind]):
                    return True
            if ("checkpointMetadata" in action or "sidecar" in action) and feature.checkpoint_uses("v2"):
                return True
    return False


def _downgraded_protocol(protocol: Protocol, feature: Removable, protect: bool) -> Protocol:
    """delta-spark's `removeFeature` (plus checkpointProtection for a fast drop), normalized."""
    names = set(pu.all_features(protocol)) - {feature.name}
    if protect:
        names.add("checkpointProtection")
    reader = pu.min_versions(names, protocol)[0]
    return pu.normalized(pu.features_protocol(max(reader, 1), names, protocol))


def _commit_downgrade(ctx: _Context, feature: Removable, truncate_history: bool, protect: bool) -> int:
    """The drop commit; a concurrent commit makes it start over from the new version, invariants re-checked."""
    for attempt in range(1, _COMMIT_ATTEMPTS + 1):
        snapshot = ctx.snapshot()
        if not feature.clean(snapshot):
            raise DeltaTableFeatureError(
                "[DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL] Cannot drop feature because a concurrent "
                "transaction modified the table. Please try the operation again.")
        conf = {k: v for k, v in snapshot.metadata.configuration.items() if k not in feature.properties_at_downgrade}
        if protect:
            conf[PROTECTION_VERSION_KEY] = str(snapshot.version + 1)
        metadata = replace(snapshot.metadata, configuration=conf)
        txn = ctx.transaction(snapshot)
        txn.read_whole_table()  # any concurrent change makes us re-check the invariants
        txn.downgrade_protocol(_downgraded_protocol(snapshot.protocol, feature, protect), metadata)
        for domain in feature.domains_at_downgrade:
            if domain in snapshot.domain_metadata:
                txn.add_domain_metadata(domain, snapshot.domain_metadata[domain], removed=True)
        operation = Operation("DROP FEATURE", {"featureName": feature.name, "truncateHistory": truncate_history})
        try:
            return txn.commit([], operation)
        except DeltaConcurrentModificationException:
            if attempt == _COMMIT_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


__all__ = ["PROTECTION_VERSION_KEY", "REMOVABLE", "DataRewriter", "drop_feature", "resolve_removable"]
