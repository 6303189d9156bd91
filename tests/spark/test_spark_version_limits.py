"""What needs a newer Spark than the one under test fails with a clear pydelta error naming
the feature and the version; on a Spark that has it, it works (run on every supported PySpark
by tests/pyspark_versions.sh)."""

from __future__ import annotations

import json
import os

import pytest

from pydelta import errors
from pydelta.spark.base.pyspark_compat import pyspark_before

pytestmark = pytest.mark.spark


def _geo_table(path: str) -> None:
    """A table with a GEOMETRY column, written as a bare log (no Spark geo types needed)."""
    schema = {"type": "struct", "fields": [{"name": "id", "type": "integer", "nullable": True, "metadata": {}},
                                           {"name": "g", "type": "geometry(OGC:CRS84)", "nullable": True,
                                            "metadata": {}}]}
    actions = [
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["geospatial"],
                      "writerFeatures": ["geospatial"]}},
        {"metaData": {"id": "5b0c1c4e-0000-4000-8000-000000000001", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {},
                      "createdTime": 0}},
    ]
    os.makedirs(os.path.join(path, "_delta_log"))
    with open(os.path.join(path, "_delta_log", f"{0:020d}.json"), "w") as f:
        f.write("\n".join(json.dumps(a) for a in actions) + "\n")


def test_geospatial_columns_need_spark_4_2(spark, tmp_path):
    path = str(tmp_path / "geo")
    _geo_table(path)
    if pyspark_before(4, 2):
        with pytest.raises(errors.DeltaNotImplementedError, match=r"geospatial columns \(g\) need Spark 4\.2 or newer"):
            spark.read.format("delta").load(path)
        with pytest.raises(errors.DeltaNotImplementedError, match=r"need Spark 4\.2"):
            spark.sql(f"SELECT * FROM delta.`{path}`").collect()
        assert sorted(os.listdir(os.path.join(path, "_delta_log"))) == [f"{0:020d}.json"]
    else:
        df = spark.read.format("delta").load(path)
        assert df.schema["g"].dataType.simpleString().startswith("geometry") and df.count() == 0


def test_at_time_travel_on_every_spark(spark, tmp_path):
    """delta-spark's `t@v<N>` in SQL: Spark 4.2 parses it, pydelta rewrites it on 4.0 and 4.1."""
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    spark.range(5).write.format("delta").mode("append").save(path)
    spark.sql(f"CREATE TABLE at_limits USING delta LOCATION '{path}'")
    try:
        assert spark.sql("SELECT count(*) AS n FROM at_limits@v0 WHERE id >= 0").first().n == 3
        assert spark.sql("SELECT count(*) AS n FROM at_limits@V1 t WHERE t.id < 100").first().n == 8
        assert spark.sql("SELECT '@v0' AS s FROM at_limits@v0 LIMIT 1").first().s == "@v0"  # strings untouched
    finally:
        spark.sql("DROP TABLE at_limits")


def test_insert_with_schema_evolution_needs_spark_4_2(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(2).write.format("delta").save(path)
    statement = f"INSERT WITH SCHEMA EVOLUTION INTO delta.`{path}` SELECT 7 AS id, 'x' AS extra"
    if pyspark_before(4, 2):
        with pytest.raises(errors.DeltaNotImplementedError, match=r"INSERT WITH SCHEMA EVOLUTION needs Spark 4\.2"):
            spark.sql(statement)
        assert spark.read.format("delta").load(path).columns == ["id"]  # nothing written
    else:
        spark.sql(statement)
        assert spark.read.format("delta").load(path).columns == ["id", "extra"]
