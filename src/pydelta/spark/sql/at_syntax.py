"""delta-spark's `t@v5` / `t@yyyyMMddHHmmssSSS` time travel for parsers that lack it.

Spark 4.2+ parses `table@v5` itself. The parsers of Spark 4.0 and 4.1 refuse the `@`, while
delta-spark's own parser accepts it there, so pydelta rewrites the suffix into the standard
clause (`VERSION AS OF 5`, `TIMESTAMP AS OF '...'`) and parses again. Only `@` that directly follows
a name (outside strings, comments and quoted names) is touched.
"""

from __future__ import annotations

import re

from pydelta.spark.read.time_travel import AT_BODY, stamp_text

_SUFFIX = re.compile(r"@\s*" + AT_BODY + r"(?![\w])")
_NAME_END = re.compile(r"[\w`]")


def rewrite_at_syntax(text: str) -> str | None:
    """`text` with each `name@v<N>` / `name@<17 digits>` made a standard time-travel clause;
    None when the text has none."""
    out: list[str] = []
    i, changed = 0, False
    while i < len(text):
        skip = _quoted_or_comment_end(text, i)
        if skip is not None:
            out.append(text[i:skip])
            i = skip
            continue
        char = text[i]
        if char == "@" and out and _NAME_END.match(out[-1][-1:] or " "):
            match = _SUFFIX.match(text, i)
            if match is not None:
                version, stamp = match.groups()
                out.append(f" VERSION AS OF {version}" if version is not None
                           else f" TIMESTAMP AS OF '{stamp_text(stamp)}'")
                i, changed = match.end(), True
                continue
        out.append(char)
        i += 1
    return "".join(out) if changed else None


def _quoted_or_comment_end(text: str, i: int) -> int | None:
    """Where the string, quoted name or comment starting at `i` ends (None: none starts there)."""
    char = text[i]
    if char in "'\"`":
        j = i + 1
        while j < len(text):
            if text[j] == "\\" and char != "`":
                j += 2
                continue
            if text[j] == char:
                if j + 1 < len(text) and text[j + 1] == char:  # a doubled quote stays inside
                    j += 2
                    continue
                return j + 1
            j += 1
        return len(text)
    if text.startswith("--", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    return None
