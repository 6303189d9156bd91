"""CREATE/REPLACE TABLE ... OPTIONS (...): which options become table properties, as delta-spark.

Shared by both SQL fronts (Spark's parser on classic sessions, pydelta's grammar over Connect).
"""

from __future__ import annotations

from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.conf import conf_bool

LEGACY_OPTIONS_AS_PROPERTIES = "spark.databricks.delta.legacy.storeOptionsAsProperties"


def split_options(spark: SparkSession, plain_create: bool, properties: dict[str, str],
                  options: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(table properties, write options) of a CREATE/REPLACE TABLE with OPTIONS.

    A plain CREATE TABLE (no AS SELECT, not a REPLACE) stores every option as a table property
    twice, as given and `option.`-prefixed (Spark hands the catalog both). REPLACE and AS SELECT
    statements take only `delta.*` options as properties (all of them with the legacy conf);
    the rest are options of the write.
    """
    merged = dict(properties)
    if plain_create:
        for key, value in options.items():
            merged.setdefault(key, value)
            merged[f"option.{key}"] = value
        return merged, {}
    legacy = conf_bool(spark, LEGACY_OPTIONS_AS_PROPERTIES, False) if options else False
    for key, value in options.items():
        if legacy or key.lower().startswith("delta."):
            merged.setdefault(key, value)
    return merged, dict(options)
