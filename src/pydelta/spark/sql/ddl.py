"""CREATE / REPLACE TABLE ... USING DELTA (with or without AS SELECT), and DROP TABLE."""

from __future__ import annotations

from typing import Any

from pydelta.errors import DeltaAnalysisError, DeltaNotImplementedError
from pydelta.spark.base import jplan
from pydelta.spark.base._typing import JavaObject, SparkSession
from pydelta.spark.base.jplan import NOT_DELTA
from pydelta.spark.base.unity_catalogs import unity_catalog, unity_table
from pydelta.spark.ddl.create_options import split_options
from pydelta.spark.sql.targets import quote_parts, resolve, target_for_create


def _spark_type(jtype: Any) -> Any:
    from pyspark.sql.types import _parse_datatype_json_string

    return _parse_datatype_json_string(jtype.json())


def _partition_columns(plan: JavaObject) -> list[str]:
    columns = []
    for transform in jplan.seq(plan.partitioning()):
        if transform.name() == "cluster_by":
            continue  # CLUSTER BY: see _cluster_columns
        if transform.name() != "identity":
            raise DeltaNotImplementedError(
                f"partitioning by {transform.describe()} is not supported by Delta tables; "
                "partition by columns, or cluster by them (CLUSTER BY)")
        refs = transform.references()
        columns.append(".".join(list(refs[0].fieldNames())))
    return columns


def _cluster_columns(plan: JavaObject) -> list[str] | None:
    """CLUSTER BY (a, b.c): Spark adds it to the partitioning as a cluster_by transform."""
    for transform in jplan.seq(plan.partitioning()):
        if transform.name() == "cluster_by":
            return [".".join(list(ref.fieldNames())) for ref in transform.references()]
    return None


def _option_value(expression: Any) -> str:
    """An OPTIONS value (a literal expression) as the string the catalog stores."""
    value = expression.eval(None) if expression.foldable() else None
    if value is None:
        raise DeltaAnalysisError(f"OPTIONS values must be constants, not {expression.sql()}")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value.toString()) if hasattr(value, "toString") else str(value)  # a JVM string or decimal


class _Spec:
    """The parts of Spark's UnresolvedTableSpec a Delta table uses."""

    def __init__(self, spec: Any) -> None:
        self.provider = jplan.option(spec.provider())
        self.location = jplan.option(spec.location())
        self.comment = jplan.option(spec.comment())
        self.properties = {str(k): str(v) for k, v in jplan.scala_map(spec.properties()).items()}
        options = spec.optionExpression()
        self.options = {str(pair._1()): _option_value(pair._2())
                        for pair in (jplan.seq(options.options()) if options is not None else [])}
        serde = jplan.option(spec.serde())
        if serde is not None and self.is_delta:  # STORED AS alone is a Hive table: Spark's
            raise DeltaAnalysisError("ROW FORMAT / STORED AS cannot be used with USING DELTA")

    @property
    def is_delta(self) -> bool:
        return self.provider is not None and self.provider.lower() == "delta"


def create_table(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """CreateTable / ReplaceTable / CreateTableAsSelect / ReplaceTableAsSelect with USING DELTA."""
    kind = jplan.kind(plan)
    spec = _Spec(plan.tableSpec())
    if not spec.is_delta:
        return NOT_DELTA
    spec.properties, write_options = split_options(spark, kind == "CreateTable", spec.properties, spec.options)
    parts = jplan.identifier_parts(plan.name())
    target = target_for_create(spark, parts)
    location = spec.location
    if location is not None:
        from pydelta.log.storage import to_local_path

        location = to_local_path(location)
        if target.name is None and location != target.path:
            raise DeltaAnalysisError("a path table delta.`...` cannot have a different LOCATION")
    path = location or target.path
    if kind in ("CreateTable", "CreateTableAsSelect"):
        builder_kind = "createIfNotExists" if plan.ignoreIfExists() else "create"
    else:
        builder_kind = "createOrReplace" if plan.orCreate() else "replace"
    partition_by = _partition_columns(plan)
    if kind.endswith("AsSelect"):
        return _as_select(spark, text, plan, target.name, path, builder_kind, partition_by, spec, location is not None,
                          write_options)
    columns = jplan.seq(plan.columns())
    if not columns:
        from pydelta.spark.ddl.existing_table import register_existing

        register_existing(spark, target.name, path, builder_kind, spec.properties, spec.comment, partition_by)
        return jplan.empty_result(spark)
    from pydelta.spark.ddl.table_definition import IdentityGenerator, TableDefinition, create_table

    builder = TableDefinition(spark, builder_kind)
    if target.name is not None:
        builder = builder.tableName(target.name)
    if location is not None or target.name is None:
        builder = builder.location(path)
    for col in columns:
        identity = jplan.option(col.identityColumnSpec())
        generated = jplan.option(col.generationExpression())
        always: Any = jplan.expression_sql(generated) if generated is not None else None
        by_default = None
        if identity is not None:
            generator = IdentityGenerator(int(identity.getStart()), int(identity.getStep()))
            if bool(identity.isAllowExplicitInsert()):
                by_default = generator
            else:
                always = generator
        builder = builder.addColumn(
            str(col.name()), _spark_type(col.dataType()), bool(col.nullable()),
            generatedAlwaysAs=always, generatedByDefaultAs=by_default, comment=jplan.option(col.comment()),
        )
        default = jplan.option(col.defaultValue())
        if default is not None:
            from pydelta.spark.ddl.column_defaults import checked_default

            sql = jplan.expression_sql(default)
            builder._default_last_column(
                checked_default(spark, sql, str(col.dataType().sql()), str(col.name()), "CREATE TABLE"))
    if partition_by:
        builder = builder.partitionedBy(*partition_by)
    cluster_by = _cluster_columns(plan)
    if cluster_by is not None:
        builder = builder.clusterBy(*cluster_by)
    for key, value in spec.properties.items():
        builder = builder.property(key, value)
    if spec.comment is not None:
        builder = builder.comment(spec.comment)
    create_table(builder)
    return jplan.empty_result(spark)


def _as_select(spark: SparkSession, text: str, plan: JavaObject, name: str | None, path: str, kind: str,
               partition_by: list[str], spec: _Spec, has_location: bool, options: dict[str, str]) -> Any:
    from pydelta.spark.ddl.table_as_select import table_as_select

    query = spark.sql(jplan.text_of(text, plan.query()))  # routed again: Delta sources are read by pydelta
    table_as_select(
        query, path, name=name, kind="create" if kind == "createIfNotExists" else kind,
        if_not_exists=kind == "createIfNotExists", partition_by=partition_by or None,
        properties=spec.properties, comment=spec.comment,
        managed=None if name is not None and not has_location else False, cluster_by=_cluster_columns(plan),
        options=options,
    )
    return jplan.empty_result(spark)


def drop_table(spark: SparkSession, text: str, plan: JavaObject) -> Any:
    """DROP TABLE of delta.`/path` is refused (nothing to drop); a Unity Catalog name is dropped in
    its catalog (which owns a managed table's files); other names go to Spark's catalog."""
    parts = jplan.identifier_parts(plan.child())
    unity = unity_catalog(spark, parts[0]) if len(parts) == 3 else None
    if unity is not None:
        from pydelta.errors import DeltaTableNotFoundError

        name = quote_parts(parts)
        if unity_table(unity, parts) is None:
            if bool(plan.ifExists()):
                return jplan.empty_result(spark)
            raise DeltaTableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] The table or view {name} cannot be found.")
        unity.drop_table(name)
        return jplan.empty_result(spark)
    target = resolve(spark, parts) if len(parts) == 2 and parts[0].lower() == "delta" else None
    if target is not None and target.name is None:
        raise DeltaAnalysisError(
            f"DROP TABLE needs a table name; delta.`{target.path}` is a path (delete its directory)")
    return NOT_DELTA
