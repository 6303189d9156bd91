"""Delta's own SQL statements, which Spark's parser does not know: the one list of them.

Each entry pairs a statement's parser (spark/sql/utility_grammar.py) with its runner
(spark/sql/utility.py). Adding a statement means a dataclass and a parser, a runner, and one
row here; the router asks `parse_utility` first and hands anything else to Spark's parser.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.tokens import TokenStream
from pydelta.spark.sql import utility as run
from pydelta.spark.sql import utility_grammar as g


@dataclass(frozen=True)
class DeltaStatement:
    """One Delta statement: the words its text may open with, its parser and its runner."""

    syntax: str
    opening: tuple[str, ...]  # upper-case prefixes of the text: a cheap check before tokenizing
    node: type
    parse: Callable[[TokenStream], object | None]  # None: not this statement
    run: Callable[[SparkSession, Any], DataFrame]


STATEMENTS: tuple[DeltaStatement, ...] = (
    DeltaStatement("DESCRIBE HISTORY table [LIMIT n]", ("DESC",), g.DescribeHistory,
                   g.parse_describe_history, run.run_describe_history),
    DeltaStatement("DESCRIBE DETAIL table", ("DESC",), g.DescribeDetail,
                   g.parse_describe_detail, run.run_describe_detail),
    DeltaStatement("RESTORE [TABLE] table [TO] VERSION|TIMESTAMP AS OF x", ("RESTORE",), g.Restore,
                   g.parse_restore, run.run_restore),
    DeltaStatement("VACUUM table [LITE|FULL] [RETAIN n HOURS] [DRY RUN]", ("VACUUM",), g.Vacuum,
                   g.parse_vacuum, run.run_vacuum),
    DeltaStatement("OPTIMIZE table [FULL] [WHERE p] [ZORDER BY (cols)]", ("OPTIMIZE",), g.Optimize,
                   g.parse_optimize, run.run_optimize),
    DeltaStatement("CONVERT TO DELTA table [NO STATISTICS] [PARTITIONED BY (schema)]", ("CONVERT",),
                   g.ConvertToDelta, g.parse_convert, run.run_convert),
    DeltaStatement("GENERATE mode FOR TABLE table", ("GENERATE",), g.Generate,
                   g.parse_generate, run.run_generate),
    DeltaStatement("REORG TABLE table [WHERE p] APPLY (PURGE)", ("REORG",), g.Reorg,
                   g.parse_reorg, run.run_reorg),
    DeltaStatement("ALTER TABLE table DROP FEATURE name [TRUNCATE HISTORY]", ("ALTER",), g.DropFeature,
                   g.parse_drop_feature, run.run_drop_feature),
    DeltaStatement("ALTER TABLE table CLUSTER BY (cols) | NONE", ("ALTER",), g.ClusterBy,
                   g.parse_cluster_by, run.run_cluster_by),
    DeltaStatement("ALTER TABLE table ADD [CONSTRAINT name] CHECK (condition) | PRIMARY KEY ...", ("ALTER",),
                   g.AddCheckConstraint, g.parse_add_check_constraint, run.run_add_check_constraint),
    DeltaStatement("ALTER TABLE table DROP CONSTRAINT [IF EXISTS] name", ("ALTER",), g.DropConstraint,
                   g.parse_drop_constraint, run.run_drop_constraint),
    DeltaStatement("ALTER TABLE table ALTER [COLUMN] c SYNC IDENTITY", ("ALTER",), g.SyncIdentity,
                   g.parse_sync_identity, run.run_sync_identity),
    DeltaStatement("[CREATE [OR REPLACE] | REPLACE] TABLE t SHALLOW CLONE source ...", ("CREATE", "REPLACE"),
                   g.Clone, g.parse_clone, run.run_clone_statement),
)

# what a parser returns for a recognised form pydelta does not run (REORG ... APPLY (UPGRADE UNIFORM),
# PRIMARY KEY and the other non-CHECK constraints)
_RUNNERS = {statement.node: statement.run for statement in STATEMENTS} | {
    g.Unsupported: run.run_unsupported, g.AddOtherConstraint: run.run_add_other_constraint}


def parse_utility(text: str) -> object | None:
    """The Delta statement in `text`, or None when it is none of them (Spark's parser takes it)."""
    head = text.lstrip()[:40].upper()
    for statement in STATEMENTS:
        if head.startswith(statement.opening):
            parsed = statement.parse(TokenStream(text))
            if parsed is not None:
                return parsed
    return None


def run_utility(spark: SparkSession, parsed: object) -> DataFrame:
    """Run a statement `parse_utility` returned; delta-spark's result DataFrame."""
    runner = _RUNNERS.get(type(parsed))
    if runner is None:
        raise TypeError(f"not a Delta statement: {parsed!r}")
    return runner(spark, parsed)
