"""What differs between the PySpark versions pydelta supports (4.0 to 4.3), in one place."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa


def spark_to_arrow_schema(schema: Any, *, duplicated_field_names_error: bool = False,
                          large_types: bool = False) -> pa.Schema:
    """PySpark's Arrow form of a Spark schema, timestamps in UTC.

    PySpark 4.2 takes `timezone="UTC"`; 4.0 and 4.1 take `timestamp_utc=True` for the same.
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    kwargs: dict[str, Any] = {"error_on_duplicated_field_names_in_struct": duplicated_field_names_error,
                              "prefers_large_types": large_types}
    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        kwargs["timezone"] = "UTC"
    else:
        kwargs["timestamp_utc"] = True
    return to_arrow_schema(schema, **kwargs)


def collect_arrow_batches(df: Any, large_types: bool) -> list[pa.RecordBatch]:
    """`df`'s rows as Arrow record batches, as `df.toArrow()` collects them (4.0 has no large-type switch)."""
    collect: Callable[..., list[pa.RecordBatch]] = df._collect_as_arrow
    if "prefers_large_var_types" in inspect.signature(collect).parameters:
        return collect(split_batches=False, empty_list_if_zero_records=False, prefers_large_var_types=large_types)
    return collect(split_batches=False, empty_list_if_zero_records=False)


@functools.cache
def pyspark_before(major: int, minor: int) -> bool:
    """Whether the running PySpark is older than major.minor."""
    import pyspark

    return tuple(int(p) for p in pyspark.__version__.split(".")[:2]) < (major, minor)


_EMPTY_ALIAS_METADATA_IGNORED = pyspark_before(4, 1)

# SQL forms older Spark parsers lack: (pattern, what to call it, the first Spark that parses it, what
# to do instead).
_NEWER_SQL = ((re.compile(r"\s*INSERT\s+WITH\s+SCHEMA\s+EVOLUTION\b", re.IGNORECASE),
               "INSERT WITH SCHEMA EVOLUTION", (4, 2),
               "the mergeSchema write option or spark.databricks.delta.schema.autoMerge.enabled"),)


def refuse_newer_sql(text: str) -> None:
    """After Spark's parser refused `text`: a clear error when it uses a form a newer Spark has."""
    from pydelta.errors import DeltaNotImplementedError

    for pattern, name, (major, minor), instead in _NEWER_SQL:
        if pattern.match(text) and pyspark_before(major, minor):
            import pyspark

            raise DeltaNotImplementedError(
                f"{name} needs Spark {major}.{minor} or newer (this is Spark {pyspark.__version__}); use {instead}")


def alias(column: Any, name: str, metadata: dict[str, Any], data_type: Any) -> Any:
    """`column.alias(name, metadata=metadata)`, with empty metadata meaning none on every version.

    PySpark 4.0 ignores an empty dict (`if metadata:`), and Spark 4.0 an empty `Metadata` too, so
    the column would keep the metadata it had (a column mapping's field id, Delta's internal
    keys); 4.1+ sets it. On 4.0 the column goes through a cast to its own `data_type` first: a
    cast carries no metadata, and the optimizer removes it (filters still reach the scan).
    """
    if metadata or not _EMPTY_ALIAS_METADATA_IGNORED:
        return column.alias(name, metadata=metadata)
    return column.cast(data_type).alias(name)


def refuse_geospatial_before_4_2(schema: Any) -> None:
    """GEOMETRY/GEOGRAPHY columns need Spark 4.2: 4.0 has no such types, and 4.1's (behind
    spark.sql.geospatial.enabled) cannot be written to or read from Parquet."""
    if not pyspark_before(4, 2):
        return
    from pydelta.protocol.geospatial import geo_column_paths

    columns = geo_column_paths(schema)
    if columns:
        import pyspark

        from pydelta.errors import DeltaNotImplementedError

        raise DeltaNotImplementedError(
            f"geospatial columns ({', '.join(path for path, _ in columns)}) need Spark 4.2 or newer "
            f"(this is Spark {pyspark.__version__})")


def refuse_shredded_variants_before_4_1(protocol: Any, data_schema: Any) -> None:
    """Files of a table supporting variant shredding may hold shredded variants, which Spark
    reads from 4.1 on; Spark 4.0's Parquet reader fails on them with a NullPointerException
    (measured), so a clear error names the version first."""
    if not pyspark_before(4, 1):
        return
    from pydelta.protocol import variant_shredding
    from pydelta.protocol.schema import contains_variant

    shredding = variant_shredding.supported(protocol)
    if shredding and contains_variant(data_schema):
        import pyspark

        from pydelta.errors import DeltaNotImplementedError

        raise DeltaNotImplementedError(
            f"reading a table with variant shredding ({', '.join(sorted(shredding))}) needs Spark 4.1 or "
            f"newer: its files may hold shredded variants, which Spark {pyspark.__version__} cannot read")
