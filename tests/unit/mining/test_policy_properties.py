"""Properties of the selection policies (hardneg.mining.selection.select) over random pools: a larger relative
margin keeps a subset of what a smaller one keeps, whatever the sign of the best positive score (in particular a
negative one filters at least as much as margin 0); max_score and min_score keep exactly the candidates scoring
within them."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from hardneg.io import artifacts
from hardneg.mining.policies import Policy
from hardneg.mining.selection import select

SCORES = st.floats(-10, 10, width=32)  # the pool's scores are float32
MARGINS = st.floats(0, 1)


@st.composite
def pools(draw, best=st.one_of(st.none(), SCORES)) -> pa.Table:
    """A CANDIDATES table of 1 to 4 queries, each with 1 to 8 candidates and a best positive score from ``best``
    (None: the query has none; the first query has one, as a margin needs)."""
    rows = []
    for query in range(draw(st.integers(1, 4))):
        best_score = draw(best.filter(lambda value: value is not None) if query == 0 else best)
        scores = draw(st.lists(SCORES, min_size=1, max_size=8))
        rows += [(f"q{query}", f"d{query}_{rank}", rank, score, best_score)
                 for rank, score in enumerate(sorted(scores, reverse=True), 1)]
    columns = dict(zip(("qid", "docid", "rank", "score", "best_positive_score"), map(list, zip(*rows))))
    table = {name: columns.get(name, [None] * len(rows)) for name in artifacts.CANDIDATES.schema.names}
    return pa.table(table, schema=artifacts.CANDIDATES.schema)


def kept(pool: pa.Table, policy: Policy) -> set[tuple[str, str]]:
    negatives = select(pool, policy).negatives
    return set(zip(negatives["qid"].to_pylist(), negatives["docid"].to_pylist()))


@settings(max_examples=60, deadline=None)
@given(pools(), MARGINS, MARGINS)
def test_a_larger_relative_margin_keeps_a_subset_whatever_the_scores_sign(pool, a, b):
    small, large = sorted((a, b))
    assert kept(pool, Policy(relative_margin=large)) <= kept(pool, Policy(relative_margin=small))


@settings(max_examples=40, deadline=None)
@given(pools(best=st.floats(-10, -0.0625, width=32)), st.floats(1e-3, 1))
def test_below_a_negative_best_score_a_relative_margin_filters_at_least_as_much_as_none(pool, margin):
    with_margin = kept(pool, Policy(relative_margin=margin))
    assert with_margin <= kept(pool, Policy(relative_margin=0.0))
    bound = {qid: best - abs(best) * margin for qid, best in zip(pool["qid"].to_pylist(),
                                                                  pool["best_positive_score"].to_pylist())}
    scores = dict(zip(zip(pool["qid"].to_pylist(), pool["docid"].to_pylist()), pool["score"].to_pylist()))
    assert all(scores[pair] <= bound[pair[0]] for pair in with_margin)
    assert all(scores[pair] > bound[pair[0]] for pair in set(scores) - with_margin)


@settings(max_examples=60, deadline=None)
@given(pools(), st.floats(-12, 12), st.floats(-12, 12), st.booleans(), st.booleans())
def test_score_bounds_keep_exactly_the_candidates_scoring_within_them(pool, a, b, with_max, with_min):
    low, high = sorted((a, b))
    policy = Policy(max_score=high if with_max else None, min_score=low if with_min else None)
    scores = dict(zip(zip(pool["qid"].to_pylist(), pool["docid"].to_pylist()), pool["score"].to_pylist()))
    within = {pair for pair, score in scores.items()  # the bounds at the scores' float32 precision
              if (not with_max or score <= np.float32(high)) and (not with_min or score >= np.float32(low))}
    selection = select(pool, policy)
    assert kept(pool, policy) == within
    assert selection.removed["max_score"] + selection.removed["min_score"] == len(scores) - len(within)
