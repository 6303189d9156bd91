"""What needs a newer Spark than the one under test fails with a clear pydelta error naming
the feature and the version; on a Spark that has it, it works (run on every supported PySpark
by tests/pyspark_versions.sh)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pyspark.sql import Row

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


# delta-spark's read of tests/data/delta-spark/variant-shredded (its README): id -> (to_json(v), to_json(s.inner)).
SHREDDED_ROWS = {
    0: ('{"a":0,"b":"x0","c":[0,2.5]}', '{"k":0}'), 1: ('{"a":1,"b":"x1","c":[1,2.5]}', '{"k":10}'),
    2: ('{"a":-1,"b":"updated"}', '{"k":20}'), 3: ('{"a":3,"b":"x3","c":[3,2.5]}', '{"k":30}'),
    5: ('{"a":5,"b":"x5","c":[5,2.5]}', '{"k":50}'), 100: ('"just a string"', None), 101: (None, "[1,null]"),
}


def test_shredded_variants_need_spark_4_1(spark, tmp_path):
    """A table delta-spark wrote with shredded variants: read on Spark 4.1+, a clear error on 4.0
    (whose Parquet reader fails on shredded variants with a NullPointerException)."""
    path = str(Path(__file__).resolve().parents[1] / "data" / "delta-spark" / "variant-shredded")
    query = f"SELECT id, to_json(v) AS v, to_json(s.inner) AS inner FROM delta.`{path}`"
    if pyspark_before(4, 1):
        with pytest.raises(errors.DeltaNotImplementedError,
                           match=r"variant shredding \(variantShredding-preview\) needs Spark 4\.1"):
            spark.sql(query).collect()
        return
    assert {r.id: (r.v, r.inner) for r in spark.sql(query).collect()} == SHREDDED_ROWS
    # time travel: version 2 has all eight rows before the UPDATE and DELETE
    before = spark.sql(f"SELECT id, v:b::string AS b FROM delta.`{path}` VERSION AS OF 2").collect()
    assert sorted((r.id, r.b) for r in before) == [(i, f"x{i}") for i in range(6)] + [(100, None), (101, None)]
    # a shredded path in a filter and a projection
    assert spark.sql(f"SELECT id FROM delta.`{path}` WHERE v:a::int >= 3 ORDER BY id").collect() == \
        [Row(id=3), Row(id=5)]

    # pydelta shreds what it writes into a table that enables shredding
    ours = str(tmp_path / "ours")
    spark.sql(f"CREATE TABLE delta.`{ours}` (id INT, v VARIANT) USING delta "
              "TBLPROPERTIES ('delta.enableVariantShredding' = 'true')")
    spark.sql(f"INSERT INTO delta.`{ours}` SELECT id, v FROM delta.`{path}`")
    import pyarrow.parquet as pq

    files = list(Path(ours).glob("*.parquet"))
    assert files and all("typed_value" in str(pq.read_schema(f).field("v").type) for f in files)
    assert {r.id: r.v for r in spark.sql(f"SELECT id, to_json(v) AS v FROM delta.`{ours}`").collect()} == \
        {i: v for i, (v, _) in SHREDDED_ROWS.items()}
