"""Spark's reader and writer options: keys are case-insensitive (CaseInsensitiveStringMap), so
every lookup of one in a plain dict goes through here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydelta.errors import DeltaUnsupportedOptionError

#: Refuse no unknown option key (delta-spark ignores them): the session conf that asks for it.
IGNORE_UNKNOWN_CONF = "spark.pydelta.options.ignoreUnknown"


def option_value(options: Mapping[Any, Any], key: str) -> Any:
    """The value of option `key` in `options`, in any case of its name; None when absent."""
    wanted = key.lower()
    return next((v for k, v in options.items() if str(k).lower() == wanted), None)


def reject_unsupported_options(options: Mapping[str, Any], unsupported: Mapping[str, str | None], kind: str,
                               supported: tuple[str, ...] = (), ignore_unknown: bool = False) -> None:
    """Raise DeltaUnsupportedOptionError for the first option pydelta would otherwise silently ignore.

    Keys match case-insensitively (Spark options are case-insensitive). A boolean option
    set to its default (e.g. readChangeFeed=false) asks for nothing pydelta lacks, so it passes.
    Keys that are neither `supported` nor `delta.*` table properties are refused too (a
    typo must not be silently dropped) unless `ignore_unknown` (session conf
    spark.pydelta.options.ignoreUnknown=true) restores delta-spark's leniency.
    """
    by_lower = {k.lower(): (k, accepted) for k, accepted in unsupported.items()}
    known = {k.lower() for k in supported}
    for key, value in options.items():
        hit = by_lower.get(key.lower())
        if hit is None:
            if supported and not ignore_unknown and key.lower() not in known and not key.lower().startswith("delta."):
                raise DeltaUnsupportedOptionError(
                    f"The {kind} option {key!r} is not an option pydelta implements (it implements "
                    f"{', '.join(supported)}{' and delta.* table properties' if kind == 'write' else ''}); "
                    f"remove it, or set {IGNORE_UNKNOWN_CONF}=true to ignore unknown options.",
                    option=key,
                )
            continue
        name, accepted = hit
        if accepted is not None and str(value).strip().lower() == accepted:
            continue
        raise DeltaUnsupportedOptionError(
            f"The Delta {kind} option {name}={value!r} is not supported by pydelta yet; remove it "
            f"(pydelta refuses it rather than silently ignoring it).",
            option=name,
        )
