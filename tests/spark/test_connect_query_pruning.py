"""Which relations of a SQL query over Connect may skip files (no Spark: the query's text only)."""

from __future__ import annotations

from pydelta.spark.base.tokens import tokenize
from pydelta.spark.connect.query_pruning import prunable_relations


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
    for text in ("SELECT * FROM ta WHERE k IN (SELECT k FROM tb)",          # only a subquery conjunct
                 "SELECT * FROM (ta JOIN tb ON ta.k = tb.k) WHERE x = 1",    # a parenthesized join
                 "SELECT * FROM ta t(a, b) WHERE a = 1",                    # columns renamed
                 "SELECT * FROM ta LATERAL VIEW explode(xs) v AS x WHERE x = 1",
                 "SELECT * FROM ta TABLESAMPLE (10 PERCENT) WHERE x = 1",
                 "SELECT * FROM ta",                                        # no WHERE
                 "SELECT * FROM (SELECT * FROM ta) s WHERE x = 1"):         # the WHERE is not ta's block's
        assert _prunable(text, "ta") == {}, text


def test_each_query_block_prunes_by_its_own_where():
    union = "SELECT * FROM ta WHERE a = 1 UNION ALL SELECT * FROM tb WHERE b = 2 EXCEPT SELECT * FROM tc"
    assert _prunable(union, "ta", "tb", "tc") == {"ta": ("ta", ("a = 1",), True), "tb": ("tb", ("b = 2",), True)}
    derived = "SELECT * FROM (SELECT * FROM ta WHERE x = 1 GROUP BY k) s WHERE y = 2"
    assert _prunable(derived, "ta") == {"ta": ("ta", ("x = 1",), False)}  # nested: never `alone`
    cte = "WITH c AS (SELECT * FROM ta WHERE x > 3) SELECT * FROM c JOIN tb ON c.k = tb.k WHERE tb.y = 1"
    assert _prunable(cte, "ta", "tb") == {"ta": ("ta", ("x > 3",), False), "tb": ("tb", ("tb.y = 1",), False)}
    # a conjunct holding a query is left out; the subquery's own block prunes its relation
    nested = "SELECT * FROM ta WHERE x = 1 AND k IN (SELECT k FROM tb WHERE z = 2) AND EXISTS (SELECT 1)"
    assert _prunable(nested, "ta", "tb") == {"ta": ("ta", ("x = 1",), True), "tb": ("tb", ("z = 2",), False)}
    # a block inside the null-supplying side of an outer join still prunes by its own WHERE
    outer = "SELECT * FROM ta LEFT JOIN (SELECT * FROM tb WHERE z = 2) s ON ta.k = s.k WHERE ta.x = 1"
    assert _prunable(outer, "ta", "tb") == {"ta": ("ta", ("ta.x = 1",), False), "tb": ("tb", ("z = 2",), False)}
    assert _prunable("INSERT INTO tc SELECT * FROM ta WHERE x = 1", "ta") == {"ta": ("ta", ("x = 1",), True)}
