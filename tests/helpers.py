"""Small test utilities."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from decimal import Decimal
from typing import Any


def canonical(value: Any) -> Any:
    """A hashable, order-independent form of a collected Spark value."""
    if hasattr(value, "asDict"):
        return tuple(sorted((k, canonical(v)) for k, v in value.asDict(recursive=False).items()))
    if isinstance(value, dict):
        return ("__map__", tuple(sorted(((canonical(k), canonical(v)) for k, v in value.items()), key=repr)))
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, Decimal):
        return value.normalize()
    return value


def canonical_rows(rows: list[Any]) -> list[Any]:
    return [canonical(r) for r in rows]


def last_commit_actions(path: str) -> list[dict]:
    """The actions of the newest commit file of the Delta table at `path`, as JSON objects."""
    import json
    import os

    import pydelta

    version = pydelta.load_snapshot(path).version
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        return [json.loads(line) for line in f]


@contextlib.contextmanager
def session_conf(spark: Any, confs: dict[str, str]) -> Iterator[None]:
    """Set session confs for the block only: the SparkSession is shared by the whole run."""
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in confs:
            spark.conf.unset(key)
