"""Gradient caching (``params.train.grad_cache_chunk``): every method that declares it trains with the gradient of
its uncached step, whatever the chunk size; dropout replays the masks of the forward pass; the other methods
reject the key."""

import copy

import numpy as np
import pyarrow as pa
import pytest
import torch

from hardneg import methods
from hardneg.dense.backbone import ModelSpec
from hardneg.dense.data import TrainQueries
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts, cap_rows
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.errors import ConfigError
from hardneg.io import artifacts
from hardneg.pipeline.config import validate_config, validate_params
from tests.support.configs import DENSE_CONFIG
from tests.support.dense import TINY_MODEL
from tests.support.training import build_tiny_with_hardnegs

CACHED = ["abs", "ance", "inbatch", "randneg", "star", "static_hn", "tct", "warmup"]
NO_DROPOUT = {**TINY_MODEL, "num_hidden_layers": 2, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def test_the_methods_with_a_loss_over_in_batch_documents_declare_it():
    assert [name for name, method in methods.methods().items() if method.grad_cache] == CACHED


def test_cap_rows_cuts_long_chunks_only():
    chunks = [np.arange(10), np.arange(10, 13)]
    assert [c.tolist() for c in cap_rows(chunks, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9], [10, 11, 12]]
    assert cap_rows(chunks, None) is chunks
    with pytest.raises(ValueError):
        cap_rows(chunks, 0)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("grad_cache")
    tiny = build_tiny_with_hardnegs(root)
    queries, corpus = TokenizedTexts(tiny["cache"], "queries_train"), TokenizedTexts(tiny["cache"], "corpus")
    rng = np.random.default_rng(0)
    picks = np.stack([rng.choice(len(corpus.row_ids), 30, replace=False) for _ in queries.row_ids])
    ranking = pa.table({"qid": np.repeat(queries.row_ids, 30), "docid": np.asarray(corpus.row_ids)[picks.ravel()],
                        "rank": np.tile(np.arange(1, 31, dtype=np.int32), len(queries.row_ids)),
                        "score": np.tile(np.linspace(1, 0, 30, dtype=np.float32), len(queries.row_ids))})
    artifacts.write_table(ranking, artifacts.RANKING, root / "ranking.parquet")
    from hardneg.dense.maxsim import ColBERT

    teacher_spec = ModelSpec.from_params(validate_params({"model": {"builtin": TINY_MODEL, "doc_max_length": 64,
                                                                    "query_max_length": 16}})["model"])
    ColBERT.create(teacher_spec, tokenizer=load_tokenizer(tiny["tokenizer"]), dim=16, seed=5).save(root / "teacher")
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    return {**tiny, "queries": queries, "corpus": corpus, "ranking": root / "ranking.parquet",
            "teacher": root / "teacher", "train": TrainQueries(qrels, queries.row_ids, corpus.row_ids)}


def _step(tiny, name: str, chunk: int):
    """``name``'s training step as the training job builds it, with ``grad_cache_chunk`` = ``chunk``."""
    params = validate_params({"model": {"builtin": NO_DROPOUT, "doc_max_length": 64, "query_max_length": 16},
                              "train": {"batch_size": 24, "grad_cache_chunk": chunk, "temperature": 0.5},
                              "negatives": {"per_query": 2, "depth": 30}}, method=name)
    inputs = {"negatives": tiny["ranking"], "hard_negatives": tiny["hardnegs"], "teacher": tiny["teacher"]}
    ctx = methods.StepContext(resolved={"name": name, "method": name, "seed": 7, "params": params},
                              train=tiny["train"], query_texts=tiny["queries"], doc_texts=tiny["corpus"],
                              inputs={k: str(v) for k, v in inputs.items()}, tokenizer=load_tokenizer(tiny["tokenizer"]))
    return methods.get(name).build_step(ctx)


def _model(tiny, dtype=torch.float32, dropout=False) -> BiEncoder:
    builtin = TINY_MODEL if dropout else NO_DROPOUT
    spec = ModelSpec.from_params(validate_params({"model": {"builtin": {**builtin, "num_hidden_layers": 2},
                                                            "doc_max_length": 64, "query_max_length": 16}})["model"])
    tokenizer = load_tokenizer(tiny["tokenizer"])
    return BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, max_length=64,
                            seed=3).to(dtype)


def _gradient(model, step, batch) -> tuple[float, dict]:
    model.zero_grad()
    loss, _ = step.loss(model, batch, torch.device("cpu"))
    loss.backward()
    return float(loss.detach()), {n: p.grad.double().clone() for n, p in model.named_parameters() if p.grad is not None}


def _distance(a: dict, b: dict) -> float:
    """Relative distance of two gradients (all parameters as one vector)."""
    assert a.keys() == b.keys()
    return float(sum(((a[n] - b[n]) ** 2).sum() for n in a).sqrt() / sum((b[n] ** 2).sum() for n in b).sqrt())


@pytest.mark.parametrize("name", CACHED)
def test_a_cached_step_has_the_gradient_of_the_uncached_one(tiny, name):
    """The same batch, the loss and gradient with gradient caching (chunks of 5 texts: not a multiple of the
    chunk plan's granularity, so chunks are cut) and without, in float64 (the same arithmetic: equal to 1e-9)
    and in float32 as trained (equal to 1e-5, relative)."""
    uncached, cached = _step(tiny, name, 0), _step(tiny, name, 5)
    batch = uncached.make_batch(np.arange(24), np.random.default_rng(1))
    same = cached.make_batch(np.arange(24), np.random.default_rng(1))
    assert np.array_equal(batch.doc_rows, same.doc_rows)
    parts = tiny["corpus"].chunked(batch.doc_rows, grad_cache_rows=5).parts
    assert len(batch.doc_rows) >= 24 and max(len(p["input_ids"]) for p in parts) == 5
    for dtype, tolerance in ((torch.float64, 1e-9), (torch.float32, 1e-5)):
        model = _model(tiny, dtype).train()
        loss, gradient = _gradient(model, uncached, batch)
        cached_loss, cached_gradient = _gradient(model, cached, batch)
        assert cached_loss == pytest.approx(loss, rel=tolerance)
        assert _distance(cached_gradient, gradient) <= tolerance, dtype
        assert sum(float(g.abs().sum()) for g in gradient.values()) > 0


def test_dropout_masks_are_replayed_in_the_backward_pass(tiny):
    """With dropout on, the recomputed chunks draw the masks of their forward pass: the gradient is the one of
    the same chunks kept in memory (and the random state after the step is the same)."""
    model = _model(tiny, torch.float64, dropout=True).train()
    rows = np.arange(40)
    results = []
    for recompute in (False, True):
        batch = tiny["corpus"].chunked(rows, grad_cache_rows=8)
        batch.recompute = recompute
        torch.manual_seed(0)
        model.zero_grad()
        vectors = model.encode_docs(batch)
        (vectors.sin().sum()).backward()
        results.append((vectors.detach(), {n: p.grad.clone() for n, p in model.named_parameters()
                                           if p.grad is not None}, torch.rand(1)))
    (kept, kept_grad, kept_next), (cached, cached_grad, cached_next) = results
    assert torch.equal(kept, cached) and torch.equal(kept_next, cached_next)
    assert _distance(cached_grad, kept_grad) <= 1e-12
    torch.manual_seed(1)  # other masks give another gradient: the check above could fail
    model.zero_grad()
    model.encode_docs(tiny["corpus"].chunked(rows, grad_cache_rows=8)).sin().sum().backward()
    other = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    assert _distance(other, kept_grad) > 1e-6


def test_the_cache_keeps_no_activations_of_a_chunk(tiny):
    """What autograd holds after the forward pass: with caching, the chunks' inputs and vectors only."""
    model = _model(tiny).train()
    rows = np.arange(64)
    saved = {}
    for recompute in (False, True):
        batch = tiny["corpus"].chunked(rows, grad_cache_rows=8)
        batch.recompute = recompute
        sizes = []

        def pack(tensor, sizes=sizes):
            sizes.append(tensor.numel() * tensor.element_size())
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            model.encode_docs(batch)
        saved[recompute] = sum(sizes)
    assert saved[True] < saved[False] / 10


def test_methods_without_in_batch_documents_reject_the_key():
    config = copy.deepcopy(DENSE_CONFIG)
    config["runs"]["adore_x"] = {"method": "adore", "inputs": {"docs": "star"},
                                 "params": {"train": {"grad_cache_chunk": 8}}}
    config["runs"]["star"]["params"] = {**config["runs"]["star"]["params"], "train": {"grad_cache_chunk": 8}}
    validate_config(copy.deepcopy({**config, "runs": {k: v for k, v in config["runs"].items() if k != "adore_x"}}))
    with pytest.raises(ConfigError, match=r"runs\.adore_x\.params\.train\.grad_cache_chunk"):
        validate_config(config)
