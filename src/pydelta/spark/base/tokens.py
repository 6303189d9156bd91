"""A small SQL tokenizer: just enough to recognise Delta's own statements.

Spark's parser does not know DESCRIBE HISTORY, RESTORE, VACUUM, OPTIMIZE and the
other Delta utility statements, so pydelta reads them itself. Tokens keep their
offsets so a free-form tail (an OPTIMIZE ... WHERE condition) is taken verbatim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydelta.errors import DeltaParseError

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|--[^\n]*|/\*.*?\*/)
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[a-zA-Z]*)
  | (?P<word>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<punct><=>|<>|!=|<=|>=|\|\||::|->|[(),.;=<>+\-*/%@:\[\]{}&|^~!?])
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class Token:
    kind: str  # word, quoted, string, number, punct
    text: str
    start: int
    end: int

    @property
    def upper(self) -> str:
        return self.text.upper()

    def value(self) -> str:
        """The token's value: identifiers unquoted, strings unescaped."""
        if self.kind == "quoted":
            return self.text[1:-1].replace("``", "`")
        if self.kind == "string":
            quote = self.text[0]
            body = self.text[1:-1].replace(quote * 2, quote)
            return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)
        return self.text


def dotted_name_end(tokens: list[Token], i: int) -> int:
    """The last token of the dotted name (`a`, `db.t`, `c.db.t`) whose first part is token i."""
    while i + 2 < len(tokens) and tokens[i + 1].text == "." and tokens[i + 2].kind in ("word", "quoted"):
        i += 2
    return i


def tokenize(text: str) -> list[Token]:
    """Split `text` into tokens (comments and white space dropped)."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise DeltaParseError(f"cannot parse SQL near {text[pos:pos + 20]!r} (position {pos})")
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append(Token(kind, match.group(), match.start(), match.end()))
        pos = match.end()
    while tokens and tokens[-1].text == ";":
        tokens.pop()
    return tokens


class TokenStream:
    """Cursor over tokens with the look-ahead helpers a recursive-descent parser needs."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.pos = 0

    def peek(self, offset: int = 0) -> Token | None:
        i = self.pos + offset
        return self.tokens[i] if i < len(self.tokens) else None

    def at_end(self) -> bool:
        return self.pos >= len(self.tokens)

    def at(self, *words: str) -> bool:
        """True when the next tokens are these keywords (case-insensitive)."""
        for i, word in enumerate(words):
            tok = self.peek(i)
            if tok is None or tok.kind != "word" or tok.upper != word.upper():
                return False
        return True

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.pos += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"expected {' '.join(words)}")

    def accept_punct(self, text: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.kind == "punct" and tok.text == text:
            self.pos += 1
            return True
        return False

    def expect_punct(self, text: str) -> None:
        if not self.accept_punct(text):
            raise self.error(f"expected {text!r}")

    def next(self) -> Token:
        tok = self.peek()
        if tok is None:
            raise self.error("unexpected end of statement")
        self.pos += 1
        return tok

    def integer(self) -> int:
        tok = self.next()
        try:
            return int(tok.text)
        except ValueError:
            raise self.error(f"expected an integer, got {tok.text!r}", tok) from None

    def number(self) -> float:
        tok = self.next()
        try:
            return float(tok.text.rstrip("dDlLfF") if tok.kind == "number" else tok.text)
        except ValueError:
            raise self.error(f"expected a number, got {tok.text!r}", tok) from None

    def string(self) -> str:
        tok = self.next()
        if tok.kind != "string":
            raise self.error(f"expected a string literal, got {tok.text!r}", tok)
        return tok.value()

    def identifier(self) -> str:
        tok = self.next()
        if tok.kind not in ("word", "quoted"):
            raise self.error(f"expected a name, got {tok.text!r}", tok)
        return tok.value()

    def rest(self) -> str:
        """The remaining statement text, verbatim."""
        tok = self.peek()
        if tok is None:
            return ""
        last = self.tokens[-1]
        self.pos = len(self.tokens)
        return self.text[tok.start:last.end]

    def text_until(self, *stop_words: tuple[str, ...]) -> str:
        """Verbatim text up to (not including) the first of the keyword sequences given."""
        start = self.peek()
        if start is None:
            return ""
        depth = 0
        end = start.start
        while not self.at_end():
            tok = self.peek()
            assert tok is not None
            if depth == 0 and any(self.at(*words) for words in stop_words):
                break
            if tok.kind == "punct" and tok.text == "(":
                depth += 1
            elif tok.kind == "punct" and tok.text == ")":
                depth -= 1
            end = tok.end
            self.pos += 1
        return self.text[start.start:end]

    def error(self, message: str, tok: Token | None = None) -> DeltaParseError:
        tok = tok or self.peek()
        where = f" at position {tok.start} ({tok.text!r})" if tok else " at the end of the statement"
        return DeltaParseError(f"{message}{where} in: {self.text.strip()}")
