"""Delta DML and DDL statements read on the client, for Spark Connect sessions.

A classic session gives pydelta Spark's own parser (through py4j); a Connect client has none.
This grammar splits the statements pydelta serves over Connect into their parts (target,
alias, clauses) and keeps every expression, condition and query as its verbatim SQL text:
Spark parses those itself when pydelta hands them to the DeltaTable API or `spark.sql`.

Served: INSERT INTO/OVERWRITE, UPDATE, DELETE, MERGE, TRUNCATE, CREATE/REPLACE TABLE ... USING
delta (with AS SELECT), COMMENT ON TABLE and the ALTER TABLE forms Spark's own grammar has
(properties, columns, constraints, ALTER/CHANGE COLUMN in both the standard and the Hive form,
REPLACE COLUMNS, and the partition/SerDe/location forms Delta refuses). Anything else is None
(not served).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydelta.errors import DeltaAnalysisError, DeltaParseError
from pydelta.spark.base.tokens import TokenStream

# ---- statements -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A table a statement names, as its name parts (`delta.`/path`` is ('delta', '/path'))."""

    parts: tuple[str, ...]


@dataclass(frozen=True)
class Delete:
    target: Target
    alias: str | None
    condition: str | None


@dataclass(frozen=True)
class Update:
    target: Target
    alias: str | None
    assignments: dict[str, str]
    condition: str | None


@dataclass(frozen=True)
class MergeClause:
    when: str  # matched, notMatched, notMatchedBySource
    action: str  # update, updateAll, delete, insert, insertAll
    condition: str | None
    assignments: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Merge:
    target: Target
    alias: str | None
    source: Target | None  # a table; None when the source is a query
    source_query: str | None
    source_alias: str | None
    condition: str
    clauses: list[MergeClause]
    schema_evolution: bool


@dataclass(frozen=True)
class Insert:
    target: Target
    overwrite: bool
    by_name: bool
    columns: list[str]
    partition: dict[str, str | None]  # PARTITION (k = 'v', k2): static values, None for dynamic
    replace_where: str | None
    query: str


@dataclass(frozen=True)
class Truncate:
    target: Target


@dataclass(frozen=True)
class ColumnDefinition:
    name: str
    type: str
    nullable: bool = True
    generated: str | None = None  # GENERATED ALWAYS AS (expr)
    identity: tuple[bool, int, int] | None = None  # (by default, start, step)
    default: str | None = None
    comment: str | None = None
    position: str | None = None  # FIRST, or the column it goes AFTER (ALTER TABLE ADD COLUMNS)


@dataclass(frozen=True)
class CreateTable:
    target: Target
    replace: bool
    create: bool  # False for REPLACE TABLE (the table must exist)
    if_not_exists: bool
    columns: list[ColumnDefinition]
    partitioned_by: list[str]
    clustered_by: list[str] | None
    location: str | None
    comment: str | None
    properties: dict[str, str]
    query: str | None
    options: dict[str, str] = field(default_factory=dict)  # OPTIONS (...) but `path` (the location)


@dataclass(frozen=True)
class ColumnSpec:
    """One spec of ALTER TABLE ... ALTER|CHANGE COLUMN; None (or False) leaves that aspect as it is."""

    name: str
    type: str | None = None
    nullable: bool | None = None
    comment: str | None = None
    drop_comment: bool = False  # COMMENT NULL
    position: str | None = None  # FIRST, or the column it goes AFTER
    default: str | None = None  # SET DEFAULT <expression>
    drop_default: bool = False


@dataclass(frozen=True)
class AlterTable:
    target: Target
    # setProperties, unsetProperties, addColumns, replaceColumns, changeColumns, addConstraint,
    # dropConstraint, renameColumn, dropColumns, setLocation, renameTable, notAllowed
    action: str
    properties: dict[str, str] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)
    columns: list[ColumnDefinition] = field(default_factory=list)
    changes: list[ColumnSpec] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # constraint name / column(s) / new name / location
    expression: str | None = None
    if_exists: bool = False
    command: str | None = None  # Spark's name of a refused statement (notAllowed)


Statement = Delete | Update | Merge | Insert | Truncate | CreateTable | AlterTable


# ---- the parser -----------------------------------------------------------------------------


class _Parser(TokenStream):
    """Recursive descent over the statement's tokens; expressions are kept as text."""

    def target(self) -> Target:
        parts = [self.identifier()]
        while self.accept_punct("."):
            parts.append(self.identifier())
        return Target(tuple(parts))

    def _punct_at(self, offset: int, text: str) -> bool:
        tok = self.peek(offset)
        return tok is not None and tok.kind == "punct" and tok.text == text

    def alias(self, *stop_words: str) -> str | None:
        """`[AS] alias` unless the next word is one of the clause keywords."""
        if self.accept("AS"):
            return self.identifier()
        tok = self.peek()
        if tok is not None and (tok.kind == "quoted" or (tok.kind == "word" and tok.upper not in stop_words)):
            return self.identifier()
        return None

    def expression(self, *stop_words: str, commas: bool = False) -> str:
        """Verbatim text of an expression, up to a top-level stop keyword (or comma, or ')').

        Parentheses and CASE ... END nest, so `CASE WHEN a THEN b END` never ends a MERGE clause."""
        first = self.peek()
        if first is None:
            raise self.error("expected an expression")
        depth, end = 0, first.start
        while (tok := self.peek()) is not None:
            if depth == 0 and ((tok.kind == "word" and tok.upper in stop_words)
                               or (tok.kind == "punct" and (tok.text == ")" or (commas and tok.text == ",")))):
                break
            if tok.text == "(" or (tok.kind == "word" and tok.upper == "CASE"):
                depth += 1
            elif tok.text == ")" or (tok.kind == "word" and tok.upper == "END"):
                depth -= 1
            end = tok.end
            self.pos += 1
        if end == first.start:
            raise self.error("expected an expression")
        return self.text[first.start:end]

    def column_name(self) -> str:
        """A (possibly qualified) column reference as SQL text: a.b, `weird name`."""
        start = self.next()
        end = start
        while self.accept_punct("."):
            end = self.next()
        return self.text[start.start:end.end]

    def assignments(self, *stop_words: str) -> dict[str, str]:
        out = {}
        while True:
            column = self.column_name()
            self.expect_punct("=")
            out[column] = self.expression(*stop_words, commas=True)
            if not self.accept_punct(","):
                return out

    def name_list(self, unquoted: bool = False) -> list[str]:
        """(name, ...) as SQL text; with `unquoted`, each one-part name as the column's name (`p p` -> p p)."""
        self.expect_punct("(")
        names = []
        while True:
            start = self.pos
            name = self.column_name()
            names.append(self.tokens[start].value() if unquoted and self.pos == start + 1 else name)
            if not self.accept_punct(","):
                break
        self.expect_punct(")")
        return names

    def string_map(self) -> dict[str, str]:
        """(key = value, ...) of TBLPROPERTIES: keys quoted or dotted words, values literals."""
        self.expect_punct("(")
        out = {}
        while True:
            key = self.property_key()
            self.accept_punct("=")
            value = self.next()
            out[key] = value.value() if value.kind == "string" else value.text.lower() \
                if value.upper in ("TRUE", "FALSE") else value.text
            if not self.accept_punct(","):
                break
        self.expect_punct(")")
        return out

    def property_key(self) -> str:
        tok = self.next()
        if tok.kind == "string":
            return tok.value()
        parts = [tok.value()]
        while self.accept_punct("."):
            parts.append(self.next().value())
        return ".".join(parts)

    def column_definition(self, *, alter: bool = False) -> ColumnDefinition:
        name = self.column_name() if alter else self.identifier()
        type_start = self.peek()
        if type_start is None:
            raise self.error("expected a column type")
        depth, end = 0, type_start.end
        while (tok := self.peek()) is not None:
            if depth == 0 and (tok.text in (",", ")") or (tok.kind == "word" and tok.upper in (
                    "NOT", "NULL", "GENERATED", "DEFAULT", "COMMENT", "FIRST", "AFTER") and tok is not type_start)):
                break
            depth += tok.text.count("(") + tok.text.count("<") - tok.text.count(")") - tok.text.count(">")
            end = tok.end
            self.pos += 1
        column: dict[str, Any] = {"name": name, "type": self.text[type_start.start:end]}
        while True:
            if self.accept("NOT", "NULL"):
                column["nullable"] = False
            elif self.accept("NULL"):
                pass
            elif self.accept("GENERATED"):
                self._generated(column)
            elif self.accept("DEFAULT"):
                column["default"] = self.expression("COMMENT", "NOT", "FIRST", "AFTER", commas=True)
            elif self.accept("COMMENT"):
                column["comment"] = self.string()
            elif alter and self.accept("FIRST"):
                column["position"] = "FIRST"
            elif alter and self.accept("AFTER"):
                column["position"] = self.column_name()
            else:
                return ColumnDefinition(**column)

    def _generated(self, column: dict[str, Any]) -> None:
        by_default = self.accept("BY", "DEFAULT")
        if not by_default:
            self.expect("ALWAYS")
        self.expect("AS")
        if self.accept("IDENTITY"):
            start, step = 1, 1
            if self.accept_punct("("):
                while not self.accept_punct(")"):
                    if self.accept("START", "WITH"):
                        start = self._signed_integer()
                    elif self.accept("INCREMENT", "BY"):
                        step = self._signed_integer()
                    else:
                        raise self.error("expected START WITH or INCREMENT BY")
            column["identity"] = (by_default, start, step)
            return
        if by_default:
            raise self.error("expected IDENTITY")
        self.expect_punct("(")
        column["generated"] = self.expression()
        self.expect_punct(")")

    def _signed_integer(self) -> int:
        sign = -1 if self.accept_punct("-") else 1
        return sign * self.integer()

    def query_follows(self) -> bool:
        """Whether a query starts here (possibly in parentheses)."""
        i = 0
        while self._punct_at(i, "("):
            i += 1
        tok = self.peek(i)
        return tok is not None and tok.kind == "word" and tok.upper in ("SELECT", "WITH", "VALUES", "FROM", "TABLE")


def parse_statement(text: str) -> Statement | None:
    """The statement `text` as one of the served kinds, or None when it is none of them.

    Raises DeltaParseError for a served statement pydelta cannot read."""
    p = _Parser(text)
    if p.accept("DELETE", "FROM"):
        return _delete(p)
    if p.accept("UPDATE"):
        return _update(p)
    if p.accept("MERGE"):
        return _merge(p)
    if p.at("INSERT"):
        return _insert(p)
    if p.accept("TRUNCATE", "TABLE"):
        target = p.target()
        return Truncate(target) if p.at_end() else None  # TRUNCATE ... PARTITION: not served
    if p.at("CREATE") or p.at("REPLACE"):
        return _create(p)
    if p.accept("ALTER", "TABLE"):
        return _alter(p)
    if p.accept("COMMENT", "ON", "TABLE"):
        return _comment_on_table(p)
    return None


def _delete(p: _Parser) -> Delete:
    target = p.target()
    alias = p.alias("WHERE")
    condition = p.expression() if p.accept("WHERE") else None
    _end(p)
    return Delete(target, alias, condition)


def _update(p: _Parser) -> Update:
    target = p.target()
    alias = p.alias("SET")
    p.expect("SET")
    assignments = p.assignments("WHERE")
    condition = p.expression() if p.accept("WHERE") else None
    _end(p)
    return Update(target, alias, assignments, condition)


def _merge(p: _Parser) -> Merge:
    evolution = p.accept("WITH", "SCHEMA", "EVOLUTION")
    p.expect("INTO")
    target = p.target()
    alias = p.alias("USING")
    p.expect("USING")
    source, query = None, None
    if p.query_follows() or p._punct_at(0, "("):
        p.expect_punct("(")
        query = p.expression()
        p.expect_punct(")")
    else:
        source = p.target()
    source_alias = p.alias("ON")
    p.expect("ON")
    condition = p.expression("WHEN")
    clauses = []
    while p.accept("WHEN"):
        clauses.append(_merge_clause(p))
    _end(p)
    return Merge(target, alias, source, query, source_alias, condition, clauses, evolution)


def _merge_clause(p: _Parser) -> MergeClause:
    if p.accept("MATCHED"):
        when = "matched"
    elif p.accept("NOT", "MATCHED", "BY", "SOURCE"):
        when = "notMatchedBySource"
    elif p.accept("NOT", "MATCHED"):
        p.accept("BY", "TARGET")
        when = "notMatched"
    else:
        raise p.error("expected MATCHED or NOT MATCHED")
    condition = p.expression("THEN") if p.accept("AND") else None
    p.expect("THEN")
    if p.accept("DELETE"):
        return MergeClause(when, "delete", condition)
    if p.accept("UPDATE", "SET"):
        if p.accept_punct("*"):
            return MergeClause(when, "updateAll", condition)
        return MergeClause(when, "update", condition, p.assignments("WHEN"))
    if p.accept("INSERT"):
        if p.accept_punct("*"):
            return MergeClause(when, "insertAll", condition)
        columns = p.name_list()
        p.expect("VALUES")
        p.expect_punct("(")
        values = [p.expression(commas=True)]
        while p.accept_punct(","):
            values.append(p.expression(commas=True))
        p.expect_punct(")")
        if len(values) != len(columns):
            raise p.error(f"INSERT lists {len(columns)} columns but {len(values)} values")
        return MergeClause(when, "insert", condition, dict(zip(columns, values, strict=True)))
    raise p.error("expected DELETE, UPDATE SET or INSERT")


def _insert(p: _Parser) -> Insert:
    p.expect("INSERT")
    overwrite = p.accept("OVERWRITE")
    if not overwrite:
        p.expect("INTO")
    p.accept("TABLE")
    target = p.target()
    partition: dict[str, str | None] = {}
    if p.accept("PARTITION"):
        p.expect_punct("(")
        while True:
            key = p.identifier()
            partition[key] = p.next().value() if p.accept_punct("=") else None
            if not p.accept_punct(","):
                break
        p.expect_punct(")")
    by_name = p.accept("BY", "NAME")
    columns = p.name_list() if p._punct_at(0, "(") and not p.query_follows() else []
    replace_where = None
    if p.accept("REPLACE", "WHERE"):
        replace_where = _until_query(p)
    if not p.query_follows():
        raise p.error("expected a query (SELECT, VALUES, ...)")
    return Insert(target, overwrite, by_name, columns, partition, replace_where, p.rest())


def _until_query(p: _Parser) -> str:
    """REPLACE WHERE's condition: the text up to the query that follows it."""
    first = p.peek()
    assert first is not None
    end = first.start
    while not p.at_end() and not p.query_follows():
        end = p.next().end
    return p.text[first.start:end]


def _create(p: _Parser) -> CreateTable | None:
    create = p.accept("CREATE")
    replace = p.accept("OR", "REPLACE") if create else p.accept("REPLACE")
    if not p.accept("TABLE"):
        return None  # CREATE VIEW, DATABASE, ...: not a table
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    target = p.target()
    columns: list[ColumnDefinition] = []
    if p._punct_at(0, "(") and not p.query_follows():
        p.expect_punct("(")
        while True:
            columns.append(p.column_definition())
            if not p.accept_punct(","):
                break
        p.expect_punct(")")
    spec: dict[str, Any] = {"partitioned_by": [], "clustered_by": None, "location": None, "comment": None,
                            "properties": {}}
    provider = None
    while not p.at_end() and not p.at("AS"):
        if p.accept("USING"):
            provider = p.identifier().lower()
        elif p.accept("PARTITIONED", "BY"):
            spec["partitioned_by"] = p.name_list(unquoted=True)
        elif p.accept("CLUSTER", "BY"):
            spec["clustered_by"] = [] if p.accept("NONE") else p.name_list()
        elif p.accept("LOCATION"):
            spec["location"] = p.string()
        elif p.accept("COMMENT"):
            spec["comment"] = p.string()
        elif p.accept("TBLPROPERTIES"):
            spec["properties"] = p.string_map()
        elif p.accept("OPTIONS"):
            spec["options"] = p.string_map()
        elif (p.at("STORED") or p.at("ROW", "FORMAT")) and provider == "delta":
            raise DeltaAnalysisError("ROW FORMAT / STORED AS cannot be used with USING DELTA")  # as classic
        else:
            return None  # a clause not served here (bucketing, a Hive table's STORED AS, ...)
    if provider != "delta":
        return None
    query = p.rest() if p.accept("AS") else None
    path_keys = [key for key in spec.get("options", {}) if key.lower() == "path"]
    if path_keys:  # as Spark's parser: OPTIONS (path ...) is the table's location
        if spec["location"] is not None:
            raise DeltaAnalysisError("LOCATION and 'path' in OPTIONS are both used to indicate the custom table "
                                  "path, you can only specify one of them")
        spec["location"] = spec["options"].pop(path_keys[0])
    return CreateTable(target, replace, create, if_not_exists, columns, query=query, **spec)


def _alter(p: _Parser) -> AlterTable | None:
    target = p.target()
    if p.accept("SET", "TBLPROPERTIES"):
        return _ended(p, AlterTable(target, "setProperties", properties=p.string_map()))
    if p.accept("UNSET", "TBLPROPERTIES"):
        if_exists = p.accept("IF", "EXISTS")
        p.expect_punct("(")
        keys = [p.property_key()]
        while p.accept_punct(","):
            keys.append(p.property_key())
        p.expect_punct(")")
        return _ended(p, AlterTable(target, "unsetProperties", keys=keys, if_exists=if_exists))
    if p.accept("ADD", "COLUMNS") or p.accept("ADD", "COLUMN"):
        parenthesized = p.accept_punct("(")
        columns = [p.column_definition(alter=True)]
        while p.accept_punct(","):
            columns.append(p.column_definition(alter=True))
        if parenthesized:
            p.expect_punct(")")
        return _ended(p, AlterTable(target, "addColumns", columns=columns))
    if p.accept("ADD", "CONSTRAINT"):
        name = p.identifier()
        p.expect("CHECK")
        p.expect_punct("(")
        expression = p.expression()
        p.expect_punct(")")
        return _ended(p, AlterTable(target, "addConstraint", names=[name], expression=expression))
    if p.accept("DROP", "CONSTRAINT"):
        if_exists = p.accept("IF", "EXISTS")
        return _ended(p, AlterTable(target, "dropConstraint", names=[p.identifier()], if_exists=if_exists))
    if p.accept("RENAME", "COLUMN"):
        column = p.column_name()
        p.expect("TO")
        return _ended(p, AlterTable(target, "renameColumn", names=[column, p.identifier()]))
    if p.accept("DROP", "COLUMNS") or p.accept("DROP", "COLUMN"):
        if_exists = p.accept("IF", "EXISTS")
        names = p.name_list() if p._punct_at(0, "(") else [p.column_name()]
        while p.accept_punct(","):
            names.append(p.column_name())
        return _ended(p, AlterTable(target, "dropColumns", names=names, if_exists=if_exists))
    if p.at("ALTER") or p.at("CHANGE"):
        return _change_columns(p, target)
    if p.accept("REPLACE", "COLUMNS"):
        p.expect_punct("(")
        columns = [p.column_definition()]
        while p.accept_punct(","):
            columns.append(p.column_definition())
        p.expect_punct(")")
        return _ended(p, AlterTable(target, "replaceColumns", columns=columns))
    if p.accept("SET", "LOCATION"):
        return _ended(p, AlterTable(target, "setLocation", names=[p.string()]))
    if p.accept("RENAME", "TO"):
        return AlterTable(target, "renameTable")  # the catalog's business: Spark runs it
    command = _refused_command(p)
    return AlterTable(target, "notAllowed", command=command) if command is not None else None


def _refused_command(p: _Parser) -> str | None:
    """Spark's name of an ALTER TABLE form delta-spark refuses on Delta tables (partitions, SerDe,
    a partition's location), for DELTA_OPERATION_NOT_ALLOWED; None for any other form."""
    words = {t.upper for t in p.tokens[p.pos:] if t.kind == "word"}
    if p.at("RECOVER", "PARTITIONS"):
        return "ALTER TABLE ... RECOVER PARTITIONS"
    if "SERDE" in words or "SERDEPROPERTIES" in words:
        return "ALTER TABLE ... SET [SERDE|SERDEPROPERTIES]"
    if p.at("ADD") and "PARTITION" in words:
        return "ALTER TABLE ... ADD PARTITION"
    if p.at("DROP") and "PARTITION" in words:
        return "ALTER TABLE ... DROP PARTITION"
    if p.at("PARTITION") and "RENAME" in words:
        return "ALTER TABLE ... RENAME TO PARTITION"
    if p.at("PARTITION") and "LOCATION" in words:
        return "ALTER TABLE ... SET LOCATION"
    return None


_SPEC_ACTIONS = ("TYPE", "COMMENT", "FIRST", "AFTER", "SET", "DROP")


def _change_columns(p: _Parser, target: Target) -> AlterTable:
    """ALTER|CHANGE [COLUMN] spec, spec... (one action each), or Hive's CHANGE [COLUMN] c c type
    [COMMENT] [FIRST|AFTER] (the name given twice: Spark refuses a rename in that form)."""
    hive_allowed = p.accept("CHANGE")
    if not hive_allowed:
        p.expect("ALTER")
    p.accept("COLUMN")
    name = p.column_name()
    tok = p.peek()
    if hive_allowed and tok is not None and tok.kind in ("word", "quoted") and tok.upper not in _SPEC_ACTIONS:
        new = p.column_definition(alter=True)
        if column_parts(new.name)[-1].lower() != column_parts(name)[-1].lower():
            raise p.error("Renaming column is not supported in Hive-style ALTER COLUMN, please run RENAME COLUMN "
                          "instead")
        if not new.nullable or new.default is not None:
            raise p.error("NOT NULL and DEFAULT are not supported in Hive-style ALTER COLUMN")
        spec = ColumnSpec(name, type=new.type, comment=new.comment, position=new.position)
        return _ended(p, AlterTable(target, "changeColumns", changes=[spec]))
    specs = [_column_action(p, name)]
    while p.accept_punct(","):
        specs.append(_column_action(p, p.column_name()))
    return _ended(p, AlterTable(target, "changeColumns", changes=specs))


def _column_action(p: _Parser, name: str) -> ColumnSpec:
    if p.accept("TYPE"):
        return ColumnSpec(name, type=p.expression(commas=True))
    if p.accept("COMMENT"):
        return ColumnSpec(name, drop_comment=True) if p.accept("NULL") else ColumnSpec(name, comment=p.string())
    if p.accept("FIRST"):
        return ColumnSpec(name, position="FIRST")
    if p.accept("AFTER"):
        return ColumnSpec(name, position=p.column_name())
    if p.accept("SET", "NOT", "NULL"):
        return ColumnSpec(name, nullable=False)
    if p.accept("DROP", "NOT", "NULL"):
        return ColumnSpec(name, nullable=True)
    if p.accept("SET", "DEFAULT"):
        return ColumnSpec(name, default=p.expression(commas=True))
    if p.accept("DROP", "DEFAULT"):
        return ColumnSpec(name, drop_default=True)
    raise p.error("expected TYPE, COMMENT, FIRST, AFTER, SET/DROP NOT NULL or SET/DROP DEFAULT")


def _comment_on_table(p: _Parser) -> AlterTable:
    """COMMENT ON TABLE t IS 'text' | NULL: as in delta-spark, SET TBLPROPERTIES ('comment' = ...),
    with NULL as the empty string (Spark's parser does the same)."""
    target = p.target()
    p.expect("IS")
    comment = "" if p.accept("NULL") else p.string()
    return _ended(p, AlterTable(target, "setProperties", properties={"comment": comment}))


def values_rows(query: str) -> list[list[str]] | None:
    """The rows of a bare `VALUES (a, b), (c, d)` query as cell texts; None for any other query."""
    p = _Parser(query)
    if not p.accept("VALUES"):
        return None
    rows = []
    try:
        while True:
            if p.accept_punct("("):
                row = [p.expression(commas=True)]
                while p.accept_punct(","):
                    row.append(p.expression(commas=True))
                p.expect_punct(")")
            else:
                row = [p.expression(commas=True)]
            rows.append(row)
            if not p.accept_punct(","):
                break
    except DeltaParseError:
        return None
    return rows if p.at_end() else None


def _end(p: _Parser) -> None:
    if not p.at_end():
        raise p.error("unexpected text")


def _ended(p: _Parser, statement: AlterTable) -> AlterTable:
    _end(p)
    return statement


def column_parts(text: str) -> tuple[str, ...]:
    """A column reference's name parts: `a`.b -> ('a', 'b')."""
    stream = TokenStream(text)
    parts = [stream.identifier()]
    while stream.accept_punct("."):
        parts.append(stream.identifier())
    return tuple(parts)

