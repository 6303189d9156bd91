"""pydelta's Spark layer: the only package that imports pyspark.

pyspark is an optional dependency (`pip install 'pydelta-spark[spark]'`): the log core, the
CLI and transactions on files and object stores run without it. Importing this package
without pyspark says so, instead of failing later on the first pyspark import.
"""

from importlib.util import find_spec

if find_spec("pyspark") is None:
    raise ImportError("pydelta's Spark API (DeltaTable, spark.sql, df.write.format('delta')) needs PySpark: "
                      "pip install 'pydelta-spark[spark]'")
