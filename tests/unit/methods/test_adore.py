"""ADORE's loss: |ΔMRR| weights, appended positives, the unweighted ablation, and a per-query reference."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from hardneg.methods.adore.step import build_candidates, delta_mrr, lambda_loss


def test_delta_mrr_on_a_hand_made_ranking():
    ranks = torch.tensor([[1, 2, 4, 250]])
    w = delta_mrr(ranks, cut=200)[0]
    assert w[0, 1].item() == pytest.approx(1 - 1 / 2)
    assert w[1, 2].item() == pytest.approx(1 / 2 - 1 / 4)
    assert w[0, 3].item() == pytest.approx(1.0)  # rank 250 is beyond the cut: 1/r counts as 0
    assert w[2, 0].item() == w[0, 2].item()  # symmetric
    assert delta_mrr(torch.tensor([[201, 300]]), cut=200)[0, 0, 1].item() == 0.0  # both beyond the cut


def test_missing_positive_is_appended_after_k():
    retrieved = np.array([[7, 3, 9], [4, 5, -1]])
    cand = build_candidates(retrieved, [np.array([3]), np.array([8, 2])], append_missing="all")
    assert cand.rows.tolist() == [[7, 3, 9, -1, -1], [4, 5, -1, 2, 8]]
    assert cand.relevant.tolist() == [[False, True, False, False, False], [False, False, False, True, True]]
    assert cand.ranks[1, 3:].tolist() == [4, 5]  # ranked after the top-3
    assert cand.valid.tolist() == [[True, True, True, False, False], [True, True, False, True, True]]


def test_unweighted_loss_is_plain_ranknet():
    scores = torch.tensor([[2.0, 1.0, 0.5], [0.1, 0.3, -1.0]])
    relevant = torch.tensor([[True, False, False], [False, True, False]])
    ranks = torch.tensor([[1, 2, 3], [1, 2, 3]])
    valid = torch.ones_like(relevant)
    expected = (F.softplus(torch.tensor(1.0 - 2)) + F.softplus(torch.tensor(0.5 - 2))
                + F.softplus(torch.tensor(0.1 - 0.3)) + F.softplus(torch.tensor(-1.0 - 0.3))) / 2
    got = lambda_loss(scores, relevant, ranks, valid, weighted=False, normalize="sum")
    assert got.item() == pytest.approx(expected.item(), rel=1e-6)
    # one relevant candidate and two non-relevant ones per query: the mean over pairs is half the sum
    got = lambda_loss(scores, relevant, ranks, valid, weighted=False, normalize="pairs")
    assert got.item() == pytest.approx(expected.item() / 2, rel=1e-6)


def _reference(scores, relevant, ranks, valid, cut):
    """A per-query, per-pair loop: what the vectorised loss must equal."""
    total = 0.0
    for b in range(scores.shape[0]):
        for i in range(scores.shape[1]):
            for j in range(scores.shape[1]):
                if relevant[b, i] and valid[b, i] and not relevant[b, j] and valid[b, j]:
                    ri = 1 / ranks[b, i] if ranks[b, i] <= cut else 0.0
                    rj = 1 / ranks[b, j] if ranks[b, j] <= cut else 0.0
                    total += abs(ri - rj) * np.log1p(np.exp(scores[b, j] - scores[b, i]))
    return total / scores.shape[0]


def test_vectorised_loss_equals_the_per_query_loop():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(4, 12))
    relevant = rng.random((4, 12)) < 0.2
    relevant[:, 0] = True
    ranks = np.tile(np.arange(1, 13), (4, 1))
    valid = rng.random((4, 12)) < 0.9
    valid[:, 0] = True
    got = lambda_loss(torch.tensor(scores), torch.tensor(relevant), torch.tensor(ranks), torch.tensor(valid), cut=8,
                      normalize="sum")
    assert got.item() == pytest.approx(_reference(scores, relevant, ranks, valid, cut=8), rel=1e-9)


def test_per_query_losses_average_to_the_batch_loss():
    rng = np.random.default_rng(1)
    scores = torch.tensor(rng.normal(size=(5, 9)))
    relevant = torch.tensor(rng.random((5, 9)) < 0.3)
    ranks = torch.tensor(np.tile(np.arange(1, 10), (5, 1)))
    valid = torch.ones_like(relevant)
    per_query = lambda_loss(scores, relevant, ranks, valid, cut=5, reduction="none")
    assert per_query.shape == (5,)
    assert torch.equal(per_query.mean(), lambda_loss(scores, relevant, ranks, valid, cut=5))
    with pytest.raises(ValueError, match="reduction"):
        lambda_loss(scores, relevant, ranks, valid, reduction="sum")


def test_adore_training_leaves_documents_fixed_and_moves_the_query_encoder(tmp_path):
    import hashlib

    from hardneg.dense.backbone import ModelSpec
    from hardneg.dense.encode import encode_rows
    from hardneg.dense.model import BiEncoder
    from hardneg.dense.tokenized import TokenizedTexts
    from hardneg.dense.tokenizer import load_tokenizer
    from hardneg.index import build_index, save_index
    from hardneg.pipeline.config import validate_params
    from hardneg.pipeline.train import train_run
    from tests.support.dense import TINY_MODEL, build_tiny

    tiny = build_tiny(tmp_path)
    tokenizer = load_tokenizer(tiny["tokenizer"])
    spec = ModelSpec.from_params(validate_params({"model": {"builtin": TINY_MODEL}})["model"])
    docs_model = BiEncoder.create(spec, vocab_size=len(tokenizer),
                                  pad_token_id=tokenizer.pad_token_id, max_length=64, seed=2)
    docs_model.save(tmp_path / "docs_model", tokenizer)
    corpus = TokenizedTexts(tiny["cache"], "corpus")
    embeddings = encode_rows(docs_model, corpus, np.arange(len(corpus)), "doc")
    np.save(tmp_path / "corpus.npy", embeddings)
    save_index(build_index(embeddings, "Flat"), tmp_path / "Flat.faiss")
    before = hashlib.sha256((tmp_path / "corpus.npy").read_bytes()).hexdigest()
    resolved = {"name": "adore", "method": "adore", "seed": 3, "params": validate_params({
        "model": {"doc_max_length": 64, "query_max_length": 16},
        "train": {"split": "train", "epochs": 1, "batch_size": 16, "learning_rate": 0.01, "temperature": 0.05,
                  "checkpoint_every": 0, "log_every": 1, "max_grad_norm": 1.0},
        "negatives": {"per_query": 0}, "index": {"search_params": None},
        "adore": {"top_k": 20, "cut": 20, "weighted": True}}, method="adore")}
    rows = train_run(resolved, cache_dir=tiny["cache"], qrels_path=tiny["data"] / "qrels" / "train.parquet",
                     model_dir=tmp_path / "adore_model", log_path=tmp_path / "log.parquet",
                     checkpoint_dir=tmp_path / "ckpt", tokenizer_source=tiny["tokenizer"],
                     inputs={"init": tmp_path / "docs_model", "doc_embeddings": tmp_path / "corpus.npy",
                             "train_index": tmp_path / "Flat.faiss"})
    assert hashlib.sha256((tmp_path / "corpus.npy").read_bytes()).hexdigest() == before
    assert "batch_mrr10" in rows[0] and not [key for key in rows[0] if key.endswith("seconds")]  # no wall-clock
    queries = TokenizedTexts(tiny["cache"], "queries_train")
    moved = encode_rows(BiEncoder.load(tmp_path / "adore_model"), queries, np.arange(8), "query")
    original = encode_rows(docs_model, queries, np.arange(8), "query")
    assert np.abs(moved - original).max() > 1e-3  # the query encoder was trained


# ------------------------------------------------------------------ the authors' formula, transcribed directly
def _authors_query_loss(scores: torch.Tensor, labels: np.ndarray, cut: int) -> torch.Tensor:
    """One query's loss as section 6.2 of the paper and the authors' code compute it: over the candidate list in
    rank order, the label difference matrix gives the ordered (relevant, non-relevant) pairs and their mirror
    images; each pair costs log(1 + exp(∓(s_i − s_j))) times |1/r_i − 1/r_j| (1/r = 0 from rank cut + 1 on), and
    the sum is divided by the number of ordered pairs (twice the number of (relevant, non-relevant) pairs)."""
    y = scores.reshape(-1, 1)
    diff = labels.reshape(-1, 1).astype(np.int64) - labels.reshape(1, -1).astype(np.int64)
    pos, neg = torch.tensor((diff > 0).astype(np.float64)), torch.tensor((diff < 0).astype(np.float64))
    cost = pos * torch.log(1 + torch.exp(-(y - y.T))) + neg * torch.log(1 + torch.exp(y - y.T))
    inverse = 1 / torch.arange(1, len(labels) + 1, dtype=torch.float64)
    inverse[cut:] = 0
    return (cost * (inverse.view(-1, 1) - inverse.view(1, -1)).abs()).sum() / (2 * pos.sum())


def _authors_batch(retrieved, relevant_rows, scores_of, cut):
    """The batch loss by the authors' rule: append a query's relevant documents only when none is retrieved."""
    total = 0
    for row, rel in zip(retrieved, relevant_rows):
        labels = np.isin(row, rel)
        if not labels.any():
            row, labels = np.concatenate([row, rel]), np.concatenate([labels, np.ones(len(rel), bool)])
        total = total + _authors_query_loss(scores_of(row), labels, cut)
    return total / len(retrieved)


def test_loss_and_gradient_equal_the_authors_formula_with_partial_retrieval():
    """Queries with all, some or none of their relevant documents retrieved, and many or few pairs: the loss and
    its gradient with respect to the query vectors equal the transcribed formula."""
    rng = np.random.default_rng(3)
    docs = torch.tensor(rng.normal(size=(60, 8)))
    retrieved = np.stack([rng.permutation(60)[:20] for _ in range(4)])
    relevant_rows = [retrieved[0, [0, 5]],  # both retrieved
                     np.array([retrieved[1, 3], 59 if 59 not in retrieved[1] else 58]),  # one of two retrieved
                     np.setdiff1d(np.arange(50, 60), retrieved[2])[:3],  # none retrieved: appended
                     retrieved[3, [1, 2, 4, 7, 9, 11]]]  # many pairs
    queries = torch.tensor(rng.normal(size=(4, 8)), requires_grad=True)

    cand = build_candidates(retrieved, relevant_rows)  # the default: append only when none is retrieved
    assert cand.valid.sum(1).tolist() == [20, 20, 20 + len(relevant_rows[2]), 20]
    scores = torch.einsum("bd,bcd->bc", queries, docs[np.maximum(cand.rows, 0)])
    ours = lambda_loss(scores, torch.tensor(cand.relevant), torch.tensor(cand.ranks), torch.tensor(cand.valid),
                       cut=10)
    ours_grad, = torch.autograd.grad(ours, queries)

    reference = torch.stack([_authors_batch(retrieved[i:i + 1], relevant_rows[i:i + 1],
                                            lambda rows, i=i: docs[rows] @ queries[i], cut=10) for i in range(4)]).mean()
    reference_grad, = torch.autograd.grad(reference, queries)
    # |ΔMRR| weights are computed in float32 (as the scores are in training): agreement to float32 precision
    assert ours.item() == pytest.approx(reference.item(), rel=1e-6)
    assert torch.allclose(ours_grad, reference_grad, rtol=1e-6, atol=1e-9)


def test_the_variants_differ_from_the_authors_loss_where_they_should():
    """``normalize="sum"`` weighs queries by their pair counts; ``append_missing="all"`` adds the unretrieved
    relevant document of a partially retrieved query to its pairs."""
    retrieved = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    relevant_rows = [np.array([1, 9]), np.array([10])]
    cand = build_candidates(retrieved, relevant_rows)
    assert cand.rows.tolist() == [[0, 1, 2, 3, -1], [4, 5, 6, 7, 10]]  # query 0 has one retrieved: nothing appended
    every = build_candidates(retrieved, relevant_rows, append_missing="all")
    assert every.rows.tolist() == [[0, 1, 2, 3, 9], [4, 5, 6, 7, 10]]
    scores = torch.tensor([[0.3, 0.1, 0.2, -0.5, 0.0], [0.4, 0.1, -0.2, 0.0, 0.05]], dtype=torch.float64)
    args = (torch.tensor(cand.relevant), torch.tensor(cand.ranks), torch.tensor(cand.valid))
    pairs_mean = lambda_loss(scores, *args, cut=10, reduction="none")
    sums = lambda_loss(scores, *args, cut=10, normalize="sum", reduction="none")
    assert torch.allclose(sums, pairs_mean * torch.tensor([3.0, 4.0], dtype=torch.float64))  # 3 and 4 pairs
    with pytest.raises(ValueError, match="normalize"):
        lambda_loss(scores, *args, normalize="max")
    with pytest.raises(ValueError, match="append_missing"):
        build_candidates(retrieved, relevant_rows, append_missing="some")


@pytest.mark.parametrize("append_missing", ["when_none", "all"])
def test_candidates_match_a_per_query_reading_of_the_rule(append_missing):
    """The vectorised candidates against the rule read query by query, on random batches with repeated,
    retrieved, partly retrieved and unretrieved relevant documents and -1 gaps in the retrieved lists."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        batch, k = 12, 15
        retrieved = np.stack([rng.permutation(60)[:k] for _ in range(batch)])
        retrieved[rng.random((batch, k)) < 0.05] = -1
        relevant = [np.concatenate([rng.choice(retrieved[i], rng.integers(0, 3)),
                                    rng.integers(0, 60, rng.integers(0, 3))]) for i in range(batch)]
        relevant = [r[r >= 0] if len(r[r >= 0]) else np.array([rng.integers(0, 60)]) for r in relevant]
        cand = build_candidates(retrieved, relevant, append_missing)
        for i, rel in enumerate(relevant):
            unretrieved = np.setdiff1d(rel, retrieved[i])
            if append_missing == "when_none" and len(unretrieved) < len(np.unique(rel)):
                unretrieved = unretrieved[:0]
            row = cand.rows[i]
            assert row[:k].tolist() == retrieved[i].tolist()
            assert row[k:k + len(unretrieved)].tolist() == unretrieved.tolist()
            assert (row[k + len(unretrieved):] == -1).all()
            assert cand.relevant[i].tolist() == (np.isin(row, rel) & (row >= 0)).tolist()
            assert cand.valid[i].tolist() == (row >= 0).tolist()


@pytest.mark.parametrize("from_search", [False, True])
def test_candidate_scores_and_gradient_equal_a_gathered_einsum(from_search):
    """Scores of the candidates (gathered a few queries at a time, or taken from an exact search with only the
    appended ones computed) and the gradient reaching the queries equal those of one gathered [B, C, D] block."""
    from hardneg.methods.adore.step import GROUP, candidate_scores

    rng = np.random.default_rng(2)
    docs = rng.standard_normal((400, 24)).astype(np.float32)
    q0 = rng.standard_normal((2 * GROUP + 1, 24)).astype(np.float32)
    exact = q0 @ docs.T
    retrieved = np.argsort(-exact, axis=1)[:, :30]
    relevant = [np.array([retrieved[i, i]]) if i % 2 else np.array([399 - i, 5]) for i in range(len(q0))]
    cand = build_candidates(retrieved, relevant, "when_none")
    assert cand.rows.shape[1] > 30  # some relevant documents were appended
    search = np.take_along_axis(exact, retrieved, 1) if from_search else None
    weights = torch.from_numpy(rng.standard_normal(cand.rows.shape).astype(np.float32))

    q = torch.from_numpy(q0).requires_grad_()
    scores = candidate_scores(q, docs, cand, search)
    (scores * weights).sum().backward()
    reference_q = torch.from_numpy(q0).requires_grad_()
    block = torch.from_numpy(docs[np.maximum(cand.rows, 0)])
    reference = torch.einsum("bd,bcd->bc", reference_q, block)
    (reference * weights).sum().backward()
    assert torch.allclose(scores, reference, rtol=1e-5, atol=1e-5)
    assert torch.allclose(q.grad, reference_q.grad, rtol=1e-5, atol=1e-5)
    # float16 embeddings (encode.fp16) are read as float32
    half = candidate_scores(torch.from_numpy(q0), docs.astype(np.float16), cand)
    assert half.dtype == torch.float32 and torch.allclose(half, reference.detach(), atol=0.05)


def test_missing_results_with_search_scores_stay_finite():
    """A search that found fewer than k rows (-1, with faiss's -3.4e38 score) leaves a finite loss and gradient."""
    from hardneg.methods.adore.step import post_search_loss

    rng = np.random.default_rng(4)
    docs = rng.standard_normal((50, 8)).astype(np.float32)
    retrieved = np.array([[3, 7, -1, -1], [5, 1, 2, -1]])
    scores = np.where(retrieved >= 0, 1.0, -3.4e38).astype(np.float32)
    q = torch.from_numpy(rng.standard_normal((2, 8)).astype(np.float32)).requires_grad_()
    per_query, cand = post_search_loss(q, retrieved, [np.array([7]), np.array([9])], docs, cut=10, weighted=True,
                                       normalize="pairs", append_missing="when_none", search_scores=scores)
    per_query.mean().backward()
    assert torch.isfinite(per_query).all() and torch.isfinite(q.grad).all()
    assert cand.rows[1].tolist() == [5, 1, 2, -1, 9]


def test_pq_matrix_cells_over_seeds_are_mean_and_sample_sd(tmp_path):
    import json as _json

    import pyarrow.parquet as _pq

    from hardneg.experiments.pq_matrix import write_pq_matrix

    def metrics(name, rr):
        path = tmp_path / f"{name}.json"
        path.write_text(_json.dumps({"measures": {"RR@10": rr}}))
        return str(path)

    cells = {("Flat", "Flat"): [metrics("a", 0.30), metrics("b", 0.34), metrics("c", 0.32)],
             ("Flat", "PQ8"): [metrics("d", 0.20), metrics("e", 0.22), metrics("f", 0.27)],
             ("PQ8", "Flat"): metrics("g", 0.25), ("PQ8", "PQ8"): [metrics("h", 0.26)]}
    table = write_pq_matrix(cells, ["Flat", "PQ8"], ["RR@10"], tmp_path / "m.parquet", tmp_path / "m.md")
    rows = {(r["train_index"], r["eval_index"]): r for r in _pq.read_table(tmp_path / "m.parquet").to_pylist()}
    assert rows == {(r["train_index"], r["eval_index"]): r for r in table.to_pylist()}
    assert rows[("Flat", "Flat")]["RR@10"] == pytest.approx(0.32)
    assert rows[("Flat", "Flat")]["RR@10 sd"] == pytest.approx(0.02)  # sample sd (n - 1) of .30/.34/.32
    assert rows[("Flat", "PQ8")]["RR@10 sd"] == pytest.approx(((0.03 ** 2 + 0.01 ** 2 + 0.04 ** 2) / 2) ** 0.5)
    assert (rows[("PQ8", "Flat")]["seeds"], rows[("PQ8", "Flat")]["RR@10 sd"]) == (1, 0.0)
    text = (tmp_path / "m.md").read_text()
    assert "| Flat | 0.3200 ± 0.0200 | 0.2300 ± 0.0361 |" in text
    assert "| PQ8 | 0.2500 | 0.2600 |" in text
    assert "over 1/3 seeds" in text
