"""Adaptive batch scheduling: hardness, swaps, beam search, partitions, determinism, conflicts, both similarity
backends and the trainer's sampler on the tiny dataset."""

import numpy as np
import pyarrow as pa
import pytest

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.data import TrainQueries
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.io import artifacts
from hardneg.methods.abs.sampler import AdaptiveBatchSampler
from hardneg.methods.abs.scheduling import (adaptive_batches, improve_batch, num_batches, random_batches,
                                            sequential_batches)
from hardneg.methods.abs.similarity import Conflicts, DenseSimilarity, SparseSimilarity, batch_hardness, mean_hardness
from hardneg.pipeline.config import validate_params
from tests.support.dense import TINY_MODEL, build_tiny


def _clustered(n: int, dim: int = 16, topics: int = 10, seed: int = 0) -> DenseSimilarity:
    """Unit questions near their passages, passages near one of ``topics`` centres: hard batches exist."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, dim))
    passages = centres[rng.integers(0, topics, n)] + 0.8 * rng.normal(size=(n, dim))
    questions = passages + 0.5 * rng.normal(size=(n, dim))
    unit = lambda x: (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)  # noqa: E731
    return DenseSimilarity(unit(questions), unit(passages))


def _as_dense(matrix: np.ndarray, conflicts=None) -> DenseSimilarity:
    """s(q_i, p_j) = matrix[i, j]: questions are the rows, passages the unit vectors."""
    return DenseSimilarity(matrix.astype(np.float32), np.eye(len(matrix), dtype=np.float32), conflicts)


def _assert_partition(batches, n, batch_size):
    assert len(batches) == num_batches(n, batch_size)
    assert np.array_equal(np.sort(np.concatenate(batches)), np.arange(n))  # every instance exactly once
    assert all(len(b) == batch_size for b in batches[:-1])
    assert len(batches[-1]) >= 2


# ------------------------------------------------------------------------------------------ hardness
def test_batch_hardness_of_a_hand_made_matrix_leaves_conflicts_out():
    matrix = np.arange(16, dtype=np.float64).reshape(4, 4)  # s(q_i, p_j) = 4i + j
    conflicts = Conflicts.from_relevant([np.array([10]), np.array([10, 11]), np.array([12]), np.array([13])])
    # off-diagonal sum 120 - trace 30 = 90, less the conflicting pair's s(q0, p1) = 1 and s(q1, p0) = 4
    for similarity in (SparseSimilarity(matrix, conflicts), _as_dense(matrix, conflicts)):
        assert batch_hardness(similarity, [0, 1, 2, 3]) == pytest.approx(85.0)
        assert batch_hardness(similarity, [2, 3]) == pytest.approx(11.0 + 14.0)
        assert batch_hardness(similarity, [0, 1]) == 0.0
        assert similarity.block([0, 1], [1, 0]).tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_conflicts_from_relevant_documents():
    conflicts = Conflicts.from_relevant([np.array([1, 2]), np.array([2]), np.array([3]), np.array([1]),
                                         np.zeros(0, np.int64)])
    assert conflicts.keys.tolist() == [0 * 5 + 1, 0 * 5 + 3, 1 * 5 + 0, 3 * 5 + 0]
    assert len(conflicts) == 2 and conflicts.max_partners == 2
    assert conflicts.mask([0, 1, 2], [0, 1, 3]).tolist() == [[True, True, True], [True, True, False],
                                                             [False, False, False]]


# --------------------------------------------------------------------------------------- the search
def test_greedy_and_beam_swaps_never_lower_h():
    similarity = _clustered(300)
    neighbours = similarity.neighbours(20)
    start = np.random.default_rng(0).choice(300, 16, replace=False)
    for search in ("greedy", "beam"):
        batch, history = improve_batch(similarity, start, neighbours, search=search, beam=3)
        assert len(history) > 5  # a random batch of clustered instances has better swaps
        assert history[0] == pytest.approx(batch_hardness(similarity, start))
        assert np.all(np.diff(history) > -1e-6)  # no swap lowers h (beyond float32 rounding of the products)
        assert np.mean(np.diff(history) > 1e-3) > 0.5
        assert history[-1] == pytest.approx(batch_hardness(similarity, batch), rel=1e-5)
        assert history[-1] > 3 * history[0]
        assert len(set(batch.tolist())) == 16


def test_max_swaps_and_an_empty_candidate_set():
    similarity = _clustered(300)
    start = np.arange(16)
    _, history = improve_batch(similarity, start, similarity.neighbours(20), max_swaps=3)
    assert len(history) == 4
    # no candidate may join: the batch comes back as it was
    batch, history = improve_batch(similarity, start, similarity.neighbours(20), excluded=np.ones(300, bool))
    assert np.array_equal(batch, start) and len(history) == 1


def test_beam_of_one_makes_the_greedy_choices():
    dense = _clustered(200, seed=1)
    rng = np.random.default_rng(2)
    ranking = rng.random((200, 200)) * (rng.random((200, 200)) < 0.1)
    ranking[ranking > 0] = np.round(ranking[ranking > 0], 1)  # many equal scores: ties broken the same way
    for similarity in (dense, SparseSimilarity(ranking)):
        greedy = adaptive_batches(similarity, 16, np.random.default_rng(5), search="greedy", candidates=15)
        beam = adaptive_batches(similarity, 16, np.random.default_rng(5), search="beam", beam=1, candidates=15)
        assert len(greedy) == len(beam) == num_batches(200, 16)
        assert all(np.array_equal(a, b) for a, b in zip(greedy, beam))


def test_beam_reaches_at_least_greedy_and_both_beat_random():
    """Over four instance sets of 400 (topics of about 10, fewer than a batch of 16): beam search's mean h is
    at least greedy's (on one set alone it can fall behind: both are local searches), and both far exceed random
    batching's (h is at most 16 x 15 = 240 here)."""
    random, greedy, beam = [], [], []
    for seed in range(4):
        similarity = _clustered(400, topics=40, seed=seed)
        random.append(mean_hardness(similarity, random_batches(400, 16, np.random.default_rng(seed))))
        for search, out in (("greedy", greedy), ("beam", beam)):
            batches = adaptive_batches(similarity, 16, np.random.default_rng(seed), search=search, beam=3,
                                       candidates=30)
            out.append(mean_hardness(similarity, batches))
    assert np.mean(beam) >= np.mean(greedy)
    assert np.mean(greedy) > np.mean(random) + 70


# ---------------------------------------------------------------------------- partitions, determinism
@pytest.mark.parametrize("n", [64, 65, 70])  # n mod 16: 0, 1 (the last batch takes 17), 6
def test_every_order_is_a_partition_of_num_batches(n):
    assert num_batches(n, 16) == {64: 4, 65: 4, 70: 5}[n]
    similarity = _clustered(n)
    rng = np.random.default_rng(n)
    for batches in (sequential_batches(n, 16), random_batches(n, 16, rng),
                    adaptive_batches(similarity, 16, rng, search="greedy", candidates=10),
                    adaptive_batches(similarity, 16, rng, search="beam", candidates=10)):
        _assert_partition(batches, n, 16)
        assert len(batches[-1]) == {64: 16, 65: 17, 70: 6}[n]
    assert [b.tolist() for b in sequential_batches(5, 2)] == [[0, 1], [2, 3, 4]]


def test_small_sets_and_batches():
    assert num_batches(17, 16) == 1 and num_batches(3, 16) == 1
    _assert_partition(adaptive_batches(_clustered(3), 16, np.random.default_rng(0)), 3, 16)
    with pytest.raises(ValueError):
        num_batches(1, 16)
    with pytest.raises(ValueError):
        num_batches(10, 1)


def test_same_seed_same_schedule_another_seed_another():
    similarity = _clustered(150)
    first, again, other = (adaptive_batches(similarity, 8, np.random.default_rng(seed), candidates=10)
                           for seed in (7, 7, 8))
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


# ------------------------------------------------------------------------------------------ conflicts
def test_instances_sharing_a_relevant_document_never_count():
    # 0 and 1 would be by far the hardest pair; 2..5 are mildly similar to everything
    matrix = np.ones((6, 6))
    matrix[0, 1] = matrix[1, 0] = 50.0
    conflicts = Conflicts.from_relevant([np.array([7]), np.array([7, 8]), np.array([1]), np.array([2]),
                                         np.array([3]), np.array([4])])
    for similarity in (_as_dense(matrix, conflicts), SparseSimilarity(matrix, conflicts)):
        assert batch_hardness(similarity, [0, 1, 2]) == pytest.approx(4.0)  # 6 pairs of s = 1, less the two
        passages_of_question, questions_of_passage = similarity.neighbours(5)
        assert 1 not in passages_of_question[0] and 0 not in questions_of_passage[1]
        assert (passages_of_question[0] == -1).sum() == 1  # only 4 instances may be its neighbours
        # 2 leaves (the first of two equal contributions); nothing beats it: 1 would add 0
        batch, history = improve_batch(similarity, np.array([2, 0]), similarity.neighbours(5))
        assert batch.tolist() == [2, 0] and history == [2.0]
    # without the conflict the same search does pair them
    batch, history = improve_batch(_as_dense(matrix), np.array([2, 0]), _as_dense(matrix).neighbours(5))
    assert sorted(batch.tolist()) == [0, 1] and history[-1] == pytest.approx(100.0)


# ----------------------------------------------------------------------------------- the two backends
def _tiny_ranking():
    instance_qids, instance_docids = ["qa", "qa", "qb", "qc"], ["d1", "d2", "d2", "d3"]
    rows = [("qa", "d2", 5.0), ("qa", "d3", 4.0), ("qa", "d9", 3.0), ("qb", "d2", 7.0), ("qb", "d1", 2.0),
            ("qb", "d3", 1.5), ("qc", "d2", 1.0), ("qz", "d1", 9.0)]
    ranking = pa.table({"qid": [r[0] for r in rows], "docid": [r[1] for r in rows],
                        "rank": [1, 2, 3, 1, 2, 3, 1, 1], "score": [r[2] for r in rows]})
    return ranking, instance_qids, instance_docids


def test_sparse_similarity_from_a_ranking():
    ranking, qids, docids = _tiny_ranking()
    # instances 0 and 1 are one query's two judgements; 1 and 2 share a passage, not a relevant document here
    conflicts = Conflicts.from_relevant([np.array([1, 2]), np.array([1, 2]), np.array([5]), np.array([3])])
    similarity = SparseSimilarity.from_ranking(ranking, qids, docids, conflicts)
    expected = np.array([[0.0, 0.0, 5.0, 4.0],   # qa: d1 unranked; instance 1 (d2) conflicts
                         [0.0, 0.0, 5.0, 4.0],
                         [2.0, 7.0, 0.0, 1.5],   # qb: d2 is instance 1's and its own passage
                         [0.0, 1.0, 1.0, 0.0]])  # qc
    everyone = np.arange(4)
    assert np.array_equal(similarity.block(everyone, everyone), expected)
    # repeated and unsorted indices, read through rows and through columns
    assert np.array_equal(similarity.block([2, 2, 0], [1, 3, 1]), expected[np.ix_([2, 2, 0], [1, 3, 1])])
    assert np.array_equal(similarity.block([3], everyone), expected[[3]])
    assert np.array_equal(similarity.block(everyone, [0]), expected[:, [0]])
    passages_of_question, questions_of_passage = similarity.neighbours(2)
    assert passages_of_question.tolist() == [[2, 3], [2, 3], [1, 0], [1, 2]]  # qc's tie: smaller id first
    assert questions_of_passage.tolist() == [[2, -1], [2, 3], [0, 1], [0, 1]]


def test_dense_neighbours_match_a_brute_force_top_k():
    rng = np.random.default_rng(4)
    questions, passages = rng.normal(size=(60, 8)), rng.normal(size=(60, 8))
    relevant = [np.array([1000 + i]) for i in range(60)]
    relevant[3], relevant[7] = np.array([5, 1003]), np.array([5, 1007])  # 3 and 7 conflict
    similarity = DenseSimilarity(questions, passages, Conflicts.from_relevant(relevant))
    scores = questions.astype(np.float32).astype(np.float64) @ passages.astype(np.float32).astype(np.float64).T
    scores[similarity.conflicts.mask(np.arange(60), np.arange(60))] = -np.inf
    by_row = np.argsort(-scores, axis=1, kind="stable")[:, :5]
    by_column = np.argsort(-scores.T, axis=1, kind="stable")[:, :5]
    passages_of_question, questions_of_passage = similarity.neighbours(5)
    assert np.array_equal(passages_of_question, by_row)
    assert np.array_equal(questions_of_passage, by_column)
    assert 7 not in passages_of_question[3] and 3 not in questions_of_passage[7]
    approximate, _ = similarity.neighbours(5, index="HNSW32")
    recall = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(approximate, by_row)])
    assert recall > 0.9


# --------------------------------------------------------------------------------------- the sampler
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("abs"))


def test_sampler_uses_bm25_then_the_model(tiny):
    queries, corpus = TokenizedTexts(tiny["cache"], "queries_train"), TokenizedTexts(tiny["cache"], "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    train = TrainQueries(qrels, queries.row_ids, corpus.row_ids)
    # a BM25 stand-in: each query's judged documents on top, then 30 random documents
    rng = np.random.default_rng(0)
    judged = qrels.to_pylist()
    qids = [r["qid"] for r in judged] + [q for q in train.qids for _ in range(30)]
    docids = [r["docid"] for r in judged] + [corpus.row_ids[d] for d in rng.integers(0, len(corpus), 30 * len(train))]
    scores = [10.0] * len(judged) + rng.random(30 * len(train)).tolist()
    ranking = pa.table({"qid": qids, "docid": docids, "rank": np.arange(len(qids)) + 1, "score": scores})
    sampler = AdaptiveBatchSampler(train, queries, corpus, batch_size=16, seed=3, order="adaptive",
                                   similarity="encode", ranking=ranking, candidates=10, encode_batch_size=32)
    epoch0 = sampler.batches(0)
    _assert_partition(epoch0, len(train), 16)
    assert len(epoch0) == sampler.num_batches(0)
    assert sampler.last_stats["similarity"] == "bm25"
    assert sampler.last_stats["mean_hardness"] > sampler.last_stats["random_mean_hardness"]
    assert all(np.array_equal(a, b) for a, b in zip(epoch0, sampler.batches(0)))  # no state but the seed
    plain = AdaptiveBatchSampler(train, queries, corpus, batch_size=16, seed=3, order="random", similarity="bm25",
                                 ranking=ranking)
    expected = random_batches(len(train), 16, np.random.default_rng([3, 2]))
    assert len(expected) == plain.num_batches(2) and all(np.array_equal(a, b) for a, b in zip(plain.batches(2), expected))
    assert plain.last_stats["similarity"] == "bm25" and plain.last_stats["swaps"] == 0
    # conflicts: exactly the rows that share a relevant document
    shared = [(i, j) for i in range(len(train)) for j in range(len(train))
              if i != j and set(train.relevant[i]) & set(train.relevant[j])]
    assert shared and sampler.conflicts.keys.tolist() == sorted(i * len(train) + j for i, j in shared)

    tokenizer = load_tokenizer(tiny["tokenizer"])
    spec = ModelSpec.from_params(validate_params({"model": {"builtin": TINY_MODEL}})["model"])
    model = BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, max_length=64,
                             seed=3)
    encoded, encode = {}, model.encode

    def counting(input_ids, attention_mask, side):  # how many texts of each side the sampler encodes
        encoded[side] = encoded.get(side, 0) + len(input_ids)
        return encode(input_ids, attention_mask, side)

    model.encode = counting
    epoch1 = sampler.batches(1, model)
    assert sampler.last_stats["similarity"] == "encode"
    _assert_partition(epoch1, len(train), 16)
    assert len(epoch1) == sampler.num_batches(1)
    # each distinct question and first positive encoded once
    assert encoded == {"query": len(np.unique(train.query_rows)),
                       "doc": len(np.unique([p[0] for p in train.positives]))}
