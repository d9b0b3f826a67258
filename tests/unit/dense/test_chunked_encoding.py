"""Training encodes a batch's texts in length-homogeneous chunks: the plan, and a loss and gradients equal to
those of one block padded to the longest text."""

import numpy as np
import pytest
import torch

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.data import RandomNegatives, TrainQueries
from hardneg.dense.losses import LOSSES
from hardneg.dense.steps import ContrastiveMethod
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts, build_cache, length_chunks
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.io import artifacts
from hardneg.pipeline.config import validate_params
from tests.support.dense import build_tiny

SEED = 11


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny data with documents up to 160 tokens, so that few are cut and lengths vary."""
    tiny = build_tiny(tmp_path_factory.mktemp("chunked"))
    data, cache = tiny["data"], tiny["cache"].with_name("cache160")
    build_cache(tiny["tokenizer"], data / "corpus.parquet", {"train": data / "queries" / "train.parquet"}, cache,
                doc_max_length=160, query_max_length=16)
    return {**tiny, "cache": cache}


def _padded(lengths, chunks) -> int:
    return sum(len(c) * int(np.max(lengths[c])) for c in chunks)


def test_plan_covers_every_text_once_in_sorted_runs():
    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 9, 64, 130):
        lengths = rng.integers(3, 500, n)
        chunks = length_chunks(lengths, granularity=8, overhead=256)
        order = np.concatenate(chunks)
        assert sorted(order.tolist()) == list(range(n))
        assert all(len(c) % 8 == 0 for c in chunks[:-1])
        assert np.all(np.diff(lengths[order]) <= 0)  # longest first, so each chunk is a run of similar lengths
        assert _padded(lengths, chunks) <= n * lengths.max()  # never more padding than one block
        assert [c.tolist() for c in chunks] == [c.tolist() for c in length_chunks(lengths, granularity=8, overhead=256)]


def test_plan_is_optimal_for_its_cost():
    """Exhaustive check on a small case: no cut of the sorted texts into runs of multiples of 8 costs less."""
    lengths = np.array([500, 480, 470, 450, 300, 290, 280, 270, 120, 110, 100, 90, 60, 50, 40, 30,
                        500, 20, 15, 10, 9, 8, 7, 6])
    overhead = 100
    chunks = length_chunks(lengths, granularity=8, overhead=overhead)
    cost = _padded(lengths, chunks) + overhead * len(chunks)
    widths = np.sort(lengths)[::-1]
    plans = [(0, 24), (0, 8, 24), (0, 16, 24), (0, 8, 16, 24)]
    costs = [sum((b - a) * widths[a] + overhead for a, b in zip(p, p[1:])) for p in plans]
    assert cost == min(costs)
    # with lengths this varied, chunks beat one padded block by far
    assert _padded(lengths, chunks) < 0.6 * len(lengths) * lengths.max()


def test_overhead_trades_chunks_for_padding():
    lengths = np.arange(1, 65)[::-1] * 4
    many = length_chunks(lengths, granularity=8, overhead=0)
    one = length_chunks(lengths, granularity=8, overhead=10 ** 9)
    assert len(many) == 8 and len(one) == 1


def _step(model, method, batch, queries, corpus, chunked: bool):
    """Loss and gradients of one STAR step (RankNet over every query against every batch document): through the
    method itself (chunks), or by hand over one block padded to the longest text. Scores are in the encoder's
    precision (float32 at least) either way, as in the method."""
    model.zero_grad()
    if chunked:
        loss, _ = method.loss(model, batch, torch.device("cpu"))
    else:
        q = model.encode_queries(queries.batch(batch.query_rows))
        d = model.encode_docs(corpus.batch(batch.doc_rows))
        loss = LOSSES["ranknet"](q @ d.T, torch.from_numpy(batch.positive), torch.from_numpy(batch.relevant))
    loss.backward()
    return float(loss.detach()), {n: p.grad.double().clone() for n, p in model.named_parameters() if p.grad is not None}


def _distance(a: dict, b: dict) -> float:
    """Relative distance of two gradients (all parameters as one vector)."""
    assert a.keys() == b.keys()
    return float(sum(((a[n] - b[n]) ** 2).sum() for n in a).sqrt() / sum((b[n] ** 2).sum() for n in b).sqrt())


def test_chunked_loss_and_gradients_equal_one_padded_block(tiny):
    """Chunks give the loss, gradients and vectors of one padded block, with dropout off (its masks are drawn per
    layout). With a float64 encoder the two agree to 1e-9 for every parameter, so the arithmetic is the same; in
    float32, as trained, the loss and vectors agree to 1e-5 and the gradients are as close to the float64
    gradients as the padded block's own (a tiny random model has gradients that cancel to nearly zero, such as
    the attention keys' bias, where float32 rounding of any layout shows)."""
    params = validate_params({"model": {"builtin": {"hidden_size": 32, "num_hidden_layers": 2,
                                                    "num_attention_heads": 2, "intermediate_size": 64},
                                        "doc_max_length": 160, "query_max_length": 16, "pooling": "cls",
                                        "normalize": False, "projection_dim": 32},
                              "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.001}})
    queries, corpus = TokenizedTexts(tiny["cache"], "queries_train"), TokenizedTexts(tiny["cache"], "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    data = TrainQueries(qrels, queries.row_ids, corpus.row_ids)
    tokenizer = load_tokenizer(tiny["tokenizer"])
    method = ContrastiveMethod(data, queries, corpus, negatives=RandomNegatives(data), per_query=3,
                               loss="ranknet", temperature=1.0)
    batch = method.make_batch(np.arange(32), np.random.default_rng(3))
    chunks = corpus.chunked(batch.doc_rows)
    lengths = corpus.lengths[batch.doc_rows]
    assert len(chunks.parts) > 1 and len(np.unique(lengths)) > 4  # the comparison below means something
    assert sum(p["input_ids"].numel() for p in chunks.parts) < len(lengths) * lengths.max()

    model = BiEncoder.create(ModelSpec.from_params(params["model"]), vocab_size=len(tokenizer),
                             pad_token_id=tokenizer.pad_token_id, max_length=160, seed=SEED).eval()
    loss32, chunked32 = _step(model, method, batch, queries, corpus, chunked=True)
    block_loss32, block32 = _step(model, method, batch, queries, corpus, chunked=False)
    with torch.no_grad():
        by_chunks, by_block = model.encode_docs(chunks), model.encode_docs(corpus.batch(batch.doc_rows))
    model.double()
    loss64, chunked64 = _step(model, method, batch, queries, corpus, chunked=True)
    block_loss64, block64 = _step(model, method, batch, queries, corpus, chunked=False)

    assert abs(loss64 - block_loss64) <= 1e-12 * abs(block_loss64)
    assert _distance(chunked64, block64) <= 1e-10
    for name, grad in block64.items():
        assert float((chunked64[name] - grad).abs().max()) <= 1e-9 * float(grad.abs().max()) + 1e-18, name
    assert abs(loss32 - block_loss32) <= 1e-5 * abs(block_loss32)
    assert float((by_chunks - by_block).abs().max()) <= 1e-5 * float(by_block.abs().max())  # in the batch's order
    assert _distance(chunked32, block64) <= 2 * _distance(block32, block64) + 1e-6


class _FixedVectors(torch.nn.Module):
    """A stand-in encoder returning fixed float32 vectors of large inner products (as a fresh model's LayerNorm
    outputs give), to look at the scoring alone."""

    def __init__(self, queries: int, docs: int, dim: int = 64):
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.q = torch.nn.Parameter(4 + torch.randn(queries, dim, generator=generator))
        self.d = torch.nn.Parameter(4 + torch.randn(docs, dim, generator=generator))

    def forward(self, queries=None, docs=None):
        return self.q, self.d


def test_scores_stay_float32_under_bf16_autocast(tiny):
    """Scores near 1,000 are 4 apart in bf16: under autocast the method still scores in float32, so the loss and
    gradient are those of float32 scoring (STAR's step, and ADORE's scoring after the search)."""
    from hardneg.dense.precision import autocast
    from hardneg.methods.adore.step import post_search_loss

    queries, corpus = TokenizedTexts(tiny["cache"], "queries_train"), TokenizedTexts(tiny["cache"], "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    data = TrainQueries(qrels, queries.row_ids, corpus.row_ids)
    method = ContrastiveMethod(data, queries, corpus, negatives=RandomNegatives(data), per_query=1,
                               loss="ranknet", temperature=1.0)
    batch = method.make_batch(np.arange(16), np.random.default_rng(0))
    model = _FixedVectors(16, 32)
    results = []
    for precision in ("fp32", "bf16"):
        model.zero_grad()
        with autocast(torch.device("cpu"), precision):
            loss, _ = method.loss(model, batch, torch.device("cpu"))
        loss.backward()
        results.append((float(loss.detach()), model.q.grad.clone()))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-6)
    assert torch.allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-8)

    rng = np.random.default_rng(1)
    docs = (4 + rng.standard_normal((500, 64))).astype(np.float32)
    retrieved = np.stack([rng.permutation(500)[:50] for _ in range(8)])
    relevant = [retrieved[i, [3 * i]] for i in range(8)]
    values = []
    for precision in ("fp32", "bf16"):
        q = torch.from_numpy((4 + rng.standard_normal((8, 64))).astype(np.float32)) if not values else values[0][2]
        q = q.detach().requires_grad_()
        with autocast(torch.device("cpu"), precision):
            per_query, _ = post_search_loss(q, retrieved, relevant, docs, cut=50, weighted=True, normalize="pairs",
                                            append_missing="when_none")
        per_query.mean().backward()
        values.append((float(per_query.mean().detach()), q.grad.clone(), q.detach()))
    assert values[0][0] == pytest.approx(values[1][0], rel=1e-6)
    assert torch.allclose(values[0][1], values[1][1], rtol=1e-5, atol=1e-9)


def test_a_chunk_costs_more_on_a_gpu():
    from hardneg.dense.tokenized import CHUNK_OVERHEAD_TOKENS, GPU_CHUNK_OVERHEAD_TOKENS, chunk_overhead

    assert chunk_overhead(torch.device("cpu")) == CHUNK_OVERHEAD_TOKENS
    assert chunk_overhead("cuda:0") == chunk_overhead(torch.device("cuda")) == GPU_CHUNK_OVERHEAD_TOKENS
    lengths = np.concatenate([np.full(32, 500), np.full(32, 60)])
    assert len(length_chunks(lengths, overhead=chunk_overhead("cpu"))) == 2
    assert len(length_chunks(lengths, overhead=chunk_overhead("cuda"))) == 2  # 32 × 440 tokens of padding saved
    assert len(length_chunks(np.concatenate([np.full(32, 200), np.full(32, 100)]), overhead=chunk_overhead("cuda"))) == 1
