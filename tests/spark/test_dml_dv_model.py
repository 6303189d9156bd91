"""Property test: random DELETE / UPDATE / MERGE / append sequences on a deletion-vector table, a copy-on-write
table and a plain Python model agree at every version (and `deltalake` agrees at the end)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pydelta import DeltaTable
from tests.spark.test_dml_delete import deltalake_rows

pytestmark = pytest.mark.spark

_DELETE = st.tuples(st.just("delete"), st.integers(2, 9), st.integers(0, 8))  # id % m = r
_UPDATE = st.tuples(st.just("update"), st.integers(2, 9), st.integers(0, 8))  # v = v + 1 where id % m = r
_MERGE = st.tuples(st.just("merge"), st.integers(0, 80), st.integers(1, 30))  # upsert ids start..start+n-1
_APPEND = st.tuples(st.just("append"), st.integers(0, 3), st.integers(1, 40))  # batch b, n rows


def _create(spark, path: str, dvs: bool) -> None:
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v BIGINT) USING delta "
              f"TBLPROPERTIES ('delta.enableDeletionVectors' = '{str(dvs).lower()}')")


def _append(spark, path: str, ids: list[int]) -> None:
    spark.createDataFrame([(i, i * 3) for i in ids], "id long, v long").repartition(2).write.format(
        "delta").mode("append").save(path)


def _rows(spark, path: str, version: int | None = None) -> list[tuple]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(path).collect())


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.one_of(_DELETE, _UPDATE, _MERGE, _APPEND), min_size=1, max_size=4))
def test_dv_and_copy_on_write_tables_agree_with_a_model(spark, tmp_path_factory, steps):
    base = tmp_path_factory.mktemp("dvmodel")
    dv_path, cow_path = str(base / "dv"), str(base / "cow")
    model = {i: i * 3 for i in range(60)}
    history = []
    for path, dvs in ((dv_path, True), (cow_path, False)):
        _create(spark, path, dvs)
        _append(spark, path, sorted(model))
    history.append((*_versions(dv_path, cow_path), sorted(model.items())))
    next_id = 1000
    for kind, a, b in steps:
        if kind == "delete":
            for path in (dv_path, cow_path):
                DeltaTable.forPath(spark, path).delete(f"id % {a} = {b}")
            model = {i: v for i, v in model.items() if i % a != b}
        elif kind == "update":
            for path in (dv_path, cow_path):
                DeltaTable.forPath(spark, path).update(f"id % {a} = {b}", {"v": "v + 1"})
            model = {i: v + 1 if i % a == b else v for i, v in model.items()}
        elif kind == "merge":
            source = spark.createDataFrame([(i, -i) for i in range(a, a + b)], "id long, v long")
            for path in (dv_path, cow_path):
                (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
                 .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
            model.update({i: -i for i in range(a, a + b)})
        else:
            ids = list(range(next_id, next_id + b))
            next_id += b
            for path in (dv_path, cow_path):
                _append(spark, path, ids)
            model.update({i: i * 3 for i in ids})
        # a DML that changes no row commits nothing (as delta-spark): the version each step left
        history.append((*_versions(dv_path, cow_path), sorted(model.items())))
    for dv_version, cow_version, want in history:
        assert _rows(spark, dv_path, dv_version) == want
        assert _rows(spark, cow_path, cow_version) == want
    assert sorted((dict(r)["id"], dict(r)["v"]) for r in deltalake_rows(dv_path)) == history[-1][2]


def _versions(*paths: str) -> tuple[int, ...]:
    import pydelta

    return tuple(pydelta.load_snapshot(p).version for p in paths)
