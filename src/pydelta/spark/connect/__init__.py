"""Spark Connect: every piece pydelta needs to serve a `sc://` session, in one package.

A vertical slice, like delta-spark's python/delta/connect, layered inside: `session`
(telling Connect sessions apart) is ground floor; `expressions`, `lineage`, `join` and
`scan` (skipping on the client's unresolved plans) sit beside read/; `grammar`,
`query_pruning`, `describe`, `statements` and `router` are Connect's SQL front, above
sql/ and api/; `server` starts a local Connect server. tests/test_architecture.py holds
each module's floor.
"""
