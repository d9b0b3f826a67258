"""How far two hard-negative lists agree (hardneg.mining.verify.overlap), over random lists: a list compared with
itself, however its rows are ordered, agrees everywhere; one swapped pair of scores within a query makes exactly
that query's order disagree, and no query's overlap change."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from hardneg.mining.verify import overlap


@st.composite
def lists(draw) -> pa.Table:
    """A HARDNEGS-like table: queries with 1 to 6 negatives each, distinct scores within a query."""
    queries = draw(st.integers(1, 40))
    qids, docids, scores = [], [], []
    for query in range(queries):
        count = draw(st.integers(1, 6))
        docs = draw(st.lists(st.integers(0, 500), min_size=count, max_size=count, unique=True))
        values = draw(st.lists(st.integers(-1000, 1000), min_size=count, max_size=count, unique=True))
        qids += [f"q{query}"] * count
        docids += [f"d{doc}" for doc in docs]
        scores += [value / 100 for value in values]
    return pa.table({"qid": qids, "docid": docids, "score": pa.array(scores, pa.float32())})


def shuffled(table: pa.Table, seed: int) -> pa.Table:
    return table.take(pa.array(np.random.default_rng(seed).permutation(table.num_rows)))


@settings(max_examples=60, deadline=None)
@given(lists(), st.integers(0, 2**32 - 1))
def test_a_list_agrees_with_itself_in_any_row_order(table, seed):
    result = overlap(table, shuffled(table, seed))
    queries = len(set(table["qid"].to_pylist()))
    assert result == {"queries": queries, "mean": 1.0, "min": 1.0, "below_one": 0, "same_order": queries}


@settings(max_examples=60, deadline=None)
@given(lists(), st.integers(0, 2**32 - 1), st.data())
def test_one_swapped_pair_makes_one_query_disagree(table, seed, data):
    qids = table["qid"].to_pylist()
    several = sorted({qid for qid in qids if qids.count(qid) >= 2})
    if not several:
        return
    query = data.draw(st.sampled_from(several))
    rows = [i for i, qid in enumerate(qids) if qid == query]
    first, second = data.draw(st.lists(st.sampled_from(rows), min_size=2, max_size=2, unique=True))
    scores = table["score"].to_pylist()
    scores[first], scores[second] = scores[second], scores[first]
    swapped = table.set_column(2, "score", pa.array(scores, pa.float32()))
    result = overlap(table, shuffled(swapped, seed))
    queries = len(set(qids))
    assert result == {"queries": queries, "mean": 1.0, "min": 1.0, "below_one": 0, "same_order": queries - 1}
