"""Parsing Delta's own SQL statements, which Spark's parser does not know.

DESCRIBE HISTORY/DETAIL, RESTORE, VACUUM, OPTIMIZE, CONVERT TO DELTA, GENERATE,
REORG, ALTER TABLE ... DROP FEATURE [TRUNCATE HISTORY], ALTER TABLE ... CLUSTER BY,
ALTER TABLE ... ALTER COLUMN c SYNC IDENTITY and [CREATE [OR REPLACE] | REPLACE] TABLE ...
SHALLOW CLONE: one dataclass and one parser each. spark/sql/statements.py lists them with
their runners; any other statement goes to Spark's parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydelta.spark.base.tokens import TokenStream


@dataclass(frozen=True)
class TableRef:
    """A table as a statement names it: catalog name parts, or a path."""

    parts: tuple[str, ...] = ()
    path: str | None = None  # delta.`/path` or a '/path' string literal

    def display(self) -> str:
        if self.path is not None:
            return f"delta.`{self.path}`"
        return ".".join(f"`{p}`" if not p.replace("_", "").isalnum() else p for p in self.parts)


@dataclass(frozen=True)
class DescribeHistory:
    table: TableRef
    limit: int | None = None


@dataclass(frozen=True)
class DescribeDetail:
    table: TableRef


@dataclass(frozen=True)
class Restore:
    table: TableRef
    version: int | None = None
    timestamp: str | None = None


@dataclass(frozen=True)
class Vacuum:
    table: TableRef
    retain_hours: float | None = None
    dry_run: bool = False
    lite: bool = False  # VACUUM ... LITE: only files the log names (delta-spark 3.3+)


@dataclass(frozen=True)
class Optimize:
    table: TableRef
    where: str | None = None
    zorder_by: tuple[str, ...] = ()
    full: bool = False  # OPTIMIZE t FULL: recluster every file of a clustered table


@dataclass(frozen=True)
class ConvertToDelta:
    table: TableRef  # parquet.`/path` arrives as path, a catalog name as parts
    source_format: str | None = None
    partition_schema: str | None = None
    no_statistics: bool = False


@dataclass(frozen=True)
class Generate:
    mode: str
    table: TableRef


@dataclass(frozen=True)
class Reorg:
    """REORG TABLE t [WHERE partition predicate] APPLY (PURGE)."""

    table: TableRef
    where: str | None = None


@dataclass(frozen=True)
class ClusterBy:
    """ALTER TABLE t CLUSTER BY (a, b) | NONE."""

    table: TableRef
    columns: tuple[str, ...]


@dataclass(frozen=True)
class DropFeature:
    """ALTER TABLE t DROP FEATURE name [TRUNCATE HISTORY]."""

    table: TableRef
    feature: str
    truncate_history: bool = False


@dataclass(frozen=True)
class SyncIdentity:
    """ALTER TABLE t ALTER|CHANGE [COLUMN] c SYNC IDENTITY."""

    table: TableRef
    column: str


@dataclass(frozen=True)
class AddCheckConstraint:
    """ALTER TABLE t ADD CONSTRAINT name CHECK (condition): parsed here because Spark 4.0's parser
    does not know it (4.1+ does; pydelta parses it on every version alike)."""

    table: TableRef
    name: str | None  # None: `ADD CHECK (...)` without a name, which Delta refuses
    condition: str


@dataclass(frozen=True)
class AddOtherConstraint:
    """ALTER TABLE t ADD [CONSTRAINT name] PRIMARY KEY | FOREIGN KEY | UNIQUE ...: refused (Delta
    has only CHECK constraints), with the same error on Spark 4.0, whose parser lacks the forms."""

    table: TableRef
    kind: str


@dataclass(frozen=True)
class DropConstraint:
    """ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name (as AddCheckConstraint)."""

    table: TableRef
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class Clone:
    """[CREATE [OR REPLACE] | REPLACE] TABLE [IF NOT EXISTS] t SHALLOW|DEEP CLONE s
    [VERSION|TIMESTAMP AS OF x] [TBLPROPERTIES (...)] [LOCATION 'path'] (delta-spark's #clone)."""

    target: TableRef
    source: TableRef
    shallow: bool = True
    create: bool = True  # CREATE: a missing target is created
    replace: bool = False  # REPLACE: an existing target is replaced
    if_not_exists: bool = False
    version: int | None = None
    timestamp: str | None = None
    properties: tuple[tuple[str, str], ...] = ()
    location: str | None = None
    from_parquet: bool = False  # parquet.`/path`: a Parquet directory, not a Delta table


@dataclass(frozen=True)
class Unsupported:
    """A Delta statement pydelta recognises but does not implement yet."""

    statement: str
    table: TableRef | None = None
    details: dict[str, Any] = field(default_factory=dict)


def _table(ts: TokenStream, path_prefixes: tuple[str, ...] = ("delta",)) -> TableRef:
    tok = ts.peek()
    if tok is not None and tok.kind == "string":
        return TableRef(path=ts.string())
    parts = [ts.identifier()]
    while ts.accept_punct("."):
        parts.append(ts.identifier())
    if len(parts) == 2 and parts[0].lower() in path_prefixes and _looks_like_path(parts[1]):
        return TableRef(path=parts[1])
    return TableRef(parts=tuple(parts))


def _looks_like_path(text: str) -> bool:
    return text.startswith("/") or "://" in text or text.startswith("file:")


def _column_list(ts: TokenStream) -> tuple[str, ...]:
    ts.expect_punct("(")
    names = [_dotted(ts)]
    while ts.accept_punct(","):
        names.append(_dotted(ts))
    ts.expect_punct(")")
    return tuple(names)


def _dotted(ts: TokenStream) -> str:
    parts = [ts.identifier()]
    while ts.accept_punct("."):
        parts.append(ts.identifier())
    return ".".join(parts)


# ---- one parser per statement: each reads a fresh token stream from the statement's start
# and returns None when the text is not its statement (spark/sql/statements.py lists them).

def parse_describe_history(ts: TokenStream) -> DescribeHistory | None:
    """DESC[RIBE] HISTORY table [LIMIT n]."""
    if not ((ts.accept("DESCRIBE") or ts.accept("DESC")) and ts.accept("HISTORY")):
        return None
    table = _table(ts)
    limit = ts.integer() if ts.accept("LIMIT") else None
    _end(ts)
    return DescribeHistory(table, limit)


def parse_describe_detail(ts: TokenStream) -> DescribeDetail | None:
    """DESC[RIBE] DETAIL table."""
    if not ((ts.accept("DESCRIBE") or ts.accept("DESC")) and ts.accept("DETAIL")):
        return None
    table = _table(ts)
    _end(ts)
    return DescribeDetail(table)


def parse_restore(ts: TokenStream) -> Restore | None:
    """RESTORE [TABLE] table [TO] VERSION AS OF n | TIMESTAMP AS OF 'ts'."""
    if not ts.accept("RESTORE"):
        return None
    ts.accept("TABLE")
    table = _table(ts)
    ts.accept("TO")
    if ts.accept("VERSION", "AS", "OF"):
        version = ts.integer()
        _end(ts)
        return Restore(table, version=version)
    ts.expect("TIMESTAMP", "AS", "OF")
    timestamp = ts.string()
    _end(ts)
    return Restore(table, timestamp=timestamp)


def parse_vacuum(ts: TokenStream) -> Vacuum | None:
    """VACUUM table [LITE | FULL] [RETAIN n HOURS] [DRY RUN]."""
    if not ts.accept("VACUUM"):
        return None
    table = _table(ts)
    lite = ts.accept("LITE")
    if not lite:
        ts.accept("FULL")
    hours = None
    if ts.accept("RETAIN"):
        hours = ts.number()
        ts.expect("HOURS")
    dry = ts.accept("DRY", "RUN")
    _end(ts)
    return Vacuum(table, hours, dry, lite)


def parse_optimize(ts: TokenStream) -> Optimize | None:
    """OPTIMIZE table [FULL] [WHERE predicate] [ZORDER BY (columns)]."""
    if not ts.accept("OPTIMIZE"):
        return None
    table = _table(ts)
    full = ts.accept("FULL")
    where = ts.text_until(("ZORDER", "BY")) if ts.accept("WHERE") else None
    zorder = _column_list(ts) if ts.accept("ZORDER", "BY") else ()
    _end(ts)
    return Optimize(table, where, zorder, full)


def parse_convert(ts: TokenStream) -> ConvertToDelta | None:
    """CONVERT TO DELTA parquet.`/path` | table [NO STATISTICS] [PARTITIONED BY (schema)]."""
    if not ts.accept("CONVERT", "TO", "DELTA"):
        return None
    parts = [ts.identifier()]
    while ts.accept_punct("."):
        parts.append(ts.identifier())
    if len(parts) == 2 and _looks_like_path(parts[1]):
        table, fmt = TableRef(path=parts[1]), parts[0].lower()
    else:
        table, fmt = TableRef(parts=tuple(parts)), None
    no_stats = ts.accept("NO", "STATISTICS")
    partition_schema = None
    if ts.accept("PARTITIONED", "BY"):
        ts.expect_punct("(")
        partition_schema = ts.text_until()
        if partition_schema.endswith(")"):
            partition_schema = partition_schema[:-1].strip()
    _end(ts)
    return ConvertToDelta(table, fmt, partition_schema, no_stats)


def parse_generate(ts: TokenStream) -> Generate | None:
    """GENERATE mode FOR TABLE table."""
    if not ts.accept("GENERATE"):
        return None
    mode = ts.identifier()
    ts.expect("FOR", "TABLE")
    table = _table(ts)
    _end(ts)
    return Generate(mode, table)


def parse_reorg(ts: TokenStream) -> Reorg | Unsupported | None:
    """REORG TABLE table [WHERE predicate] APPLY (PURGE); other APPLY forms are recognised, not run."""
    if not ts.accept("REORG", "TABLE"):
        return None
    table = _table(ts)
    where = ts.text_until(("APPLY",)) if ts.accept("WHERE") else None
    ts.expect("APPLY")
    ts.expect_punct("(")
    if not ts.accept("PURGE"):
        return Unsupported("REORG TABLE ... APPLY (UPGRADE UNIFORM ...)", table)
    ts.expect_punct(")")
    _end(ts)
    return Reorg(table, where)


def parse_drop_feature(ts: TokenStream) -> DropFeature | None:
    """ALTER TABLE table DROP FEATURE name [TRUNCATE HISTORY]."""
    if not ts.accept("ALTER", "TABLE"):
        return None
    table = _table(ts)
    if not ts.accept("DROP", "FEATURE"):
        return None
    peek = ts.peek()
    feature = ts.string() if peek is not None and peek.kind == "string" else ts.identifier()
    truncate = ts.accept("TRUNCATE", "HISTORY")
    _end(ts)
    return DropFeature(table, feature, truncate)


_OTHER_CONSTRAINTS = (("PRIMARY", "KEY"), ("FOREIGN", "KEY"), ("UNIQUE",))


def parse_add_check_constraint(ts: TokenStream) -> AddCheckConstraint | AddOtherConstraint | None:
    """ALTER TABLE table ADD [CONSTRAINT name] CHECK (condition), or another constraint kind."""
    if not ts.accept("ALTER", "TABLE"):
        return None
    table = _table(ts)
    if not ts.accept("ADD"):
        return None
    name = ts.identifier() if ts.accept("CONSTRAINT") else None
    other = next((words for words in _OTHER_CONSTRAINTS if ts.at(*words)), None)
    if other is not None:
        return AddOtherConstraint(table, " ".join(other))
    if not ts.accept("CHECK") or not ts.accept_punct("("):
        return None
    condition = ts.text_until()
    if not condition.endswith(")"):
        return None  # constraint characteristics after the condition: Spark's parser reports them
    return AddCheckConstraint(table, name, condition[:-1].strip())


def parse_drop_constraint(ts: TokenStream) -> DropConstraint | None:
    """ALTER TABLE table DROP CONSTRAINT [IF EXISTS] name."""
    if not ts.accept("ALTER", "TABLE"):
        return None
    table = _table(ts)
    if not ts.accept("DROP", "CONSTRAINT"):
        return None
    if_exists = ts.accept("IF", "EXISTS")
    name = ts.identifier()
    if not ts.at_end():
        return None  # CASCADE / RESTRICT: Spark's parser takes it
    return DropConstraint(table, name, if_exists)


def parse_cluster_by(ts: TokenStream) -> ClusterBy | None:
    """ALTER TABLE table CLUSTER BY (columns) | NONE."""
    if not ts.accept("ALTER", "TABLE"):
        return None
    table = _table(ts)
    if not ts.accept("CLUSTER", "BY"):
        return None
    if ts.accept("NONE"):
        _end(ts)
        return ClusterBy(table, ())
    columns = _column_list(ts)
    _end(ts)
    return ClusterBy(table, columns)


def parse_sync_identity(ts: TokenStream) -> SyncIdentity | None:
    """ALTER TABLE table ALTER|CHANGE [COLUMN] column SYNC IDENTITY (other ALTER COLUMN forms are Spark's)."""
    if not ts.accept("ALTER", "TABLE"):
        return None
    table = _table(ts)
    if not (ts.accept("ALTER") or ts.accept("CHANGE")):
        return None
    ts.accept("COLUMN")
    nxt = ts.peek()
    if nxt is None or nxt.kind not in ("word", "quoted"):
        return None  # Spark's parser reports it
    column = ts.identifier()
    if not ts.accept("SYNC", "IDENTITY"):
        return None
    _end(ts)
    return SyncIdentity(table, column)


def parse_clone(ts: TokenStream) -> Clone | None:
    """[CREATE [OR REPLACE] | REPLACE] TABLE [IF NOT EXISTS] t SHALLOW|DEEP CLONE source ...;
    None for any other CREATE / REPLACE (Spark's parser takes those)."""
    if "CLONE" not in ts.text.upper():
        return None
    create, replace, if_not_exists = True, False, False
    if ts.accept("CREATE", "OR", "REPLACE", "TABLE"):
        replace = True
    elif ts.accept("CREATE", "TABLE"):
        if_not_exists = ts.accept("IF", "NOT", "EXISTS")
    elif ts.accept("REPLACE", "TABLE"):
        create, replace = False, True
    else:
        return None
    try:
        target = _table(ts)
    except Exception:  # noqa: BLE001 - not a name: not a CLONE statement
        return None
    shallow = not ts.accept("DEEP")
    if shallow:
        ts.accept("SHALLOW")
    if not ts.accept("CLONE"):
        return None
    nxt = ts.peek(1)
    from_parquet = ts.at("PARQUET") and nxt is not None and nxt.text == "."
    source = _table(ts, path_prefixes=("delta", "parquet"))
    version = timestamp = None
    ts.accept("FOR")
    if ts.accept("VERSION", "AS", "OF") or ts.accept("SYSTEM_VERSION", "AS", "OF"):
        tok = ts.peek()
        version = int(ts.string()) if tok is not None and tok.kind == "string" else ts.integer()
    elif ts.accept("TIMESTAMP", "AS", "OF") or ts.accept("SYSTEM_TIME", "AS", "OF"):
        timestamp = ts.string()
    properties = _property_list(ts) if ts.accept("TBLPROPERTIES") else ()
    location = ts.string() if ts.accept("LOCATION") else None
    _end(ts)
    return Clone(target, source, shallow, create, replace, if_not_exists, version, timestamp, properties, location,
                 from_parquet)


def _property_list(ts: TokenStream) -> tuple[tuple[str, str], ...]:
    """('key' = 'value', ...) as delta-spark's propertyList (keys may be dotted names)."""
    ts.expect_punct("(")
    out = []
    while True:
        tok = ts.peek()
        key = ts.string() if tok is not None and tok.kind == "string" else _dotted(ts)
        ts.accept_punct("=")
        tok = ts.peek()
        if tok is not None and tok.kind == "string":
            value = ts.string()
        elif tok is not None and tok.kind == "word":
            value = ts.identifier()  # true / false and other bare words
        else:
            value = ts.next().text  # a number, as written
        out.append((key, value))
        if not ts.accept_punct(","):
            break
    ts.expect_punct(")")
    return tuple(out)


def _end(ts: TokenStream) -> None:
    if not ts.at_end():
        raise ts.error("unexpected text")
