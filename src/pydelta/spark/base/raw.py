"""Spark's own `SparkSession.sql`, for pydelta's internal statements (never routed back)."""

from __future__ import annotations

from typing import Any

from pydelta.spark.base._typing import SparkSession


def raw_sql(spark: SparkSession, text: str) -> Any:
    session_class = type(spark)  # classic or Connect: each keeps its own original
    original = getattr(session_class, "_pydelta_original_sql", None) or session_class.sql
    return original(spark, text)
