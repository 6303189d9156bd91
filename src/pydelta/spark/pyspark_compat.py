"""What differs between the PySpark versions pydelta supports (4.0 to 4.3), in one place."""

from __future__ import annotations

import inspect
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
    collect = df._collect_as_arrow
    if "prefers_large_var_types" in inspect.signature(collect).parameters:
        return collect(split_batches=False, empty_list_if_zero_records=False, prefers_large_var_types=large_types)
    return collect(split_batches=False, empty_list_if_zero_records=False)
