"""Concurrent DML on the same partition: the loser gets delta-spark's exception, nothing is lost."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import pydelta
from pydelta.errors import (
    ConcurrentAppendException,
    ConcurrentDeleteReadException,
    DeltaConcurrentModificationException,
)

pytestmark = pytest.mark.spark


def _table(spark, path):
    df = spark.createDataFrame([(i, i % 2, 0) for i in range(20)], "id INT, p INT, v INT")
    df.repartition(1).write.format("delta").partitionBy("p").save(path)


def test_update_vs_update_same_partition(spark, tmp_path):
    from pydelta.spark.dml.update import prepare_update

    path = str(tmp_path / "uu")
    _table(spark, path)
    snapshot = pydelta.load_snapshot(path)
    first = prepare_update(spark, snapshot, "p = 0 AND id < 5", {"v": F.lit(1)})
    second = prepare_update(spark, snapshot, "p = 0 AND id >= 10", {"v": F.lit(2)})
    first.commit()
    with pytest.raises((ConcurrentDeleteReadException, ConcurrentAppendException)) as info:
        second.commit()
    assert isinstance(info.value, DeltaConcurrentModificationException)
    got = {r.id: r.v for r in spark.read.format("delta").load(path).collect()}
    assert got == {i: (1 if i % 2 == 0 and i < 5 else 0) for i in range(20)}


def test_update_in_other_partition_both_commit(spark, tmp_path):
    from pydelta.spark.dml.update import prepare_update

    path = str(tmp_path / "uo")
    _table(spark, path)
    snapshot = pydelta.load_snapshot(path)
    first = prepare_update(spark, snapshot, "p = 0", {"v": F.lit(1)})
    second = prepare_update(spark, snapshot, "p = 1", {"v": F.lit(2)})
    first.commit()
    second.commit()
    got = {r.id: r.v for r in spark.read.format("delta").load(path).collect()}
    assert got == {i: (1 if i % 2 == 0 else 2) for i in range(20)}
