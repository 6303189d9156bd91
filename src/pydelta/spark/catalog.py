"""Table names for Delta tables, without a JVM Delta catalog.

A name maps to a directory under `spark.sql.warehouse.dir` (as managed
tables do in Spark): `name` -> <warehouse>/name, `db.name` -> <warehouse>/db.db/name.
A name is a Delta table when that directory holds a `_delta_log`.
"""

from __future__ import annotations

import os
from typing import Any

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.log.storage import to_local_path


def _parts(name: str) -> list[str]:
    parts = [p.strip("`") for p in name.split(".")]
    if parts and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise DeltaIllegalArgumentError(f"invalid table name {name!r}")
    return parts


def table_location(spark: Any, name: str) -> str:
    warehouse = to_local_path(spark.conf.get("spark.sql.warehouse.dir", "spark-warehouse"))
    parts = _parts(name)
    if len(parts) == 1 or parts[0].lower() == "default":
        return os.path.join(warehouse, parts[-1].lower())
    return os.path.join(warehouse, f"{parts[0].lower()}.db", parts[1].lower())


def is_delta_name(spark: Any, name: str) -> bool:
    try:
        return os.path.isdir(os.path.join(table_location(spark, name), "_delta_log"))
    except DeltaIllegalArgumentError:
        return False
