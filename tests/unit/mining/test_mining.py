import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from hardneg.io import artifacts
from hardneg.mining.negatives import mine_hard_negatives, positive_scores
from hardneg.mining.selection import select_stage
from hardneg.mining.pool import pool_stage
from tests.support.mining import QRELS, RANKING, pairs, positives_table, qrels_table, random_problem, ranking_table


POSITIVES = positives_table([("q1", "a2", 1, 8.0), ("q1", "a5", 2, 5.0), ("q2", "b1", 1, 5.0)])


def test_removes_positives_keeps_judged_non_relevant_and_orders_by_run_then_rank():
    out = mine_hard_negatives(RANKING, QRELS)
    assert out.schema == artifacts.HARDNEGS.schema
    assert pairs(out) == [("q1", "a1"), ("q1", "a3"), ("q1", "a4"), ("q1", "a6"), ("q1", "a7"), ("q1", "a8"),
                          ("q2", "b2"), ("q2", "b3"), ("q2", "b4"), ("q2", "a2"), ("q3", "c1"), ("q3", "c2")]
    assert out["rank"].to_pylist() == [1, 3, 4, 6, 7, 8, 2, 3, 4, 5, 1, 2]
    assert out["score"].to_pylist() == [9.0, 7.0, 6.0, 4.0, 3.0, 2.0, 4.5, 4.0, 3.5, 3.0, 1.0, 0.5]


def test_depth():
    assert pairs(mine_hard_negatives(RANKING, QRELS, depth=5)) == [
        ("q1", "a1"), ("q1", "a3"), ("q1", "a4"), ("q2", "b2"), ("q2", "b3"), ("q2", "b4"), ("q2", "a2"),
        ("q3", "c1"), ("q3", "c2")]
    assert pairs(mine_hard_negatives(RANKING, QRELS, depth=1)) == [("q1", "a1"), ("q3", "c1")]


def test_rank_range_is_inclusive():
    assert pairs(mine_hard_negatives(RANKING, QRELS, rank_range=(3, 6))) == [
        ("q1", "a3"), ("q1", "a4"), ("q1", "a6"), ("q2", "b3"), ("q2", "b4"), ("q2", "a2")]


def test_keep_top():
    assert pairs(mine_hard_negatives(RANKING, QRELS, keep=2)) == [
        ("q1", "a1"), ("q1", "a3"), ("q2", "b2"), ("q2", "b3"), ("q3", "c1"), ("q3", "c2")]


def test_absolute_margin():
    # best positive: q1 8.0 → score <= 4.5; q2 5.0 → score <= 1.5 (none); q3 has no positive score: keeps all
    out = mine_hard_negatives(RANKING, QRELS, POSITIVES, margin=3.5)
    assert pairs(out) == [("q1", "a6"), ("q1", "a7"), ("q1", "a8"), ("q3", "c1"), ("q3", "c2")]


def test_relative_margin():
    # q1: score <= 8.0 - 8.0 * 0.25 = 6.0 (a4 at exactly 6.0 stays); q2: score <= 3.75
    out = mine_hard_negatives(RANKING, QRELS, POSITIVES, relative_margin=0.25)
    assert pairs(out) == [("q1", "a4"), ("q1", "a6"), ("q1", "a7"), ("q1", "a8"), ("q2", "b4"), ("q2", "a2"),
                          ("q3", "c1"), ("q3", "c2")]


def test_max_and_min_score_bound_the_negatives_own_score():
    # scores within [3.0, 6.0], both included; no positive scores needed (q3 is bounded too)
    out = mine_hard_negatives(RANKING, QRELS, max_score=6.0, min_score=3.0)
    assert pairs(out) == [("q1", "a4"), ("q1", "a6"), ("q1", "a7"), ("q2", "b2"), ("q2", "b3"), ("q2", "b4"),
                          ("q2", "a2")]
    with pytest.raises(ValueError, match="min_score 6 is above max_score 3"):
        mine_hard_negatives(RANKING, QRELS, max_score=3.0, min_score=6.0)


def test_filters_combine_in_order():
    out = mine_hard_negatives(RANKING, QRELS, POSITIVES, depth=7, rank_range=(2, 7), margin=1.0, keep=2)
    assert pairs(out) == [("q1", "a3"), ("q1", "a4"), ("q2", "b3"), ("q2", "b4"), ("q3", "c2")]


def test_margin_needs_positive_scores_and_options_are_checked():
    with pytest.raises(ValueError, match="margin needs the positives"):
        mine_hard_negatives(RANKING, QRELS, margin=1.0)
    with pytest.raises(ValueError, match="relative_margin needs"):
        mine_hard_negatives(RANKING, QRELS, relative_margin=0.1)
    with pytest.raises(ValueError, match="sampling"):
        mine_hard_negatives(RANKING, QRELS, sampling="hardest")
    with pytest.raises(ValueError, match="rank_range"):
        mine_hard_negatives(RANKING, QRELS, rank_range=(5, 2))


def test_unsorted_run_gives_rank_order_within_queries():
    shuffled = RANKING.take(pa.array(np.random.default_rng(3).permutation(RANKING.num_rows)))
    out = mine_hard_negatives(shuffled, QRELS, keep=3)
    expected = mine_hard_negatives(RANKING, QRELS, keep=3)
    assert sorted(zip(*(out[c].to_pylist() for c in ("qid", "rank", "docid")))) == \
        sorted(zip(*(expected[c].to_pylist() for c in ("qid", "rank", "docid"))))
    for qid in ("q1", "q2", "q3"):
        ranks = [r for q, r in zip(out["qid"].to_pylist(), out["rank"].to_pylist()) if q == qid]
        assert ranks == sorted(ranks)
    # queries come out in order of first appearance in the run
    first = list(dict.fromkeys(shuffled["qid"].to_pylist()))
    assert list(dict.fromkeys(out["qid"].to_pylist())) == first


def test_no_positive_is_ever_mined_at_any_grade():
    run, qrels = random_problem()
    out = mine_hard_negatives(run, qrels, depth=40)
    mined = set(pairs(out))
    grades = {(q, d): r for q, d, r in zip(*(qrels[c].to_pylist() for c in ("qid", "docid", "relevance")))}
    assert not {p for p, r in grades.items() if r >= 1} & mined
    judged_zero = {p for p, r in grades.items() if r == 0}
    in_depth = set(pairs(run.filter(pc.less_equal(run["rank"], 40))))
    assert judged_zero & in_depth <= mined  # relevance-0 documents stay negatives
    assert len(mined) == len(in_depth) - len({p for p, r in grades.items() if r >= 1} & in_depth)


def test_random_sampling_is_seeded_and_independent_of_query_order(tmp_path):
    run, qrels = random_problem()
    a = mine_hard_negatives(run, qrels, keep=5, sampling="random", seed=11)
    b = mine_hard_negatives(run, qrels, keep=5, sampling="random", seed=11)
    artifacts.write_table(a, artifacts.HARDNEGS, tmp_path / "a.parquet")
    artifacts.write_table(b, artifacts.HARDNEGS, tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()

    assert set(pc.value_counts(a["qid"]).field("counts").to_pylist()) == {5}
    candidates = set(pairs(mine_hard_negatives(run, qrels)))
    assert set(pairs(a)) <= candidates
    assert set(pairs(a)) != set(pairs(mine_hard_negatives(run, qrels, keep=5)))  # not simply the top 5
    other = mine_hard_negatives(run, qrels, keep=5, sampling="random", seed=12)
    assert set(pairs(other)) != set(pairs(a))

    reversed_run = run.sort_by([("qid", "descending"), ("rank", "ascending")])
    c = mine_hard_negatives(reversed_run, qrels, keep=5, sampling="random", seed=11)
    assert c["qid"][0].as_py() != a["qid"][0].as_py()
    key = [("qid", "ascending"), ("rank", "ascending")]
    assert c.sort_by(key).equals(a.sort_by(key))


def test_the_pool_and_selection_stages_read_and_write_parquet(tmp_path):
    artifacts.write_table(RANKING, artifacts.RANKING, tmp_path / "run.parquet")
    artifacts.write_table(QRELS, artifacts.QRELS, tmp_path / "qrels.parquet")
    artifacts.write_table(POSITIVES, artifacts.POSITIVE_SCORES, tmp_path / "pos.parquet")
    rows = pool_stage(tmp_path / "run.parquet", tmp_path / "qrels.parquet", tmp_path / "pool.parquet",
                      positives_path=tmp_path / "pos.parquet", depth=7)
    assert rows == 11  # to rank 7, positives removed: q1 a1 a3 a4 a6 a7; q2 b2 b3 b4 a2; q3 c1 c2
    selection = select_stage(tmp_path / "pool.parquet", tmp_path / "out" / "hardnegs.parquet",
                             tmp_path / "out" / "selection.json",
                             policy={"rank_range": [2, 7], "margin": 1.0, "keep": 2}, seed=0)
    written = artifacts.read_table(artifacts.HARDNEGS, tmp_path / "out" / "hardnegs.parquet")
    assert written.equals(selection.negatives)
    assert pairs(written) == [("q1", "a3"), ("q1", "a4"), ("q2", "b3"), ("q2", "b4"), ("q3", "c2")]
    record = json.loads((tmp_path / "out" / "selection.json").read_text())
    assert record["candidates"] == rows and record["kept"] == 5 and record["queries_with_negatives"] == 3
    assert record["policy"]["rank_range"] == [2, 7] and record["policy"]["keep"] == 2 and record["seed"] == 0
    assert sum(record["removed"].values()) + record["kept"] == rows


def test_empty_run():
    out = mine_hard_negatives(ranking_table([]), QRELS, keep=3, sampling="random")
    assert out.num_rows == 0 and out.schema == artifacts.HARDNEGS.schema


def test_positive_scores_are_dot_products_in_float32():
    query_emb = np.array([[1.0, 2.0, 0.5], [0.0, 1.0, -1.0]], dtype=np.float16)
    doc_emb = np.array([[1.0, 0.0, 2.0], [1.0, 1.0, 1.0], [2.0, 3.0, 0.0]], dtype=np.float16)
    qrels = qrels_table([("q1", "d1", 1), ("q1", "d3", 2), ("q1", "d2", 0), ("q2", "d2", 1), ("q3", "d1", 1),
                         ("q2", "d1", 1)])
    out = positive_scores(query_emb, ["q1", "q2"], doc_emb, np.array(["d1", "d2", "d3"]), qrels)
    assert out.schema == artifacts.POSITIVE_SCORES.schema
    assert list(zip(*(out[c].to_pylist() for c in ("qid", "docid", "relevance", "score")))) == [
        ("q1", "d1", 1, 1.0 + 0.0 + 1.0),
        ("q1", "d3", 2, 2.0 + 6.0 + 0.0),
        ("q2", "d2", 1, 0.0 + 1.0 - 1.0),
        ("q2", "d1", 1, 0.0 + 0.0 - 2.0),
    ]


def test_positive_scores_leave_out_documents_without_an_embedding(caplog):
    """An empty document left out of the embeddings (empty_documents: exclude) has no score; the others keep
    theirs, and the log says how many pairs were left out."""
    query_emb = np.array([[1.0, 2.0, 0.5], [0.0, 1.0, -1.0]], dtype=np.float32)
    doc_emb = np.array([[1.0, 0.0, 2.0], [1.0, 1.0, 1.0]], dtype=np.float32)
    qrels = qrels_table([("q1", "d1", 1), ("q1", "d3", 2), ("q2", "d2", 1), ("q2", "d3", 1)])
    with caplog.at_level("WARNING"):
        out = positive_scores(query_emb, ["q1", "q2"], doc_emb, ["d1", "d2"], qrels)
    assert list(zip(out["qid"].to_pylist(), out["docid"].to_pylist(), out["score"].to_pylist())) == [
        ("q1", "d1", 2.0), ("q2", "d2", 0.0)]
    assert "2 relevant pair(s) name a document without an embedding (e.g. 'd3'" in caplog.text
