"""ALTER TABLE ... RENAME COLUMN and DROP COLUMN(S): metadata-only, on column-mapped tables.

With column mapping (`delta.columnMapping.mode` = name or id) data files hold physical
names, so a rename changes only the logical name in the schema, and a drop only removes
the field: no file is rewritten, and a column added later under a dropped name gets a new
id and physical name (it never sees the old data). As in delta-spark: both need column
mapping; partition columns may be renamed (the metadata's partition list follows) but not
dropped; a column used by a CHECK constraint or a generated column can be neither.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from pydelta.errors import DeltaAnalysisError
from pydelta.protocol.actions import Metadata
from pydelta.protocol.properties import CONSTRAINT_PREFIX
from pydelta.protocol.schema import StructField, StructType, column_mapping_mode, quote_path
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.engine import table_snapshot
from pydelta.spark.ddl.schema_edits import (
    _attribute_name,
    _case_sensitive,
    _find,
    _json,
    _replace_at,
    _resolve,
    commit_metadata,
)
from pydelta.txn.commit_info import Operation

_ADVICE = ("Please enable Column Mapping on your Delta table with mapping mode 'name'. You can use the following "
           "command: ALTER TABLE table_name SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_NAME = re.compile(r"`((?:[^`]|``)+)`|([A-Za-z_][A-Za-z0-9_]*)")
STATS_COLUMNS_KEY = "delta.dataSkippingStatsColumns"


def _referenced_names(expression: str) -> set[str]:
    """Lower-cased identifiers an SQL expression mentions (string literals left out)."""
    text = _STRING_LITERAL.sub(" ", expression)
    return {(m.group(1) or m.group(2)).replace("``", "`").lower() for m in _NAME.finditer(text)}


def check_not_referenced(metadata: Metadata, full: Sequence[str]) -> None:
    """delta-spark's checkDependentExpressions: constraints and generated columns keep their columns."""
    name = full[0].lower()
    constraints = sorted(f"{k[len(CONSTRAINT_PREFIX):]} -> {v}" for k, v in metadata.configuration.items()
                         if k.startswith(CONSTRAINT_PREFIX) and name in _referenced_names(v))
    if constraints:
        raise DeltaAnalysisError(f"[DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE] Cannot alter column "
                                 f"{_attribute_name(full)} because this column is referenced by the following check "
                                 f"constraint(s): {', '.join(constraints)}")
    generated = sorted(f"{f.name} -> {f.metadata['delta.generationExpression']}" for f in metadata.schema.fields
                       if "delta.generationExpression" in f.metadata
                       and name in _referenced_names(str(f.metadata["delta.generationExpression"])))
    if generated:
        raise DeltaAnalysisError(f"[DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE] Cannot alter column "
                                 f"{_attribute_name(full)} because this column is referenced by the following "
                                 f"generated column(s): {', '.join(generated)}")


def _stats_columns(configuration: dict[str, str], old: str, new: str | None) -> dict[str, str]:
    """`delta.dataSkippingStatsColumns` with a top-level column renamed (or dropped: None)."""
    raw = configuration.get(STATS_COLUMNS_KEY)
    if raw is None:
        return configuration
    kept = []
    for item in (p.strip() for p in raw.split(",") if p.strip()):
        head, _, rest = item.partition(".")
        if head.strip("`").lower() != old.lower():
            kept.append(item)
        elif new is not None:
            kept.append(quote_path([new]) + ("." + rest if rest else ""))
    out = dict(configuration)
    if kept:
        out[STATS_COLUMNS_KEY] = ",".join(kept)
    else:
        out.pop(STATS_COLUMNS_KEY)
    return out


def rename_column(
    spark: SparkSession, path: str, column: Sequence[str], new_name: str, *, display: str | None = None
) -> int:
    """ALTER TABLE ... RENAME COLUMN a.b TO c; returns the committed version."""
    snapshot = table_snapshot(spark, path)
    metadata = snapshot.metadata
    if column_mapping_mode(metadata.configuration) == "none":
        raise DeltaAnalysisError(f"[DELTA_UNSUPPORTED_RENAME_COLUMN] Column rename is not supported for your Delta "
                                 f"table. {_ADVICE}")
    case_sensitive = _case_sensitive(spark)
    full, _ = _resolve(metadata.schema, column, case_sensitive)
    parent = full[:-1]
    _, parent_type = _resolve(metadata.schema, parent, case_sensitive)
    if not isinstance(parent_type, StructType):
        raise DeltaAnalysisError(f"[DELTA_UNSUPPORTED_RENAME_COLUMN] Cannot rename {quote_path(full)}: array "
                                 "elements and map keys/values have no name of their own.")
    clash = _find(parent_type, new_name, case_sensitive)
    if clash is not None and clash.name != full[-1]:
        raise DeltaAnalysisError(f"[DELTA_DUPLICATE_COLUMNS_FOUND] Found duplicate column(s) in the metadata update: "
                                 f"{_attribute_name([*parent, new_name]).lower()}.")
    if not parent:
        check_not_referenced(metadata, full)

    def renamed(struct: StructType) -> StructType:
        return StructType(tuple(StructField(new_name, f.type, f.nullable, f.metadata) if f.name == full[-1] else f
                                for f in struct.fields))

    schema = _replace_at(metadata.schema, parent, renamed)
    configuration = dict(metadata.configuration)
    partitions = tuple(metadata.partition_columns)
    if not parent:
        partitions = tuple(new_name if c == full[-1] else c for c in partitions)
        configuration = _stats_columns(configuration, full[-1], new_name)
    new = replace(metadata, schema_string=schema.to_json(), partition_columns=partitions,
                  configuration=configuration)
    operation = Operation("RENAME COLUMN", {"oldColumnPath": _attribute_name(full),
                                            "newColumnPath": _attribute_name([*parent, new_name])})
    return commit_metadata(spark, snapshot, new, operation)


def drop_columns(spark: SparkSession, path: str, columns: Sequence[Sequence[str]], if_exists: bool = False, *,
                 display: str | None = None) -> int | None:
    """ALTER TABLE ... DROP COLUMN(S); returns the committed version (None: IF EXISTS found none)."""
    snapshot = table_snapshot(spark, path)
    metadata = snapshot.metadata
    if column_mapping_mode(metadata.configuration) == "none":
        raise DeltaAnalysisError(f"[DELTA_UNSUPPORTED_DROP_COLUMN] DROP COLUMN is not supported for your Delta "
                                 f"table. {_ADVICE}")
    case_sensitive = _case_sensitive(spark)
    schema: StructType = metadata.schema
    configuration = dict(metadata.configuration)
    dropped: list[list[str]] = []
    for column in columns:
        try:
            full, _ = _resolve(schema, column, case_sensitive)
        except DeltaAnalysisError:
            if if_exists:
                continue
            raise
        parent = full[:-1]
        _, parent_type = _resolve(schema, parent, case_sensitive)
        if not isinstance(parent_type, StructType):
            raise DeltaAnalysisError(f"[DELTA_UNSUPPORTED_DROP_COLUMN] Cannot drop {quote_path(full)}: array "
                                     "elements and map keys/values cannot be dropped.")
        if not parent:
            if full[-1] in metadata.partition_columns:
                raise DeltaAnalysisError(f"[DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN] Dropping partition columns "
                                         f"({full[-1]}) is not allowed.")
            check_not_referenced(metadata, full)
            configuration = _stats_columns(configuration, full[-1], None)
        if len(parent_type.fields) == 1:
            raise DeltaAnalysisError(f"[DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA] Cannot drop column from a schema "
                                     f"with a single column. Schema: {parent_type.to_json()}")
        schema = _replace_at(schema, parent, partial(_without_field, name=full[-1]))
        dropped.append(full)
    if not dropped:
        return None
    new = replace(metadata, schema_string=schema.to_json(), configuration=configuration)
    operation = Operation("DROP COLUMNS", {"columns": _json([_attribute_name(c) for c in dropped])})
    return commit_metadata(spark, snapshot, new, operation)


def _without_field(struct: StructType, name: str) -> StructType:
    return StructType(tuple(f for f in struct.fields if f.name != name))


__all__ = ["drop_columns", "rename_column"]
