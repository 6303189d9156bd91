"""Spark Connect: every piece pydelta needs to serve a `sc://` session, in one package.

A vertical slice, like delta-spark's python/delta/connect, layered inside: `expressions`,
`lineage`, `join` and `scan` (skipping on the client's unresolved plans) sit beside read/;
`grammar`, `query_pruning`, `describe`, `statements` and `router` are Connect's SQL front,
above sql/ and api/; `server` starts a local Connect server. Telling a Connect session from a
classic one is every floor's question: it lives on the ground floor
(`base/connect_session.py`). tests/test_architecture.py holds each module's floor.
"""
