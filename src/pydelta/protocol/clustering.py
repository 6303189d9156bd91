"""Liquid clustering (PROTOCOL.md "Clustered Table"): the `clustering` writer feature.

The clustering columns live in the `delta.clustering` domain metadata as physical column
paths (`{"clusteringColumns":[["a"],["s","b"]]}`, as delta-spark writes them; a flat list
of names is read too). Files a clustering run wrote carry `clusteringProvider: "liquid"`.
delta-spark's checks: at most 4 columns, no partitioning, the columns must exist, have an
orderable type and statistics (inside `delta.dataSkippingNumIndexedCols` or named by
`delta.dataSkippingStatsColumns`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pydelta.errors import DeltaAnalysisError
from pydelta.protocol.schema import (
    ArrayType,
    MapType,
    StructField,
    StructType,
    column_mapping_mode,
    is_geospatial,
    physical_name,
)

DOMAIN = "delta.clustering"
PROVIDER = "liquid"
FEATURE = "clustering"
FEATURE_PROPERTY = f"delta.feature.{FEATURE}"  # a new table asks for the feature with it
MAX_COLUMNS = 4


def columns_of(domains: Mapping[str, str]) -> list[list[str]] | None:
    """The physical clustering column paths of a table, or None when it is not clustered."""
    raw = domains.get(DOMAIN)
    if raw is None:
        return None
    columns = json.loads(raw).get("clusteringColumns", [])
    return [c if isinstance(c, list) else [c] for c in columns]


def domain_configuration(columns: Sequence[Sequence[str]]) -> str:
    return json.dumps({"clusteringColumns": [list(c) for c in columns]}, separators=(",", ":"))


def _field_path(schema: StructType, name: str) -> list[StructField]:
    fields: list[StructField] = []
    current: StructType | None = schema
    for part in name.split("."):
        found = None
        if current is not None:
            found = next((f for f in current.fields if f.name.lower() == part.lower()), None)
        if found is None:
            raise DeltaAnalysisError(f"[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] Couldn't find clustering column {name} "
                                     f"in the table schema {[f.name for f in schema.fields]}")
        fields.append(found)
        current = found.type if isinstance(found.type, StructType) else None
    return fields


def _has_stats(schema: StructType, configuration: Mapping[str, str], path: list[StructField]) -> bool:
    """delta-spark's stats column rule: named by dataSkippingStatsColumns, or among the first N leaves."""
    listed = configuration.get("delta.dataSkippingStatsColumns")
    logical = ".".join(f.name for f in path).lower()
    if listed is not None:
        return any(logical == c.strip().strip("`").lower() or logical.startswith(c.strip().strip("`").lower() + ".")
                   for c in listed.split(","))
    limit = int(configuration.get("delta.dataSkippingNumIndexedCols", "32"))
    if limit < 0:
        return True
    leaves: list[str] = []

    def walk(struct: StructType, prefix: str) -> None:
        for f in struct.fields:
            if isinstance(f.type, StructType):
                walk(f.type, prefix + f.name + ".")
            else:
                leaves.append((prefix + f.name).lower())

    walk(schema, "")
    return logical in leaves[:limit]


def resolve(schema: StructType, partition_columns: Sequence[str], configuration: Mapping[str, str],
            names: Sequence[str]) -> list[list[str]]:
    """Clustering column names -> physical paths for the domain, after delta-spark's checks."""
    if partition_columns and names:
        raise DeltaAnalysisError("[DELTA_CLUSTER_BY_WITH_PARTITIONED_BY] Clustering and partitioning cannot both be "
                                 "specified. Please remove PARTITIONED BY if you want to create a Delta table with "
                                 "clustering.")
    if len(names) > MAX_COLUMNS:
        raise DeltaAnalysisError(f"[DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS] CLUSTER BY supports up to {MAX_COLUMNS} "
                                 f"clustering columns, but the table has {len(names)} clustering columns.")
    mapped = column_mapping_mode(configuration) != "none"
    out = []
    for name in names:
        path = _field_path(schema, name)
        leaf = path[-1]
        if isinstance(leaf.type, (StructType, ArrayType, MapType)) or is_geospatial(leaf.type) or getattr(
                leaf.type, "name", "") in ("binary", "boolean", "variant"):
            raise DeltaAnalysisError(f"[DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED] CLUSTER BY is not supported "
                                     f"because the following column(s): {name} : "
                                     f"{getattr(leaf.type, 'name', leaf.type)}"
                                     " don't support data skipping.")
        if not _has_stats(schema, configuration, path):
            raise DeltaAnalysisError(f"[DELTA_CLUSTERING_COLUMN_MISSING_STATS] Liquid clustering requires clustering "
                                     f"columns to have stats. Couldn't find clustering column(s) '{name}' in stats "
                                     "schema.")
        out.append([physical_name(f) if mapped else f.name for f in path])
    return out


def logical_names(schema: StructType, configuration: Mapping[str, str], physical: Sequence[Sequence[str]]) -> list[str]:
    """Physical clustering paths back to dotted logical names (for OPTIMIZE and DESCRIBE); a path
    not in the schema stays as it is."""
    mapped = column_mapping_mode(configuration) != "none"
    return [".".join(logical_path(schema, mapped, path) or path) for path in physical]


def logical_path(schema: StructType, mapped: bool, path: Sequence[str]) -> list[str] | None:
    """The logical name parts of one physical column path (`mapped`: the table uses column
    mapping, so the path holds physical names), or None when the schema has no such column."""
    current: StructType | None = schema
    parts = []
    for part in path:
        match = None
        if current is not None:
            match = next((f for f in current.fields if (physical_name(f) if mapped else f.name) == part), None)
        if match is None:
            return None
        parts.append(match.name)
        current = match.type if isinstance(match.type, StructType) else None
    return parts
