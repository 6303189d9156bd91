"""Hooks on DataFrameWriter so `df.write.format("delta")...` is served by pydelta.

save(path), saveAsTable(name) and insertInto(name) all work with every
writer setting (mode, partitionBy, clusterBy, options); other formats are untouched.
"""

from __future__ import annotations

from typing import Any

from pydelta.spark.base._typing import DataFrame
from pydelta.spark.base.connect_session import writer_frame
from pydelta.spark.base.spark_errors import boundary
from pydelta.spark.base.writer_state import _is_delta, _record_format, _record_option, _record_options, _state
from pydelta.spark.datasource import register as register_source


def _record_mode(original: Any) -> Any:
    def mode(self: Any, saveMode: Any) -> Any:
        _state(self)["mode"] = saveMode
        return original(self, saveMode)

    return mode


def _record_columns(original: Any, key: str) -> Any:
    """partitionBy / clusterBy: the column names (given one by one or as one list) into `key`."""
    def record(self: Any, *cols: Any) -> Any:
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        _state(self)[key] = list(cols)
        return original(self, *cols)

    record.__name__ = original.__name__
    return record


def _settings(self: Any, mode: Any, partitionBy: Any, options: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    st = _state(self)
    if isinstance(partitionBy, str):
        partitionBy = [partitionBy]
    return (
        mode if mode is not None else st["mode"],
        list(partitionBy) if partitionBy is not None else st["partition_by"],
        {**st["options"], **options},
    )


def _save(original: Any) -> Any:
    def save(self: Any, path: Any=None, format: Any=None, mode: Any=None, partitionBy: Any=None, **options: Any) -> Any:  # noqa: A002
        st = _state(self)
        if format is not None:
            st["format"] = format
        if not _is_delta(st["format"]):
            return original(self, path, format, mode, partitionBy, **options)
        mode, partition_by, opts = _settings(self, mode, partitionBy, options)
        path = path or opts.pop("path", None)
        if path is None:
            from pydelta.errors import DeltaIllegalArgumentError

            raise DeltaIllegalArgumentError("save() of a Delta table needs a path")
        from pydelta.spark.write.dataframe import write_dataframe

        write_dataframe(writer_frame(self), path, mode, partition_by, opts, cluster_by=st["cluster_by"])

    return save


def _save_as_table(original: Any) -> Any:
    def saveAsTable(self: Any, name: Any, format: Any=None, mode: Any=None, partitionBy: Any=None,  # noqa: A002
                    **options: Any) -> Any:
        st = _state(self)
        if format is not None:
            st["format"] = format
        if not _is_delta(st["format"]):
            return original(self, name, format, mode, partitionBy, **options)
        mode, partition_by, opts = _settings(self, mode, partitionBy, options)
        from pydelta.spark.base.catalog import default_location, delta_location, lookup, register_table
        from pydelta.spark.base.unity_catalogs import unity_catalog_of, unity_table
        from pydelta.spark.ddl.table_as_select import table_as_select
        from pydelta.spark.write.dataframe import SaveAsTableOverwrite, write_dataframe

        spark = writer_frame(self).sparkSession
        register_source(spark)  # saveAsTable names the table's provider
        explicit_path = opts.pop("path", None)
        unity = unity_catalog_of(spark, name)
        if unity is not None:  # catalog.schema.table of a Unity Catalog server
            uc_table = unity_table(unity, [p.strip("`") for p in name.split(".")])
            if uc_table is None:
                properties = {k: str(v) for k, v in opts.items() if k.lower().startswith("delta.")}
                table_as_select(writer_frame(self), "", name=name, kind="create", partition_by=partition_by,
                                properties=properties, options=opts, cluster_by=st["cluster_by"])
            else:
                write_dataframe(writer_frame(self), uc_table.location, mode, partition_by, opts,
                                cluster_by=st["cluster_by"], display=name)
            return
        entry = lookup(spark, name)
        if entry is not None and (entry.provider or "").lower() != "delta":
            from pydelta.errors import TableAlreadyExistsError

            raise TableAlreadyExistsError(
                f"[TABLE_OR_VIEW_ALREADY_EXISTS] table {name} exists and is not a Delta table")
        existing = delta_location(spark, name, entry)
        location = explicit_path or existing or default_location(spark, name)
        if existing is None:  # delta-spark: saveAsTable creates the table
            properties = {k: str(v) for k, v in opts.items() if k.lower().startswith("delta.")}
            table_as_select(writer_frame(self), location, name=name, kind="create", partition_by=partition_by,
                            properties=properties, options=opts, managed=explicit_path is None,
                            cluster_by=st["cluster_by"])
            return
        if entry is None:  # a Delta directory at the default location, from before names were registered
            register_table(spark, name, location, writer_frame(self).schema)
        # An existing table is written as save(path) writes it: in overwrite mode the data is replaced
        # (replaceWhere, dynamic partitions, schema checks), the table is not redefined (delta-spark).
        managed = entry.managed if entry is not None else explicit_path is None
        overwrite = SaveAsTableOverwrite(managed) if (mode or "").lower() == "overwrite" else None
        write_dataframe(writer_frame(self), location, mode, partition_by, opts, cluster_by=st["cluster_by"],
                        display=name, save_as_table=overwrite)

    return saveAsTable


def _insert_into(original: Any) -> Any:
    def insertInto(self: Any, tableName: Any, overwrite: Any=None) -> Any:
        from pydelta.spark.base.catalog import delta_table_location

        location = delta_table_location(writer_frame(self).sparkSession, tableName)
        if location is None:
            return original(self, tableName, overwrite)
        from pydelta.spark.base.engine import table_snapshot
        from pydelta.spark.write.dataframe import write_dataframe

        snapshot = table_snapshot(writer_frame(self).sparkSession, location)
        options = dict(_state(self)["options"])
        # As Spark: overwrite=None keeps the writer's mode, whose overwrite replaces and anything else appends.
        mode = ("overwrite" if overwrite else "append") if overwrite is not None else _state(self)["mode"]
        mode = "overwrite" if str(mode or "").lower() == "overwrite" else "append"
        df = _by_position(writer_frame(self), snapshot, tableName, options)
        write_dataframe(df, location, mode, None, options)

    return insertInto


def _by_position(df: DataFrame, snapshot: Any, table_name: str, options: dict[str, Any]) -> Any:
    """insertInto's data as an INSERT stores it: columns matched by position, cast (checked) to the
    table's types, or kept wider where schema evolution widens a type-widening table (delta-spark)."""
    from pydelta.spark.read.scan import spark_schema
    from pydelta.spark.write.store_assignment import cast_for_insert, widens_on_insert

    table = spark_schema(snapshot.schema)
    if len(df.columns) != len(table.fields):
        from pydelta.errors import SchemaMismatchError

        raise SchemaMismatchError(f"insertInto {table_name}: the data has {len(df.columns)} columns, "
                                  f"the table {len(table.fields)}")
    widen = widens_on_insert(df.sparkSession, snapshot.configuration, options)
    return cast_for_insert(df.toDF(*table.names), table, widen)


def install(writer_class: Any) -> None:
    """Hook one DataFrameWriter class (classic or Connect), once."""
    if writer_class.__dict__.get("_pydelta_hooked", False):
        return
    writer_class._pydelta_hooked = True
    writer_class.format = _record_format(writer_class.format)
    writer_class.option = _record_option(writer_class.option)
    writer_class.options = _record_options(writer_class.options)
    writer_class.mode = _record_mode(writer_class.mode)
    writer_class.partitionBy = _record_columns(writer_class.partitionBy, "partition_by")
    if hasattr(writer_class, "clusterBy"):
        writer_class.clusterBy = _record_columns(writer_class.clusterBy, "cluster_by")
    writer_class.save = boundary(_save(writer_class.save))
    writer_class.saveAsTable = boundary(_save_as_table(writer_class.saveAsTable))
    writer_class.insertInto = boundary(_insert_into(writer_class.insertInto))
