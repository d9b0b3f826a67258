"""ADORE's loss: |ΔMRR| weights, appended positives, the unweighted ablation, and a per-query reference."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from hardneg.dense.adore import build_candidates, delta_mrr, lambda_loss


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
    cand = build_candidates(retrieved, [np.array([3]), np.array([8, 2])])
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
    assert lambda_loss(scores, relevant, ranks, valid, weighted=False).item() == pytest.approx(expected.item(), rel=1e-6)


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
    got = lambda_loss(torch.tensor(scores), torch.tensor(relevant), torch.tensor(ranks), torch.tensor(valid), cut=8)
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

    from hardneg.dense.encode import encode_rows
    from hardneg.dense.model import BiEncoder, ModelSpec
    from hardneg.config import validate_params
    from hardneg.dense.tokenized import TokenizedTexts
    from hardneg.dense.tokenizer import load_tokenizer
    from hardneg.dense.train import train_run
    from hardneg.index import build_index, save_index
    from tests.dense_fixtures import TINY_MODEL, build_tiny

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
