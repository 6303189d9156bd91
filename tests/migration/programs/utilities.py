# ruff: noqa: F403, F405 - delta-spark programs star-import, as delta-io's examples do
# delta-spark's table utilities (style of delta-io's utilities.py): convert, vacuum, history,
# detail, restore, generate, and delta.exceptions for a conflict.
import os
import sys

from delta import *
from delta.exceptions import ConcurrentAppendException, DeltaConcurrentModificationException
from pyspark.sql import SparkSession

path = sys.argv[1]
builder = SparkSession.builder.appName("utilities").master("local[2]") \
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension") \
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
spark = configure_spark_with_delta_pip(builder).getOrCreate()

spark.range(0, 5).write.format("parquet").save(path)
DeltaTable.convertToDelta(spark, f"parquet.`{path}`")
table = DeltaTable.forPath(spark, path)
spark.range(5, 8).write.format("delta").mode("append").save(path)
table.delete("id < 2")
print("detail", table.detail().first().numFiles > 0)
table.restoreToVersion(1)
print("restored", sorted(r.id for r in table.toDF().collect()))
table.vacuum()
table.generate("symlink_format_manifest")
print("manifest", os.path.isdir(os.path.join(path, "_symlink_format_manifest")))
print("history", [r.operation for r in table.history().orderBy("version").collect()])
print("exceptions", issubclass(ConcurrentAppendException, DeltaConcurrentModificationException))
print("is delta", DeltaTable.isDeltaTable(spark, path))
