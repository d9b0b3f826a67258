"""The TCT-ColBERT hybrid against Pyserini's own HybridSearcher, on random runs (in the JVM Pyserini starts; the
fusion itself: tests/unit/fusion/test_fusion.py)."""

import pytest

from tests.support.rankings import by_query, hybrid, random_rankings


@pytest.mark.slow
@pytest.mark.parametrize("normalization, weight_on_dense, alpha, depth, k", [
    (False, False, 0.1, 1000, 1000), (False, True, 0.3, 10, 1000), (True, False, 1.5, 1000, 8),
    (True, True, 0.7, 12, 5)])
def test_hybrid_equals_pyserini_hybrid_searcher(normalization, weight_on_dense, alpha, depth, k):
    from hardneg.bm25.java import start_jvm

    start_jvm()  # importing pyserini.search.hybrid imports the Lucene searcher
    from pyserini.search.faiss import DenseSearchResult
    from pyserini.search.hybrid import HybridSearcher

    sparse, dense = random_rankings(seed=int(alpha * 10) + depth)
    ours = by_query(hybrid(sparse, dense, alpha, depth=depth, k=k, normalization=normalization,
                           weight_on_dense=weight_on_dense))
    for qid in sorted(set(sparse["qid"].to_pylist())):
        hits = [[DenseSearchResult(d, s) for d, s in by_query(run)[qid][:depth]] for run in (sparse, dense)]
        theirs = HybridSearcher._hybrid_results(hits[1], hits[0], alpha, 10**6, normalization, weight_on_dense)
        # Pyserini orders equal scores (e.g. a sparse-only and a dense-only document, each at a list's minimum)
        # arbitrarily: compare each document's score and the sequence of the top k scores
        score_of = {hit.docid: hit.score for hit in theirs}
        assert [s for _, s in ours[qid]] == pytest.approx([hit.score for hit in theirs][:k], rel=1e-6, abs=1e-6)
        assert [s for _, s in ours[qid]] == pytest.approx([score_of[d] for d, _ in ours[qid]], rel=1e-6, abs=1e-6)
