"""Tables with `variant` columns, also inside arrays and structs, with null variants.

The data files are written by Spark 4 (`parse_json`), the log by hand (pydelta does not
write the variantType feature), with pydelta's footer statistics. Reading them back
used to fail in `toArrow()` with ArrowInvalid "nulls in input cannot be viewed as
non-nullable": Spark writes null children under a null variant (a struct of
non-nullable value/metadata) and PySpark's cast to the same Arrow type makes pyarrow
refuse them. `deltalake` is the independent witness for the bytes read.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pydelta
from pydelta.protocol.file_stats import collect_stats_for_file
from pydelta.protocol.schema import parse_schema

pytestmark = pytest.mark.spark

BATCHES = [
    """select 1 as id, array(parse_json('1'), null) as arr, parse_json('{"a": 1}') as v,
              named_struct('x', parse_json('[1, 2]')) as s
       union all select 2, null, null, null
       union all select 3, array(null, parse_json('"t"')), parse_json('null'), named_struct('x', null)""",
    """select 4 as id, array(null) as arr, parse_json('4') as v, named_struct('x', parse_json('4')) as s
       union all select 5, array(parse_json('5')), null, null
       union all select 6, array(), parse_json('true'), named_struct('x', parse_json('6'))""",
]
EXPECTED = {
    1: (["1", None], '{"a":1}', "[1,2]"),
    2: (None, None, None),
    3: ([None, '"t"'], "null", None),
    4: ([None], "4", "4"),
    5: (["5"], None, None),
    6: ([], "true", "6"),
}


def build_variant_table(spark: Any, path: Path) -> None:
    """One data file per batch (written by Spark), committed as version 0 by hand."""
    stage = path / "_stage"
    (path / "_delta_log").mkdir(parents=True)
    schema = None
    adds = []
    for i, sql in enumerate(BATCHES):
        df = spark.sql(sql)
        schema = parse_schema(df.schema.json())
        df.coalesce(1).write.parquet(str(stage / str(i)))
        (src,) = (stage / str(i)).glob("*.parquet")
        dest = path / f"part-{i:05d}-{uuid.uuid4()}.parquet"
        os.rename(src, dest)
        _, stats = collect_stats_for_file(str(dest), schema)
        adds.append({"add": {"path": dest.name, "partitionValues": {}, "size": dest.stat().st_size,
                             "modificationTime": int(dest.stat().st_mtime * 1000), "dataChange": True,
                             "stats": stats}})
    shutil.rmtree(stage)
    assert schema is not None
    actions = [
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["variantType"],
                      "writerFeatures": ["variantType"]}},
        {"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                      "schemaString": schema.to_json(), "partitionColumns": [], "configuration": {},
                      "createdTime": 0}},
        *adds,
    ]
    (path / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def as_json(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, list):
        return [as_json(x) for x in v]
    return v.toJson()


def spark_values(df: Any) -> dict[int, tuple]:
    return {r.id: (as_json(r.arr), as_json(r.v), as_json(r.s.x) if r.s is not None else None) for r in df.collect()}


@pytest.fixture
def variant_table(spark, tmp_path) -> str:
    path = tmp_path / "variants"
    build_variant_table(spark, path)
    return str(path)


def test_read_back_variants_with_nulls(spark, variant_table):
    df = spark.read.format("delta").load(variant_table)
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        "int", "array<variant>", "variant", "struct<x:variant>"]
    assert spark_values(df) == EXPECTED
    assert df.count() == 6
    assert spark_values(df.filter("v is null")) == {k: v for k, v in EXPECTED.items() if v[1] is None}


def test_to_arrow_of_a_delta_read_with_null_variants(spark, variant_table):
    table = spark.read.format("delta").load(variant_table).toArrow()
    assert table.num_rows == 6
    assert table.schema.field("arr").type == pa.list_(pa.field("element", pa.struct([
        pa.field("value", pa.binary(), nullable=False), pa.field("metadata", pa.binary(), nullable=False)])))
    by_id = {r["id"]: r for r in table.to_pylist()}
    assert [e is None for e in by_id[1]["arr"]] == [False, True]
    assert by_id[2]["arr"] is None and by_id[2]["v"] is None
    assert [e is None for e in by_id[3]["arr"]] == [True, False]
    # filtered reads are Delta reads too
    assert spark.read.format("delta").load(variant_table).filter("id > 3").toArrow().num_rows == 3


def test_filter_prunes_files_next_to_variant_columns(spark, variant_table):
    from pyspark.sql import functions as F

    df = spark.read.format("delta").load(variant_table)
    assert len(df.inputFiles()) == 2
    one = df.filter(F.col("id") == 5)
    assert len(one.inputFiles()) == 1
    assert spark_values(one) == {5: EXPECTED[5]}


def test_log_core_stats_and_checkpoint(spark, variant_table):
    from pydelta.log.checkpoint_writer import write_checkpoint

    files = pydelta.load_snapshot(variant_table).files()
    assert files.column("num_records").to_pylist() == [3, 3]
    stats = [json.loads(s) for s in files.column("stats").to_pylist()]
    assert [(s["minValues"], s["maxValues"]) for s in stats] == [({"id": 1}, {"id": 3}), ({"id": 4}, {"id": 6})]
    for s in stats:  # variants never get min/max; a top-level variant's null count is exact
        assert set(s["minValues"]) == {"id"} and s["nullCount"]["id"] == 0
    assert [s["nullCount"].get("v") for s in stats] == [1, 1]

    write_checkpoint(pydelta.load_snapshot(variant_table))
    os.unlink(os.path.join(variant_table, "_delta_log", f"{0:020d}.json"))
    again = pydelta.load_snapshot(variant_table).files()
    assert again.column("stats").to_pylist() == files.column("stats").to_pylist()
    assert spark_values(spark.read.format("delta").load(variant_table)) == EXPECTED


def test_deltalake_reads_the_same_variant_bytes(spark, variant_table):
    import deltalake

    # deltalake 1.6 itself fails on null top-level / struct-field variants ("field 'value' of
    # type binary has nulls"), so it witnesses the array column, the subject here.
    dl = deltalake.DeltaTable(variant_table).to_pyarrow_table(columns=["id", "arr"])
    theirs = {r["id"]: r for r in dl.to_pylist()}
    ours = {r.id: r for r in spark.read.format("delta").load(variant_table).collect()}
    assert set(theirs) == set(ours) == set(EXPECTED)
    for i, row in ours.items():
        if row.arr is None:
            assert theirs[i]["arr"] is None
            continue
        assert [None if e is None else bytes(e.value) for e in row.arr] == \
            [None if e is None else e["value"] for e in theirs[i]["arr"]]


def test_sql_writes_variant_tables_unshredded(spark, tmp_path):
    """pydelta writes variant tables (variantType, as delta-spark does on CREATE), and writes the
    variants unshredded, as PROTOCOL.md requires without variantShredding, though Spark 4.1+
    would shred these objects by default."""
    import pyarrow.parquet as pq

    path = str(tmp_path / "written")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, v VARIANT, s STRUCT<x: VARIANT>) USING delta")
    spark.sql(f"INSERT INTO {t} SELECT CAST(id AS INT), parse_json('{{\"k\": ' || id || ', \"s\": \"t\"}}'), "
              "named_struct('x', parse_json('[1, 2]')) FROM range(40)")
    spark.sql(f"UPDATE {t} SET v = parse_json('{{\"k\": -1}}') WHERE id = 3")
    spark.sql(f"MERGE INTO {t} t USING (SELECT 100 AS id) s ON t.id = s.id "
              "WHEN NOT MATCHED THEN INSERT (id, v, s) VALUES (s.id, parse_json('{\"k\": 100}'), NULL)")
    snapshot = pydelta.load_snapshot(path)
    assert "variantType" in snapshot.protocol.reader_features and "variantType" in snapshot.protocol.writer_features
    assert snapshot.protocol.min_reader_version == 3 and snapshot.protocol.min_writer_version == 7
    for f in snapshot.files().to_pylist():
        schema = pq.read_schema(snapshot.absolute_path(f["path"]))
        assert "typed_value" not in str(schema), schema
        assert [schema.field("v").type[i].name for i in range(2)] == ["value", "metadata"]
        stats = json.loads(f["stats"])
        assert set(stats["minValues"]) == {"id"}  # no min/max for variants
    got = spark.sql(f"SELECT id, variant_get(v, '$.k', 'int'), to_json(s.x) FROM {t} "
                    "WHERE id IN (2, 3, 100) ORDER BY id").collect()
    assert [tuple(r) for r in got] == [(2, 2, "[1,2]"), (3, -1, "[1,2]"), (100, 100, None)]
