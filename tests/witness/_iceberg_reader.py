"""Runs in the Iceberg witness's own Python (tests/witness/iceberg_spark.py), never in pydelta's:
Spark with Apache Iceberg's runtime jar reads an Iceberg table by its metadata file, at its
current snapshot and at each snapshot asked for, and prints the rows as one JSON line.

    python _iceberg_reader.py <runtime jar> <metadata.json> [snapshot id ...]
"""

import json
import sys

from pyspark.sql import SparkSession

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import _canon  # noqa: E402 - beside this file, plain Python

jar, location, *snapshots = sys.argv[1:]
spark = (SparkSession.builder.master("local[1]").appName("iceberg-witness")
         .config("spark.jars", jar).config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")


def read(snapshot=None):
    reader = spark.read.format("iceberg")
    if snapshot is not None:
        reader = reader.option("versionAsOf", snapshot)  # a snapshot id, for Iceberg
    df = reader.load(location)
    return {"schema": _canon.schema(df.schema), "rows": _canon.rows(df.collect())}


out = {"current": read(), "snapshots": {s: read(int(s)) for s in snapshots}}
print(json.dumps(out))
