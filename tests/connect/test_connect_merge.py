"""MERGE on a Spark Connect session: the classic suite's merge tests verbatim (clause rules,
skipping, conflicts), and the client's reading of a join condition for skipping."""

from __future__ import annotations

import pytest

from pydelta.protocol.predicates import And, Cmp, Col, Lit, Unknown
from pydelta.protocol.schema import parse_schema

# The classic suite's tests, verbatim: the `spark` fixture here is the Connect session.
from tests.spark.test_dml_merge import (  # noqa: F401
    table_path,
    test_merge_clause_rules,
    test_merge_every_clause_kind_in_order,
    test_merge_reads_only_the_files_its_target_side_conditions_allow,
    test_merge_upsert_rewrites_only_matched_files,
)

TARGET = parse_schema('{"type": "struct", "fields": ['
                      '{"name": "id", "type": "long", "nullable": true, "metadata": {}},'
                      '{"name": "p", "type": "integer", "nullable": true, "metadata": {}},'
                      '{"name": "s", "type": {"type": "struct", "fields": [{"name": "x", "type": "integer", '
                      '"nullable": true, "metadata": {}}]}, "nullable": true, "metadata": {}}]}')


@pytest.mark.parametrize("condition, expected", [
    ("t.id = s.id AND t.p = 3", And(Unknown(), Cmp("=", Col(("p",)), Lit(3)))),
    ("t.id = s.id AND p > 3", And(Unknown(), Cmp(">", Col(("p",)), Lit(3)))),  # p: not a source column
    ("t.id = s.id AND id > 3", And(Unknown(), Unknown())),  # id: the source has one too (ambiguous)
    ("t.id = s.id AND s.x = 3", And(Unknown(), Unknown())),  # the source alias, though the target has s.x
    ("t.id = s.id AND t.s.x = 3", And(Unknown(), Cmp("=", Col(("s", "x")), Lit(3)))),
])
def test_join_conditions_skip_on_target_columns_only(spark, condition, expected):
    from pyspark.sql import functions as F

    from pydelta.spark.read.connect.expressions import translate_target_column

    for column in (F.expr(condition), F.expr(condition.split(" AND ")[0]) & F.expr(condition.split(" AND ")[1])):
        got = translate_target_column(column._expr, TARGET, "t", ["id", "x", "v"])
        assert _shape(got) == _shape(expected)


def _shape(p):
    """A predicate with Unknown's reasons left out."""
    if isinstance(p, Unknown):
        return "?"
    if isinstance(p, And):
        return ("and", _shape(p.left), _shape(p.right))
    return p
