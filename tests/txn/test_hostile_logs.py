"""Logs written by others (issue 44): actions with fields pydelta does not know, table features
it does not know, data files and deletion vectors outside the table's root, links out of it.

pydelta reads what the protocol lets it read, refuses by name what it cannot, and its
maintenance never deletes nor changes a file outside the table's own root: VACUUM lists only
under the root and never follows a link out of it, and a shallow clone's VACUUM leaves the
source table's files alone.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import UnsupportedFeatureError
from pydelta.log.deletion_vector_files import write_deletion_vector_file
from pydelta.log.vacuum_plan import execute_plan, plan_vacuum
from pydelta.txn.clone import clone_table

from .writers import append, create_table, rows_of

DAY_MS = 86_400_000


def _commit(root: str, *actions: dict) -> int:
    """Append one hand-written commit (a foreign writer's) to the table's log."""
    version = pydelta.load_snapshot(root).version + 1
    info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "FOREIGN WRITE"}}
    path = Path(root) / "_delta_log" / f"{version:020d}.json"
    path.write_text("\n".join(json.dumps(a) for a in (info, *actions)) + "\n")
    return version


def _old(path: Path) -> None:
    """Make a file look written long ago (past VACUUM's retention)."""
    old = time.time() - 30 * 86_400
    os.utime(path, (old, old))


def _vacuum(root: str) -> list[str]:
    plan = plan_vacuum(pydelta.load_snapshot(root), now_ms=int(time.time() * 1000) + 30 * DAY_MS)
    execute_plan(plan)
    return [f.path for f in plan.files]


def test_actions_with_unknown_fields_are_read_and_written_over(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    add = pydelta.load_snapshot(root).files().to_pylist()[0]
    _commit(root,
            {"add": {"path": add["path"] + ".copy", "partitionValues": {"part": "a"}, "size": 1,
                     "modificationTime": 1, "dataChange": True, "futureField": {"nested": [1, 2]}}},
            {"futureAction": {"anything": True}})
    assert pydelta.load_snapshot(root).num_files == 2
    _commit(root, {"remove": {"path": add["path"] + ".copy", "dataChange": True, "deletionTimestamp": 2,
                              "futureRemoveField": "x"}})
    snapshot = pydelta.load_snapshot(root)
    assert snapshot.version == 3 and snapshot.num_files == 1
    assert append(root, [{"id": 2, "part": "b", "value": "y"}]) == 4
    assert [r[0] for r in rows_of(root)] == [1, 2]


def test_an_unknown_reader_feature_is_refused_by_name(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    _commit(root, {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                "readerFeatures": ["futureReaderFeature"], "writerFeatures": ["futureReaderFeature"]}})
    with pytest.raises(UnsupportedFeatureError, match="futureReaderFeature"):
        pydelta.load_snapshot(root)
    assert pydelta.load_snapshot(root, version=0).version == 0  # the version before it still reads


def test_an_unknown_writer_feature_reads_but_refuses_writes(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    create_table(root)
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    _commit(root, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                                "writerFeatures": ["futureWriterFeature"]}})
    assert [r[0] for r in rows_of(root)] == [1]
    log_before = sorted(os.listdir(Path(root) / "_delta_log"))
    with pytest.raises(UnsupportedFeatureError, match="futureWriterFeature"):
        append(root, [{"id": 2, "part": "a", "value": "y"}])
    assert sorted(os.listdir(Path(root) / "_delta_log")) == log_before  # nothing committed


def test_vacuum_never_deletes_outside_the_root(tmp_path: Path) -> None:
    """Data files named by absolute path and by another store's URI, a deletion vector outside
    the root, and a link inside the root to a directory outside it."""
    root = str(tmp_path / "t")
    create_table(root)
    append(root, [{"id": 1, "part": "a", "value": "x"}])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.parquet").write_bytes(b"someone else's data")
    (outside / "kept.txt").write_text("someone else's file")
    dv = write_deletion_vector_file(str(outside), [0])
    for p in outside.iterdir():
        _old(p)
    _commit(root,
            {"add": {"path": (outside / "data.parquet").as_uri(), "partitionValues": {"part": "a"}, "size": 19,
                     "modificationTime": 1, "dataChange": True}},
            {"add": {"path": "s3://another-bucket/t/part-0.parquet", "partitionValues": {"part": "a"}, "size": 1,
                     "modificationTime": 1, "dataChange": True}})
    _commit(root, {"remove": {"path": (outside / "data.parquet").as_uri(), "dataChange": True,
                              "deletionTimestamp": 1, "deletionVector": {
                                  "storageType": "p", "pathOrInlineDv": dv.absolute_path(str(outside)),
                                  "sizeInBytes": dv.size_in_bytes, "cardinality": 1, "offset": dv.offset}}})
    os.symlink(outside, Path(root) / "linked", target_is_directory=True)
    before = {p.name: p.read_bytes() for p in outside.iterdir()}

    deleted = _vacuum(root)
    assert all(os.path.abspath(p).startswith(root + os.sep) for p in deleted)
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before
    assert str(Path(root) / "linked") in deleted  # the link went as a file, not what it points at


def test_a_shallow_clones_vacuum_leaves_the_source_alone(tmp_path: Path) -> None:
    source = str(tmp_path / "source")
    create_table(source)
    for i in range(3):
        append(source, [{"id": i, "part": "a", "value": f"v{i}"}])
    clone = str(tmp_path / "clone")
    clone_table(pydelta.load_snapshot(source), clone, shallow=True)
    append(clone, [{"id": 9, "part": "b", "value": "clone's own"}])
    source_files = {p: p.read_bytes() for p in Path(source).rglob("*") if p.is_file()}
    for p in source_files:
        _old(p)
    # The clone drops every file, its own and the source's: VACUUM may delete only its own.
    snapshot = pydelta.load_snapshot(clone)
    _commit(clone, *({"remove": {"path": f, "dataChange": True, "deletionTimestamp": 1}}
                     for f in snapshot.files().column("path").to_pylist()))
    for p in Path(clone).rglob("*.parquet"):
        _old(p)
    deleted = _vacuum(clone)
    assert deleted and all(p.startswith(clone + os.sep) for p in deleted)
    assert {p: p.read_bytes() for p in Path(source).rglob("*") if p.is_file()} == source_files
    assert [r[0] for r in rows_of(source)] == [0, 1, 2]


def test_data_and_deletion_vectors_outside_the_root_are_read_where_the_log_says(tmp_path: Path) -> None:
    """The protocol allows absolute paths for data files and 'p' deletion vectors: pydelta reads
    them where they are (and, as above, never deletes them)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pydelta.log.deletion_vector_files import read_deleted_rows
    from pydelta.protocol.deletion_vectors import DeletionVectorDescriptor

    root = str(tmp_path / "t")
    create_table(root)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    data = outside / "part-0.parquet"
    pq.write_table(pa.table({"id": pa.array([10, 11, 12], pa.int64()), "value": ["a", "b", "c"]}), data)
    dv = write_deletion_vector_file(str(outside), [1])
    dv_abs = {"storageType": "p", "pathOrInlineDv": dv.absolute_path(str(outside)), "sizeInBytes": dv.size_in_bytes,
              "cardinality": 1, "offset": dv.offset}
    _commit(root, {"add": {"path": data.as_uri(), "partitionValues": {"part": "x"}, "size": data.stat().st_size,
                           "modificationTime": 1, "dataChange": True, "deletionVector": dv_abs}})
    snapshot = pydelta.load_snapshot(root)
    (row,) = snapshot.files().to_pylist()
    assert snapshot.absolute_path(row["path"]) == str(data)
    rows = read_deleted_rows(DeletionVectorDescriptor.from_dict(row["deletion_vector"]), snapshot.table_root)
    assert rows.tolist() == [1]
