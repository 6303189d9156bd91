"""Spark Connect's front: every piece pydelta needs to serve a `sc://` session's Delta SQL.

`grammar`, `query_pruning`, `describe`, `statements` and `router` are Connect's SQL front,
above sql/ and api/; `server` starts a local Connect server. How a Delta read skips files on a
Connect client (its unresolved plans, the DataFrame that rebuilds its scan) is part of reading
and lives in `read/connect/`; telling a Connect session from a classic one is every floor's
question and lives on the ground floor (`base/connect_session.py`).
tests/test_architecture.py holds each module's floor.
"""
