"""`spark.sql(...)` with Delta on a Spark Connect session.

A classic session lets pydelta parse every statement with Spark's own parser (through py4j)
and serve each Delta target; a Connect client has no parser of Spark's. What is served here:

1. Delta's own statements (DESCRIBE HISTORY/DETAIL, VACUUM, OPTIMIZE, RESTORE, ...), which
   pydelta parses itself on every session.
2. DML and DDL on Delta tables (INSERT, UPDATE, DELETE, MERGE, TRUNCATE, CREATE/REPLACE TABLE
   ... USING delta, the common ALTER TABLE forms), read by `connect_grammar` with every
   expression kept as SQL text, and run by `connect_statements`.
3. DESCRIBE [EXTENDED] and SHOW TBLPROPERTIES of Delta tables, from the log
   (`connect_describe`).
4. Queries that read Delta tables by path (`delta.`/path``) or by catalog name (after FROM or
   JOIN): each such relation becomes a temporary view of pydelta's scan, and Spark runs the
   rewritten query. In each query block the scans skip files by that block's WHERE clause
   (`connect_query_pruning` says which relations may).

Any other statement on a Delta table raises DeltaNotImplementedError naming Spark Connect
before anything runs. Statements that touch no Delta table reach Spark unchanged.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from pydelta.errors import DeltaNotImplementedError, DeltaParseError
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.jplan import NOT_DELTA
from pydelta.spark.base.tokens import Token, dotted_name_end, tokenize
from pydelta.spark.connect.describe import run_catalog_statement
from pydelta.spark.connect.grammar import parse_statement
from pydelta.spark.sql.statements import parse_utility, run_utility

_QUERY_OPENINGS = {"SELECT", "WITH", "FROM", "VALUES", "TABLE", "(", "EXPLAIN", "SHOW", "CACHE"}


def _words(tokens: list[Token], i: int, *words: str) -> bool:
    return all(i + k < len(tokens) and tokens[i + k].kind == "word" and tokens[i + k].upper == w
               for k, w in enumerate(words))


def _time_travel(tokens: list[Token], i: int) -> tuple[int, dict[str, str]]:
    """A `[FOR SYSTEM_VERSION|SYSTEM_TIME] VERSION|TIMESTAMP AS OF <literal>` clause at token i:
    (the index after it, the read options it means); (i, {}) when there is none."""
    j = i + 2 if _words(tokens, i, "FOR", "SYSTEM_VERSION") or _words(tokens, i, "FOR", "SYSTEM_TIME") else i
    if i != j:
        kind = "VERSION" if tokens[i + 1].upper == "SYSTEM_VERSION" else "TIMESTAMP"
        if not _words(tokens, j, "AS", "OF"):
            return i, {}
        j += 2
    elif _words(tokens, i, "VERSION", "AS", "OF") or _words(tokens, i, "TIMESTAMP", "AS", "OF"):
        kind = tokens[i].upper
        j = i + 3
    else:
        return i, {}
    follows = tokens[j + 1] if j + 1 < len(tokens) else None
    if j >= len(tokens) or tokens[j].kind not in ("number", "string") or (
            follows is not None and follows.kind == "punct" and follows.text in ("+", "-", "*", "/", "%", "||")):
        raise DeltaNotImplementedError(
            "time travel to an expression through spark.sql over Spark Connect is not supported by pydelta yet: "
            "give a version number or a timestamp string, or use the reader's versionAsOf / timestampAsOf")
    key = "versionAsOf" if kind == "VERSION" else "timestampAsOf"
    return j + 1, {key: tokens[j].value()}


def _delta_paths(tokens: list[Token]) -> list[tuple[int, int, str, dict[str, str]]]:
    """(first token, last token, path, read options) of every `delta.`path`` in the statement,
    with the time travel clause that follows it."""
    out = []
    for i in range(len(tokens) - 2):
        a, dot, quoted = tokens[i], tokens[i + 1], tokens[i + 2]
        if a.kind == "word" and a.upper == "DELTA" and dot.text == "." and quoted.kind == "quoted" \
                and (i == 0 or tokens[i - 1].text != "."):
            after, options = _time_travel(tokens, i + 3)
            out.append((i, after - 1, quoted.value(), options))
    return out


def _name_at(tokens: list[Token], i: int) -> tuple[int, str] | None:
    """A (possibly dotted) table name starting at token i: (its last token, its text)."""
    if i >= len(tokens) or tokens[i].kind not in ("word", "quoted"):
        return None
    j = dotted_name_end(tokens, i)
    if j + 1 < len(tokens) and tokens[j + 1].text == "(":
        return None  # a function (table-valued) call
    return j, "".join(t.text for t in tokens[i:j + 1])


_AFTER_TARGET = {"INSERT": ("INTO", "OVERWRITE", "TABLE"), "UPDATE": (), "DELETE": ("FROM",), "MERGE": ("INTO",),
                 "ALTER": ("TABLE",), "TRUNCATE": ("TABLE",), "COMMENT": ("ON", "TABLE")}


def _statement_target(tokens: list[Token]) -> str | None:
    """The table an INSERT/UPDATE/DELETE/MERGE/ALTER/TRUNCATE statement writes to."""
    opening = tokens[0].upper if tokens and tokens[0].kind == "word" else None
    if opening not in _AFTER_TARGET:
        return None
    i = 1
    while i < len(tokens) and tokens[i].kind == "word" and tokens[i].upper in _AFTER_TARGET[opening]:
        i += 1
    found = _name_at(tokens, i)
    return found[1] if found else None


def _cte_names(tokens: list[Token]) -> set[str]:
    """Names a WITH clause defines (`name AS (`), which shadow tables of the same name."""
    return {tokens[i].value().lower() for i in range(len(tokens) - 2)
            if tokens[i].kind in ("word", "quoted") and tokens[i + 1].upper == "AS" and tokens[i + 2].text == "("}


def _named_relations(spark: SparkSession, tokens: list[Token]) -> list[tuple[int, int, str, dict[str, str]]]:
    """(first token, last token, location, read options) of every Delta table a query reads by
    name (after FROM or JOIN), looked up in the catalog."""
    from pydelta.spark.base.catalog import delta_table_location

    ctes, out = _cte_names(tokens), []
    for i, tok in enumerate(tokens):
        if tok.kind != "word" or tok.upper not in ("FROM", "JOIN"):
            continue
        found = _name_at(tokens, i + 1)
        if found is None or (found[0] == i + 1 and tokens[i + 1].value().lower() in ctes):
            continue
        if tokens[i + 1].upper == "DELTA" and found[0] == i + 3 and tokens[i + 3].kind == "quoted":
            continue  # delta.`path`: _delta_paths has it
        location = delta_table_location(spark, found[1])
        if location is not None:
            after, options = _time_travel(tokens, found[0] + 1)
            out.append((i + 1, after - 1, location, options))
    return out


def _creates_delta_table(tokens: list[Token]) -> bool:
    return bool(tokens) and tokens[0].upper in ("CREATE", "REPLACE") and any(
        tokens[i].upper == "USING" and tokens[i + 1].upper == "DELTA" for i in range(len(tokens) - 1))


def _refuse(what: str, unreadable: DeltaParseError | None = None) -> DeltaNotImplementedError:
    why = f" ({unreadable})" if unreadable is not None else ""
    return DeltaNotImplementedError(
        f"{what} through spark.sql over Spark Connect is not supported by pydelta yet{why}: use the DataFrame "
        "writer (df.write.format('delta'), saveAsTable) or DeltaTable (create, delete, update, merge, "
        "optimize...) on this session, or a classic SparkSession for Delta SQL statements")


def run_connect_sql(spark: SparkSession, text: str, original: Callable[[str], Any]) -> Any:
    """Run `text` on a Connect session as spark.sql does, with Delta tables served by pydelta."""
    from pydelta.spark.base.catalog import delta_table_location

    utility = parse_utility(text)
    if utility is not None:
        return run_utility(spark, utility)
    tokens = tokenize(text)
    if not tokens:
        return original(text)
    described = run_catalog_statement(spark, tokens)
    if described is not NOT_DELTA:
        return described
    opening = tokens[0].upper if tokens[0].kind == "word" else tokens[0].text
    try:
        statement, unreadable = parse_statement(text), None
    except DeltaParseError as error:
        statement, unreadable = None, error
    if statement is not None:
        from pydelta.spark.connect.statements import run_statement

        result = run_statement(spark, statement, lambda query: run_connect_sql(spark, query, original))
        if result is not NOT_DELTA:
            return result
        return original(text)
    if _creates_delta_table(tokens):
        raise _refuse(f"{opening} TABLE ... USING delta in this form", unreadable)
    paths = _delta_paths(tokens)
    target = _statement_target(tokens)
    if opening not in _QUERY_OPENINGS and (paths or (target and delta_table_location(spark, target))):
        raise _refuse(f"this {opening} statement on a Delta table", unreadable)
    relations = sorted(paths + (_named_relations(spark, tokens) if opening in _QUERY_OPENINGS else []))
    if not relations:
        return original(text)
    from pydelta.spark.connect.query_pruning import prunable_relations
    from pydelta.spark.read.connect.scan import skip_files
    from pydelta.spark.read.options import read_delta

    prunable = prunable_relations(text, tokens, [(first, end) for first, end, _, _ in relations])
    # A temp view passes no hidden column up, so a statement naming `_metadata` gets it as a column of
    # each view (then also in that statement's `*`, the one difference from a classic session).
    metadata = any(t.kind == "word" and t.text.lower() == "_metadata" for t in tokens)
    # The views stay: a Connect DataFrame is analyzed again whenever it runs.
    pieces, views, last = [], [], 0
    try:
        for first, end, location, options in relations:
            view = f"_pydelta_{uuid.uuid4().hex[:12]}"
            scan = read_delta(spark, location, options)
            if first in prunable:  # the WHERE clause's conjuncts rule files out
                scan = skip_files(scan, prunable[first].conjuncts, prunable[first].qualifier, prunable[first].alone)
            if metadata:
                scan = scan.select("*", "_metadata")
            scan.createOrReplaceTempView(view)
            views.append(view)
            pieces.append(text[last:tokens[first].start])
            pieces.append(f"`{view}`")
            last = tokens[end].end
        pieces.append(text[last:])
        return original("".join(pieces))
    except Exception:
        for view in views:
            spark.catalog.dropTempView(view)
        raise
