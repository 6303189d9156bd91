"""Column names in Spark SQL: quoting a name part or a nested path, and splitting one back."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydelta.errors import DeltaIllegalArgumentError

__all__ = ["quote_identifier", "quote_if_needed", "quote_path", "split_identifier"]

_PLAIN_PART = re.compile(r"[a-zA-Z0-9_]+")


def quote_if_needed(part: str) -> str:
    """Spark's QuotingUtils.quoteIfNeeded, as Spark prints names: `a b` in backticks (inner
    backticks doubled), names of letters, digits and underscores (not all digits) as they are."""
    if _PLAIN_PART.fullmatch(part) and not part.isdigit():
        return part
    return quote_identifier(part)


def quote_identifier(name: str) -> str:
    """`name` as one quoted Spark SQL name part: in backticks, inner backticks doubled.

    Spark parses a name given to `F.col`, `select`, `F.expr` or SQL text as a
    (possibly dotted) multi-part name, so a column literally named ``a.b`` or
    ``id.num`s`` must always be handed over quoted (``id.num`s`` becomes ```id.num``s```).
    """
    return "`" + name.replace("`", "``") + "`"


def quote_path(parts: Sequence[str]) -> str:
    """A nested field path (raw name parts) as one Spark SQL reference, each part quoted."""
    return ".".join(quote_identifier(p) for p in parts)


def split_identifier(name: str) -> list[str]:
    """The raw name parts of a Spark SQL multi-part name: ``a.b`` -> [a, b], ```a.b`.c`` -> [a.b, c].

    The inverse of `quote_path`, with Spark's rules (UnresolvedAttribute.parseAttributeName):
    dots outside backticks separate parts, a doubled backtick inside them is one backtick.
    """
    parts: list[str] = []
    cur: list[str] = []
    i, quoted = 0, False
    while i < len(name):
        c = name[i]
        if quoted:
            if c == "`":
                if i + 1 < len(name) and name[i + 1] == "`":
                    cur.append("`")
                    i += 1
                else:
                    quoted = False
            else:
                cur.append(c)
        elif c == "`":
            quoted = True
        elif c == ".":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    if quoted:
        raise DeltaIllegalArgumentError(f"unbalanced backquote in column name {name!r}")
    parts.append("".join(cur))
    return parts
