"""Columns whose names Spark would parse: dots, backticks and spaces (``id.num`s``, ``a.b``).

Every name pydelta hands to Spark must be quoted (``quote_identifier``); these tests build
such tables with pydelta and with `deltalake` (delta-rs), then read, filter (with file
pruning), DELETE / UPDATE / MERGE, OPTIMIZE and Z-order them, with constraints and
generated columns, and check the result with pydelta, the log and deltalake.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pydelta
from pydelta import DeltaTable
from pydelta.protocol.schema import quote_identifier, quote_path, split_identifier
from tests.spark.test_maintenance_support import delete_rows_with_dv, deltalake_rows

pytestmark = pytest.mark.spark

ODD = "id.num`s"  # the characters i d . n u m ` s
DOT = "a.b"
SPACE = "with space"
PART = "p a.r`t"  # a partition column with a space, a dot and a backtick
COLUMNS = [ODD, DOT, SPACE, PART]
Q_ODD, Q_DOT, Q_SPACE, Q_PART = (quote_identifier(c) for c in COLUMNS)

LAYOUTS = {
    "plain": {},
    "partitioned": {"partition_by": [PART]},
    "column_mapping": {"options": {"delta.columnMapping.mode": "name"}},
    "partitioned_column_mapping": {"partition_by": [PART], "options": {"delta.columnMapping.mode": "name"}},
}


def spark_schema() -> Any:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([
        StructField(ODD, LongType()),
        StructField(DOT, StringType()),
        StructField(SPACE, LongType()),
        StructField(PART, StringType()),
    ])


def make_rows(ids: range) -> list[tuple]:
    return [(i, f"s{i}", i * 10, "x" if i % 2 else "y") for i in ids]


def write(spark: Any, path: str, rows: list[tuple], *, mode: str = "append", partition_by: list[str] | None = None,
          options: dict[str, str] | None = None, files: int = 1) -> None:
    writer = spark.createDataFrame(rows, spark_schema()).repartition(files).write.format("delta").mode(mode)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    for k, v in (options or {}).items():
        writer = writer.option(k, v)
    writer.save(path)


def rows_of(df: Any) -> list[tuple]:
    return sorted(tuple(r) for r in df.select(*[quote_identifier(c) for c in COLUMNS]).collect())


def read(spark: Any, path: str) -> Any:
    return spark.read.format("delta").load(path)


def stats_keys(path: str) -> list[set[str]]:
    out = []
    for stats in pydelta.load_snapshot(path).files().column("stats").to_pylist():
        out.append(set(json.loads(stats)["minValues"]))
    return out


def logical_stats_keys(path: str) -> set[str]:
    """The minValues keys of every file, mapped back to logical names (column mapping)."""
    snap = pydelta.load_snapshot(path)
    physical = {f.metadata.get("delta.columnMapping.physicalName", f.name): f.name for f in snap.schema.fields}
    keys: set[str] = set()
    for k in stats_keys(path):
        keys |= {physical[name] for name in k}
    return keys


# ---- the helper itself ------------------------------------------------------------------------


def test_quote_identifier_round_trips_through_spark_and_split(spark):
    assert quote_identifier(ODD) == "`id.num``s`"
    assert quote_path(["s.t", "x`y"]) == "`s.t`.`x``y`"
    for name in [*COLUMNS, "plain", "``", "a`.`b"]:
        assert split_identifier(quote_identifier(name)) == [name]
    df = spark.createDataFrame([tuple(make_rows(range(1, 2))[0])], spark_schema())
    assert df.select(*[quote_identifier(c) for c in COLUMNS]).columns == COLUMNS


# ---- written by pydelta -------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_write_then_read_with_raw_names_in_stats(spark, tmp_path, layout):
    path = str(tmp_path / "t")
    cfg = LAYOUTS[layout]
    write(spark, path, make_rows(range(1, 5)), partition_by=cfg.get("partition_by"), options=cfg.get("options"))
    write(spark, path, make_rows(range(5, 9)))  # append: the table's partitioning and mapping apply
    assert rows_of(read(spark, path)) == sorted(make_rows(range(1, 9)))
    assert read(spark, path).columns == COLUMNS

    md = pydelta.load_snapshot(path).metadata
    assert [f.name for f in md.schema.fields] == COLUMNS
    expected = {ODD, DOT, SPACE} if cfg.get("partition_by") else set(COLUMNS)
    assert logical_stats_keys(path) == expected
    if "column_mapping" not in layout:
        # stats JSON keys are the raw names, never quoted
        assert all(keys == expected for keys in stats_keys(path))
    # the independent reader sees the same rows
    assert deltalake_rows(path, COLUMNS) == sorted(make_rows(range(1, 9)))


@pytest.mark.parametrize("layout", ["plain", "column_mapping"])
def test_filter_on_odd_columns_prunes_files(spark, tmp_path, layout):
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    options = LAYOUTS[layout].get("options")
    for start in (1, 11, 21, 31):  # four files with disjoint ranges of every column
        write(spark, path, make_rows(range(start, start + 5)), options=options if start == 1 else None)
    df = read(spark, path)
    assert len(df.inputFiles()) == 4

    by_col = df.filter(F.col(Q_ODD) == 12)
    assert len(by_col.inputFiles()) == 1
    assert rows_of(by_col) == make_rows(range(12, 13))

    by_sql = df.where(f"{Q_SPACE} >= 310")
    assert len(by_sql.inputFiles()) == 1
    assert sorted(r[ODD] for r in by_sql.collect()) == [31, 32, 33, 34, 35]

    by_string = df.filter(F.col(Q_DOT) == "s3")
    assert len(by_string.inputFiles()) == 1
    assert rows_of(by_string) == make_rows(range(3, 4))


def test_partition_filter_on_odd_partition_column_prunes(spark, tmp_path):
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    write(spark, path, make_rows(range(1, 9)), partition_by=[PART])
    df = read(spark, path)
    assert len(df.inputFiles()) == 2
    only_x = df.filter(F.col(Q_PART) == "x")
    assert len(only_x.inputFiles()) == 1
    assert sorted(r[ODD] for r in only_x.collect()) == [1, 3, 5, 7]
    snap = pydelta.load_snapshot(path)
    assert {k for pv in snap.files().column("partition_values").to_pylist() for k, _ in pv} == {PART}


def test_deletion_vector_table_with_odd_names(spark, tmp_path):
    path = str(tmp_path / "t")
    write(spark, path, make_rows(range(1, 7)), partition_by=[PART],
          options={"delta.enableDeletionVectors": "true"})
    snap = pydelta.load_snapshot(path)
    first = snap.files().column("path").to_pylist()[0]
    delete_rows_with_dv(path, first, [0])
    remaining = rows_of(read(spark, path))
    assert len(remaining) == 5
    assert remaining == sorted(set(make_rows(range(1, 7))) & set(remaining))
    assert rows_of(read(spark, path).filter(f"{Q_ODD} > 0")) == remaining


# ---- written by deltalake (delta-rs), read and changed by pydelta --------------------------------------


def test_table_written_by_deltalake_is_read_filtered_and_changed(spark, tmp_path):
    import deltalake
    from pyspark.sql import functions as F

    path = str(tmp_path / "rs")
    rows = make_rows(range(1, 9))
    data = pa.table({
        ODD: pa.array([r[0] for r in rows], pa.int64()),
        DOT: pa.array([r[1] for r in rows], pa.string()),
        SPACE: pa.array([r[2] for r in rows], pa.int64()),
        PART: pa.array([r[3] for r in rows], pa.string()),
    })
    deltalake.write_deltalake(path, data, partition_by=[PART])
    deltalake.write_deltalake(path, data.slice(0, 2).set_column(0, ODD, pa.array([101, 102], pa.int64())),
                              mode="append")

    df = read(spark, path)
    assert rows_of(df) == sorted([*rows, (101, "s1", 10, "x"), (102, "s2", 20, "y")])
    pruned = df.filter(F.col(Q_PART) == "y")
    assert len(pruned.inputFiles()) < len(df.inputFiles())
    assert sorted(r[ODD] for r in pruned.collect()) == [2, 4, 6, 8, 102]

    table = DeltaTable.forPath(spark, path)
    table.delete(F.col(Q_ODD) > 100)
    table.update(f"{Q_DOT} = 's3'", {Q_SPACE: f"{Q_SPACE} + 1"})
    expected = [r if r[0] != 3 else (3, "s3", 31, "x") for r in rows]
    assert rows_of(read(spark, path)) == sorted(expected)
    assert deltalake_rows(path, COLUMNS) == sorted(expected)


# ---- DML --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_delete_update_merge_on_odd_columns(spark, tmp_path, layout):
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    cfg = LAYOUTS[layout]
    options = {**(cfg.get("options") or {}), "delta.enableChangeDataFeed": "true"}
    write(spark, path, make_rows(range(1, 9)), partition_by=cfg.get("partition_by"), options=options, files=2)
    table = DeltaTable.forPath(spark, path)
    expected = {r[0]: r for r in make_rows(range(1, 9))}

    # DELETE: a Column on a data column, then a SQL string on the partition column
    table.delete(F.col(Q_ODD) == 1)
    del expected[1]
    table.delete(f"{Q_PART} = 'y' AND {Q_SPACE} > 70")
    del expected[8]
    assert rows_of(read(spark, path)) == sorted(expected.values())

    # UPDATE: quoted SET keys, values by Column and by SQL
    table.update(F.col(Q_ODD) == 2, {Q_DOT: F.lit("two"), Q_SPACE: F.col(Q_SPACE) + F.col(Q_ODD)})
    expected[2] = (2, "two", 22, "y")
    table.updateExpr(f"{Q_ODD} = 3", {Q_SPACE: f"{Q_SPACE} * 2"})
    expected[3] = (3, "s3", 60, "x")
    assert rows_of(read(spark, path)) == sorted(expected.values())

    # MERGE: aliased, backticked conditions; explicit and star clauses
    source = spark.createDataFrame([(4, "four", 0, "y"), (5, "five", 0, "x"), (50, "new", 500, "x")], spark_schema())
    (table.alias("t").merge(source.alias("s"), f"t.{Q_ODD} = s.{Q_ODD}")
        .whenMatchedUpdate(f"s.{Q_DOT} = 'four'", {Q_DOT: f"s.{Q_DOT}", f"t.{Q_SPACE}": F.col(f"t.{Q_SPACE}") + 1})
        .whenMatchedUpdateAll()
        .whenNotMatchedInsert(values={Q_ODD: f"s.{Q_ODD}", Q_DOT: f"s.{Q_DOT}", Q_SPACE: f"s.{Q_SPACE}",
                                      Q_PART: f"s.{Q_PART}"})
        .execute())
    expected[4] = (4, "four", 41, "y")
    expected[5] = (5, "five", 0, "x")
    expected[50] = (50, "new", 500, "x")
    assert rows_of(read(spark, path)) == sorted(expected.values())
    (table.alias("t").merge(source.alias("s"), F.col(f"t.{Q_ODD}") == F.col(f"s.{Q_ODD}"))
        .whenMatchedDelete(F.col(f"s.{Q_ODD}") == 50)
        .execute())
    del expected[50]
    assert rows_of(read(spark, path)) == sorted(expected.values())

    # change data was written with the same names
    snap = pydelta.load_snapshot(path)
    assert snap.version == 6
    changes = list(Path(path, "_change_data").rglob("*.parquet"))
    assert changes
    data_columns = {f.metadata.get("delta.columnMapping.physicalName", f.name)
                    for f in snap.schema.fields if f.name not in snap.partition_columns}
    for change in changes:
        assert set(pq.read_schema(change).names) == data_columns | {"_change_type"}
    assert deltalake_rows(path, COLUMNS) == sorted(expected.values())


# ---- constraints, generated columns, NOT NULL ---------------------------------------------------------


def test_constraints_generated_and_not_null_odd_columns(spark, tmp_path):
    from pyspark.sql import functions as F

    from pydelta.errors import InvariantViolationError

    path = str(tmp_path / "t")
    (DeltaTable.create(spark).location(path)
        .addColumn(ODD, "BIGINT", nullable=False)
        .addColumn(DOT, "STRING")
        .addColumn(SPACE, "BIGINT", generatedAlwaysAs=f"{Q_ODD} * 10")
        .addColumn(PART, "STRING")
        .partitionedBy(PART)
        .property("delta.constraints.positive", f"{Q_ODD} > 0")
        .execute())
    write(spark, path, make_rows(range(1, 5)))
    assert rows_of(read(spark, path)) == sorted(make_rows(range(1, 5)))

    with pytest.raises(InvariantViolationError, match="positive"):
        write(spark, path, [(-1, "neg", -10, "x")])
    with pytest.raises(InvariantViolationError, match="Generated column"):
        write(spark, path, [(7, "bad", 1, "x")])
    with pytest.raises(InvariantViolationError, match="NOT NULL"):
        write(spark, path, [(None, "null", None, "x")])
    # the generated column is computed when it is missing from the written data
    spark.createDataFrame([(9, "gen", "y")], f"{Q_ODD} BIGINT, {Q_DOT} STRING, {Q_PART} STRING") \
        .write.format("delta").mode("append").save(path)
    assert read(spark, path).filter(F.col(Q_ODD) == 9).collect()[0][SPACE] == 90
    # DML checks the same constraints
    with pytest.raises(InvariantViolationError, match="positive"):
        DeltaTable.forPath(spark, path).update(F.col(Q_ODD) == 1, {Q_ODD: F.lit(-5)})
    assert pydelta.load_snapshot(path).version == 2


def test_nested_struct_with_odd_field_names(spark, tmp_path):
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    path = str(tmp_path / "t")
    inner = StructType([StructField("x.y", LongType(), False), StructField("z`w", LongType())])
    schema = StructType([StructField(ODD, LongType()), StructField("s.t", inner)])
    spark.createDataFrame([(1, (1, 2)), (2, (3, None))], schema).write.format("delta").save(path)
    df = read(spark, path)
    assert sorted((r[0], tuple(r[1])) for r in df.collect()) == [(1, (1, 2)), (2, (3, None))]
    assert len(df.filter(F.col(quote_path(["s.t", "x.y"])) == 3).collect()) == 1
    DeltaTable.forPath(spark, path).update(F.col(Q_ODD) == 1, {quote_path(["s.t", "z`w"]): F.lit(9)})
    assert sorted(tuple(r[1]) for r in read(spark, path).collect()) == [(1, 9), (3, None)]
    stats = json.loads(pydelta.load_snapshot(path).files().column("stats").to_pylist()[0])
    assert set(stats["minValues"]["s.t"]) <= {"x.y", "z`w"} and ODD in stats["minValues"]


# ---- OPTIMIZE and Z-order ----------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["partitioned", "partitioned_column_mapping"])
def test_optimize_and_zorder_on_odd_columns(spark, tmp_path, layout):
    path = str(tmp_path / "t")
    cfg = LAYOUTS[layout]
    write(spark, path, make_rows(range(1, 5)), partition_by=cfg["partition_by"], options=cfg.get("options"))
    for start in (5, 9, 13):
        write(spark, path, make_rows(range(start, start + 4)))
    table = DeltaTable.forPath(spark, path)
    before = rows_of(read(spark, path))

    table.optimize().where(f"{Q_PART} = 'x'").executeCompaction()
    assert rows_of(read(spark, path)) == before
    per_partition = {}
    for pv in pydelta.load_snapshot(path).files().column("partition_values").to_pylist():
        key = dict(pv).popitem()[1]
        per_partition[key] = per_partition.get(key, 0) + 1
    assert per_partition == {"x": 1, "y": 4}

    table.optimize().executeZOrderBy(Q_ODD, Q_SPACE)
    assert rows_of(read(spark, path)) == before
    assert pydelta.load_snapshot(path).files().num_rows == 2
    history = table.history(1).collect()[0]
    assert json.loads(history.operationParameters["zOrderBy"]) == [Q_ODD, Q_SPACE]
