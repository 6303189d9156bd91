"""What the reader and writer hooks record on PySpark's objects: the chosen format and options
(PySpark keeps them only in the JVM), and whether that format is Delta."""

from __future__ import annotations

from typing import Any

_STATE = "_pydelta_state"


def _state(obj: Any) -> dict[str, Any]:
    st: dict[str, Any] | None = obj.__dict__.get(_STATE)
    if st is None:
        st = {"format": None, "options": {}, "mode": None, "partition_by": None, "cluster_by": None}
        obj.__dict__[_STATE] = st
    return st


def _is_delta(fmt: str | None) -> bool:
    return fmt is not None and fmt.lower() == "delta"


def _record_format(original: Any) -> Any:
    def format(self: Any, source: str) -> Any:  # noqa: A001
        _state(self)["format"] = source
        if _is_delta(source):
            return self
        return original(self, source)

    return format


def _record_option(original: Any) -> Any:
    def option(self: Any, key: str, value: Any) -> Any:
        _state(self)["options"][key] = value
        return original(self, key, value)

    return option


def _record_options(original: Any) -> Any:
    def options(self: Any, **opts: Any) -> Any:
        _state(self)["options"].update(opts)
        return original(self, **opts)

    return options
