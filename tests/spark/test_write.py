"""The Spark write path: modes, options, schema enforcement, constraints, catalog names.

Every table is also read back by the independent `deltalake` package.
"""

from __future__ import annotations

import json
import os

import pytest

import pydelta
from pydelta import errors

pytestmark = pytest.mark.spark


def _key(row):
    return tuple((v is not None, v if v is not None else 0) for v in row)


def rows(spark, path, *cols, **opts):
    reader = spark.read.format("delta")
    for k, v in opts.items():
        reader = reader.option(k, v)
    df = reader.load(path)
    return sorted((tuple(r) for r in df.select(*(cols or df.columns)).collect()), key=_key)


def dl_rows(path, *cols):
    import deltalake

    t = deltalake.DeltaTable(path).to_pyarrow_table()
    cols = cols or tuple(t.column_names)
    return sorted(zip(*[t.column(c).to_pylist() for c in cols], strict=True), key=_key)


def log_versions(path):
    return sorted(int(f[:20]) for f in os.listdir(os.path.join(path, "_delta_log"))
                  if f.endswith(".json") and f[:20].isdigit())


def commit_info(path, version):
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        for line in f:
            a = json.loads(line)
            if "commitInfo" in a:
                return a["commitInfo"]


@pytest.fixture
def people(spark):
    return spark.createDataFrame(
        [(1, "alice", "NL"), (2, "bob", "US"), (3, "carol", "NL"), (4, "dan", "FR")],
        "id INT, name STRING, country STRING",
    )


def test_modes(spark, tmp_path, people):
    path = str(tmp_path / "t")
    people.write.format("delta").save(path)
    assert rows(spark, path) == dl_rows(path) == sorted(tuple(r) for r in people.collect())
    with pytest.raises(errors.TableAlreadyExistsError):
        people.write.format("delta").save(path)
    people.write.format("delta").mode("ignore").save(path)
    assert log_versions(path) == [0]
    people.write.format("delta").mode("append").save(path)
    assert len(rows(spark, path)) == 8
    people.limit(1).write.format("delta").mode("overwrite").save(path)
    assert rows(spark, path) == dl_rows(path) == [(1, "alice", "NL")]
    assert log_versions(path) == [0, 1, 2]
    ci = commit_info(path, 2)
    assert ci["operation"] == "WRITE" and ci["operationParameters"]["mode"] == "Overwrite"
    assert ci["readVersion"] == 1 and ci["isBlindAppend"] is False
    assert ci["operationMetrics"]["numOutputRows"] == "1"
    assert commit_info(path, 1)["isBlindAppend"] is True
    # time travel still sees the old data
    assert len(rows(spark, path, versionAsOf=1)) == 8


def test_partitioned_write_layout_and_values(spark, tmp_path, people):
    path = str(tmp_path / "p")
    people.write.format("delta").partitionBy("country").save(path)
    snap = pydelta.load_snapshot(path)
    assert snap.partition_columns == ["country"]
    for p, pv in zip(snap.files().column("path").to_pylist(), snap.files().column("partition_values").to_pylist(),
                     strict=True):
        value = dict(pv)["country"]
        assert p.startswith(f"country={value}/")
        assert os.path.exists(os.path.join(path, p))
    assert rows(spark, path) == dl_rows(path)
    assert rows(spark, path, "id") == [(1,), (2,), (3,), (4,)]


def test_pydelta_write_function(spark, tmp_path, people):
    path = str(tmp_path / "f")
    assert pydelta.write(people, path, partition_by=["country"]) == 0
    assert pydelta.write(people, path, mode="append") == 1
    assert len(dl_rows(path)) == 8


def test_schema_mismatch_fails_and_writes_nothing(spark, tmp_path, people):
    path = str(tmp_path / "s")
    people.write.format("delta").save(path)
    before = sorted(os.listdir(path))
    extra = people.selectExpr("*", "1 as extra")
    with pytest.raises(errors.SchemaMismatchError, match="extra"):
        extra.write.format("delta").mode("append").save(path)
    wrong_type = people.selectExpr("cast(id as string) as id", "name", "country")
    with pytest.raises(errors.SchemaMismatchError):
        wrong_type.write.format("delta").mode("append").save(path)
    assert log_versions(path) == [0]
    assert sorted(os.listdir(path)) == before  # no data files left behind either


def test_merge_schema_and_missing_columns(spark, tmp_path, people):
    path = str(tmp_path / "m")
    people.write.format("delta").save(path)
    people.selectExpr("*", "id * 10 as score").write.format("delta").mode("append") \
        .option("mergeSchema", "true").save(path)
    assert pydelta.load_snapshot(path).schema.field_names == ["id", "name", "country", "score"]
    # a later append without the new column fills nulls
    people.select("id", "name", "country").write.format("delta").mode("append").save(path)
    got = rows(spark, path, "id", "score")
    assert got.count((1, None)) == 2 and (1, 10) in got
    assert dl_rows(path, "id", "score") == got


def test_safe_upcast_on_append(spark, tmp_path):
    path = str(tmp_path / "u")
    spark.createDataFrame([(1,)], "x BIGINT").write.format("delta").save(path)
    spark.createDataFrame([(2,)], "x INT").write.format("delta").mode("append").save(path)
    assert rows(spark, path) == [(1,), (2,)]


def test_overwrite_schema(spark, tmp_path, people):
    path = str(tmp_path / "o")
    people.write.format("delta").partitionBy("country").save(path)
    new = spark.createDataFrame([("x", 1.5)], "k STRING, v DOUBLE")
    with pytest.raises(errors.SchemaMismatchError):
        new.write.format("delta").mode("overwrite").save(path)
    new.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path)
    snap = pydelta.load_snapshot(path)
    assert snap.schema.field_names == ["k", "v"] and snap.partition_columns == []
    assert rows(spark, path) == dl_rows(path) == [("x", 1.5)]


def test_partition_by_mismatch_is_refused(spark, tmp_path, people):
    path = str(tmp_path / "pm")
    people.write.format("delta").partitionBy("country").save(path)
    with pytest.raises(errors.DeltaAnalysisError, match="Partition columns"):
        people.write.format("delta").mode("append").partitionBy("name").save(path)


def test_replace_where_partition(spark, tmp_path, people):
    path = str(tmp_path / "rw")
    people.write.format("delta").partitionBy("country").save(path)
    nl = spark.createDataFrame([(10, "zed", "NL")], "id INT, name STRING, country STRING")
    nl.write.format("delta").mode("overwrite").option("replaceWhere", "country = 'NL'").save(path)
    assert rows(spark, path, "id") == [(2,), (4,), (10,)]
    assert dl_rows(path, "id") == [(2,), (4,), (10,)]
    ci = commit_info(path, 1)
    assert ci["operationParameters"]["predicate"] == json.dumps(["country = 'NL'"])
    # data outside the predicate is refused and nothing is committed
    bad = spark.createDataFrame([(11, "yo", "US")], "id INT, name STRING, country STRING")
    with pytest.raises(errors.InvariantViolationError):
        bad.write.format("delta").mode("overwrite").option("replaceWhere", "country = 'NL'").save(path)
    assert log_versions(path) == [0, 1]


def test_replace_where_data_column(spark, tmp_path, people):
    path = str(tmp_path / "rwd")
    people.write.format("delta").save(path)
    new = spark.createDataFrame([(100, "x", "ZZ")], "id INT, name STRING, country STRING")
    new.write.format("delta").mode("overwrite").option("replaceWhere", "id >= 3").save(path)
    assert rows(spark, path, "id") == dl_rows(path, "id") == [(1,), (2,), (100,)]


def test_dynamic_partition_overwrite(spark, tmp_path, people):
    path = str(tmp_path / "dyn")
    people.write.format("delta").partitionBy("country").save(path)
    new = spark.createDataFrame([(7, "eve", "NL"), (8, "fay", "DE")], "id INT, name STRING, country STRING")
    new.write.format("delta").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)
    assert rows(spark, path, "id") == dl_rows(path, "id") == [(2,), (4,), (7,), (8,)]


def test_idempotent_txn(spark, tmp_path, people):
    path = str(tmp_path / "idem")
    for _ in range(2):
        people.write.format("delta").mode("append").option("txnAppId", "app").option("txnVersion", 1).save(path)
    assert log_versions(path) == [0]
    people.write.format("delta").mode("append").option("txnAppId", "app").option("txnVersion", 2).save(path)
    assert log_versions(path) == [0, 1]
    assert pydelta.load_snapshot(path).transactions == {"app": 2}
    with pytest.raises(errors.DeltaIllegalArgumentError):
        people.write.format("delta").mode("append").option("txnAppId", "app").save(path)


def test_user_metadata_and_options(spark, tmp_path):
    path = str(tmp_path / "opt")
    df = spark.range(100).selectExpr("id")
    (df.repartition(1).write.format("delta").option("userMetadata", "nightly load")
     .option("maxRecordsPerFile", 30).option("compression", "zstd").save(path))
    assert commit_info(path, 0)["userMetadata"] == "nightly load"
    files = pydelta.load_snapshot(path).files()
    assert files.num_rows == 4
    assert sorted(files.column("num_records").to_pylist()) == [10, 30, 30, 30]
    import pyarrow.parquet as pq

    meta = pq.read_metadata(os.path.join(path, files.column("path")[0].as_py()))
    assert meta.row_group(0).column(0).compression == "ZSTD"


def test_data_change_false(spark, tmp_path):
    path = str(tmp_path / "dc")
    spark.range(10).write.format("delta").save(path)
    spark.range(10).write.format("delta").mode("overwrite").option("dataChange", "false").save(path)
    with open(os.path.join(path, "_delta_log", f"{1:020d}.json")) as f:
        actions = [json.loads(line) for line in f]
    assert all(a[k]["dataChange"] is False for a in actions for k in ("add", "remove") if k in a)


def test_not_null_invariants_and_check_constraints(spark, tmp_path):
    from pyspark.sql.types import IntegerType, StructField, StructType

    path = str(tmp_path / "c")
    invariant = json.dumps({"expression": {"expression": "x > 3"}})
    schema = StructType([StructField("x", IntegerType(), False, {"delta.invariants": invariant})])
    pydelta.DeltaTable.create(spark).location(path).addColumns(schema) \
        .property("delta.constraints.small", "x < 100").execute()
    spark.createDataFrame([(5,)], "x INT").write.format("delta").mode("append").save(path)
    for bad, text in (([(1,)], "x > 3"), ([(500,)], "small"), ([(None,)], "NOT NULL")):
        with pytest.raises(errors.InvariantViolationError, match=text):
            spark.createDataFrame(bad, "x INT").write.format("delta").mode("append").save(path)
    assert log_versions(path) == [0, 1]
    assert rows(spark, path) == [(5,)]


def test_generated_columns(spark, tmp_path):
    path = str(tmp_path / "g")
    (pydelta.DeltaTable.create(spark).location(path).addColumn("x", "INT")
     .addColumn("y", "INT", generatedAlwaysAs="x * 2").execute())
    spark.createDataFrame([(1,), (2,)], "x INT").write.format("delta").mode("append").save(path)
    assert rows(spark, path) == [(1, 2), (2, 4)]
    with pytest.raises(errors.InvariantViolationError):
        spark.createDataFrame([(3, 7)], "x INT, y INT").write.format("delta").mode("append").save(path)
    assert pydelta.load_snapshot(path).protocol.min_writer_version >= 4


def test_append_only(spark, tmp_path, people):
    path = str(tmp_path / "ao")
    people.write.format("delta").option("delta.appendOnly", "true").save(path)
    people.write.format("delta").mode("append").save(path)
    with pytest.raises(errors.DeltaError):
        people.write.format("delta").mode("overwrite").save(path)
    assert log_versions(path) == [0, 1]


def test_builder_create_replace(spark, tmp_path):
    path = str(tmp_path / "b")
    t = (pydelta.DeltaTable.create(spark).location(path).addColumn("id", "BIGINT").addColumn("p", "STRING")
         .partitionedBy("p").property("delta.logRetentionDuration", "interval 60 days").comment("demo").execute())
    assert t.toDF().count() == 0
    with pytest.raises(errors.TableAlreadyExistsError):
        pydelta.DeltaTable.create(spark).location(path).addColumn("id", "BIGINT").execute()
    pydelta.DeltaTable.createIfNotExists(spark).location(path).addColumn("id", "BIGINT").execute()
    assert log_versions(path) == [0]
    spark.createDataFrame([(1, "a")], "id BIGINT, p STRING").write.format("delta").mode("append").save(path)
    pydelta.DeltaTable.replace(spark).location(path).addColumn("z", "INT").execute()
    snap = pydelta.load_snapshot(path)
    assert snap.schema.field_names == ["z"] and snap.num_files == 0
    detail = t.detail().collect()[0]
    assert detail.numFiles == 0
    with pytest.raises(errors.DeltaAnalysisError):
        pydelta.DeltaTable.replace(spark).location(str(tmp_path / "nope")).addColumn("z", "INT").execute()
    ops = [r.operation for r in t.history().collect()]
    assert ops == ["REPLACE TABLE", "WRITE", "CREATE TABLE"]


def test_save_as_table_and_names(spark, tmp_path, people):
    people.write.format("delta").saveAsTable("people_tbl")
    assert spark.table("people_tbl").count() == 4
    assert spark.read.table("people_tbl").count() == 4
    people.write.insertInto("people_tbl")
    assert pydelta.DeltaTable.forName(spark, "people_tbl").toDF().count() == 8
    people.write.format("delta").mode("overwrite").saveAsTable("people_tbl")
    assert spark.table("people_tbl").count() == 4
    ops = [r.operation for r in pydelta.DeltaTable.forName(spark, "people_tbl").history().collect()]
    assert ops[-1] == "CREATE TABLE AS SELECT"


def test_column_mapping_write_and_read(spark, tmp_path, people):
    path = str(tmp_path / "cm")
    people.write.format("delta").option("delta.columnMapping.mode", "name").partitionBy("country").save(path)
    snap = pydelta.load_snapshot(path)
    assert snap.protocol.min_reader_version >= 2
    phys = [f.metadata["delta.columnMapping.physicalName"] for f in snap.schema.fields]
    assert all(p.startswith("col-") for p in phys)
    import pyarrow.parquet as pq

    f0 = snap.files().column("path")[0].as_py()
    assert set(pq.read_schema(os.path.join(path, f0)).names) <= set(phys)
    people.write.format("delta").mode("append").save(path)
    assert rows(spark, path, "id") == sorted([(i,) for i in (1, 2, 3, 4)] * 2)


def test_failed_write_leaves_log_untouched(spark, tmp_path, people):
    path = str(tmp_path / "fail")
    people.write.format("delta").save(path)
    boom = people.selectExpr("id", "name", "CASE WHEN id = 3 THEN raise_error('boom') ELSE country END AS country")
    # the job's failure: its class is how Spark wraps it (Py4JJavaError or a captured one), its text names boom
    with pytest.raises(Exception, match="boom"):
        boom.write.format("delta").mode("append").save(path)
    assert log_versions(path) == [0]
    assert rows(spark, path) == dl_rows(path)
