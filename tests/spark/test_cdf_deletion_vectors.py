"""The change data feed of tables whose DML writes deletion vectors, over every DML shape.

Each table (partitioned and not, `delta.enableDeletionVectors` and
`delta.enableChangeDataFeed` on) goes through DELETE, UPDATE and MERGE, among them a
DELETE that empties files already carrying a deletion vector and a whole-partition DELETE
(their removes carry the DV: the change feed must leave the DV's rows out). The witness is
a Python model of the table that records the changes each statement makes; every version
range of pydelta's change feed (batch and streaming, and of a RESTORE and of clones of it)
must equal the model's, the log's bytes show each shape really happened, and deltalake reads
the final table as the model holds it. Last, delta-kernel-rs's table with inline DVs (one of
them ending in the `z85` crate's padded tail) against that project's own expectations.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import deltalake
import pytest

from pydelta import DeltaTable

pytestmark = pytest.mark.spark

SCHEMA = "id long, v string, part int"
Row = tuple[int, str, int]  # (id, v, part)
Change = tuple[int, str, int, str, int]  # (id, v, part, _change_type, _commit_version)


@dataclass
class Model:
    """The rows of the table and the changes each version made, kept in plain Python."""

    rows: dict[int, Row] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    version: int = -1

    def commit(self) -> int:
        self.version += 1
        return self.version

    def insert(self, rows: list[Row]) -> None:
        v = self.commit()
        for r in rows:
            self.rows[r[0]] = r
            self.changes.append((*r, "insert", v))

    def delete(self, where: Callable[[Row], bool]) -> None:
        v = self.commit()
        for r in [r for r in self.rows.values() if where(r)]:
            del self.rows[r[0]]
            self.changes.append((*r, "delete", v))

    def update(self, where: Callable[[Row], bool], new_v: Callable[[Row], str]) -> None:
        v = self.commit()
        for r in [r for r in self.rows.values() if where(r)]:
            self._update(r, new_v(r), v)

    def _update(self, r: Row, new_v: str, v: int) -> None:
        after = (r[0], new_v, r[2])
        self.rows[r[0]] = after
        self.changes += [(*r, "update_preimage", v), (*after, "update_postimage", v)]

    def merge(self, source: list[tuple[int, str]]) -> None:
        """MERGE ON id: op 'u' updates v to 'merged', 'd' deletes, unmatched rows are inserted as 'new'."""
        v = self.commit()
        for key, op in source:
            r = self.rows.get(key)
            if r is None:
                self.rows[key] = (key, "new", key % 2)
                self.changes.append((key, "new", key % 2, "insert", v))
            elif op == "u":
                self._update(r, "merged", v)
            elif op == "d":
                del self.rows[key]
                self.changes.append((*r, "delete", v))

    def between(self, start: int, end: int) -> list[Change]:
        return sorted(c for c in self.changes if start <= c[4] <= end)

    def rows_at(self, version: int) -> set[Row]:
        """The table's rows at `version`: the changes up to it, replayed."""
        live: set[Row] = set()
        for *row, kind, v in sorted(self.changes, key=lambda c: c[4]):
            if v <= version:
                (live.add if kind in ("insert", "update_postimage") else live.discard)(tuple(row))
        return live


@dataclass
class DvTable:
    path: str
    partitioned: bool
    model: Model


def _write(spark: Any, path: str, rows: list[Row], partitioned: bool, mode: str) -> None:
    writer = spark.createDataFrame(rows, SCHEMA).repartition(1).write.format("delta").mode(mode)
    if mode == "error":
        writer = writer.option("delta.enableDeletionVectors", "true").option("delta.enableChangeDataFeed", "true")
    if partitioned:
        writer = writer.partitionBy("part")
    writer.save(path)


def _build(spark: Any, path: str, partitioned: bool) -> DvTable:
    """The table and its model after the same statements; the comments name each version's shape."""
    m = Model()
    first = [(i, f"v{i}", i % 2) for i in range(12)]
    _write(spark, path, first, partitioned, "error")                      # v0: one file (per partition)
    m.insert(first)
    second = [(i, f"v{i}", i % 2) for i in range(12, 18)]
    _write(spark, path, second, partitioned, "append")                    # v1: a second file (per partition)
    m.insert(second)
    t = DeltaTable.forPath(spark, path)
    t.delete("id = 0")                                                    # v2: partial DELETE (a new DV)
    m.delete(lambda r: r[0] == 0)
    t.update("id IN (1, 2)", {"v": "concat(v, '_u')"})                    # v3: UPDATE
    m.update(lambda r: r[0] in (1, 2), lambda r: r[1] + "_u")
    source = spark.createDataFrame([(3, "d"), (4, "u"), (100, "i")], "id long, op string")
    (t.alias("t").merge(source.alias("s"), "t.id = s.id")                 # v4: MERGE update+delete+insert
     .whenMatchedUpdate("s.op = 'u'", {"v": "'merged'"})
     .whenMatchedDelete("s.op = 'd'")
     .whenNotMatchedInsert(values={"id": "s.id", "v": "'new'", "part": "CAST(s.id % 2 AS INT)"})
     .execute())
    m.merge([(3, "d"), (4, "u"), (100, "i")])
    t.delete("id = 5")                                                    # v5: DELETE in a file with a DV
    m.delete(lambda r: r[0] == 5)
    t.update("id = 6", {"v": "'six'"})                                    # v6: UPDATE in a file with a DV
    m.update(lambda r: r[0] == 6, lambda r: "six")
    t.delete("id < 12")                                                   # v7: empties files with a DV
    m.delete(lambda r: r[0] < 12)
    t.delete("id = 12")                                                   # v8: a DV on the v1 file(s)
    m.delete(lambda r: r[0] == 12)
    t.delete("part = 0")                                                  # v9: whole partition (partitioned)
    m.delete(lambda r: r[2] == 0)
    return DvTable(path, partitioned, m)


@pytest.fixture(scope="module", params=[False, True], ids=["flat", "partitioned"])
def dv_table(spark, tmp_path_factory, request) -> DvTable:
    return _build(spark, str(tmp_path_factory.mktemp("cdf_dv") / "t"), request.param)


def _commit(path: str, version: int) -> list[dict[str, Any]]:
    """The actions of one commit, from the log's JSON bytes."""
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json"), "rb") as f:
        return [json.loads(line) for line in f.read().splitlines() if line.strip()]


def _removed_with_dv(path: str, version: int) -> list[str]:
    """Paths the commit removes (not re-adds) whose remove action carries a deletion vector."""
    actions = _commit(path, version)
    added = {a["add"]["path"] for a in actions if "add" in a}
    return [a["remove"]["path"] for a in actions
            if "remove" in a and a["remove"].get("deletionVector") and a["remove"]["path"] not in added]


def _new_dvs(path: str, version: int) -> list[str]:
    """Paths the commit re-adds with a deletion vector (a DV written or extended)."""
    actions = _commit(path, version)
    removed = {a["remove"]["path"] for a in actions if "remove" in a}
    return [a["add"]["path"] for a in actions
            if "add" in a and a["add"].get("deletionVector") and a["add"]["path"] in removed]


def _changes(spark: Any, path: str, start: int, end: int) -> list[Change]:
    df = (spark.read.format("delta").option("readChangeFeed", "true")
          .option("startingVersion", start).option("endingVersion", end).load(path))
    cols = ["id", "v", "part", "_change_type", "_commit_version"]
    return sorted(tuple(r) for r in df.select(*cols).collect())


def test_the_log_holds_each_dml_shape(dv_table):
    path = dv_table.path
    for version in (2, 5):  # a new DV, then a DV extended by a second DML
        assert _new_dvs(path, version), version
    assert _removed_with_dv(path, 7), "DELETE emptied files that carry a DV"
    if dv_table.partitioned:
        assert _removed_with_dv(path, 9), "the whole-partition DELETE removed a file with a DV"
        assert not any("add" in a for a in _commit(path, 9))


def test_final_table_matches_model_via_deltalake(dv_table):
    table = deltalake.DeltaTable(dv_table.path)
    data = deltalake.QueryBuilder().register("t", table).execute("SELECT id, v, part FROM t").read_all()
    got = sorted(zip(*[data.column(c).to_pylist() for c in ("id", "v", "part")], strict=True))
    assert got == sorted(dv_table.model.rows.values())
    assert got, "rows remain"


def test_every_range_matches_the_model(spark, dv_table):
    last = dv_table.model.version
    ranges = {(s, s) for s in range(last + 1)} | {(s, last) for s in range(last + 1)} | {(0, 4), (3, 7), (5, 8)}
    for start, end in sorted(ranges):
        assert _changes(spark, dv_table.path, start, end) == dv_table.model.between(start, end), (start, end)


def test_filtered_change_feed_matches_the_model(spark, dv_table):
    # A filter on a data column may prune files by their stats; the DV rows still stay out.
    df = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
          .load(dv_table.path).where("id >= 5 AND id <= 12"))
    got = sorted(tuple(r) for r in df.select("id", "v", "part", "_change_type", "_commit_version").collect())
    assert got == [c for c in dv_table.model.between(0, dv_table.model.version) if 5 <= c[0] <= 12]


def test_restore_change_feed_matches_the_model(spark, dv_table, tmp_path):
    # RESTORE re-adds files with their old DVs and removes newer ones (on a copy of the table).
    import shutil

    path = str(tmp_path / "copy")
    shutil.copytree(dv_table.path, path)
    m = dv_table.model
    DeltaTable.forPath(spark, path).restoreToVersion(4)
    version = m.version + 1
    actions = _commit(path, version)
    assert any(a.get("add", {}).get("deletionVector") for a in actions), "files come back with their DVs"
    before, after = m.rows_at(m.version), m.rows_at(4)
    expected = sorted([(*r, "insert", version) for r in after - before]
                      + [(*r, "delete", version) for r in before - after])
    assert _changes(spark, path, version, version) == expected
    df = spark.read.format("delta").load(path)
    assert sorted(tuple(r) for r in df.select("id", "v", "part").collect()) == sorted(after)


def test_clone_change_feed_matches_the_model(spark, dv_table, tmp_path):
    # A clone's first commit adds the source's files with their DVs: its rows are inserts.
    expected = sorted((*r, "insert", 0) for r in dv_table.model.rows_at(5))
    for shallow in (True, False):
        target = str(tmp_path / f"clone_{shallow}")
        DeltaTable.forPath(spark, dv_table.path).cloneAtVersion(5, target, isShallow=shallow)
        assert any(a.get("add", {}).get("deletionVector") for a in _commit(target, 0))
        assert _changes(spark, target, 0, 0) == expected, shallow


def test_streaming_change_feed_matches_the_model(spark, dv_table, tmp_path):
    batches: list[Change] = []

    def collect(df, _batch_id):
        batches.extend(tuple(r) for r in df.select("id", "v", "part", "_change_type", "_commit_version").collect())

    query = (spark.readStream.format("delta").option("readChangeFeed", "true").option("startingVersion", "0")
             .load(dv_table.path).writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    try:
        query.awaitTermination(300)
    finally:
        query.stop()
    assert query.exception() is None
    assert sorted(batches) == dv_table.model.between(0, dv_table.model.version)


# ---- delta-kernel-rs's table with inline DVs (one with the z85 crate's padded tail) ----------------


def test_kernel_inline_dv_table_change_feed(spark):
    from tests.kernel_tables import CDF_WITH_DV, CDF_WITH_DV_CHANGES, CDF_WITH_DV_LATEST

    # Every commit alone (the DV diffs of versions 3-6 decode inline DVs), then the whole range.
    for start, end in [(v, v) for v in range(CDF_WITH_DV_LATEST + 1)] + [(0, CDF_WITH_DV_LATEST)]:
        df = (spark.read.format("delta").option("readChangeFeed", "true")
              .option("startingVersion", start).option("endingVersion", end).load(str(CDF_WITH_DV)))
        got = sorted(tuple(r) for r in df.select("value", "_change_type", "_commit_version").collect())
        assert got == [c for c in CDF_WITH_DV_CHANGES if start <= c[2] <= end], (start, end)


def test_kernel_inline_dv_table_time_travel(spark):
    from tests.kernel_tables import CDF_WITH_DV, CDF_WITH_DV_LATEST, cdf_with_dv_values

    for version in range(CDF_WITH_DV_LATEST + 1):
        df = spark.read.format("delta").option("versionAsOf", version).load(str(CDF_WITH_DV))
        assert sorted(r.value for r in df.collect()) == cdf_with_dv_values(version), version
