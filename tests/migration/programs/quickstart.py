# A delta-spark program in the style of delta-io's examples/python, left as its author wrote it
# for delta-spark: confs, imports and all. tests/migration/test_migration.py applies the guide's
# import table (docs/guide/migration.md) and runs it on pydelta.
import shutil
import sys

from delta import configure_spark_with_delta_pip
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, expr

path = sys.argv[1]
builder = SparkSession.builder \
    .appName("quickstart") \
    .master("local[2]") \
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension") \
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
spark = configure_spark_with_delta_pip(builder).getOrCreate()

print("create")
spark.range(0, 5).write.format("delta").save(path)
print("read", sorted(r.id for r in spark.read.format("delta").load(path).collect()))

print("upsert")
delta_table = DeltaTable.forPath(spark, path)
delta_table.alias("old").merge(spark.range(0, 20).alias("new"), "old.id = new.id") \
    .whenMatchedUpdate(set={"id": col("new.id")}) \
    .whenNotMatchedInsert(values={"id": col("new.id")}) \
    .execute()
print("after merge", delta_table.toDF().count())

print("overwrite")
spark.range(5, 10).write.format("delta").mode("overwrite").save(path)
delta_table.update(condition=expr("id % 2 == 0"), set={"id": expr("id + 100")})
delta_table.delete(condition=expr("id % 2 == 0"))
print("now", sorted(r.id for r in delta_table.toDF().collect()))
print("version 0", sorted(r.id for r in spark.read.format("delta").option("versionAsOf", 0).load(path).collect()))
print("history", [r.operation for r in delta_table.history().orderBy("version").collect()])
shutil.rmtree(path)
