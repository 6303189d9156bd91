"""UPDATE a Delta table, copy-on-write, as delta-spark's UpdateCommand does it.

1. No condition, or a condition on partition columns only: every file of the
   matching partitions is rewritten with the new values (no scan for matches).
2. Otherwise: data skipping picks candidate files, one Spark job finds the
   files holding rows that match (file names and counts only), a second job
   rewrites those files with `CASE WHEN condition THEN new ELSE old END` per
   assigned column. Constraints are checked on every rewritten row.

With delta.enableDeletionVectors, case 2 writes only the updated rows to new files and
marks their old versions deleted in deletion vectors (`deletion_vectors.py`).
With delta.enableChangeDataFeed, the updated rows are also written to
`_change_data/` as update_preimage / update_postimage pairs.
"""

from __future__ import annotations

import time
from typing import Any

from pydelta.errors import DeltaAnalysisError, DeltaIllegalArgumentError
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.action_types import Action
from pydelta.protocol.schema import StructType, quote_identifier, quote_path, split_identifier
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.dml.commit import (
    PreparedCommit,
    check_dml_supported,
    discard_files,
    elapsed_ms,
    new_transaction,
    transaction_metadata,
)
from pydelta.spark.dml.deletion_vectors import DvDelete, mark_deleted, matching_rows, persistent_dvs
from pydelta.spark.dml.files import (
    add_rows,
    candidate_files,
    cdf_enabled,
    count_dvs,
    files_with_matches,
    remove_actions,
    select_files,
    total_bytes,
    with_change_type,
    write_cdc,
    write_rows,
)
from pydelta.spark.read.conditions import READ_ALL, analysis_error, analyze, column_mapping, is_partition_only
from pydelta.spark.read.scan import ROW_ID_COL, ROW_VERSION_COL, build_dataframe, spark_schema
from pydelta.spark.write.dataframe import files_matching_partitions
from pydelta.txn.commit_info import Operation
from pydelta.txn.row_tracking import check_row_ids_preserved, materializes_row_ids

__all__ = ["prepare_update", "resolve_assignments", "split_name", "update"]


def update(table: Any, condition: Any = None, set: Any = None) -> None:  # noqa: A002
    """`DeltaTable.update(condition, set)` / `updateExpr`: returns None like delta-spark's Python API."""
    assignments = column_mapping(set, "'set'")
    prepared = prepare_update(table._spark, table.snapshot(), condition, assignments,
                              alias=getattr(table, "_alias", None))
    prepared.commit()
    return None


# ---- SET column resolution -------------------------------------------------------------------------


def split_name(name: str) -> list[str]:
    """`a.b`, `` `a.b`.c `` -> name parts (backticks quote dots), as delta-spark parses SET keys."""
    return [p.strip() for p in split_identifier(name)]


def resolve_assignments(
    schema: StructType, assignments: dict[str, Any], alias: str | None, current: Any, *, clause: str = "UPDATE"
) -> dict[str, Any]:
    """{target column: new value Column} for top-level columns; nested keys become `withField`s.

    `current(name)` gives the Column holding the current value of top-level column `name`.
    """
    by_lower = {f.name.lower(): f for f in schema.fields}
    top: dict[str, Any] = {}
    nested: dict[str, list[tuple[list[str], Any]]] = {}
    seen: list[str] = []
    for key, value in assignments.items():
        try:
            parts = split_name(key)
        except DeltaIllegalArgumentError as e:
            raise DeltaAnalysisError(f"[INVALID_ATTRIBUTE_NAME_SYNTAX] SET column {key!r}: {e}") from None
        if len(parts) > 1 and alias and parts[0].lower() == alias.lower() and parts[0].lower() not in by_lower:
            parts = parts[1:]
        field = by_lower.get(parts[0].lower())
        if field is None or any(not p for p in parts):
            cols = ", ".join(quote_identifier(f.name) for f in schema.fields)
            raise DeltaAnalysisError(
                f"[DELTA_MISSING_SET_COLUMN] SET column {quote_identifier(key)} not found given columns: [{cols}]."
            )
        canonical = ".".join([field.name, *parts[1:]]).lower()
        clash = [s for s in seen if s == canonical or s.startswith(canonical + ".") or canonical.startswith(s + ".")]
        if clash:
            raise DeltaAnalysisError(
                f"[DELTA_CONFLICT_SET_COLUMN] There is a conflict from these SET columns: [{quote_identifier(key)}, "
                f"{', '.join(quote_identifier(c) for c in clash)}]."
            )
        seen.append(canonical)
        if len(parts) == 1:
            top[field.name] = value
        else:
            if not isinstance(field.type, StructType):
                raise DeltaAnalysisError(
                    f"[DELTA_MISSING_SET_COLUMN] SET column {quote_identifier(key)} not found: "
                    f"{field.name} is not a struct"
                )
            nested.setdefault(field.name, []).append((parts[1:], value))
    for name, updates in nested.items():
        col = current(name)
        for path, value in updates:
            col = col.withField(quote_path(path), value)
        top[name] = col
    return top


def typed_values(df: DataFrame, schema: StructType, values: dict[str, Any], what: str) -> dict[str, Any]:
    """Each value analyzed against `df` and cast to its column's table type (errors are DeltaAnalysisError)."""
    from pydelta.spark.write.conform import _conform_nested

    if not values:
        return {}
    target = spark_schema(schema)
    names = list(values)
    try:
        types = [f.dataType for f in df.select(*[values[n].alias(f"v{i}") for i, n in enumerate(names)]).schema.fields]
    except Exception:
        types = []
        for name in names:  # find the culprit for the message
            try:
                types.append(df.select(values[name].alias("v")).schema["v"].dataType)
            except Exception as e:
                raise analysis_error(f"cannot resolve the {what} value for column {name}", e) from None
    out = {}
    for name, dtype in zip(names, types, strict=True):
        wanted = target[name].dataType
        out[name] = values[name] if dtype == wanted else _conform_nested(dtype, wanted, values[name], name)
    return out


# ---- the command ------------------------------------------------------------------------------------


def prepare_update(
    spark: SparkSession, snapshot: Snapshot, condition: Any, assignments: dict[str, Any], *, alias: str | None = None
) -> PreparedCommit:
    """Plan the update and write the rewritten files; nothing is committed yet."""
    from pyspark.sql import functions as F

    started = time.monotonic()
    check_dml_supported(snapshot, "UPDATE")
    check_row_ids_preserved(snapshot, "UPDATE")
    txn = new_transaction(spark, snapshot)
    metadata = transaction_metadata(txn)
    schema = metadata.schema
    files = snapshot.files()
    root = snapshot.table_root

    base = build_dataframe(spark, snapshot, files.slice(0, 0))
    if alias:
        base = base.alias(alias)
    cond = analyze(base, condition) if condition is not None else None
    values = resolve_assignments(schema, assignments, alias, lambda n: F.col(quote_identifier(n)))
    from pydelta.protocol.identity import identity_columns

    for spec in identity_columns(schema):
        if spec.name in values and not spec.allow_explicit_insert:
            raise DeltaAnalysisError(f"[DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED] UPDATE on IDENTITY column "
                                     f"{spec.name} is not supported.")
    values = typed_values(base, schema, values, "SET")

    keep_ids = materializes_row_ids(metadata)

    def updated(df: DataFrame, row_ids: bool = False) -> Any:
        hit = F.coalesce(cond.column, F.lit(False)) if cond is not None else None
        columns = []
        if row_ids:  # an updated row keeps its ID; its commit version becomes this commit's
            version = F.col(ROW_VERSION_COL)
            columns += [F.col(ROW_ID_COL), (F.when(hit, F.lit(None)).otherwise(version) if hit is not None
                                            else F.lit(None).cast("long")).alias(ROW_VERSION_COL)]
        for f in schema.fields:
            if f.name in values:
                new = values[f.name]
                kept = F.when(hit, new).otherwise(F.col(quote_identifier(f.name))) if hit is not None else new
                columns.append(kept.alias(f.name))
            elif f.metadata.get("delta.generationExpression"):
                continue  # recomputed from the new values by conform()
            else:
                columns.append(F.col(quote_identifier(f.name)))
        return df.select(*columns)

    try:
        _ = updated(base).schema  # analysis errors surface before any job runs
    except DeltaAnalysisError:
        raise
    except Exception as e:
        raise analysis_error("cannot resolve the UPDATE", e) from None

    scan_ms = rewrite_ms = 0
    updated_rows: int | None = None
    to_rewrite = files.slice(0, 0)
    dv_rows: dict[str, Any] = {}
    if cond is None or is_partition_only(spark, cond, snapshot.partition_columns):
        # Every row of the matching files is updated: no scan for matches.
        if cond is None:
            to_rewrite = files
            txn.read_predicate(READ_ALL)
        else:
            to_rewrite = files_matching_partitions(spark, snapshot, files, cond.column, alias)
            txn.read_predicate(cond.predicate())
        txn.read_files(to_rewrite.column("path").to_pylist())
    elif persistent_dvs(spark, metadata, snapshot.protocol, "update"):
        # Deletion vectors: the old versions of the updated rows are marked deleted in
        # their files, and only the updated rows are written, to new files.
        candidates = candidate_files(snapshot, files, txn, cond.predicate())
        dv_rows = matching_rows(spark, snapshot, candidates, cond.column, alias) if candidates.num_rows else {}
        if dv_rows:
            to_rewrite = select_files(snapshot, candidates, dv_rows)
        updated_rows = sum(int(r.size) for r in dv_rows.values())
    else:
        predicate = cond.predicate()
        candidates, counts = files_with_matches(spark, snapshot, files, txn, predicate, cond.column, alias)
        if counts:
            to_rewrite = select_files(snapshot, candidates, counts)
        updated_rows = sum(counts.values())
    scan_ms = elapsed_ms(started)

    added: list[Action] = []
    cdc: list[Action] = []
    dv_update: DvDelete | None = None
    if to_rewrite.num_rows:
        rewrite_started = time.monotonic()
        data = build_dataframe(spark, snapshot, to_rewrite, row_ids=keep_ids)
        if alias:
            data = data.alias(alias)
        if dv_rows and cond is not None:  # (rows found by the condition) only the updated rows are written
            data = data.filter(F.coalesce(cond.column, F.lit(False)))
        added = write_rows(spark, updated(data, keep_ids), snapshot, metadata, row_ids=keep_ids)
        if cdf_enabled(metadata):
            hit_rows = data.filter(F.coalesce(cond.column, F.lit(False))) if cond is not None else data
            changes = with_change_type(hit_rows, schema, "update_preimage").unionByName(
                with_change_type(updated(hit_rows), schema, "update_postimage"))
            try:
                cdc = write_cdc(spark, changes, snapshot, metadata)
            except BaseException:
                discard_files(snapshot.storage, root, added)
                raise
        if dv_rows:
            try:
                dv_update = mark_deleted(snapshot, to_rewrite, dv_rows)
            except BaseException:
                discard_files(snapshot.storage, root, added + cdc)
                raise
        rewrite_ms = elapsed_ms(rewrite_started)
    written = add_rows([a["add"] for a in added])
    if updated_rows is None:
        updated_rows = written  # whole files rewritten: every row was updated
    copied_rows = written - updated_rows

    actions = (remove_actions(to_rewrite) + added + cdc) if to_rewrite.num_rows else []
    if dv_update is not None:
        actions = dv_update.actions + added + cdc
    metrics: dict[str, Any] = {
        "numAddedFiles": len(added),
        "numRemovedFiles": to_rewrite.num_rows if dv_update is None else dv_update.removed_files,
        "numAddedChangeFiles": len(cdc),
        "numDeletionVectorsAdded": 0 if dv_update is None else dv_update.dvs_added,
        "numDeletionVectorsRemoved": count_dvs(to_rewrite) if dv_update is None else dv_update.dvs_removed,
        "numDeletionVectorsUpdated": 0 if dv_update is None else dv_update.dvs_updated,
        "numUpdatedRows": updated_rows,
        "numCopiedRows": copied_rows,
        "executionTimeMs": elapsed_ms(started),
        "scanTimeMs": scan_ms,
        "rewriteTimeMs": rewrite_ms,
        "numRemovedBytes": total_bytes(to_rewrite) if dv_update is None else dv_update.removed_bytes,
        "numAddedBytes": sum(a["add"]["size"] for a in added),
    }
    return PreparedCommit(txn, actions, Operation.update(cond.sql if cond is not None else None), metrics,
                          started=started, result=updated_rows, spark=spark)
