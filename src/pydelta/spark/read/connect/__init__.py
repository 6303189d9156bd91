"""Reading on a Spark Connect client: file skipping without the server's plans.

A classic session lets pydelta prune a scan inside Spark's analyzed plan; a Connect client
cannot reach it. `expressions` translates the client's unresolved expressions into
predicates, `lineage` and `join` record the row-preserving steps between a read and its
filter, and `scan` gives the Delta read a DataFrame that rebuilds its scan over fewer files.
"""
