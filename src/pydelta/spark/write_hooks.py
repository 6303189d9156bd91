"""Hooks on DataFrameWriter so `df.write.format("delta")...` is served by pydelta.

save(path), saveAsTable(name) and insertInto(name) all work with every
writer setting (mode, partitionBy, clusterBy, options); other formats are untouched.
"""

from __future__ import annotations

from typing import Any

from pydelta.spark.hooks import _is_delta, _record_format, _record_option, _record_options, _state
from pydelta.spark.spark_errors import boundary


def _record_mode(original):
    def mode(self, saveMode):
        _state(self)["mode"] = saveMode
        return original(self, saveMode)

    return mode


def _record_columns(original, key: str):
    """partitionBy / clusterBy: the column names (given one by one or as one list) into `key`."""
    def record(self, *cols):
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        _state(self)[key] = list(cols)
        return original(self, *cols)

    record.__name__ = original.__name__
    return record


def _settings(self: Any, mode: Any, partitionBy: Any, options: dict) -> tuple[Any, Any, dict]:
    st = _state(self)
    if isinstance(partitionBy, str):
        partitionBy = [partitionBy]
    return (
        mode if mode is not None else st["mode"],
        list(partitionBy) if partitionBy is not None else st["partition_by"],
        {**st["options"], **options},
    )


def _save(original):
    def save(self, path=None, format=None, mode=None, partitionBy=None, **options):  # noqa: A002
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
        from pydelta.spark.write import write_dataframe

        write_dataframe(self._df, path, mode, partition_by, opts, cluster_by=st["cluster_by"])

    return save


def _save_as_table(original):
    def saveAsTable(self, name, format=None, mode=None, partitionBy=None, **options):  # noqa: A002
        st = _state(self)
        if format is not None:
            st["format"] = format
        if not _is_delta(st["format"]):
            return original(self, name, format, mode, partitionBy, **options)
        mode, partition_by, opts = _settings(self, mode, partitionBy, options)
        from pydelta.spark.catalog import default_location, delta_location, lookup, register_table
        from pydelta.spark.table_ddl import table_as_select
        from pydelta.spark.write import write_dataframe

        spark = self._df.sparkSession
        explicit_path = opts.pop("path", None)
        entry = lookup(spark, name)
        if entry is not None and (entry.provider or "").lower() != "delta":
            from pydelta.errors import TableAlreadyExistsError

            raise TableAlreadyExistsError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] table {name} exists and is not a Delta table")
        existing = delta_location(spark, name, entry)
        exists = existing is not None
        location = explicit_path or existing or default_location(spark, name)
        save_mode = (mode or "errorifexists").lower()
        if not exists or save_mode == "overwrite":
            # delta-spark: saveAsTable creates the table, or replaces it in overwrite mode.
            properties = {k: str(v) for k, v in opts.items() if k.lower().startswith("delta.")}
            if exists and save_mode == "overwrite" and entry is None:
                register_table(spark, name, location, self._df.schema)
            table_as_select(self._df, location, name=name, kind="createOrReplace" if exists else "create",
                            partition_by=partition_by, properties=properties, options=opts,
                            managed=explicit_path is None, cluster_by=st["cluster_by"])
            return
        if entry is None:  # a Delta directory at the default location, from before names were registered
            register_table(spark, name, location, self._df.schema)
        write_dataframe(self._df, location, mode, partition_by, opts, cluster_by=st["cluster_by"], display=name)

    return saveAsTable


def _insert_into(original):
    def insertInto(self, tableName, overwrite=None):
        from pydelta.spark.catalog import delta_table_location

        location = delta_table_location(self._df.sparkSession, tableName)
        if location is None:
            return original(self, tableName, overwrite)
        from pydelta.spark.write import write_dataframe
        from pydelta.log.snapshot import load_snapshot

        # insertInto matches columns by position, as in Spark.
        table_cols = [f.name for f in load_snapshot(location).schema.fields]
        df = self._df
        if len(df.columns) != len(table_cols):
            from pydelta.errors import SchemaMismatchError

            raise SchemaMismatchError(f"insertInto {tableName}: the data has {len(df.columns)} columns, the table {len(table_cols)}")
        df = df.toDF(*table_cols)
        mode = "overwrite" if overwrite else "append"
        write_dataframe(df, location, mode, None, dict(_state(self)["options"]))

    return insertInto


def install(writer_class: Any) -> None:
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
