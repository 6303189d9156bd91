"""Catalog-managed tables in a real Unity Catalog server (olai-uc-server over the Delta REST API).

Creation goes through a staging table, every later commit is staged in
`_delta_log/_staged_commits/` and ratified by the catalog, and readers take the catalog's
ratified commits as the table's, published or not. The catalog's own answers (loadTable) are
the witness: what pydelta committed is what the catalog ratified.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import pydelta
from pydelta.errors import CatalogManagedTableError, CommitOwnerError, DeltaTableNotFoundError, TableAlreadyExistsError
from pydelta.log.commit_owners.base import CommitOwnerClient
from pydelta.log.commit_owners.unity_catalog import uc_columns
from pydelta.txn.transaction import Operation, OptimisticTransaction
from pydelta.txn.unity_catalog import UnityCatalog, parse_name
from tests.txn.writers import make_metadata, rows_of, write_data_file

ROOT = Path(__file__).resolve().parents[2]


def _row(i: int) -> list[dict]:
    return [{"id": i, "part": "a", "value": f"v{i}"}]


def _append(location: str, rows: list[dict]) -> int:
    snapshot = pydelta.load_snapshot(location)
    txn = OptimisticTransaction(location, snapshot, engine_info="pydelta-test")
    return txn.commit([write_data_file(location, rows)], Operation.write("Append", []))


def _log_versions(location: str) -> list[int]:
    log = Path(location) / "_delta_log"
    return sorted(int(p.name[:20]) for p in log.glob("*.json") if len(p.name) == 25)


def _staged(location: str) -> list[str]:
    return sorted(p.name for p in (Path(location) / "_delta_log" / "_staged_commits").glob("*.json"))


def test_a_table_is_created_through_its_staging_table(uc: UnityCatalog, uc_name: str) -> None:
    table = uc.create_table(uc_name, make_metadata())
    name = parse_name(uc_name)
    loaded = uc.rest.load_table(name.catalog, name.schema, name.name)
    assert loaded.table_id == table.table_id and loaded.table_type == "MANAGED"
    assert loaded.latest_table_version == 0 and loaded.commits == []
    assert Path(table.location).is_relative_to(Path(os.path.realpath(loaded.location.removeprefix("file://"))))
    v0_file = Path(table.location) / "_delta_log" / f"{0:020d}.json"
    v0 = [json.loads(line) for line in v0_file.read_text().splitlines()]
    protocol = next(a["protocol"] for a in v0 if "protocol" in a)
    conf = next(a["metaData"] for a in v0 if "metaData" in a)["configuration"]
    required = {"catalogManaged", "v2Checkpoint", "vacuumProtocolCheck", "deletionVectors"}
    assert required <= set(protocol["readerFeatures"])
    assert {"catalogManaged", "inCommitTimestamp"} <= set(protocol["writerFeatures"])
    assert conf["io.unitycatalog.tableId"] == table.table_id and conf["delta.checkpointPolicy"] == "v2"
    assert conf["delta.enableInCommitTimestamps"] == "true"
    assert loaded.properties["io.unitycatalog.tableId"] == table.table_id  # what the catalog recorded
    with pytest.raises(TableAlreadyExistsError):
        uc.create_table(uc_name, make_metadata())


def test_commits_are_ratified_by_the_catalog_then_published(uc: UnityCatalog, uc_name: str, monkeypatch) -> None:
    table = uc.create_table(uc_name, make_metadata())
    name = parse_name(uc_name)
    with monkeypatch.context() as m:  # a writer that dies between ratification and publishing
        m.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)
        assert _append(table.location, _row(1)) == 1
        assert _append(table.location, _row(2)) == 2
        ratified = uc.rest.load_table(name.catalog, name.schema, name.name)
        assert ratified.latest_table_version == 2
        assert [c["file-name"] for c in ratified.commits] == _staged(table.location)  # the catalog holds ours
        assert _log_versions(table.location) == [0]  # nothing published yet
        assert rows_of(table.location) == [(1, "a", "v1"), (2, "a", "v2")]  # ratified is committed
    # The next reader publishes, in order, the catalog's copies, and tells the catalog.
    snapshot = pydelta.load_snapshot(table.location)
    assert snapshot.version == 2 and _log_versions(table.location) == [0, 1, 2]
    for staged in _staged(table.location):
        version = int(staged[:20])
        published = Path(table.location) / "_delta_log" / f"{version:020d}.json"
        assert published.read_bytes() == (Path(table.location) / "_delta_log" / "_staged_commits" / staged).read_bytes()
    assert uc.rest.load_table(name.catalog, name.schema, name.name).commits == []
    assert _append(table.location, _row(3)) == 3 and _log_versions(table.location) == [0, 1, 2, 3]
    assert rows_of(table.location) == [(1, "a", "v1"), (2, "a", "v2"), (3, "a", "v3")]


def test_what_the_catalog_did_not_ratify_is_not_part_of_the_table(uc: UnityCatalog, uc_name: str) -> None:
    table = uc.create_table(uc_name, make_metadata())
    _append(table.location, _row(1))
    stray = write_data_file(table.location, _row(98))
    body = json.dumps({"commitInfo": {"inCommitTimestamp": int(time.time() * 1000) + 10}}) + "\n" + json.dumps(stray)
    log = Path(table.location) / "_delta_log"
    (log / "_staged_commits" / f"{2:020d}.{uuid.uuid4()}.json").write_text(body + "\n")  # staged, never ratified
    (log / f"{2:020d}.json").write_text(body + "\n")  # published past the catalog
    assert pydelta.load_snapshot(table.location).version == 1
    assert rows_of(table.location) == [(1, "a", "v1")]


def test_a_lost_race_is_retried_on_the_winner(uc: UnityCatalog, uc_name: str) -> None:
    table = uc.create_table(uc_name, make_metadata())
    first = pydelta.load_snapshot(table.location)
    second = pydelta.load_snapshot(table.location)
    a = OptimisticTransaction(table.location, first)
    b = OptimisticTransaction(table.location, second)
    assert a.commit([write_data_file(table.location, _row(1))], Operation.write("Append", [])) == 1
    # b read version 0 too: the catalog refuses its version 1 (409), b rebases (a blind append
    # conflicts with nothing) and the catalog ratifies it as version 2.
    assert b.commit([write_data_file(table.location, _row(2))], Operation.write("Append", [])) == 2
    assert rows_of(table.location) == [(1, "a", "v1"), (2, "a", "v2")]
    name = parse_name(uc_name)
    assert uc.rest.load_table(name.catalog, name.schema, name.name).latest_table_version == 2


def test_a_path_alone_does_not_reach_a_unity_catalog_table(uc: UnityCatalog, uc_name: str) -> None:
    table = uc.create_table(uc_name, make_metadata())
    _append(table.location, _row(1))
    # A process that never resolved the name does not know which catalog holds the table.
    code = ("import pydelta\n"
            "from pydelta.errors import CatalogManagedTableError\n"
            "try:\n    pydelta.load_snapshot(%r)\nexcept CatalogManagedTableError as e:\n    print('refused', e)\n"
            "from pydelta.txn.unity_catalog import UnityCatalog\n"
            "t = UnityCatalog(%r).table(%r)\n"
            "print('version', pydelta.load_snapshot(t.location).version)\n") % (table.location, uc.rest.uri, uc_name)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")}).stdout
    assert "refused" in out and "catalog.schema.table" in out and "version 1" in out


def test_an_unknown_table_and_a_bad_name_are_clear_errors(uc: UnityCatalog) -> None:
    with pytest.raises(DeltaTableNotFoundError, match=r"NoSuchTableException|not found|404"):
        uc.table("unity.default.no_such_table")
    with pytest.raises(pydelta.DeltaError, match="three parts"):
        uc.table("default.t")


def test_dropped_and_recreated_under_the_same_name_is_another_table(uc: UnityCatalog, uc_name: str) -> None:
    old = uc.create_table(uc_name, make_metadata())
    uc.drop_table(uc_name)
    new = uc.create_table(uc_name, make_metadata())
    assert new.table_id != old.table_id and new.location != old.location
    with pytest.raises(CommitOwnerError, match="another table"):
        _append(old.location, _row(1))  # the old table's binding names the table anew
    assert _append(new.location, _row(1)) == 1


class _RecordingProxy:
    """A reverse proxy in front of the real server that records each request's Authorization header."""

    def __init__(self, target: str) -> None:
        import http.server
        import threading
        import urllib.request

        self.authorizations: list[str | None] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self) -> None:
                proxy.authorizations.append(self.headers.get("Authorization"))
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
                request = urllib.request.Request(target + self.path, data=body, method=self.command,
                                                 headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=30) as r:
                        status, payload = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, payload = e.code, e.read()
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _forward

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_the_token_is_sent_but_never_shown(uc_server, uc_name: str, caplog) -> None:
    import logging

    caplog.set_level(logging.DEBUG)
    secret = f"dapi-{uuid.uuid4().hex}"
    proxy = _RecordingProxy(uc_server.uri)
    catalog = UnityCatalog(proxy.uri, token=secret)
    assert secret not in repr(catalog) and secret not in repr(catalog.rest)
    table = catalog.create_table(uc_name, make_metadata())
    with pytest.raises(DeltaTableNotFoundError) as refused:
        catalog.table(uc_name + "_missing")
    assert secret not in str(refused.value)
    assert secret not in repr(table.owner)
    _append(table.location, _row(1))  # a commit through the catalog, with the token
    assert proxy.authorizations and set(proxy.authorizations) == {f"Bearer {secret}"}
    assert secret not in caplog.text
    proxy.server.shutdown()


def test_columns_use_the_delta_rest_api_spelling() -> None:
    schema = {"type": "struct", "fields": [
        {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True},
         "nullable": True, "metadata": {"delta.columnMapping.id": 1}},
        {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": False},
         "nullable": True, "metadata": {}}]}
    out = uc_columns(schema)
    assert out["fields"][0]["type"] == {"type": "array", "element-type": "string", "contains-null": True}
    assert out["fields"][1]["type"] == {"type": "map", "key-type": "string", "value-type": "long",
                                        "value-contains-null": False}
    assert out["fields"][0]["metadata"] == {"delta.columnMapping.id": 1}


def test_a_table_of_an_unbound_catalog_is_refused_by_name(tmp_path: Path) -> None:
    from pydelta.log.commit_owners.unity_catalog import from_conf

    with pytest.raises(CatalogManagedTableError, match="Unity Catalog"):
        from_conf({"tableId": str(uuid.uuid4())})


def test_the_token_comes_from_the_environment_when_not_given(monkeypatch) -> None:
    monkeypatch.setenv("UC_TOKEN", "from-env")
    assert UnityCatalog("http://127.0.0.1:1").rest.token == "from-env"
    assert UnityCatalog("http://127.0.0.1:1", token="given").rest.token == "given"
    monkeypatch.delenv("UC_TOKEN")
    assert UnityCatalog("http://127.0.0.1:1/api/2.1/unity-catalog/").rest.uri == "http://127.0.0.1:1"
    with pytest.raises(pydelta.DeltaError, match="http"):
        UnityCatalog("127.0.0.1:1")


def test_commits_left_unpublished_up_to_the_catalogs_limit_are_published_by_the_next_writer(
        uc: UnityCatalog, uc_name: str, monkeypatch) -> None:
    table = uc.create_table(uc_name, make_metadata())
    name = parse_name(uc_name)
    with monkeypatch.context() as m:  # writers that all die before publishing
        m.setattr(CommitOwnerClient, "backfill_to_version", lambda self, *a, **k: -1)
        version = 0
        while True:
            try:
                version = _append(table.location, _row(version + 1))
            except CommitOwnerError as refused:
                assert "too many unpublished" in str(refused)
                break
        held = uc.rest.load_table(name.catalog, name.schema, name.name).commits
        assert len(held) == version >= 9  # the catalog's limit (olai-uc-server: 10 unpublished)
    assert _append(table.location, _row(100)) == version + 1  # publishes the held ones, then commits
    assert _log_versions(table.location) == list(range(version + 2))
    assert len(rows_of(table.location)) == version + 1
