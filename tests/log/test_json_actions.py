"""The vectorized JSON commit parser gives exactly what the row-by-row parser gives."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from pydelta.errors import CorruptedLogError
from pydelta.log import json_actions, storage
from pydelta.log.arrow_actions import ADD_TYPE, REMOVE_TYPE, rows_to_struct
from pydelta.log.commits import parse_actions
from pydelta.log.json_actions import parse_commit
from pydelta.log.snapshot import load_snapshot
from tests.golden_paths import GOLDEN


def _tables() -> list[str]:
    out = []
    for dirpath, dirnames, _ in os.walk(GOLDEN):
        if "_delta_log" in dirnames:
            out.append(dirpath)
            dirnames[:] = []
    return sorted(out)


def _state(path: str, monkeypatch, threshold: int):
    monkeypatch.setattr(json_actions, "SMALL_COMMIT_LINES", threshold)
    monkeypatch.setattr(storage, "MAPPED_FROM_BYTES", threshold)  # the Arrow path reads memory-mapped files
    try:
        snap = load_snapshot(path, check_protocol=False)
    except Exception as e:  # noqa: BLE001  (both parsers must fail alike)
        return ("error", type(e).__name__, str(e))
    s = snap.state
    return (
        snap.version, s.protocol, s.metadata, s.txns, s.domains, s.latest_commit_info, s.metadata_version,
        _maps_sorted(snap.files().to_pylist()), _maps_sorted(snap.tombstones().to_pylist()),
    )


def _maps_sorted(rows: list[dict]) -> list[dict]:
    """Rows with map values (lists of pairs) in key order: a map's key order carries no meaning, and
    the Arrow path gives every row the key order of the first row that has the keys."""
    return [{k: sorted(v) if isinstance(v, list) else v for k, v in row.items()} for row in rows]


@pytest.mark.parametrize("path", _tables(), ids=lambda p: os.path.relpath(p, GOLDEN))
def test_golden_tables_load_identically_through_arrow(path, monkeypatch):
    rows = _state(path, monkeypatch, 1 << 60)
    arrow = _state(path, monkeypatch, 0)
    assert arrow == rows


def _both(text: str):
    data = text.encode()
    slow = parse_actions(data, 3, "x.json")
    fast = json_actions._parse_arrow(data, 3, "x.json")
    return slow, fast


def _files(commit, kind):
    target = ADD_TYPE if kind == "add" else REMOVE_TYPE
    rows = commit.adds if kind == "add" else commit.removes
    return rows_to_struct(rows, target).to_pylist()


def _check(text: str):
    slow, fast = _both(text)
    assert fast.add_files().to_pylist() == _files(slow, "add")
    assert fast.remove_files().to_pylist() == _files(slow, "remove")
    for name in ("protocol", "metadata", "commit_info", "txns", "domains", "sidecars", "checkpoint_metadata"):
        assert getattr(fast, name) == getattr(slow, name), name
    return fast


def _line(obj) -> str:
    return json.dumps(obj, separators=(",", ":"))


ADD = {"path": "p=1/a.parquet", "partitionValues": {"p": "1"}, "size": 10, "modificationTime": 5, "dataChange": True,
       "stats": "{\"numRecords\":3}"}


def test_edge_cases_match_row_by_row_parser():
    lines = [
        _line({"commitInfo": {"inCommitTimestamp": 1_700_000_000_123, "a": [1, "x", {"b": None}], "big": 2**80,
                              "nested": {"x": {"y": []}}}}),
        _line({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                            "writerFeatures": ["deletionVectors"]}}),
        _line({"add": {**ADD, "partitionValues": {"p": None}, "tags": {"t": "v", "u": None},
                       "unknownField": {"z": 1}}}),
        _line({"add": {**ADD, "path": "p=2/b%20c.parquet", "partitionValues": {"p": "2"},
                       "deletionVector": {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4,
                                          "sizeInBytes": 40, "cardinality": 6}}}),
        _line({"txn": {"appId": "app", "version": 4, "lastUpdated": 9}}),
        _line({"add": {"path": "c.parquet", "size": 1, "modificationTime": 1, "dataChange": False}}),
        _line({"remove": {"path": "old.parquet", "deletionTimestamp": 7, "dataChange": True,
                          "extendedFileMetadata": True, "partitionValues": {"p": "1"}, "size": 3}}),
        _line({"domainMetadata": {"domain": "d", "configuration": "{}", "removed": False}}),
        _line({"unknownAction": {"q": 1}}),
        _line({"add": {**ADD, "path": "file:/abs/d.parquet", "tags": {}}}),
    ]
    fast = _check("\n".join(lines) + "\n")  # commitInfo defeats inference: add/remove lines alone
    assert fast.add_array is not None and fast.in_commit_timestamp == 1_700_000_000_123
    _check("\n".join(lines))  # no trailing newline
    lines[0] = _line({"commitInfo": {"inCommitTimestamp": 1_700_000_000_123, "big": 2**80}})
    fast = _check("\n".join(lines) + "\n")  # the whole file through the reader
    assert fast.add_array is not None
    _check("\n".join(reversed(lines)))


def test_fallbacks_still_match():
    # empty lines, several actions on one line, non-string partition values, huge ints in files
    for text in (
        _line({"add": ADD}) + "\n\n" + _line({"commitInfo": {"x": 1}}) + "\n",
        _line({"add": ADD, "commitInfo": {"x": 1}}) + "\n" + _line({"add": {**ADD, "path": "z"}}) + "\n",
        _line({"add": {**ADD, "partitionValues": {"p": "1"}}}) + "\n"
        + _line({"add": {**ADD, "path": "q", "partitionValues": {"p": 1}}}),
        "  " + _line({"add": ADD}) + "\r\n" + _line({"commitInfo": {"x": 1}}) + "\r\n",
    ):
        data = text.encode()
        slow = parse_actions(data, 3, "x.json")
        fast = _force(data)
        assert _outcome(fast.add_files) == _outcome(lambda s=slow: rows_to_struct(s.adds, ADD_TYPE))
        assert fast.commit_info == slow.commit_info
    with pytest.raises((OverflowError, pa.ArrowException)):
        _force((_line({"add": {**ADD, "size": 2**70}}) + "\n").encode()).add_files()


def _outcome(fn):
    try:
        out = fn()
        return out.to_pylist() if hasattr(out, "to_pylist") else out
    except Exception as e:  # noqa: BLE001
        return type(e)


def _force(data: bytes):
    old = json_actions.SMALL_COMMIT_LINES
    json_actions.SMALL_COMMIT_LINES = 0
    try:
        return parse_commit(data, 3, "x.json")
    finally:
        json_actions.SMALL_COMMIT_LINES = old


def test_invalid_json_raises_corrupted_log_error():
    with pytest.raises(CorruptedLogError, match="line 2"):
        _force(b'{"add":{"path":"a","size":1}}\n{"add": nope}\n')
    with pytest.raises(CorruptedLogError):
        _force(b'{"commitInfo":{"a":1}}\n[1,2]\n')


def test_large_commit_replay_matches(tmp_path, monkeypatch):
    """Duplicate keys across and within commits, removes then re-adds, DVs: newest wins, first-seen order."""
    log = tmp_path / "_delta_log"
    log.mkdir()
    meta = {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps({"type": "struct", "fields": [
                             {"name": "p", "type": "string", "nullable": True, "metadata": {}}]}),
                         "partitionColumns": ["p"], "configuration": {}, "createdTime": 1}}
    commits = [
        [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, meta]
        + [{"add": {**ADD, "path": f"p=1/f{i}.parquet"}} for i in range(300)],
        [{"remove": {"path": f"p=1/f{i}.parquet", "deletionTimestamp": 1, "dataChange": True}}
         for i in range(0, 300, 3)]
        + [{"add": {**ADD, "path": f"p=1/f{i}.parquet", "size": 99}} for i in range(0, 300, 9)]
        + [{"add": {**ADD, "path": "p=1/f1.parquet",
                    "deletionVector": {"storageType": "u", "pathOrInlineDv": "abc", "offset": 1, "sizeInBytes": 2,
                                       "cardinality": 1}}}],
        [{"add": {**ADD, "path": "p=1/f5.parquet", "size": 7}}, {"add": {**ADD, "path": "p=1/f5.parquet", "size": 8}},
         {"remove": {"path": f"{tmp_path}/p=1/f7.parquet", "deletionTimestamp": 1, "dataChange": True}},
         {"commitInfo": {"timestamp": 5}}],
    ]
    for v, actions in enumerate(commits):
        (log / f"{v:020d}.json").write_text("\n".join(_line(a) for a in actions) + "\n")
    rows = _state(str(tmp_path), monkeypatch, 1 << 60)
    arrow = _state(str(tmp_path), monkeypatch, 0)
    assert arrow == rows
    assert arrow[0] != "error", arrow
    files = arrow[7]
    assert len(files) == 234
    sizes = {(f["path"], f["deletion_vector"] is not None): f["size"] for f in files}
    assert sizes[("p=1/f5.parquet", False)] == 8 and sizes[("p=1/f9.parquet", False)] == 99
    assert ("p=1/f1.parquet", True) in sizes and ("p=1/f1.parquet", False) in sizes
    assert ("p=1/f7.parquet", False) not in sizes and ("p=1/f3.parquet", False) not in sizes
    assert len(arrow[8]) == 67
    assert [f["path"] for f in files[:3]] == ["p=1/f0.parquet", "p=1/f1.parquet", "p=1/f2.parquet"]


def test_incremental_updates_match_fresh_loads(tmp_path, monkeypatch):
    """Chunked states after Snapshot.update() (large base, small commits) equal a fresh replay."""
    monkeypatch.setattr(json_actions, "SMALL_COMMIT_LINES", 0)
    log = tmp_path / "_delta_log"
    log.mkdir()
    meta = {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps({"type": "struct", "fields": []}),
                         "partitionColumns": [], "configuration": {}, "createdTime": 1}}
    first = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, meta]
    first += [{"add": {**ADD, "path": f"f{i}.parquet", "partitionValues": {}}} for i in range(500)]
    (log / f"{0:020d}.json").write_text("\n".join(_line(a) for a in first) + "\n")
    snap = load_snapshot(str(tmp_path))
    for v in range(1, 8):
        actions = [{"add": {**ADD, "path": f"n{v}.parquet", "partitionValues": {}}},
                   {"remove": {"path": f"f{v * 7}.parquet", "deletionTimestamp": v, "dataChange": True}},
                   {"remove": {"path": f"n{v - 1}.parquet", "deletionTimestamp": v, "dataChange": True}}]
        (log / f"{v:020d}.json").write_text("\n".join(_line(a) for a in actions) + "\n")
        snap = snap.update()
        fresh = load_snapshot(str(tmp_path))
        assert snap.version == fresh.version == v
        # Row order is first appearance within one replay, so an update appends: compare as sets.
        assert _sorted(snap.files()) == _sorted(fresh.files())
        assert _sorted(snap.tombstones()) == _sorted(fresh.tombstones())
    assert snap.num_files == 500 - 7 + 1


def _sorted(table):
    return sorted(table.to_pylist(), key=lambda r: r["path"])


def test_small_blocks_with_types_changing_between_blocks(monkeypatch):
    """A field null in the first block and a string later: the reader retries in one block."""
    monkeypatch.setattr(json_actions, "_BLOCK_SIZE", 4096)
    lines = [_line({"commitInfo": {"timestamp": 1}})]
    lines += [_line({"add": {**ADD, "path": f"a{i}", "partitionValues": {"p": None}, "tags": None}})
              for i in range(100)]
    lines += [_line({"add": {**ADD, "path": f"b{i}", "partitionValues": {"p": str(i)}, "tags": {"k": "v"},
                             "deletionVector": {"storageType": "u", "pathOrInlineDv": "x", "sizeInBytes": 1,
                                                "cardinality": 1}}}) for i in range(100)]
    fast = _check("\n".join(lines) + "\n")
    assert fast.add_array is not None and len(fast.add_files()) == 200


def test_date_like_strings_stay_strings(monkeypatch):
    """The reader infers "2024-01-01" as a timestamp: typed from the first add, such partition values
    stay on the Arrow path; where a field is left to inference, the row-by-row parser decides."""
    monkeypatch.setattr(json_actions, "_SAMPLE_BYTES", 200)
    dated = [_line({"add": {**ADD, "path": f"d={i}/f",
                            "partitionValues": {"d": f"2024-01-0{i}", "t": "2024-01-01 10:00:00"}}})
             for i in range(1, 9)]
    fast = _check("\n".join(dated) + "\n")
    assert fast.add_array is not None
    assert fast.add_files().to_pylist()[0]["partitionValues"] == [("d", "2024-01-01"), ("t", "2024-01-01 10:00:00")]
    # a key the first add lacks, a date-like tag, and removes first seen past the sampled bytes
    later = [_line({"add": {**ADD, "partitionValues": {"p": "1", "q": "2024-02-02"}, "tags": {"when": "2024-03-03"}}}),
             _line({"remove": {"path": "2024-04-04", "deletionTimestamp": 1, "dataChange": True}})]
    for text in ("\n".join(dated + later) + "\n", "\n".join([_line({"commitInfo": {"x": "y" * 300}})] + later[1:] * 3)):
        data = text.encode()
        with pytest.raises(json_actions._Fallback):
            json_actions._parse_arrow(data, 3, "x.json")
        slow = parse_actions(data, 3, "x.json")
        fast = _force(data)
        assert fast.add_files().to_pylist() == _files(slow, "add")
        assert fast.remove_files().to_pylist() == _files(slow, "remove")
        assert fast.remove_files().to_pylist()[0]["path"] == "2024-04-04"


def test_num_records_of_pretty_printed_stats_stay_with_their_files():
    """Stats JSON is any JSON: a writer may break it over lines. Each file keeps its own count."""
    import pyarrow as pa

    from pydelta.log.snapshot import parse_num_records

    stats = pa.array([
        '{\n  "numRecords": 7,\n  "minValues": {"id": 1}\n}',
        '{"minValues":{"id":2},"numRecords":3}',
        None,
        '{"numRecords":5}',
        '{\r\n"maxValues": {"s": "a b"}, "numRecords": 11}',
    ])
    assert parse_num_records(stats).to_pylist() == [7, 3, None, 5, 11]
