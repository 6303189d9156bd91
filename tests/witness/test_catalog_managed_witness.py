"""delta-spark (the reference) reads pydelta catalog-managed tables through pydelta's catalog.

Three tables: commits staged as files (SQLite catalog), inline commits held by the catalog until
published (SQLite, and PostgreSQL); one ratified commit of each is left unpublished on purpose.
delta-spark, given a commit coordinator that answers from the catalog's database, must see every
ratified version (the unpublished one too) and the same rows, and read the commits pydelta
published from the catalog's content as ordinary Delta files."""

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


def _table_with_an_unpublished_commit(root: str, conf: dict[str, str], monkeypatch) -> tuple[list[tuple], str]:
    """Versions 1 and 2 published, version 3 ratified and left unpublished (as by a writer that
    died): the table's rows and id."""
    create_table(root, configuration=conf)
    for i in range(1, 3):
        append(root, [{"id": i, "part": "a", "value": f"v{i}"}])
    with monkeypatch.context() as m:
        m.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)
        append(root, [{"id": 3, "part": "b", "value": "v3"}])
        assert not (Path(root) / "_delta_log" / f"{3:020d}.json").exists()
        return rows_of(root), pydelta.load_snapshot(root).metadata.id


def test_delta_spark_reads_catalog_managed_tables_with_an_unpublished_commit(tmp_path, monkeypatch):
    args, ours = [], []
    cases = (("sqlite", "catalogManaged"), ("sqlite", "catalogManaged-inline"), ("postgres", "catalogManaged-inline"))
    for owner, kind in cases:
        here = tmp_path / f"{owner}-{kind}"
        here.mkdir()
        root = str(here / "t")
        conf = owner_conf(owner, here, kind)
        rows, table_id = _table_with_an_unpublished_commit(root, conf, monkeypatch)
        staged = Path(root) / "_delta_log" / "_staged_commits"
        assert (kind == "catalogManaged") == (staged.exists() and any(staged.iterdir()))  # inline: no staged file
        ours.append(rows)
        where = json.loads(conf["io.pydelta.catalog.conf"])
        args += [root, owner, where.get("path") or where["dsn"], table_id]
    theirs = run_delta_spark(HERE / "_catalog_managed_reader.py", *args)
    assert len(theirs) == len(cases)
    for kind, mine, seen in zip(cases, ours, theirs, strict=True):
        assert seen["asked_catalog"], kind
        assert seen["versions"] == [0, 1, 2, 3], kind  # the unpublished ratified version 3 included
        assert {"catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck"} <= set(seen["features"]), kind
        assert sorted(tuple(r) for r in seen["rows"]) == sorted(mine), kind
        assert len(mine) == 3
    assert [seen["inline_served"] for seen in theirs] == [[], [3], [3]]  # versions 1, 2: published
