"""Creating and replacing named Delta tables from a query: CTAS, RTAS and saveAsTable.

One commit writes the data and the table's metadata, as delta-spark does; the
name is registered in Spark's catalog first and dropped again if the commit fails.
"""

from __future__ import annotations

from typing import Any

from pydelta.errors import TableAlreadyExistsError
from pydelta.spark.base import catalog
from pydelta.spark.base._typing import DataFrame
from pydelta.spark.base.engine import try_table_snapshot
from pydelta.spark.base.unity_catalogs import unity_catalog_of
from pydelta.spark.ddl.unity_catalog_tables import create_in_unity_catalog
from pydelta.spark.write.dataframe import NewTableSpec, write_dataframe
from pydelta.txn.commit_info import Operation


def table_as_select(
    df: DataFrame,
    path: str,
    *,
    name: str | None,
    kind: str,  # "create", "replace", "createOrReplace"
    if_not_exists: bool = False,
    partition_by: list[str] | None = None,
    properties: dict[str, str] | None = None,
    comment: str | None = None,
    options: dict[str, Any] | None = None,
    managed: bool | None = None,
    cluster_by: list[str] | None = None,
) -> int | None:
    """CREATE [OR REPLACE] / REPLACE TABLE ... AS SELECT: returns the committed version."""
    spark = df.sparkSession
    unity = unity_catalog_of(spark, name)
    if unity is not None and name is not None:
        def write(location: str, required: dict[str, str]) -> None:
            table_as_select(df, location, name=None, kind="createOrReplace", partition_by=partition_by,
                            properties={**(properties or {}), **required}, comment=comment, options=options,
                            managed=True, cluster_by=cluster_by)

        _, created = create_in_unity_catalog(spark, unity, name, kind if not if_not_exists else "createIfNotExists",
                                             None, write, comment)
        return 0 if created else None
    display = name or f"delta.`{path}`"
    snapshot = try_table_snapshot(spark, path)
    if kind == "create" and snapshot is not None:
        if if_not_exists:
            return None
        raise TableAlreadyExistsError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] Table {display} already exists")
    if kind == "replace" and snapshot is None:
        from pydelta.spark.base.spark_errors import cannot_replace_missing_table

        raise cannot_replace_missing_table(spark, name, path)
    replacing = snapshot is not None
    operation_name = {"create": "CREATE TABLE AS SELECT", "replace": "REPLACE TABLE AS SELECT",
                      "createOrReplace": "CREATE OR REPLACE TABLE AS SELECT"}[kind]
    if managed is None:
        managed = name is not None and catalog.lookup(spark, name) is None and \
            path == catalog.default_location(spark, name)
    from pydelta.spark.write.options import checked_table_properties

    props = checked_table_properties(spark, properties or {})
    operation = Operation.table_definition(operation_name, is_managed=managed, description=comment,
                                           partition_by=partition_by or [], properties=props,
                                           cluster_by=cluster_by)
    with catalog.registered_while_created(spark, name, path, df.schema, comment):
        return write_dataframe(
            df, path, "overwrite" if replacing else "errorifexists", partition_by, dict(options or {}),
            operation=operation,
            new_table=NewTableSpec(properties=props, description=comment, replace=replacing, cluster_by=cluster_by),
        )
