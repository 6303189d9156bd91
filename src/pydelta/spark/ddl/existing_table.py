"""CREATE TABLE name ... LOCATION '<a Delta table>': naming a table that already exists.

delta-spark (CreateDeltaTableCommand.verifyTableMetadata) commits nothing in that case: the
name is recorded in the catalog, provided that what the statement specifies (columns,
partitioning, clustering, properties) matches the table exactly. A mismatch is refused with
delta-spark's error classes, each naming the location and both definitions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydelta.errors import DeltaAnalysisError, TableAlreadyExistsError
from pydelta.log.snapshot import Snapshot
from pydelta.protocol import clustering
from pydelta.protocol.internal_metadata import NESTED_INTERNAL_KEYS
from pydelta.protocol.schema import StructType, without_field_metadata
from pydelta.protocol.schema_diff import schema_differences
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.engine import try_table_snapshot

#: Properties delta-spark leaves out of the comparison: column mapping's internal counter and
#: the protocol settings (they become the protocol, not table properties).
_IGNORED_KEYS = ("delta.columnMapping.maxColumnId", "delta.minReaderVersion", "delta.minWriterVersion",
                 "delta.ignoreProtocolDefaults")
_IGNORED_PREFIXES = ("delta.feature.", "delta.coordinatedCommits.", "delta.managedCommit.")


def verify_definition(
    spark: SparkSession,
    snapshot: Snapshot,
    *,
    schema: StructType | None,
    partition_by: Sequence[str] | None,
    cluster_by: Sequence[str] | None,
    properties: Mapping[str, str],
) -> None:
    """Raise unless the specified definition matches the existing table (`schema` None: not given)."""
    location = _shown(snapshot.table_root)
    if schema is not None:
        existing = without_field_metadata(snapshot.schema, NESTED_INTERNAL_KEYS)
        assert isinstance(existing, StructType)
        differences = schema_differences(existing, schema)
        if differences:
            from pydelta.spark.read.scan import spark_schema

            listed = "\n".join("- " + d.replace("\n", "\n  ") for d in differences)
            raise DeltaAnalysisError(
                f"[DELTA_CREATE_TABLE_SCHEME_MISMATCH] The specified schema does not match the existing schema "
                f"at {location}.\n\n== Specified ==\n{spark_schema(schema).treeString()}\n== Existing ==\n"
                f"{spark_schema(snapshot.schema).treeString()}\n== Differences ==\n{listed}\n\n"
                "If your intention is to keep the existing schema, you can omit the\nschema from the create "
                "table command. Otherwise please ensure that\nthe schema matches.")
    if schema is not None or partition_by:
        specified = list(partition_by or [])
        if specified != list(snapshot.partition_columns):
            raise DeltaAnalysisError(
                f"[DELTA_CREATE_TABLE_WITH_DIFFERENT_PARTITIONING] The specified partitioning does not match the "
                f"existing partitioning at {location}.\n\n== Specified ==\n{', '.join(specified)}\n\n"
                f"== Existing ==\n{', '.join(snapshot.partition_columns)}\n")
        physical = clustering.columns_of(snapshot.domain_metadata)
        existing_clustering = ([] if physical is None else
                               clustering.logical_names(snapshot.schema, snapshot.configuration, physical))
        if schema is not None and list(cluster_by or []) != list(existing_clustering):
            raise DeltaAnalysisError(
                f"[DELTA_CREATE_TABLE_WITH_DIFFERENT_CLUSTERING] The specified clustering columns do not match the "
                f"existing clustering columns at {location}.\n== Specified ==\n{', '.join(cluster_by or [])}\n"
                f"== Existing ==\n{', '.join(existing_clustering)}\n")
    if properties:
        specified_props = _compared(properties)
        existing_props = _compared(snapshot.configuration)
        if specified_props != existing_props:
            raise DeltaAnalysisError(
                f"[DELTA_CREATE_TABLE_WITH_DIFFERENT_PROPERTY] The specified properties do not match the existing "
                f"properties at {location}.\n\n== Specified ==\n{_lines(specified_props)}\n\n"
                f"== Existing ==\n{_lines(existing_props)}\n")


def _compared(properties: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in properties.items()
            if k not in _IGNORED_KEYS and not k.startswith(_IGNORED_PREFIXES)}


def _lines(properties: Mapping[str, str]) -> str:
    return "\n".join(f"{k}={v}" for k, v in sorted(properties.items()))


def _shown(path: str) -> str:
    """The location as delta-spark prints it (a Hadoop path: `file:` for local files)."""
    return f"file:{path}" if path.startswith("/") else path


def register_existing(spark: SparkSession, name: str | None, path: str, kind: str, properties: Mapping[str, str],
                      comment: str | None, partition_by: Sequence[str]) -> None:
    """CREATE [IF NOT EXISTS] TABLE t USING delta LOCATION '/existing' (no columns): name an
    existing Delta table after checking the statement's definition against it."""
    from pydelta.spark.base.catalog import lookup, register_table
    from pydelta.spark.read.scan import spark_schema
    from pydelta.spark.write.options import checked_table_properties

    snapshot = try_table_snapshot(spark, path)
    if snapshot is None:
        raise DeltaAnalysisError(
            f"[DELTA_SCHEMA_NOT_PROVIDED] table schema is not provided and {path} holds no Delta table: "
            "give the columns, or use AS SELECT")
    if kind not in ("create", "createIfNotExists"):
        raise DeltaAnalysisError("REPLACE TABLE needs a schema (columns) or AS SELECT")
    if name is None:
        if kind == "createIfNotExists":
            return
        raise TableAlreadyExistsError(f"[DELTA_TABLE_ALREADY_EXISTS] Table delta.`{path}` already exists")
    if lookup(spark, name) is not None:
        if kind == "createIfNotExists":
            return
        raise TableAlreadyExistsError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] Table {name} already exists")
    verify_definition(spark, snapshot, schema=None, partition_by=list(partition_by), cluster_by=None,
                      properties=checked_table_properties(spark, dict(properties)))
    register_table(spark, name, path, spark_schema(snapshot.schema), comment)
