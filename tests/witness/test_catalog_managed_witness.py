"""delta-spark (the reference) reads a pydelta catalog-managed table through pydelta's catalog.

The table's commits go through pydelta's SQLite catalog; one ratified commit is left
unpublished on purpose. delta-spark, given a commit coordinator that answers from the
catalog's database, must see every ratified version (the unpublished one too) and the same rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pydelta
from pydelta.log.commit_owners import CommitOwnerClient
from tests.txn.test_commit_owner_support import owner_conf
from tests.txn.writers import append, create_table, rows_of
from tests.witness.delta_spark import run_delta_spark

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.spark


def test_delta_spark_reads_a_catalog_managed_table_with_an_unpublished_commit(tmp_path, monkeypatch):
    root = str(tmp_path / "t")
    conf = owner_conf("sqlite", tmp_path, "catalogManaged")
    create_table(root, configuration=conf)
    for i in range(1, 3):
        append(root, [{"id": i, "part": "a", "value": f"v{i}"}])
    with monkeypatch.context() as m:  # ratified, then left unpublished (as by a writer that died)
        m.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)
        append(root, [{"id": 3, "part": "b", "value": "v3"}])
        assert not (Path(root) / "_delta_log" / f"{3:020d}.json").exists()
        ours = rows_of(root)
        table_id = pydelta.load_snapshot(root).metadata.id
        db = json.loads(conf["io.pydelta.catalog.conf"])["path"]
        theirs = run_delta_spark(HERE / "_catalog_managed_reader.py", root, db, table_id)
    assert theirs["asked_catalog"]
    assert theirs["versions"] == [0, 1, 2, 3]  # the unpublished ratified version 3 included
    assert {"catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck"} <= set(theirs["features"])
    assert sorted(tuple(r) for r in theirs["rows"]) == sorted(ours)
    assert len(ours) == 3

