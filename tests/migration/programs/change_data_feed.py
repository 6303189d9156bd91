# delta-spark's change data feed (style of delta-io's change_data_feed.py).
import sys

from delta import configure_spark_with_delta_pip
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

path = sys.argv[1]
builder = SparkSession.builder.appName("cdf").master("local[2]") \
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension") \
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
spark = configure_spark_with_delta_pip(builder).getOrCreate()

spark.sql(f"CREATE TABLE delta.`{path}` (id INT, v STRING) USING delta "
          "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b')")
table = DeltaTable.forPath(spark, path)
table.update("id = 1", {"v": "'A'"})
table.delete("id = 2")
changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1).load(path)
print("changes", sorted((r.id, r._change_type, r._commit_version) for r in changes.collect()))
