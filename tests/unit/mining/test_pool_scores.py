"""A scorer's probabilities of a pool's candidates and of the judged positives of its queries
(hardneg.mining.pool_scores), and the pool built with them; a re-ranking method's scores of them as a scorer."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hardneg.io import artifacts
from hardneg.mining.pool import build_pool, candidate_rows
from hardneg.mining.pool_scores import rerank_scorer, score_pool, score_pool_stage
from tests.support.mining import QRELS, RANKING, pairs


def probability(qid: str, docid: str) -> float:
    """A fixed probability per pair, different for every pair of the tables here."""
    return (sum(map(ord, qid)) * 31 + sum(ord(c) * (i + 1) for i, c in enumerate(docid))) % 97 / 97


class Scorer:
    """A scorer as the workflow calls one (``Method.score_pairs``), recording what it was given."""

    def __init__(self):
        self.calls = []

    def __call__(self, model_dir, queries, corpus, pairs, *, batch_size, device):
        self.calls.append((model_dir, queries, corpus, pairs.column_names, batch_size, device))
        return np.array([probability(q, d) for q, d in zip(pairs["qid"].to_pylist(), pairs["docid"].to_pylist())],
                        np.float32)


def test_candidates_and_positives_carry_each_pairs_probability():
    scorer = Scorer()
    candidates, positives = score_pool(scorer, "model", "Q", "C", RANKING, QRELS, depth=100, batch_size=7,
                                       device="cpu")
    assert candidates.schema == artifacts.RANKING.schema and positives.schema == artifacts.POSITIVE_SCORES.schema
    expected = candidate_rows(RANKING, QRELS, 100)
    assert pairs(candidates) == pairs(expected) and candidates["rank"].equals(expected["rank"])  # the miner's ranks
    assert candidates["score"].to_pylist() == pytest.approx([probability(q, d) for q, d in pairs(candidates)])
    relevant = [(q, d, r) for q, d, r in zip(*(QRELS[c].to_pylist() for c in ("qid", "docid", "relevance")))
                if r >= 1 and q in set(RANKING["qid"].to_pylist())]
    assert list(zip(*(positives[c].to_pylist() for c in ("qid", "docid", "relevance")))) == relevant
    assert positives["score"].to_pylist() == pytest.approx([probability(q, d) for q, d, _ in relevant])
    assert [call[0] for call in scorer.calls] == ["model", "model"]
    assert all(call[3] == ["qid", "docid"] and call[4:] == (7, "cpu") for call in scorer.calls)


def test_the_pool_reads_them_as_its_cross_encoder_columns(tmp_path):
    candidates, positives = score_pool(Scorer(), "model", None, None, RANKING, QRELS, depth=5)
    pool = build_pool(RANKING, QRELS, depth=5, ce_scores=candidates, ce_positive_scores=positives)
    assert pool["ce_score"].to_pylist() == pytest.approx([probability(q, d) for q, d in pairs(pool)])
    best = {}
    for q, d, r in zip(*(QRELS[c].to_pylist() for c in ("qid", "docid", "relevance"))):
        if r >= 1:
            best[q] = max(best.get(q, 0.0), probability(q, d))
    assert pool["best_positive_ce_score"].to_pylist() == pytest.approx([best.get(q) for q, _ in pairs(pool)])


def test_the_stage_writes_both_tables(tmp_path):
    ranking_path, qrels_path = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    artifacts.write_table(RANKING, artifacts.RANKING, ranking_path)
    artifacts.write_table(QRELS, artifacts.QRELS, qrels_path)
    out = tmp_path / "pools"
    candidates, positives = score_pool_stage(Scorer(), "model", None, None, ranking_path, qrels_path,
                                             out / "c.parquet", out / "p.parquet", depth=5)
    assert pq.read_table(out / "c.parquet").equals(candidates) and pq.read_table(out / "p.parquet").equals(positives)


def test_a_scorer_giving_another_count_is_an_error():
    def short(model_dir, queries, corpus, pairs, *, batch_size, device):
        return np.zeros(pairs.num_rows - 1, np.float32)

    with pytest.raises(ValueError, match=r"scores for \d+ pairs"):
        score_pool(short, "model", None, None, RANKING, QRELS, depth=5)


def test_a_reranking_methods_scores_score_the_pairs_in_their_order_nan_where_it_drops_one():
    calls = []

    def rerank(model_dir, queries, corpus, candidates, *, depth, batch_size, device):
        """Ranks every given candidate of a query by probability() (times 10), best first; drops document a7."""
        calls.append((model_dir, candidates, depth, batch_size, device))
        kept = [(q, d) for q, d in pairs(candidates) if d != "a7"]
        scored = sorted(kept, key=lambda pair: (pair[0], -probability(*pair)))
        return pa.table({"qid": [q for q, _ in scored], "docid": [d for _, d in scored],
                         "rank": pa.array(range(1, len(scored) + 1), pa.int32()),
                         "score": pa.array([10 * probability(*pair) for pair in scored], pa.float32())},
                        schema=artifacts.RANKING.schema)

    given = pa.table({"qid": ["q2", "q1", "q1", "q2", "q1", "q1"], "docid": ["b3", "a7", "a1", "b1", "a3", "a1"],
                      "rank": [9, 9, 9, 9, 9, 9]})  # q1's a1 twice; other columns are not read
    got = rerank_scorer(rerank)("teacher", "Q", "C", given, batch_size=3, device="cpu")
    expected = [10 * probability(q, d) for q, d in pairs(given)]
    expected[1] = np.nan  # a7 dropped
    np.testing.assert_allclose(got, np.array(expected, np.float32), rtol=1e-6)
    assert got.dtype == np.float32 and len(calls) == 1
    model_dir, candidates, depth, batch_size, device = calls[0]
    # each (query, document) once, ranked 1, 2, ... in each query's order, to the deepest query's count
    assert (model_dir, depth, batch_size, device) == ("teacher", 3, 3, "cpu")
    ranked = sorted(zip(*(candidates[c].to_pylist() for c in ("qid", "docid", "rank"))))
    assert ranked == [("q1", "a1", 2), ("q1", "a3", 3), ("q1", "a7", 1), ("q2", "b1", 2), ("q2", "b3", 1)]
    # through score_pool: the pool's candidates and positives get the re-ranker's scores
    candidates, positives = score_pool(rerank_scorer(rerank), "teacher", None, None, RANKING, QRELS, depth=8)
    assert candidates["score"].to_pylist() == pytest.approx(
        [np.nan if d == "a7" else 10 * probability(q, d) for q, d in pairs(candidates)], nan_ok=True)
    assert positives["score"].to_pylist() == pytest.approx([10 * probability(q, d) for q, d in pairs(positives)])
