"""Tests for pydelta.log.checkpoint_writer (no Spark).

Tables are built by writing JSON commits directly; "real" tables also get small Parquet
data files so the `deltalake` package (delta-rs) can scan them. deltalake runs in a child
process: its runtime sometimes aborts at interpreter exit, which must not take pytest down.
"""

from __future__ import annotations

import datetime as dt
import glob
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pydelta.errors import DeltaIllegalArgumentError, InvalidTableError
from pydelta.log.arrow_actions import ADD_TYPE, REMOVE_TYPE
from pydelta.log.checkpoint_reader import stats_parsed_from_checkpoint
from pydelta.log.checkpoint_writer import (
    _spark_string_hash,
    interval_property_ms,
    parse_interval_ms,
    spark_partition_ids,
    write_checkpoint,
)
from pydelta.log.last_checkpoint import parse_last_checkpoint
from pydelta.log.replay import TableState
from pydelta.log.snapshot import Snapshot, load_snapshot
from pydelta.log.storage import LocalStorage

DAY_MS = 86_400_000
NOW_MS = int(time.time() * 1000)

# ---- building tables ------------------------------------------------------------------------


def field(name: str, type_: Any, metadata: dict | None = None) -> dict:
    return {"name": name, "type": type_, "nullable": True, "metadata": metadata or {}}


class TableBuilder:
    """Writes a Delta table's log by hand: one JSON commit per call to `commit`."""

    def __init__(
        self,
        root: Path,
        fields: list[dict],
        partition_columns: list[str] = (),  # type: ignore[assignment]
        configuration: dict[str, str] | None = None,
        protocol: dict | None = None,
    ) -> None:
        self.root = Path(root)
        self.log = self.root / "_delta_log"
        self.log.mkdir(parents=True, exist_ok=True)
        self.version = -1
        self.schema = {"type": "struct", "fields": fields}
        self.metadata = {
            "id": str(uuid.uuid4()),
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(self.schema),
            "partitionColumns": list(partition_columns),
            "configuration": dict(configuration or {}),
            "createdTime": NOW_MS,
        }
        self.commit(
            [
                {"protocol": protocol or {"minReaderVersion": 1, "minWriterVersion": 2}},
                {"metaData": self.metadata},
            ]
        )

    def commit(self, actions: list[dict]) -> int:
        self.version += 1
        lines = [{"commitInfo": {"timestamp": NOW_MS, "operation": "TEST"}}, *actions]
        path = self.log / f"{self.version:020d}.json"
        path.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
        return self.version

    def write_data(self, rel_path: str, table: pa.Table) -> int:
        """A real Parquet data file; returns its size."""
        target = self.root / rel_path
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, target)
        return target.stat().st_size


def add(path: str, pv: dict | None = None, stats: dict | None = None, size: int = 100, **extra: Any) -> dict:
    body = {
        "path": path,
        "partitionValues": pv or {},
        "size": size,
        "modificationTime": NOW_MS,
        "dataChange": True,
    }
    if stats is not None:
        body["stats"] = json.dumps(stats)
    body.update(extra)
    return {"add": body}


def remove(path: str, deleted_at: int | None = NOW_MS, **extra: Any) -> dict:
    body = {"path": path, "dataChange": True, **extra}
    if deleted_at is not None:
        body["deletionTimestamp"] = deleted_at
    return {"remove": body}


def num_stats(n: int, lo: int, hi: int) -> dict:
    return {"numRecords": n, "minValues": {"id": lo}, "maxValues": {"id": hi}, "nullCount": {"id": 0}}


# ---- comparing snapshots --------------------------------------------------------------------

_ADD_COMPARE = [f.name for f in ADD_TYPE if f.name != "dataChange"]
_REMOVE_COMPARE = ["path", "deletionTimestamp", "extendedFileMetadata", "partitionValues", "size",
                   "deletionVector", "baseRowId", "defaultRowCommitVersion"]


def _normal(value: Any) -> Any:
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return sorted(value)
    if isinstance(value, list) and not value:
        return None  # an empty map and a missing one are the same to a reader
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    return value


def rows(array: pa.Array, names: list[str]) -> list[dict]:
    out = [{n: _normal(r.get(n)) for n in names} for r in array.to_pylist()]
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def assert_same_state(expected: Snapshot, actual: Snapshot, *, tombstones: bool = True) -> None:
    assert actual.version == expected.version
    assert actual.protocol == expected.protocol
    assert actual.metadata.to_dict() == expected.metadata.to_dict()
    assert actual.transactions == expected.transactions
    assert actual.domain_metadata == expected.domain_metadata
    assert rows(actual.state.adds, _ADD_COMPARE) == rows(expected.state.adds, _ADD_COMPARE)
    if tombstones:
        assert rows(actual.state.removes, _REMOVE_COMPARE) == rows(expected.state.removes, _REMOVE_COMPARE)


def checkpoint_files(root: Path, version: int) -> list[str]:
    return sorted(p.name for p in (root / "_delta_log").glob(f"{version:020d}.checkpoint*"))


def read_checkpoint_table(root: Path, version: int) -> pa.Table:
    files = sorted((root / "_delta_log").glob(f"{version:020d}.checkpoint*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")


def last_checkpoint(root: Path) -> dict:
    return json.loads((root / "_delta_log" / "_last_checkpoint").read_text())


def roundtrip(root: Path, **kwargs: Any) -> tuple[Snapshot, Snapshot]:
    """(JSON-only snapshot, snapshot loaded through the new checkpoint)."""
    before = load_snapshot(str(root))
    assert before.segment.checkpoint is None or before.segment.checkpoint.version < before.version
    write_checkpoint(before, **kwargs)
    after = load_snapshot(str(root))
    assert after.segment.checkpoint is not None and after.segment.checkpoint.version == before.version
    assert after.segment.commits == []
    return before, after


# ---- intervals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, ms",
    [
        ("interval 1 week", 7 * DAY_MS),
        ("interval 7 days", 7 * DAY_MS),
        ("168 hours", 7 * DAY_MS),
        ("interval 30 days", 30 * DAY_MS),
        ("INTERVAL 2 WEEKS", 14 * DAY_MS),
        ("1 day 12 hours", DAY_MS + DAY_MS // 2),
        ("interval 90 minutes", 90 * 60_000),
        ("interval 1.5 seconds", 1500),
        ("15 seconds 500 milliseconds", 15_500),
        ("interval 2000 microseconds", 2),
        ("interval 0 seconds", 0),
        ("interval 1 day -1 hour", 23 * 3_600_000),
        ("  interval   1   week  ", 7 * DAY_MS),
    ],
)
def test_parse_interval_ms(text: str, ms: int) -> None:
    assert parse_interval_ms(text) == ms


@pytest.mark.parametrize(
    "text", ["", "   ", "interval", "1 month", "interval 1 year", "7", "7 fortnights", "1.5 days", "-1 day", "7 days x"]
)
def test_parse_interval_ms_rejects(text: str) -> None:
    with pytest.raises(DeltaIllegalArgumentError):
        parse_interval_ms(text)


def test_interval_property_default_and_bad_value() -> None:
    assert interval_property_ms({}, "delta.logRetentionDuration", "interval 30 days") == 30 * DAY_MS
    assert interval_property_ms({"delta.logRetentionDuration": "2 days"}, "delta.logRetentionDuration",
                                "x") == 2 * DAY_MS
    with pytest.raises(InvalidTableError):
        interval_property_ms({"delta.logRetentionDuration": "3 months"}, "delta.logRetentionDuration", "1 day")


# ---- Spark hash partitioning ----------------------------------------------------------------


def test_spark_hash_matches_spark() -> None:
    # First step of Spark's documented `hash('Spark', array(123), 2) = -1321691492`.
    assert _spark_string_hash(pa.array(["Spark"]))[0] == 228093765
    # Null keys keep the seed (42): Spark puts non-file actions in part pmod(42, n).
    assert _spark_string_hash(pa.array([None], pa.string()))[0] == 42


def test_spark_partitioning_matches_delta_spark_multipart_golden(golden: Path) -> None:
    log = golden / "delta-spark" / "multi-part-checkpoint" / "delta" / "_delta_log"
    for part, f in enumerate(sorted(log.glob("*.checkpoint.*.parquet"))):
        adds = pq.read_table(f).column("add").drop_null()
        paths = pc.struct_field(adds.combine_chunks(), "path")
        assert set(spark_partition_ids(paths, 2).tolist()) == {part}


# ---- round trips ----------------------------------------------------------------------------


def _simple_table(root: Path, configuration: dict | None = None) -> TableBuilder:
    t = TableBuilder(root, [field("id", "long")], configuration=configuration)
    t.commit([add(f"f{i}.parquet", stats=num_stats(10, i, i + 9)) for i in range(5)])
    t.commit(
        [
            remove("f0.parquet", NOW_MS - DAY_MS, size=100, extendedFileMetadata=True, partitionValues={}),
            add("f5.parquet", stats=num_stats(3, 0, 2), tags={"INSERTION_TIME": "1", "k": "v"}),
            {"txn": {"appId": "app-1", "version": 7, "lastUpdated": NOW_MS}},
            {"domainMetadata": {"domain": "delta.clustering", "configuration": '{"c":1}', "removed": False}},
            {"domainMetadata": {"domain": "gone", "configuration": "{}", "removed": False}},
        ]
    )
    t.commit(
        [
            {"txn": {"appId": "app-2", "version": 1}},
            {"domainMetadata": {"domain": "gone", "configuration": "{}", "removed": True}},
            add("sub dir/f 6%.parquet".replace(" ", "%20").replace("%.", "%25."), stats=None),
            remove("f1.parquet", NOW_MS - 2 * DAY_MS),
        ]
    )
    return t


def test_roundtrip_unpartitioned(tmp_path: Path) -> None:
    _simple_table(tmp_path)
    before, after = roundtrip(tmp_path)
    assert_same_state(before, after)
    assert after.num_files == 5 and len(after.state.removes) == 2
    assert after.transactions == {"app-1": 7, "app-2": 1}
    assert after.domain_metadata == {"delta.clustering": '{"c":1}'}
    assert checkpoint_files(tmp_path, 3) == [f"{3:020d}.checkpoint.parquet"]


def test_checkpoint_schema_matches_delta_spark(tmp_path: Path) -> None:
    _simple_table(tmp_path)
    write_checkpoint(load_snapshot(str(tmp_path)))
    table = read_checkpoint_table(tmp_path, 3)
    assert table.column_names == ["txn", "add", "remove", "metaData", "protocol", "domainMetadata"]
    schema = table.schema
    add_t = schema.field("add").type
    assert [f.name for f in add_t] == [
        "path", "partitionValues", "size", "modificationTime", "dataChange", "tags", "deletionVector",
        "baseRowId", "defaultRowCommitVersion", "clusteringProvider", "stats",
    ]
    dv = add_t.field("deletionVector").type
    assert dv.field("offset").type == pa.int32() and dv.field("sizeInBytes").type == pa.int32()
    assert dv.field("cardinality").type == pa.int64() and dv.field("maxRowIndex").type == pa.int64()
    assert add_t.field("size").type == pa.int64() and add_t.field("modificationTime").type == pa.int64()
    remove_t = schema.field("remove").type
    assert "stats" not in remove_t.names and "tags" not in remove_t.names
    protocol_t = schema.field("protocol").type
    assert protocol_t.field("minReaderVersion").type == pa.int32()
    assert schema.field("txn").type.field("version").type == pa.int64()
    assert schema.field("metaData").type.field("createdTime").type == pa.int64()
    # One action per row, and checkpoints carry no data change.
    non_null = np.sum([np.asarray(table.column(c).is_valid()) for c in table.column_names], axis=0)
    assert set(non_null.tolist()) == {1}
    adds = table.column("add").drop_null()
    assert not any(pc.struct_field(adds.combine_chunks(), "dataChange").to_pylist())
    hint = last_checkpoint(tmp_path)
    assert hint["version"] == 3 and hint["size"] == table.num_rows and hint["numOfAddFiles"] == 5
    assert "parts" not in hint
    assert hint["sizeInBytes"] == (tmp_path / "_delta_log" / f"{3:020d}.checkpoint.parquet").stat().st_size
    assert parse_last_checkpoint((tmp_path / "_delta_log" / "_last_checkpoint").read_bytes()) is not None


def test_stats_as_json_can_be_turned_off(tmp_path: Path) -> None:
    _simple_table(tmp_path, {"delta.checkpoint.writeStatsAsJson": "false",
                             "delta.checkpoint.writeStatsAsStruct": "true"})
    snap = load_snapshot(str(tmp_path))
    write_checkpoint(snap)
    add_t = read_checkpoint_table(tmp_path, 3).schema.field("add").type
    assert "stats" not in add_t.names and "stats_parsed" in add_t.names
    after = load_snapshot(str(tmp_path))
    assert after.num_files == snap.num_files
    parsed = stats_parsed_from_checkpoint(after.storage, after.segment.checkpoint)
    assert sorted(x for x in pc.struct_field(parsed, "numRecords").to_pylist() if x is not None) == [3, 10, 10, 10]


def _partitioned_table(root: Path, mapping: bool = False, struct_stats: bool = True) -> TableBuilder:
    def meta(i: int, name: str) -> dict:
        if not mapping:
            return {}
        return {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f"col-{name}-phys"}

    conf = {"delta.checkpoint.writeStatsAsStruct": "true" if struct_stats else "false"}
    protocol = None
    if mapping:
        conf.update({"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "7"})
        protocol = {"minReaderVersion": 2, "minWriterVersion": 5}
    fields = [
        field("id", "long", meta(1, "id")),
        field("name", "string", meta(2, "name")),
        field("nested", {"type": "struct", "fields": [field("x", "double", meta(3, "x"))]}, meta(4, "nested")),
        field("d", "date", meta(5, "d")),
        field("ts", "timestamp", meta(6, "ts")),
        field("amount", "decimal(10,2)", meta(7, "amount")),
        field("region", "string", meta(8, "region")),
    ]
    t = TableBuilder(root, fields, ["d", "ts", "amount", "region"], conf, protocol)
    key = (lambda n: f"col-{n}-phys") if mapping else (lambda n: n)
    stats = {
        "numRecords": 4,
        "minValues": {key("id"): 1, key("name"): "a", key("nested"): {key("x"): 0.5}},
        "maxValues": {key("id"): 9, key("name"): "z", key("nested"): {key("x"): 2.5}},
        "nullCount": {key("id"): 0, key("name"): 1, key("nested"): {key("x"): 0}},
    }
    values = [
        {"d": "2024-01-31", "ts": "2024-01-31T10:00:00.000000Z", "amount": "12.50", "region": "eu"},
        {"d": "1999-12-31", "ts": "1999-12-31 23:59:59", "amount": "-0.01", "region": ""},
        {"d": None, "ts": None, "amount": None, "region": None},
    ]
    t.commit(
        [
            add(f"p{i}/file-{i}.parquet", {key(k): v for k, v in pv.items()}, stats if i != 1 else None)
            for i, pv in enumerate(values)
        ]
    )
    t.commit([remove("p0/file-0.parquet", NOW_MS, partitionValues={key(k): v for k, v in values[0].items()})])
    t.commit([add("p0/file-3.parquet", {key(k): v for k, v in values[0].items()}, stats)])
    return t


def test_roundtrip_partitioned_with_typed_partition_values(tmp_path: Path) -> None:
    _partitioned_table(tmp_path)
    before, after = roundtrip(tmp_path)
    assert_same_state(before, after)
    add_t = read_checkpoint_table(tmp_path, 3).schema.field("add").type
    parsed_t = add_t.field("partitionValues_parsed").type
    assert [(f.name, f.type) for f in parsed_t] == [
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("amount", pa.decimal128(10, 2)),
        ("region", pa.string()),
    ]
    adds = read_checkpoint_table(tmp_path, 3).column("add").drop_null().combine_chunks()
    by_path = dict(zip(pc.struct_field(adds, "path").to_pylist(),
                       pc.struct_field(adds, "partitionValues_parsed").to_pylist(), strict=True))
    assert by_path["p0/file-3.parquet"] == {
        "d": dt.date(2024, 1, 31),
        "ts": dt.datetime(2024, 1, 31, 10, tzinfo=dt.UTC),
        "amount": Decimal("12.50"),
        "region": "eu",
    }
    assert by_path["p1/file-1.parquet"]["region"] is None  # '' is null
    assert by_path["p1/file-1.parquet"]["amount"] == Decimal("-0.01")
    assert by_path["p2/file-2.parquet"] == {"d": None, "ts": None, "amount": None, "region": None}
    stats_t = add_t.field("stats_parsed").type
    assert stats_t.names == ["numRecords", "minValues", "maxValues", "nullCount"]  # no tightBounds without DVs
    assert stats_t.field("minValues").type.names == ["id", "name", "nested"]  # data columns only
    by_stats = dict(zip(pc.struct_field(adds, "path").to_pylist(), pc.struct_field(adds, "stats_parsed").to_pylist(),
                        strict=True))
    assert by_stats["p0/file-3.parquet"]["maxValues"] == {"id": 9, "name": "z", "nested": {"x": 2.5}}
    assert by_stats["p0/file-3.parquet"]["nullCount"]["name"] == 1
    assert by_stats["p1/file-1.parquet"] is None


def test_partitioned_without_struct_stats(tmp_path: Path) -> None:
    _partitioned_table(tmp_path, struct_stats=False)
    before, after = roundtrip(tmp_path)
    assert_same_state(before, after)
    add_t = read_checkpoint_table(tmp_path, 3).schema.field("add").type
    assert "partitionValues_parsed" not in add_t.names and "stats_parsed" not in add_t.names


def test_unparsable_partition_value_leaves_out_struct_columns(tmp_path: Path) -> None:
    t = TableBuilder(tmp_path, [field("id", "long"), field("n", "integer")], ["n"],
                     {"delta.checkpoint.writeStatsAsStruct": "true"})
    t.commit([add("n=1/a.parquet", {"n": "1"}), add("n=x/b.parquet", {"n": "not a number"})])
    before, after = roundtrip(tmp_path)
    assert_same_state(before, after)
    add_t = read_checkpoint_table(tmp_path, 1).schema.field("add").type
    assert "partitionValues_parsed" not in add_t.names


def test_roundtrip_column_mapping(tmp_path: Path) -> None:
    _partitioned_table(tmp_path, mapping=True)
    before, after = roundtrip(tmp_path)
    assert_same_state(before, after)
    add_t = read_checkpoint_table(tmp_path, 3).schema.field("add").type
    assert add_t.field("partitionValues_parsed").type.names == [
        "col-d-phys", "col-ts-phys", "col-amount-phys", "col-region-phys"]
    assert add_t.field("stats_parsed").type.field("maxValues").type.names == [
        "col-id-phys", "col-name-phys", "col-nested-phys"]
    adds = read_checkpoint_table(tmp_path, 3).column("add").drop_null().combine_chunks()
    parsed = {r["path"]: r for r in adds.to_pylist()}["p0/file-3.parquet"]
    assert parsed["partitionValues_parsed"]["col-region-phys"] == "eu"
    assert parsed["stats_parsed"]["minValues"]["col-nested-phys"] == {"col-x-phys": 0.5}


def _dv(path: str, cardinality: int, offset: int | None = 1) -> dict:
    dv = {"storageType": "u", "pathOrInlineDv": path, "sizeInBytes": 40, "cardinality": cardinality}
    if offset is not None:
        dv["offset"] = offset
    return dv


def _dv_table(root: Path) -> TableBuilder:
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors"],
        "writerFeatures": ["deletionVectors"],
    }
    conf = {"delta.enableDeletionVectors": "true", "delta.checkpoint.writeStatsAsStruct": "true"}
    t = TableBuilder(root, [field("id", "long")], configuration=conf, protocol=protocol)
    stats = {**num_stats(10, 0, 9), "tightBounds": True}
    t.commit([add("a.parquet", stats=stats), add("b.parquet", stats=stats)])
    loose = {**num_stats(10, 0, 9), "tightBounds": False}
    t.commit(
        [
            remove("a.parquet", NOW_MS, size=100),
            add("a.parquet", stats=loose, deletionVector=_dv("ab^-aBcDeFgHiJkLmNoP", 2)),
        ]
    )
    t.commit(
        [
            remove("a.parquet", NOW_MS, size=100, deletionVector=_dv("ab^-aBcDeFgHiJkLmNoP", 2)),
            add("a.parquet", stats=loose, deletionVector=_dv("cd^-aBcDeFgHiJkLmNoP", 5, offset=None), baseRowId=10,
                defaultRowCommitVersion=3),
        ]
    )
    return t


def test_roundtrip_deletion_vectors(tmp_path: Path) -> None:
    _dv_table(tmp_path)
    before, after = roundtrip(tmp_path)
    assert_same_state(before, after)
    assert len(after.state.removes) == 2  # a.parquet without a DV, and with the first DV
    adds = {r["path"]: r for r in after.state.adds.to_pylist()}
    assert adds["a.parquet"]["deletionVector"]["cardinality"] == 5
    assert adds["a.parquet"]["baseRowId"] == 10
    add_t = read_checkpoint_table(tmp_path, 3).schema.field("add").type
    assert add_t.field("stats_parsed").type.names[-1] == "tightBounds"


# ---- multi-part -----------------------------------------------------------------------------


def _many_files_table(root: Path, n: int = 40) -> TableBuilder:
    t = TableBuilder(root, [field("id", "long")])
    t.commit([add(f"part-{i:05d}-{uuid.uuid4()}.parquet", stats=num_stats(1, i, i)) for i in range(n)])
    t.commit([remove(f"gone-{i}.parquet", NOW_MS) for i in range(5)] + [{"txn": {"appId": "a", "version": 1}}])
    return t


def test_roundtrip_multipart(tmp_path: Path) -> None:
    _many_files_table(tmp_path)
    before, after = roundtrip(tmp_path, parts=3)
    assert_same_state(before, after)
    names = checkpoint_files(tmp_path, 2)
    assert names == [f"{2:020d}.checkpoint.{i:010d}.0000000003.parquet" for i in (1, 2, 3)]
    assert after.segment.checkpoint.kind == "multipart"
    hint = last_checkpoint(tmp_path)
    assert hint["parts"] == 3 and hint["version"] == 2 and hint["numOfAddFiles"] == 40
    total = 0
    for i, name in enumerate(names):
        table = pq.read_table(tmp_path / "_delta_log" / name)
        total += table.num_rows
        for column in ("add", "remove"):
            paths = pc.struct_field(table.column(column).drop_null().combine_chunks(), "path")
            assert set(spark_partition_ids(paths, 3).tolist()) <= {i}
        # Non-file actions go where Spark puts null keys: pmod(42, 3) = 0, i.e. part 1.
        assert table.column("protocol").drop_null().length() == (1 if i == 0 else 0)
    assert total == hint["size"] == 40 + 5 + 3


def test_multipart_non_file_actions_follow_spark(tmp_path: Path) -> None:
    _many_files_table(tmp_path, 8)
    before, after = roundtrip(tmp_path, parts=4)
    assert_same_state(before, after)
    names = checkpoint_files(tmp_path, 2)
    with_protocol = [n for n in names
                     if pq.read_table(tmp_path / "_delta_log" / n).column("protocol").drop_null().length()]
    assert with_protocol == [f"{2:020d}.checkpoint.0000000003.0000000004.parquet"]  # 42 % 4 == 2


def test_parts_one_is_classic(tmp_path: Path) -> None:
    _many_files_table(tmp_path, 3)
    roundtrip(tmp_path, parts=1)
    assert checkpoint_files(tmp_path, 2) == [f"{2:020d}.checkpoint.parquet"]


# ---- V2 -------------------------------------------------------------------------------------

V2_PROTOCOL = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["v2Checkpoint"],
               "writerFeatures": ["v2Checkpoint", "domainMetadata"]}


def _v2_table(root: Path, policy: str = "v2", n: int = 20) -> TableBuilder:
    t = TableBuilder(root, [field("id", "long")], configuration={"delta.checkpointPolicy": policy},
                     protocol=V2_PROTOCOL)
    t.commit([add(f"f{i}.parquet", stats=num_stats(1, i, i)) for i in range(n)])
    t.commit([remove("f0.parquet", NOW_MS), {"txn": {"appId": "x", "version": 2}},
              {"domainMetadata": {"domain": "d", "configuration": "c", "removed": False}}])
    return t


def test_roundtrip_v2_with_sidecars(tmp_path: Path) -> None:
    _v2_table(tmp_path)
    before, after = roundtrip(tmp_path, parts=2)
    assert_same_state(before, after)
    (top,) = checkpoint_files(tmp_path, 2)
    assert top.startswith(f"{2:020d}.checkpoint.") and top.endswith(".parquet")
    uuid.UUID(top.split(".")[2])
    assert after.segment.checkpoint.kind == "v2"
    table = pq.read_table(tmp_path / "_delta_log" / top)
    assert table.column("add").null_count == table.num_rows  # files live in sidecars only
    meta = table.column("checkpointMetadata").drop_null().to_pylist()
    assert len(meta) == 1 and meta[0]["version"] == 2
    sidecars = table.column("sidecar").drop_null().to_pylist()
    assert len(sidecars) == 2
    on_disk = {p.name: p for p in (tmp_path / "_delta_log" / "_sidecars").iterdir()}
    assert set(on_disk) == {s["path"] for s in sidecars}
    n_actions = 0
    for s in sidecars:
        assert s["sizeInBytes"] == on_disk[s["path"]].stat().st_size
        side = pq.read_table(on_disk[s["path"]])
        assert side.column_names == ["add", "remove"]
        n_actions += side.num_rows
    assert n_actions == 19 + 1
    hint = last_checkpoint(tmp_path)
    assert hint["version"] == 2 and hint["numOfAddFiles"] == 19 and "parts" not in hint
    assert hint["size"] == table.num_rows + n_actions


def test_v2_follows_table_policy(tmp_path: Path) -> None:
    _v2_table(tmp_path, n=3)
    before, after = roundtrip(tmp_path)  # v2=None: the table says v2
    assert_same_state(before, after)
    assert after.segment.checkpoint.kind == "v2"
    assert len(list((tmp_path / "_delta_log" / "_sidecars").iterdir())) == 1


def test_classic_checkpoint_on_v2_table_has_checkpoint_metadata(tmp_path: Path) -> None:
    _v2_table(tmp_path, policy="classic", n=3)
    before, after = roundtrip(tmp_path)
    assert_same_state(before, after)
    assert checkpoint_files(tmp_path, 2) == [f"{2:020d}.checkpoint.parquet"]
    table = read_checkpoint_table(tmp_path, 2)
    assert table.column("checkpointMetadata").drop_null().to_pylist() == [{"version": 2, "tags": None}]


def test_v2_with_no_files_has_no_sidecars(tmp_path: Path) -> None:
    TableBuilder(tmp_path, [field("id", "long")], configuration={"delta.checkpointPolicy": "v2"}, protocol=V2_PROTOCOL)
    before, after = roundtrip(tmp_path)
    assert_same_state(before, after)
    assert not (tmp_path / "_delta_log" / "_sidecars").exists()


def test_invalid_requests(tmp_path: Path) -> None:
    _simple_table(tmp_path / "plain")
    with pytest.raises(DeltaIllegalArgumentError):
        write_checkpoint(load_snapshot(str(tmp_path / "plain")), v2=True)
    with pytest.raises(DeltaIllegalArgumentError):
        write_checkpoint(load_snapshot(str(tmp_path / "plain")), parts=0)
    _v2_table(tmp_path / "v2", policy="classic", n=2)
    with pytest.raises(DeltaIllegalArgumentError):
        write_checkpoint(load_snapshot(str(tmp_path / "v2")), parts=2, v2=False)
    assert not glob.glob(str(tmp_path / "*" / "_delta_log" / "*.checkpoint*"))


# ---- tombstones -----------------------------------------------------------------------------


def test_expired_tombstones_are_dropped(tmp_path: Path) -> None:
    t = TableBuilder(tmp_path, [field("id", "long")])
    t.commit([add(f"f{i}.parquet") for i in range(5)])
    t.commit(
        [
            remove("f0.parquet", NOW_MS - 8 * DAY_MS),  # older than the default week
            remove("f1.parquet", NOW_MS - 6 * DAY_MS),
            remove("f2.parquet", None),  # no timestamp: counts as expired, as in delta-spark
            remove("f3.parquet", NOW_MS - 7 * DAY_MS + 1000),
        ]
    )
    write_checkpoint(load_snapshot(str(tmp_path)), now_ms=NOW_MS)
    after = load_snapshot(str(tmp_path))
    assert sorted(after.tombstones().column("path").to_pylist()) == ["f1.parquet", "f3.parquet"]
    assert after.num_files == 1


def test_tombstone_retention_property(tmp_path: Path) -> None:
    t = TableBuilder(tmp_path, [field("id", "long")],
                     configuration={"delta.deletedFileRetentionDuration": "interval 2 days"})
    t.commit([add(f"f{i}.parquet") for i in range(3)])
    t.commit([remove("f0.parquet", NOW_MS - 3 * DAY_MS), remove("f1.parquet", NOW_MS - 1 * DAY_MS)])
    write_checkpoint(load_snapshot(str(tmp_path)), now_ms=NOW_MS)
    assert load_snapshot(str(tmp_path)).tombstones().column("path").to_pylist() == ["f1.parquet"]


# ---- half-written checkpoints and races -----------------------------------------------------


def test_truncated_multipart_set_is_ignored(tmp_path: Path) -> None:
    _many_files_table(tmp_path)
    expected = load_snapshot(str(tmp_path))
    write_checkpoint(expected, parts=3)
    log = tmp_path / "_delta_log"
    (log / f"{2:020d}.checkpoint.0000000002.0000000003.parquet").unlink()
    actual = load_snapshot(str(tmp_path))  # `_last_checkpoint` still names version 2
    assert actual.segment.checkpoint is None
    assert_same_state(expected, actual)


def test_rerun_completes_a_truncated_multipart_set(tmp_path: Path) -> None:
    _many_files_table(tmp_path)
    expected = load_snapshot(str(tmp_path))
    write_checkpoint(expected, parts=3)
    log = tmp_path / "_delta_log"
    part2 = log / f"{2:020d}.checkpoint.0000000002.0000000003.parquet"
    content = pq.read_table(part2)
    part2.unlink()
    write_checkpoint(load_snapshot(str(tmp_path)), parts=3)
    assert pq.read_table(part2).equals(content)  # deterministic parts
    actual = load_snapshot(str(tmp_path))
    assert actual.segment.checkpoint is not None
    assert_same_state(expected, actual)


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b"\x00\xff garbage", b'{"version": 99, "size": 3}', b'{"version": 2, "size": 3, "checksum": "bad"}',
     b'{"version": "2"}', b"[1, 2]"],
)
def test_garbage_last_checkpoint_does_not_break_loading(tmp_path: Path, content: bytes) -> None:
    _many_files_table(tmp_path)
    expected = load_snapshot(str(tmp_path))
    write_checkpoint(expected)
    (tmp_path / "_delta_log" / "_last_checkpoint").write_bytes(content)
    actual = load_snapshot(str(tmp_path))
    assert_same_state(expected, actual)


class _FailingStorage(LocalStorage):
    """Dies after `allowed` successful creates, like a writer killed half-way."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed

    def put_if_absent(self, path: str, data: bytes) -> None:
        if self.allowed == 0:
            raise OSError("simulated crash")
        self.allowed -= 1
        super().put_if_absent(path, data)


@pytest.mark.parametrize("kind", [{"parts": 3}, {"v2": True}])
def test_crash_mid_checkpoint_leaves_table_readable(tmp_path: Path, kind: dict) -> None:
    if kind.get("v2"):
        _v2_table(tmp_path, n=30)
    else:
        _many_files_table(tmp_path)
    expected = load_snapshot(str(tmp_path))
    crashing = Snapshot(expected.table_root, _FailingStorage(1), expected.segment, expected.state)
    with pytest.raises(OSError):
        write_checkpoint(crashing, **kind)
    assert not (tmp_path / "_delta_log" / "_last_checkpoint").exists()
    actual = load_snapshot(str(tmp_path))
    assert actual.segment.checkpoint is None
    assert_same_state(expected, actual)
    # A later attempt succeeds.
    write_checkpoint(expected, **kind)
    assert load_snapshot(str(tmp_path)).segment.checkpoint is not None


def test_existing_checkpoint_is_left_alone(tmp_path: Path) -> None:
    _simple_table(tmp_path)
    snap = load_snapshot(str(tmp_path))
    write_checkpoint(snap)
    target = tmp_path / "_delta_log" / f"{3:020d}.checkpoint.parquet"
    before = target.read_bytes()
    hint = (tmp_path / "_delta_log" / "_last_checkpoint").read_bytes()
    write_checkpoint(snap, now_ms=0)  # would keep more tombstones; must not replace the file
    assert target.read_bytes() == before
    assert (tmp_path / "_delta_log" / "_last_checkpoint").read_bytes() == hint
    assert not [p for p in (tmp_path / "_delta_log").iterdir() if p.name.endswith(".tmp")]


def test_last_checkpoint_never_moves_backwards(tmp_path: Path) -> None:
    t = _simple_table(tmp_path)
    old = load_snapshot(str(tmp_path), version=2)
    write_checkpoint(load_snapshot(str(tmp_path)))
    write_checkpoint(old)
    assert last_checkpoint(tmp_path)["version"] == 3
    assert checkpoint_files(tmp_path, 2) == [f"{2:020d}.checkpoint.parquet"]
    t.commit([add("new.parquet")])
    assert load_snapshot(str(tmp_path)).segment.checkpoint.version == 3


# ---- golden tables --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "delta-spark/dv-partitioned-with-checkpoint/delta",
        "delta-spark/dv-with-columnmapping/delta",
        "delta-spark/basic-with-inserts-deletes-checkpoint/delta",
        "delta-spark/v2-checkpoint-parquet/delta",
        "delta-rs/checkpoint_with_partitions",
        "delta-rs/table-with-domain-metadata",
        "delta-rs/checkpoints_vacuumed",
        "delta-spark/multi-part-checkpoint/delta",
        "delta-spark/v2-checkpoint-json/delta",
        "delta-rs/table_with_column_mapping",
        "delta-rs/table_with_deletion_logs",
        "delta-rs/table-with-dv-small",
    ],
)
@pytest.mark.parametrize("kind", [{}, {"parts": 2}])
def test_golden_table_checkpoint_loads_identically(golden: Path, tmp_path: Path, name: str, kind: dict) -> None:
    src = golden / name
    assert src.is_dir(), f"{name} not in the golden set"
    root = tmp_path / "t"
    shutil.copytree(src, root)
    expected = load_snapshot(str(root))
    if kind.get("parts") and expected.protocol.has_feature("v2Checkpoint"):
        kind = {"parts": 2, "v2": True}
    log = root / "_delta_log"
    for p in [*log.glob(f"{expected.version:020d}.checkpoint*"), log / "_last_checkpoint"]:
        p.unlink(missing_ok=True)  # make room for ours at the same version
    write_checkpoint(expected, now_ms=0, **kind)  # now=0: keep every tombstone to compare
    actual = load_snapshot(str(root))
    assert actual.segment.checkpoint is not None and actual.segment.checkpoint.version == expected.version
    assert_same_state(expected, actual)
    if (log / f"{0:020d}.json").exists():
        json_only = root.parent / "json-only"
        shutil.copytree(root, json_only)
        for p in (json_only / "_delta_log").glob("*.checkpoint*"):
            p.unlink()
        (json_only / "_delta_log" / "_last_checkpoint").unlink()
        assert_same_state(load_snapshot(str(json_only)), actual)


# ---- other clients: deltalake (delta-rs) ----------------------------------------------------

_DELTALAKE_PROBE = r"""
import json, os, sys
out = {}
try:
    import deltalake
    dt = deltalake.DeltaTable(sys.argv[1])
    out["version"] = dt.version()
    out["files"] = sorted(dt.file_uris())
    actions = dt.get_add_actions(flatten=True)
    out["add_paths"] = sorted(actions.column("path").to_pylist()) if hasattr(actions.column("path"), "to_pylist") \
        else sorted(str(x) for x in actions.column("path"))
    if sys.argv[2] == "scan":
        out["rows"] = dt.to_pyarrow_table().num_rows
except Exception as e:
    out["error"] = f"{type(e).__name__}: {e}"
sys.stdout.write(json.dumps(out))
sys.stdout.flush()
os._exit(0)
"""


def deltalake_view(root: Path, scan: bool = False) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _DELTALAKE_PROBE, str(root), "scan" if scan else "noscan"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def _real_table(root: Path, partitioned: bool, struct_stats: bool = False) -> TableBuilder:
    conf = {"delta.checkpoint.writeStatsAsStruct": "true"} if struct_stats else {}
    fields = [field("id", "long"), field("name", "string")] + ([field("part", "integer")] if partitioned else [])
    t = TableBuilder(root, fields, ["part"] if partitioned else [], conf)
    n = 0
    for batch in range(4):
        actions = []
        for j in range(3):
            rows_ = 5 + j
            pv = {"part": str(j % 2)} if partitioned else {}
            rel = (f"part={j % 2}/" if partitioned else "") + f"b{batch}-f{j}-{uuid.uuid4()}.parquet"
            data = pa.table({"id": pa.array(range(n, n + rows_), pa.int64()), "name": [f"r{k}" for k in range(rows_)]})
            size = t.write_data(rel, data)
            actions.append(add(rel, pv, {"numRecords": rows_, "minValues": {"id": n, "name": "r0"},
                                         "maxValues": {"id": n + rows_ - 1, "name": f"r{rows_ - 1}"},
                                         "nullCount": {"id": 0, "name": 0}}, size=size))
            n += rows_
        t.commit(actions)
    first = sorted(p.relative_to(root).as_posix() for p in root.rglob("b0-f0-*.parquet"))[0]
    t.commit([remove(first, NOW_MS, partitionValues={"part": "0"} if partitioned else {}, size=1)])
    return t


def _ours(root: Path) -> tuple[int, list[str], int]:
    snap = load_snapshot(str(root))
    files = sorted(snap.absolute_path(p) for p in snap.files().column("path").to_pylist())
    return snap.version, files, sum(pc.fill_null(snap.files().column("num_records"), 0).to_pylist())


def _drop_commits_through(root: Path, version: int) -> None:
    for p in (root / "_delta_log").glob("*.json"):
        if int(p.name.split(".")[0]) <= version:
            p.unlink()


@pytest.mark.parametrize(
    "partitioned, kind, struct_stats",
    [
        (False, {}, False),
        (True, {}, True),
        (False, {"parts": 3}, False),
        (True, {"parts": 2}, False),
        (False, {"parts": 20}, False),  # more parts than actions: empty part files
    ],
)
def test_deltalake_reads_our_checkpoints(tmp_path: Path, partitioned: bool, kind: dict, struct_stats: bool) -> None:
    root = tmp_path / "t"
    t = _real_table(root, partitioned, struct_stats)
    version, files, num_rows = _ours(root)
    write_checkpoint(load_snapshot(str(root)), **kind)
    _drop_commits_through(root, version)
    assert sorted(p.name for p in (root / "_delta_log").iterdir() if p.name.endswith(".json")) == []
    view = deltalake_view(root, scan=True)
    assert "error" not in view, view
    assert view["version"] == version
    assert [to_path(u) for u in view["files"]] == files
    assert sorted(str(root / p) for p in view["add_paths"]) == files
    assert view["rows"] == num_rows
    # Commits after the checkpoint are replayed on top of it by both readers.
    extra = "late.parquet"
    size = t.write_data(extra, pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]}))
    t.commit([add(extra, {"part": None} if partitioned else {}, {"numRecords": 2}, size=size)])
    view = deltalake_view(root, scan=True)
    version2, files2, rows2 = _ours(root)
    assert "error" not in view, view
    assert view["version"] == version2 == version + 1
    assert [to_path(u) for u in view["files"]] == files2
    assert view["rows"] == rows2 == num_rows + 2


def to_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return os.path.abspath(unquote(urlparse(uri).path)) if uri.startswith("file:") else os.path.abspath(uri)


@pytest.mark.parametrize(
    "name",
    [
        "delta-rs/simple_table",
        "delta-rs/delta-0.8.0-partitioned",
        "delta-rs/table_with_column_mapping",
        "delta-spark/table-with-columnmapping-mode-name/delta",
        "delta-spark/data-reader-partition-values/delta",
    ],
)
@pytest.mark.parametrize("kind", [{}, {"parts": 2}])
def test_deltalake_reads_our_checkpoint_of_a_golden_table(golden: Path, tmp_path: Path, name: str, kind: dict) -> None:
    root = tmp_path / "t"
    shutil.copytree(golden / name, root)
    expected = load_snapshot(str(root))
    before = deltalake_view(root, scan=True)
    assert "error" not in before, before
    for p in (root / "_delta_log").glob("*.checkpoint*"):
        p.unlink()
    (root / "_delta_log" / "_last_checkpoint").unlink(missing_ok=True)
    write_checkpoint(expected, **kind)
    _drop_commits_through(root, expected.version)
    assert deltalake_view(root, scan=True) == before


def test_deltalake_reads_our_v2_checkpoint(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _v2_table(root)
    before = deltalake_view(root)
    assert "error" not in before, before
    write_checkpoint(load_snapshot(str(root)), parts=2)
    _drop_commits_through(root, 2)
    assert deltalake_view(root) == before


# ---- scale ----------------------------------------------------------------------------------


def _synthetic_snapshot(root: Path, n: int) -> Snapshot:
    """A snapshot with `n` live files, built directly in Arrow (no JSON to parse)."""
    t = TableBuilder(root, [field("id", "long"), field("p", "string")], ["p"],
                     {"delta.checkpoint.writeStatsAsStruct": "true"})
    base = load_snapshot(str(root))
    idx = np.arange(n)
    ids = pa.array(idx.astype(str))
    paths = pc.binary_join_element_wise("p=", pc.cast(pa.array(idx % 100), pa.string()),
                                        "/part-00000-", ids, "-c000.snappy.parquet", "")
    pv_keys = pa.array(np.full(n, "p"))
    pv_vals = pc.cast(pa.array(idx % 100), pa.string())
    pvs = pa.MapArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), pv_keys, pv_vals)
    stats = pc.binary_join_element_wise('{"numRecords":', ids, ',"minValues":{"id":', ids, '},"maxValues":{"id":', ids,
                                        '},"nullCount":{"id":0}}', "")
    columns = {
        "path": paths, "partitionValues": pvs, "size": pa.array(np.full(n, 1000, np.int64)),
        "modificationTime": pa.array(np.full(n, NOW_MS, np.int64)), "dataChange": pa.array(np.ones(n, bool)),
        "stats": stats,
    }
    arrays = [columns.get(f.name, pa.nulls(n, f.type)) for f in ADD_TYPE]
    adds = pa.StructArray.from_arrays(arrays, fields=list(ADD_TYPE))
    state = TableState(base.version, base.protocol, base.metadata, adds, pa.array([], REMOVE_TYPE), {}, {})
    assert t.version == base.version
    return Snapshot(base.table_root, base.storage, base.segment, state)


def test_300k_files_checkpoint_in_a_few_seconds(tmp_path: Path) -> None:
    snap = _synthetic_snapshot(tmp_path, 300_000)
    start = time.perf_counter()
    write_checkpoint(snap, parts=4)
    elapsed = time.perf_counter() - start
    assert elapsed < 20, f"checkpoint of 300k files took {elapsed:.1f}s"
    hint = last_checkpoint(tmp_path)
    assert hint["numOfAddFiles"] == 300_000 and hint["parts"] == 4
    loaded = load_snapshot(str(tmp_path))
    assert loaded.num_files == 300_000


@pytest.mark.parametrize("struct_stats", [False, True])
def test_checkpoint_read_in_slices_and_written_chunk_by_chunk(tmp_path: Path, monkeypatch, struct_stats: bool) -> None:
    """A checkpoint is read a few rows at a time (a chunked state) and the next checkpoint is
    written chunk by chunk: same state for pydelta, same files and rows for deltalake."""
    from pydelta.log import checkpoint_reader, replay

    root = tmp_path / "t"
    t = _real_table(root, partitioned=True, struct_stats=struct_stats)
    write_checkpoint(load_snapshot(str(root)))
    monkeypatch.setattr(checkpoint_reader, "_BATCH_ROWS", 3)  # slices of 3 rows: many chunks
    monkeypatch.setattr(replay, "_MIN_CHUNK_ROWS", 1)  # ... which replay keeps as they are
    size = t.write_data("late.parquet", pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]}))
    t.commit([add("late.parquet", {"part": "1"}, {"numRecords": 2}, size=size)])
    chunked = load_snapshot(str(root))
    assert isinstance(chunked.state.adds, pa.ChunkedArray) and chunked.state.adds.num_chunks > 2
    version, files, num_rows = _ours(root)
    write_checkpoint(chunked)
    monkeypatch.undo()
    _drop_commits_through(root, version)
    assert_same_state(chunked, load_snapshot(str(root)))
    if struct_stats:
        added = read_checkpoint_table(root, version).column("add")
        assert "stats_parsed" in added.type.names and "partitionValues_parsed" in added.type.names
    view = deltalake_view(root, scan=True)
    assert "error" not in view, view
    assert view["version"] == version
    assert [to_path(u) for u in view["files"]] == files
    assert view["rows"] == num_rows
