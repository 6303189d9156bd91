"""Which relations of a SQL query over Connect may skip files (no Spark: the query's text only)."""

from __future__ import annotations

from pydelta.spark.sql.connect_query_pruning import prunable_relations
from pydelta.spark.sql.tokens import tokenize


def _prunable(text: str, *names: str) -> dict[str, tuple]:
    """{relation name: (qualifier, conjuncts, alone)} for the relations named (each's first token)."""
    tokens = tokenize(text)
    spans = []
    for name in names:
        first = next(i for i, t in enumerate(tokens) if t.text == name)
        spans.append((first, first))
    found = prunable_relations(text, tokens, spans)
    return {tokens[first].text: (p.qualifier, p.conjuncts, p.alone) for first, p in found.items()}


def test_where_conjuncts_of_a_single_relation():
    text = "SELECT * FROM events WHERE p = 1 AND d BETWEEN 1 AND 5 AND (a = 1 OR b = 2) GROUP BY x"
    assert _prunable(text, "events") == {"events": ("events", ("p = 1", "d BETWEEN 1 AND 5", "(a = 1 OR b = 2)"), True)}
    assert _prunable("SELECT * FROM events e WHERE e.p = 1 ORDER BY 1", "events") == {
        "events": ("e", ("e.p = 1",), True)}
    case = "SELECT * FROM events WHERE CASE WHEN a = 1 AND b = 2 THEN true END AND p = 3"
    assert _prunable(case, "events")["events"][1] == ("CASE WHEN a = 1 AND b = 2 THEN true END", "p = 3")


def test_join_kinds_decide_which_side_may_skip():
    where = " WHERE a.x = 1"
    assert set(_prunable("SELECT * FROM ta a JOIN tb b ON a.k = b.k" + where, "ta", "tb")) == {"ta", "tb"}
    assert set(_prunable("SELECT * FROM ta a, tb b" + where, "ta", "tb")) == {"ta", "tb"}
    assert set(_prunable("SELECT * FROM ta a LEFT OUTER JOIN tb b ON a.k = b.k" + where, "ta", "tb")) == {"ta"}
    assert set(_prunable("SELECT * FROM ta a RIGHT JOIN tb b ON a.k = b.k" + where, "ta", "tb")) == {"tb"}
    assert set(_prunable("SELECT * FROM ta a FULL JOIN tb b ON a.k = b.k" + where, "ta", "tb")) == set()
    assert set(_prunable("SELECT * FROM ta a LEFT SEMI JOIN tb b ON a.k = b.k" + where, "ta", "tb")) == {"ta"}
    assert set(_prunable("SELECT * FROM ta a LEFT ANTI JOIN tb b USING (k)" + where, "ta", "tb")) == {"ta"}
    # a RIGHT JOIN later makes every relation before it null-supplying
    text = "SELECT * FROM ta a JOIN tb b ON a.k = b.k RIGHT JOIN tc c ON c.k = a.k" + where
    assert set(_prunable(text, "ta", "tb", "tc")) == {"tc"}
    assert _prunable("SELECT * FROM ta JOIN tb ON ta.k = tb.k" + where, "ta")["ta"][2] is False


def test_shapes_that_prune_nothing():
    for text in ("SELECT * FROM ta WHERE k IN (SELECT k FROM tb)",          # a subquery
                 "SELECT * FROM ta WHERE x = 1 UNION ALL SELECT * FROM tb",  # a set operation
                 "SELECT * FROM (ta JOIN tb ON ta.k = tb.k) WHERE x = 1",    # a parenthesized join
                 "SELECT * FROM ta t(a, b) WHERE a = 1",                    # columns renamed
                 "SELECT * FROM ta LATERAL VIEW explode(xs) v AS x WHERE x = 1",
                 "SELECT * FROM ta",                                        # no WHERE
                 "INSERT INTO tb SELECT * FROM ta WHERE x = 1"):
        assert _prunable(text, "ta") == {}, text
