"""Spark's own `SparkSession.sql`, for pydelta's internal statements (never routed back)."""

from __future__ import annotations

from typing import Any
from pydelta.spark._typing import SparkSession


def raw_sql(spark: SparkSession, text: str) -> Any:
    from pyspark.sql.session import SparkSession

    original = getattr(SparkSession, "_pydelta_original_sql", None) or SparkSession.sql
    return original(spark, text)
