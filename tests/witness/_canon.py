"""JSON-able, order-insensitive forms of Spark rows and schemas, shared by the witness
server (delta-spark's venv) and the tests (pydelta's venv): plain Python, no imports
beyond the standard library, so both processes canonicalise values the same way."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json


def value(v):
    """A JSON-able form of one value collected from a Spark DataFrame."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return repr(v)  # NaN/inf-safe, exact
    if isinstance(v, decimal.Decimal):
        return f"dec:{v}"
    if isinstance(v, dt.datetime):
        return f"ts:{v.isoformat()}"
    if isinstance(v, dt.date):
        return f"date:{v.isoformat()}"
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "bin:" + base64.b64encode(bytes(v)).decode()
    if hasattr(v, "asDict"):  # a Row (struct)
        return {k: value(x) for k, x in v.asDict(recursive=False).items()}
    if isinstance(v, dict):
        return sorted(([value(k), value(x)] for k, x in v.items()), key=json.dumps)
    if isinstance(v, (list, tuple)):
        return [value(x) for x in v]
    return f"{type(v).__name__}:{v}"


def rows(collected, columns=None):
    """Rows as a list of lists (in `columns` order when given), sorted."""
    out = []
    for r in collected:
        d = r.asDict(recursive=False)
        keys = columns if columns is not None else list(d)
        out.append([value(d[k]) for k in keys])
    return sorted(out, key=lambda x: json.dumps(x, sort_keys=True))


def schema(struct):
    """A schema as [name, type, nullable] per top-level field (field metadata left out)."""
    return [[f.name, f.dataType.simpleString(), bool(f.nullable)] for f in struct.fields]
