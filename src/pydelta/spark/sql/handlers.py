"""Which pydelta handler serves which of Spark's parsed statements (by plan class name).

A handler takes (spark, statement text, parsed plan) and returns the statement's
result DataFrame, or router.NOT_DELTA when the statement's table is not Delta.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydelta.spark.sql.alter import ALTER_HANDLERS
from pydelta.spark.sql.ddl import create_table, drop_table
from pydelta.spark.sql.describe import DESCRIBE_HANDLERS
from pydelta.spark.sql.dml import DML_HANDLERS

HANDLERS: dict[str, Callable[[Any, str, Any], Any]] = {
    "CreateTable": create_table,
    "ReplaceTable": create_table,
    "CreateTableAsSelect": create_table,
    "ReplaceTableAsSelect": create_table,
    "DropTable": drop_table,
    **DML_HANDLERS,
    **DESCRIBE_HANDLERS,
    **ALTER_HANDLERS,
}
