"""The `_last_checkpoint` hint and its JSON checksum (PROTOCOL.md, "JSON checksum").

The hint is only ever trusted after validation; any problem makes the caller
fall back to listing the log.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

_UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


def _url_encode(text: str) -> str:
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in text.encode("utf-8"))


def _literal(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return '"' + _url_encode(value) + '"'
    return json.dumps(value)


def _pairs(value: Any, path: list[str], out: list[tuple[bytes, str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _pairs(v, [*path, '"' + _url_encode(k) + '"'], out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _pairs(v, [*path, str(i)], out)
    else:
        key = "+".join(path)
        out.append((key.encode("utf-8"), key + "=" + _literal(value)))


class _DuplicateKeyError(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKeyError(k)
        out[k] = v
    return out


def canonicalize(obj: dict[str, Any]) -> str:
    """Canonical form of a JSON object, ignoring the top-level `checksum` key."""
    pairs: list[tuple[bytes, str]] = []
    for k, v in obj.items():
        if k == "checksum":
            continue
        _pairs(v, ['"' + _url_encode(k) + '"'], pairs)
    pairs.sort(key=lambda p: p[0])
    return ",".join(p[1] for p in pairs)


def checksum(obj: dict[str, Any]) -> str:
    return hashlib.md5(canonicalize(obj).encode("utf-8")).hexdigest()


def loads_json_checked(text: str) -> dict[str, Any]:
    """Parse JSON, rejecting duplicate keys as the protocol requires."""
    parsed: dict[str, Any] = json.loads(text, object_pairs_hook=_no_duplicates)
    return parsed


@dataclass(frozen=True)
class LastCheckpoint:
    version: int
    size: int | None
    parts: int | None
    raw: dict[str, Any]

    def to_json(self) -> str:
        body = {k: v for k, v in self.raw.items() if k != "checksum"}
        body["checksum"] = checksum(body)
        return json.dumps(body, separators=(",", ":"))


def parse_last_checkpoint(data: bytes) -> LastCheckpoint | None:
    """The hint, or None when it is empty, unparsable, or fails its checksum."""
    try:
        text = data.decode("utf-8").strip()
        if not text:
            return None
        obj = loads_json_checked(text)
        if not isinstance(obj, dict) or not isinstance(obj.get("version"), int):
            return None
        expected = obj.get("checksum")
        if expected is not None and checksum(obj) != expected:
            return None
        parts = obj.get("parts")
        return LastCheckpoint(obj["version"], obj.get("size"), parts if isinstance(parts, int) else None, obj)
    except (ValueError, UnicodeDecodeError):
        return None


def make_last_checkpoint(version: int, size: int, parts: int | None = None, **extra: Any) -> LastCheckpoint:
    raw: dict[str, Any] = {"version": version, "size": size}
    if parts is not None:
        raw["parts"] = parts
    raw.update({k: v for k, v in extra.items() if v is not None})
    return LastCheckpoint(version, size, parts, raw)
