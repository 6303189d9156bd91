"""delta-spark's reads of the s3a workload's tables: run by tests/witness/_server.py --script in
the witness venv (delta-spark 4.4, its own pyspark), with hadoop-aws on its class path
(PYDELTA_WITNESS_EXTRA_CLASSPATH). args[0]: a JSON file with the fs.s3a.* settings and the tables.
Sets `result`: delta-spark's rows and latest version of each table."""

import json

with open(args[0]) as f:  # noqa: F821 - `args`, `spark`, `result` come from the witness server
    spec = json.load(f)
conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: F821
for key, value in spec["settings"].items():
    conf.set(key, value)
rows, versions = {}, {}
for name, path in spec["tables"].items():
    rows[name] = sorted([list(r) for r in spark.read.format("delta").load(path).collect()])  # noqa: F821
    versions[name] = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").selectExpr("max(version)").first()[0]  # noqa: F821
result = {"spark": spark.version, "rows": rows, "versions": versions}  # noqa: F821
