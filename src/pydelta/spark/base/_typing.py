"""Names for the Spark objects pydelta passes around, so signatures say what they take.

pyspark is imported only while type checking: at run time these names are `Any`, and
pydelta's modules keep importing pyspark lazily (the log core and the CLI run without it).
`SparkSession`, `DataFrame` and `Column` are pyspark's common classes, which both classic
(py4j) and Spark Connect sessions subclass. `JavaObject` is a py4j proxy (a parsed plan, an
expression, a Hadoop configuration): dynamic by nature, so it stays untyped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
else:
    Column = DataFrame = SparkSession = Any

JavaObject: TypeAlias = Any

__all__ = ["Column", "DataFrame", "JavaObject", "SparkSession"]
