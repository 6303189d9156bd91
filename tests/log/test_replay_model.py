"""Reconciliation (PROTOCOL.md "Action Reconciliation") against a simple model, with hypothesis."""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pydelta
from pydelta.log.checkpoint_writer import write_checkpoint

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": True, "metadata": {}}]})
PATHS = ["a.parquet", "b.parquet", "c%20d.parquet", "sub/e.parquet"]
DVS = [None, "dvA", "dvB"]

action = st.tuples(st.sampled_from(["add", "remove"]), st.sampled_from(PATHS), st.sampled_from(DVS),
                   st.integers(1, 10_000))
commit = st.lists(action, min_size=0, max_size=5)


def _dv(uid: str | None) -> dict | None:
    if uid is None:
        return None
    return {"storageType": "u", "pathOrInlineDv": uid + "0" * (20 - len(uid)), "offset": 1, "sizeInBytes": 10,
            "cardinality": 1}


def _write_commit(log: str, version: int, actions: list[dict]) -> None:
    with open(os.path.join(log, f"{version:020d}.json"), "w") as f:
        for a in actions:
            f.write(json.dumps(a) + "\n")


def _unique(actions):
    """A commit may not hold two actions for the same (path, dv) key (protocol rule)."""
    seen, out = set(), []
    for kind, path, dv, size in actions:
        if (path, dv) in seen:
            continue
        seen.add((path, dv))
        out.append((kind, path, dv, size))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(commit, min_size=1, max_size=12), checkpoint_at=st.integers(0, 12))
def test_replay_matches_model(tmp_path_factory, commits, checkpoint_at):
    root = str(tmp_path_factory.mktemp("t"))
    log = os.path.join(root, "_delta_log")
    os.makedirs(log)
    _write_commit(log, 0, [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
                      "partitionColumns": [], "configuration": {}}},
    ])
    live: dict[tuple[str, str | None], int] = {}
    for version, actions in enumerate(commits, start=1):
        body = []
        for kind, path, dv, size in _unique(actions):
            dvd = _dv(dv)
            if kind == "add":
                body.append({"add": {"path": path, "partitionValues": {}, "size": size, "modificationTime": 1,
                                     "dataChange": True, **({"deletionVector": dvd} if dvd else {})}})
                live[(path, dv)] = size
            else:
                body.append({"remove": {"path": path, "deletionTimestamp": 1, "dataChange": True,
                                        **({"deletionVector": dvd} if dvd else {})}})
                live.pop((path, dv), None)
        _write_commit(log, version, body)
        if version == checkpoint_at:
            write_checkpoint(pydelta.load_snapshot(root), now_ms=2)
    snap = pydelta.load_snapshot(root)
    assert snap.version == len(commits)
    files = snap.files()
    got = {}
    for path, size, dv in zip(files.column("path").to_pylist(), files.column("size").to_pylist(),
                              files.column("deletion_vector").to_pylist(), strict=True):
        uid = dv["pathOrInlineDv"].rstrip("0") if dv else None
        got[(path, uid)] = size
    assert got == live
    # An incremental update from an older snapshot reaches the same state.
    if len(commits) > 1:
        old = pydelta.load_snapshot(root, version=1)
        assert sorted(old.update().files().column("path").to_pylist()) == sorted(files.column("path").to_pylist())
