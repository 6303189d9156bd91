"""A Delta read's own `_metadata` hidden column (row tracking's `row_id` and friends).

Spark's file sources expose `_metadata` (file_path, row_index, ...) as a hidden column:
selectable by name, absent from `*` and `df.columns`. delta-spark adds `row_id`,
`base_row_id`, `row_commit_version` and `default_row_commit_version` to it on tables with
row tracking. Python cannot extend a file format's metadata struct, but Spark's analyzer
also resolves hidden columns that a `Project` lists in its `hiddenOutputTag` (the tag
USING joins use for their key columns). So the read computes the extended struct as an
ordinary column, then puts a Project on top that outputs only the table's columns and
lists the struct as hidden output. Unused, the struct is pruned away like any column.

Under a SQL alias the hiding Project must sit above the alias: Spark before 4.2 passes hidden
columns up through a `SubqueryAlias` only from a leaf (`under_alias`).
"""

from __future__ import annotations

from typing import Any

from pydelta.spark.base._typing import DataFrame, JavaObject

METADATA_COLUMN = "_metadata"
_METADATA_COL_ATTR_KEY = "__metadata_col"  # Spark's MetadataAttribute marker
METADATA_MARKER = {_METADATA_COL_ATTR_KEY: METADATA_COLUMN}  # the field metadata of a `_metadata` column

# The fields of Spark's file-source `_metadata` struct, kept in the extended one.
FILE_SOURCE_FIELDS = (
    "file_path", "file_name", "file_size", "file_block_start", "file_block_length", "file_modification_time",
    "row_index",
)


def metadata_struct(extra: dict[str, Any]) -> Any:
    """The `_metadata` column: Spark's file-source fields, then `extra` (name -> Column)."""
    from pyspark.sql import functions as F

    fields = [F.col(f"{METADATA_COLUMN}.{name}").alias(name) for name in FILE_SOURCE_FIELDS]
    fields += [column.alias(name) for name, column in extra.items()]
    return F.struct(*fields).alias(METADATA_COLUMN, metadata=METADATA_MARKER)


def hide_last_column(df: DataFrame) -> DataFrame:
    """`df` without its last column in the output, which stays selectable as a hidden column.

    The last column must carry the metadata-column marker (see `metadata_struct`).
    """
    from pyspark.sql import DataFrame

    jvm: JavaObject = df.sparkSession._jvm
    project = _hiding_project(jvm, df._jdf.queryExecution().analyzed())
    jdf = jvm.org.apache.spark.sql.classic.Dataset.ofRows(df.sparkSession._jsparkSession, project)
    return DataFrame(jdf, df.sparkSession)


def under_alias(jvm: JavaObject, plan: JavaObject, identifier: JavaObject) -> JavaObject:
    """`plan` (an analyzed read) under the SQL alias `identifier` (an AliasIdentifier).

    A read made by `hide_last_column` gets the alias between its hiding Project and the
    Project below it, so `_metadata` stays selectable (and qualifiable by the alias) on every
    Spark: before 4.2 a `SubqueryAlias` over a Project passes no hidden column up.
    """
    logical = jvm.org.apache.spark.sql.catalyst.plans.logical
    hidden = plan.getTagValue(_hidden_output_tag(jvm)) if plan.getClass().getSimpleName() == "Project" else None
    if hidden is None or hidden.isEmpty():
        return logical.SubqueryAlias(identifier, plan)
    return _hiding_project(jvm, logical.SubqueryAlias(identifier, plan.child()))


def _hiding_project(jvm: JavaObject, plan: JavaObject) -> JavaObject:
    """A Project over `plan` that outputs all but its last column and lists that one as hidden."""
    output = plan.output()
    attrs = [output.apply(i) for i in range(output.size())]
    visible, hidden = jvm.java.util.ArrayList(), jvm.java.util.ArrayList()
    for attr in attrs[:-1]:
        visible.add(attr)
    hidden.add(attrs[-1])
    converters = jvm.scala.jdk.javaapi.CollectionConverters
    project = jvm.org.apache.spark.sql.catalyst.plans.logical.Project(converters.asScala(visible).toSeq(), plan)
    project.setTagValue(_hidden_output_tag(jvm), converters.asScala(hidden).toSeq())
    return project


def _hidden_output_tag(jvm: JavaObject) -> JavaObject:
    logical = jvm.org.apache.spark.sql.catalyst.plans.logical
    return getattr(getattr(logical, "Project$"), "MODULE$").hiddenOutputTag()
