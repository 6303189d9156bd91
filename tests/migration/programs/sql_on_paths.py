# A delta-spark SQL program (style of delta-io's quickstart_sql*.py) that builds its session with
# delta-spark's confs itself, as spark-submit programs do, then SQL on table names and paths.
import sys

from pyspark.sql import SparkSession

path = sys.argv[1]
spark = SparkSession.builder.appName("sql").master("local[2]") \
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension") \
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog") \
    .getOrCreate()
import delta  # noqa: E402,F401 - delta-spark programs import the package for its side effects

spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING) USING delta")
spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b'), (3, 'c')")
spark.sql(f"UPDATE delta.`{path}` SET name = 'B' WHERE id = 2")
spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")
spark.sql(f"MERGE INTO delta.`{path}` t USING (SELECT 4 AS id, 'd' AS name) s ON t.id = s.id "
          "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
print("rows", [tuple(r) for r in spark.sql(f"SELECT * FROM delta.`{path}` ORDER BY id").collect()])
spark.sql(f"CREATE TABLE people USING delta LOCATION '{path}'")
print("by name", spark.sql("SELECT count(*) AS n FROM people").first().n)
print("history", [r.operation for r in spark.sql("DESCRIBE HISTORY people").orderBy("version").collect()])
spark.sql("OPTIMIZE people")
print("detail files", spark.sql("DESCRIBE DETAIL people").first().numFiles)
