import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from hardneg.evaluation.pairwise import full_corpus_ranks, pairwise_errors, per_query_pairwise_errors, relevant_ranks
from hardneg.io import artifacts


def _run(rows):
    return pa.table({"qid": [r[0] for r in rows], "docid": [r[1] for r in rows],
                     "rank": pa.array([r[2] for r in rows], pa.int32()),
                     "score": pa.array([1.0 / r[2] for r in rows], pa.float32())})


QRELS = pa.table({"qid": ["a", "a", "b"], "docid": ["p1", "p2", "q1"], "relevance": [1, 2, 1]},
                 schema=artifacts.QRELS.schema)


def test_pairwise_errors_by_hand():
    # Query a: p1 at rank 3 (2 errors), p2 at rank 5 (p1 above it: 3 errors). Query b: q1 missing from a
    # top-4 run: placed at rank 5 (lower bound: 4 errors), top-3 errors = 3 (every top-3 document).
    run = _run([("a", "x", 1), ("a", "y", 2), ("a", "p1", 3), ("a", "z", 4), ("a", "p2", 5),
                ("b", "u", 1), ("b", "v", 2), ("b", "w", 3), ("b", "t", 4)])
    result = pairwise_errors(run, QRELS, depth=3)
    # top-3: a: p1 -> 2, p2 beyond -> 3 - 1 relevant in top 3 = 2  => 4; b: 3.  Mean 3.5
    assert result["top3_pairwise_errors"] == pytest.approx(3.5)
    assert result["total_pairwise_errors"] == pytest.approx((2 + 3 + 4) / 2)
    assert result["total_is_lower_bound"] is True


def test_exact_corpus_ranks_from_embeddings():
    doc_emb = np.array([[1.0, 0], [0.8, 0], [0.5, 0], [0.1, 0]])
    query_emb = np.array([[1.0, 0]])
    pairs = pd.DataFrame({"qid": ["a", "a"], "docid": ["d3", "d1"]})
    ranks = full_corpus_ranks(query_emb, ["a"], doc_emb, ["d0", "d1", "d2", "d3"], pairs)
    assert ranks.tolist() == [4, 2]
    qrels = pa.table({"qid": ["a", "a"], "docid": ["d3", "d1"], "relevance": [1, 1]}, schema=artifacts.QRELS.schema)
    run = _run([("a", "d0", 1), ("a", "d1", 2)])
    pairs = relevant_ranks(run, qrels)
    result = pairwise_errors(run, qrels, depth=2, full_ranks=full_corpus_ranks(query_emb, ["a"], doc_emb,
                                                                                ["d0", "d1", "d2", "d3"], pairs))
    # d1 at 2: one error (d0); d3 at 4: d0, d2 above (d1 is relevant) = 2 errors. Top-2: d1 -> 1, d3 -> 2 - 1 = 1.
    assert result["total_pairwise_errors"] == pytest.approx(3)
    assert result["top2_pairwise_errors"] == pytest.approx(2)
    assert result["total_is_lower_bound"] is False


def test_qrels_without_a_relevant_judgement_have_no_pairs():
    """An evaluation split judged only non-relevant: no query has a pair to count (and no error is raised)."""
    run = pa.table({"qid": ["q1", "q1"], "docid": ["d1", "d2"], "score": pa.array([2.0, 1.0], pa.float32()),
                    "rank": pa.array([1, 2], pa.int32())})
    qrels = pa.table({"qid": ["q1"], "docid": ["d1"], "relevance": pa.array([0], pa.int32())})
    per_query = per_query_pairwise_errors(run, qrels)
    assert per_query.empty and list(per_query.columns) == ["top_errors", "total_errors"]
    assert per_query.attrs["total_is_lower_bound"] is False
