"""Schema evolution for MERGE (withSchemaEvolution() or spark.databricks.delta.schema.autoMerge.enabled).

As delta-spark does it: the top-level source columns that `*` or SET/VALUES assign are appended
to the target schema, and with type widening a target column a source column of a wider type
fills takes that type. Kept apart from planning because it decides the schema every other
step resolves against.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from pydelta.protocol import type_widening
from pydelta.protocol.actions import Metadata
from pydelta.protocol.schema import StructType, column_mapping_mode, parse_schema
from pydelta.protocol.schema_evolution import as_nullable, assign_column_mapping
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.dml.merge_clauses import MergeClause
from pydelta.spark.dml.update import split_name
from pydelta.txn.transaction import OptimisticTransaction

AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"


def schema_evolution_enabled(spark: SparkSession, requested: bool) -> bool:
    """withSchemaEvolution() on the builder, or the session's autoMerge conf."""
    return requested or str(spark.conf.get(AUTO_MERGE_CONF, "false")).strip().lower() == "true"


def source_fields(source: DataFrame) -> dict[str, Any]:
    """lower-case name -> Spark StructField of the source."""
    return {f.name.lower(): f for f in source.schema.fields}


def evolve_target_schema(txn: OptimisticTransaction, read_md: Metadata, source: DataFrame,
                         clauses: list[MergeClause], alias: str | None) -> None:
    """Stage in `txn` the table metadata with the evolved schema, when the clauses change it
    (new columns get column-mapping ids and physical names when the table maps columns)."""
    schema = read_md.schema
    widen = type_widening.enabled(read_md.configuration)
    out_schema = evolved_schema(schema, source, clauses, alias, widen)
    if out_schema != schema:
        config = dict(read_md.configuration)
        if column_mapping_mode(config) != "none":
            out_schema, config = assign_column_mapping(out_schema, config)
        txn.update_metadata(replace(read_md, schema_string=out_schema.to_json(), configuration=config))


def evolved_schema(schema: StructType, source: DataFrame, clauses: list[MergeClause], alias: str | None,
                   widen: bool = False) -> StructType:
    """delta-spark's schema evolution for MERGE: source columns that `*` or SET/VALUES assign, appended.

    `widen` (type widening enabled): a target column that a `*` clause fills from a source
    column of a wider type takes that type (recorded in delta.typeChanges).
    """
    from pyspark.sql.types import StructType as SparkStructType

    if widen:
        schema = _widened(schema, source, clauses, alias)
    existing = {f.name.lower() for f in schema.fields}
    src = source_fields(source)
    wanted: list[Any] = []

    def want(spark_field: Any) -> None:
        if spark_field.name.lower() not in existing and all(w.name.lower() != spark_field.name.lower() for w in wanted):
            wanted.append(spark_field)

    for c in clauses:
        if c.action == "delete" or c.kind == "notMatchedBySource":
            continue
        if c.star:
            for f in source.schema.fields:
                want(f)
        else:
            for key in c.assignments or {}:
                parts = split_name(key)
                if len(parts) > 1 and alias and parts[0].lower() == alias.lower():
                    parts = parts[1:]
                if len(parts) == 1 and parts[0].lower() not in existing and parts[0].lower() in src:
                    want(src[parts[0].lower()])
    if not wanted:
        return schema
    added = as_nullable(parse_schema(SparkStructType(wanted).json()))
    return StructType(tuple(schema.fields) + tuple(added.fields))


def _widened(schema: StructType, source: DataFrame, clauses: list[MergeClause], alias: str | None) -> StructType:
    """`schema` with each column a clause fills from a wider-typed source column widened to that type."""
    source_types = {f.name.lower(): f for f in parse_schema(source.schema.json()).fields}
    assigned = _assigned_from_source(clauses, alias, schema, source_types)
    fields = []
    for f in schema.fields:
        sf = assigned.get(f.name.lower())
        if sf is not None and sf.type != f.type and type_widening.allowed_by_schema_evolution(f.type, sf.type):
            f = type_widening.record_evolution(f, sf.type)
        fields.append(f)
    return StructType(tuple(fields))


def _assigned_from_source(clauses: list[MergeClause], alias: str | None, schema: StructType,
                          source_fields: dict[str, Any]) -> dict[str, Any]:
    """target column (lower case) -> the source field an UPDATE/INSERT assigns to it as is.

    `*` assigns every same-named source column; an explicit `t.c = s.x` counts when its
    value names a source column directly (delta-spark widens both kinds).
    """
    targets = {f.name.lower() for f in schema.fields}
    out: dict[str, Any] = {}
    for c in clauses:
        if c.action == "delete" or c.kind == "notMatchedBySource":
            continue
        if c.star:
            out.update({k: v for k, v in source_fields.items() if k in targets})
            continue
        for key, value in (c.assignments or {}).items():
            value_parts = _column_reference(value)
            if value_parts is None:
                continue
            key_parts = split_name(key)
            if len(key_parts) > 1 and alias and key_parts[0].lower() == alias.lower():
                key_parts = key_parts[1:]
            if len(value_parts) == 2 and alias and value_parts[0].lower() == alias.lower():
                continue  # a target column
            if len(key_parts) == 1 and key_parts[0].lower() in targets and len(value_parts) in (1, 2):
                field = source_fields.get(value_parts[-1].lower())
                if field is not None:
                    out[key_parts[0].lower()] = field
    return out


def _column_reference(value: Any) -> list[str] | None:
    """The name parts of a value that is a bare column reference (`s.x`, `x`), else None."""
    from pydelta.spark.base import jplan

    jc = getattr(value, "_jc", None)
    if jc is None:
        return None
    try:
        node = jc.node()  # Spark 4: the Column's ColumnNode
    except Exception:  # noqa: BLE001 - no such node API: not a reference we can see
        return None
    kind = jplan.kind(node)
    if kind == "UnresolvedAttribute":
        return [str(p) for p in jplan.seq(node.nameParts())]
    if kind == "SqlExpression":  # F.expr / a string value: a reference only if it is just a (dotted) name
        text = str(node.expression()).strip()
        if re.fullmatch(r"(`[^`]+`|[A-Za-z_]\w*)(\.(`[^`]+`|[A-Za-z_]\w*))?", text):
            return split_name(text)
    return None
