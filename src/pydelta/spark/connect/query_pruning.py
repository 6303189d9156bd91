"""Which Delta relations of a SQL query over Spark Connect may skip files, and by what.

A classic session prunes a scan inside Spark's optimized plan; a Connect client only has the
query's text. The query is read as query blocks: each SELECT, at any depth (the query itself,
each side of a UNION / INTERSECT / EXCEPT, a CTE, a subquery in FROM or in an expression), up to
the end of its parentheses or the next set operator. In a block this reads the FROM clause's
joins and the top-level WHERE conjuncts. A relation of the block may skip files by those
conjuncts when no join makes it null-supplying (the right of a LEFT JOIN, the left of a RIGHT
JOIN, both of a FULL JOIN) or hides it (the right of a SEMI/ANTI join): every row its skipped
files hold is one the block's WHERE clause rejects, whatever encloses the block. A conjunct
holding a query of its own is left out. The WHERE clauses stay in the query; pruning only leaves
out files. A block of any other shape (a parenthesized join in its FROM, LATERAL, PIVOT,
TABLESAMPLE, VALUES, a column alias list) prunes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydelta.spark.base.tokens import Token, dotted_name_end

# Words that end a WHERE clause at the top level of the block.
_AFTER_WHERE = {"GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "WINDOW", "QUALIFY", "CLUSTER", "DISTRIBUTE",
                "SORT"}
# Constructs in a block this reader does not follow: the block prunes nothing.
_UNFOLLOWED = {"LATERAL", "PIVOT", "UNPIVOT", "TABLESAMPLE", "VALUES"}
# Words that end a query block at its own depth.
_SET_OPERATORS = {"UNION", "INTERSECT", "EXCEPT", "MINUS"}
_JOIN_WORDS = {"JOIN", "INNER", "CROSS", "LEFT", "RIGHT", "FULL", "OUTER", "SEMI", "ANTI", "NATURAL"}
_NOT_ALIASES = (_JOIN_WORDS | _AFTER_WHERE | _UNFOLLOWED | _SET_OPERATORS
                | {"ON", "USING", "WHERE", "FOR", "VERSION", "TIMESTAMP"})


@dataclass(frozen=True)
class Prunable:
    """A relation that may skip files: its qualifier in the query and the WHERE conjuncts."""

    qualifier: str | None  # its alias, else its table name's last part (None for a path)
    conjuncts: tuple[str, ...]
    alone: bool  # the only relation: a dotted name may be a struct field, not another relation's


def prunable_relations(text: str, tokens: list[Token], relations: list[tuple[int, int]]) -> dict[int, Prunable]:
    """For each (first token, last token) of a Delta relation that may skip files: keyed by
    its first token, its qualifier and its query block's WHERE conjuncts (SQL text)."""
    depths = _depths(tokens)
    out: dict[int, Prunable] = {}
    for start, end in _blocks(tokens, depths):
        depth = depths[start]
        own = [(first, last) for first, last in relations if start <= first < end and depths[first] == depth]
        if own:
            out.update(_block_prunable(text, tokens, depths, start, end, own))
    return out


def _blocks(tokens: list[Token], depths: list[int]) -> list[tuple[int, int]]:
    """(first token, end) of every query block: a SELECT up to the end of its parentheses or the
    next set operator at its depth."""
    blocks = []
    for i, t in enumerate(tokens):
        if t.kind != "word" or t.upper != "SELECT":
            continue
        end = next((j for j in range(i + 1, len(tokens)) if depths[j] < depths[i] or (
            depths[j] == depths[i] and tokens[j].kind == "word" and tokens[j].upper in _SET_OPERATORS)), len(tokens))
        blocks.append((i, end))
    return blocks


def _block_prunable(text: str, tokens: list[Token], depths: list[int], start: int, end: int,
                    relations: list[tuple[int, int]]) -> dict[int, Prunable]:
    """`prunable_relations` for the relations of the block tokens[start:end]."""
    depth = depths[start]
    top = [i for i in range(start, end) if depths[i] == depth and tokens[i].kind == "word"]
    if any(tokens[i].upper in _UNFOLLOWED for i in top):
        return {}
    from_at = next((i for i in top if tokens[i].upper == "FROM"), None)
    where_at = next((i for i in top if tokens[i].upper == "WHERE"), None)
    if from_at is None or where_at is None or where_at < from_at:
        return {}
    where_end = next((i for i in top if i > where_at and tokens[i].upper in _AFTER_WHERE), end)
    conjuncts = _conjuncts(text, tokens, depths, where_at + 1, where_end)
    joined = _joined(tokens, depths, from_at, where_at)
    if joined is None or not conjuncts:
        return {}
    firsts = [first for first, _ in joined]
    kinds = [kind for _, kind in joined]
    # A nested block may name the relations around it: a dotted name there is never taken for
    # a struct field of its only relation.
    alone = len(joined) == 1 and depth == 0
    out = {}
    for first, last in relations:
        if first not in firsts:
            return {}  # not a relation of the FROM clause's joins: not a plain query block
        position = firsts.index(first)
        if kinds[position] in ("LEFT", "FULL", "SEMI", "ANTI") or any(
                k in ("RIGHT", "FULL") for k in kinds[position + 1:]):
            continue  # null-supplying or hidden: its skipped rows could change the result
        qualifier = _alias(tokens, last + 1)
        if qualifier is False:
            return {}  # a column alias list renames the relation's columns
        if qualifier is None and tokens[first].upper != "DELTA":
            qualifier = _last_name_part(tokens, first)
        out[first] = Prunable(qualifier if isinstance(qualifier, str) else None, conjuncts, alone)
    return out


def _last_name_part(tokens: list[Token], first: int) -> str:
    """`t` of a relation named `db.t` starting at token `first`."""
    return tokens[dotted_name_end(tokens, first)].value()


def _depths(tokens: list[Token]) -> list[int]:
    """Each token's nesting depth in parentheses and CASE ... END."""
    out, depth = [], 0
    for t in tokens:
        closes = (t.kind == "punct" and t.text == ")") or (t.kind == "word" and t.upper == "END")
        depth -= closes
        out.append(depth)
        depth += (t.kind == "punct" and t.text == "(") or (t.kind == "word" and t.upper == "CASE")
    return out


def _conjuncts(text: str, tokens: list[Token], depths: list[int], start: int, end: int) -> tuple[str, ...]:
    """The top-level AND-ed parts of tokens[start:end] as SQL text (BETWEEN's AND kept), but
    those holding a query of their own (IN (SELECT ...), EXISTS, a scalar subquery)."""
    parts, first, between = [], start, False
    depth = depths[start - 1]  # the WHERE keyword's
    for i in range(start, end):
        t = tokens[i]
        if depths[i] != depth or t.kind != "word":
            continue
        if t.upper == "BETWEEN":
            between = True
        elif t.upper == "AND":
            if between:
                between = False
            else:
                parts.append((first, i))
                first = i + 1
    parts.append((first, end))
    return tuple(text[tokens[a].start:tokens[b - 1].end] for a, b in parts
                 if a < b and not any(t.kind == "word" and t.upper == "SELECT" for t in tokens[a:b]))


def _joined(tokens: list[Token], depths: list[int], from_at: int, where_at: int) -> list[tuple[int, str]] | None:
    """(first token, join kind) of every relation of the FROM clause, in order (a derived table
    `(SELECT ...)` is one); the kinds are FIRST, INNER, LEFT, RIGHT, FULL, SEMI, ANTI. None when
    the clause holds something this reader does not follow (a parenthesized join, an unknown join)."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    expect_relation = True
    for i in range(from_at + 1, where_at):
        t = tokens[i]
        if depths[i] != depths[from_at]:
            continue
        if expect_relation:
            kind = _kind(pending) if out else "FIRST"
            derived = t.text == "(" and i + 1 < len(tokens) and tokens[i + 1].upper in ("SELECT", "WITH")
            if (t.kind == "punct" and not derived) or kind is None:
                return None
            out.append((i, kind))
            pending, expect_relation = [], False
        elif t.kind == "punct" and t.text == ",":
            pending, expect_relation = ["CROSS"], True
        elif t.kind == "word" and t.upper in _JOIN_WORDS:
            pending.append(t.upper)
            expect_relation = t.upper == "JOIN"
    return out


def _kind(words: list[str]) -> str | None:
    """A join's kind from the words before JOIN: INNER (also plain/CROSS/NATURAL), LEFT, RIGHT,
    FULL, SEMI, ANTI; None for a combination this reader does not know."""
    core = [w for w in words if w not in ("NATURAL", "OUTER", "JOIN")]
    if not core or core in (["INNER"], ["CROSS"]):
        return "INNER"
    if core in (["LEFT", "SEMI"], ["SEMI"]):
        return "SEMI"
    if core in (["LEFT", "ANTI"], ["ANTI"]):
        return "ANTI"
    if core in (["LEFT"], ["RIGHT"], ["FULL"]):
        return core[0]
    return None


def _alias(tokens: list[Token], i: int) -> str | bool | None:
    """The alias after a relation ending before token i: its name, None when there is none,
    False when a column alias list follows (the relation's columns are renamed)."""
    if i < len(tokens) and tokens[i].kind == "word" and tokens[i].upper == "AS":
        i += 1
    if i >= len(tokens) or tokens[i].kind not in ("word", "quoted") or (
            tokens[i].kind == "word" and tokens[i].upper in _NOT_ALIASES):
        return None
    if i + 1 < len(tokens) and tokens[i + 1].kind == "punct" and tokens[i + 1].text == "(":
        return False
    return tokens[i].value()
