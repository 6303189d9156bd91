"""Spark's reader and writer options: keys are case-insensitive (CaseInsensitiveStringMap), so
every lookup of one in a plain dict goes through here."""

from __future__ import annotations

from typing import Any, Mapping


def option_value(options: Mapping[Any, Any], key: str) -> Any:
    """The value of option `key` in `options`, in any case of its name; None when absent."""
    wanted = key.lower()
    return next((v for k, v in options.items() if str(k).lower() == wanted), None)
