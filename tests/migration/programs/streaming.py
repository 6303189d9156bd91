# A delta-spark streaming program (style of delta-io's streaming.py): a Delta-to-Delta stream,
# then an upsert of each micro-batch with foreachBatch and MERGE.
import sys

from delta import configure_spark_with_delta_pip
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

root = sys.argv[1]
builder = SparkSession.builder.appName("streaming").master("local[2]") \
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension") \
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
spark = configure_spark_with_delta_pip(builder).getOrCreate()

source, sink, upserts = f"{root}/source", f"{root}/sink", f"{root}/upserts"
spark.range(0, 10).selectExpr("id", "id % 3 AS key").write.format("delta").save(source)
q = spark.readStream.format("delta").load(source).writeStream.format("delta") \
    .option("checkpointLocation", f"{root}/cp1").trigger(availableNow=True).start(sink)
q.awaitTermination()
print("streamed", spark.read.format("delta").load(sink).count())

spark.range(0, 3).selectExpr("id AS key", "0L AS total").write.format("delta").save(upserts)
target = DeltaTable.forPath(spark, upserts)


def upsert(batch, batch_id):
    counts = batch.groupBy("key").count()
    target.alias("t").merge(counts.alias("s"), "t.key = s.key") \
        .whenMatchedUpdate(set={"total": "t.total + s.count"}) \
        .whenNotMatchedInsert(values={"key": "s.key", "total": "s.count"}).execute()


q = spark.readStream.format("delta").load(source).writeStream.foreachBatch(upsert) \
    .option("checkpointLocation", f"{root}/cp2").trigger(availableNow=True).start()
q.awaitTermination()
print("totals", sorted(tuple(r) for r in target.toDF().collect()))
