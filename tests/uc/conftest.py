"""Fixtures of the Unity Catalog tests: a client of the session's uc-server (`uc_server`, in
tests/conftest.py) and a fresh table name per test."""

from __future__ import annotations

import uuid

import pytest

from pydelta.txn.unity_catalog import UnityCatalog
from tests.uc.server import CATALOG, SCHEMA, UcServer


@pytest.fixture
def uc(uc_server: UcServer) -> UnityCatalog:
    return UnityCatalog(uc_server.uri)


@pytest.fixture
def uc_name() -> str:
    """A table name no other test uses (the server reserves staging names across schemas)."""
    return f"{CATALOG}.{SCHEMA}.t_{uuid.uuid4().hex[:12]}"
