"""The ColBERT teacher: MaxSim, the marked input format, persistence, chunked batches, re-ranking, and its scores
of a candidate pool as a teacher (the method's rerank hook made a pair scorer)."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import torch

from hardneg.dense.tokenizer import load_tokenizer
from hardneg.errors import DataError
from hardneg.io import artifacts
from hardneg.methods.colbert import METHOD
from hardneg.dense.maxsim import ColBERT, is_colbert, maxsim, maxsim_pairs, rerank
from hardneg.mining.pool_scores import rerank_scorer, score_pool
from tests.support.dense import tiny_reranker
from tests.support.rankings import check_reranked, shuffled_ranking

SEED = 3
DIM = 16


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_reranker(tmp_path_factory.mktemp("colbert"),
                         lambda spec, tokenizer: ColBERT.create(spec, tokenizer=tokenizer, dim=DIM, seed=SEED))


def _direct(q, d, d_mask):
    sim = torch.einsum("bid,njd->bnij", q, d).masked_fill(~d_mask[None, :, None, :], float("-inf"))
    return sim.max(-1).values.sum(-1)


# ----------------------------------------------------------------------------------------------------- MaxSim
def test_maxsim_by_hand():
    q = torch.tensor([[[1., 0.], [0., 1.]],
                      [[1., 1.], [-1., 0.]]])
    d = torch.tensor([[[2., 1.], [-1., 3.], [9., 9.]],  # the padded [9, 9] would win every max
                      [[-1., -2.], [-3., -1.], [0., 0.]]])  # all negative: a 0-filled padding would win
    mask = torch.tensor([[True, True, False], [True, True, False]])
    # query 0: doc 0: max(2, -1) + max(1, 3) = 5; doc 1: max(-1, -3) + max(-2, -1) = -2
    # query 1: doc 0: max(3, 2) + max(-2, 1) = 4; doc 1: max(-3, -4) + max(1, 3) = 0
    expected = torch.tensor([[5., -2.], [4., 0.]])
    assert torch.equal(maxsim(q, d, mask), expected)
    assert torch.equal(maxsim(q, d, mask, block_elements=1), expected)  # one query and one document a block
    assert torch.equal(maxsim_pairs(q, d, mask), torch.tensor([5., 0.]))
    assert torch.equal(maxsim_pairs(q, d, mask, block_elements=1), torch.tensor([5., 0.]))


def test_blocked_maxsim_equals_direct_with_gradients():
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(5, 4, 8, generator=generator, dtype=torch.float64, requires_grad=True)
    d = torch.randn(7, 6, 8, generator=generator, dtype=torch.float64, requires_grad=True)
    mask = torch.rand(7, 6, generator=generator) < 0.6
    mask[:, 0] = True
    direct = _direct(q, d, mask)
    weights = torch.randn(5, 7, generator=generator, dtype=torch.float64)
    grad_q, grad_d = torch.autograd.grad((direct * weights).sum(), (q, d))
    for block in (50, 24 * 7 * 2, 10 ** 9):  # 1 query x 2 documents a block, 2 queries x all, one block
        blocked = maxsim(q, d, mask, block_elements=block)
        assert torch.allclose(blocked, direct, atol=1e-12)
        bq, bd = torch.autograd.grad((blocked * weights).sum(), (q, d))
        assert torch.allclose(bq, grad_q, atol=1e-12) and torch.allclose(bd, grad_d, atol=1e-12)
    square = torch.randn(7, 4, 8, generator=generator)
    assert torch.allclose(maxsim_pairs(square, d.detach().float(), mask, block_elements=30),
                          torch.diagonal(maxsim(square, d.detach().float(), mask)), atol=1e-6)


# ---------------------------------------------------------------------------------------------------- markers
def test_markers_and_token_vectors(tiny):
    model, tokenizer, queries, corpus = tiny["model"], tiny["tok"], tiny["queries"], tiny["corpus"]
    markers = model.markers
    vocab = tokenizer.get_vocab()
    assert (markers.query, markers.doc) == (vocab["[Q]"], vocab["[D]"])  # the WordPiece has no [unused0]
    assert model.encoder.get_input_embeddings().num_embeddings == len(tokenizer)
    assert markers.query_length == 17

    batch = queries.batch(np.arange(4))
    lengths = queries.lengths[:4]
    ids, mask = markers.apply(batch["input_ids"], batch["attention_mask"], "query")
    assert ids.shape == (4, 17) and bool(mask.all())
    assert bool((ids[:, 0] == tokenizer.cls_token_id).all()) and bool((ids[:, 1] == markers.query).all())
    for row, length in enumerate(lengths):
        assert ids[row, 2:length + 1].tolist() == batch["input_ids"][row, 1:length].tolist()
        assert set(ids[row, length + 1:].tolist()) == {tokenizer.mask_token_id}
    with torch.no_grad():
        vectors, vmask = model.encode(batch["input_ids"], batch["attention_mask"], "query")
    assert vectors.shape == (4, 17, DIM) and bool(vmask.all())
    assert torch.allclose(vectors.norm(dim=-1), torch.ones(4, 17), atol=1e-5)

    rows = np.arange(6)
    batch = corpus.batch(rows)
    ids, mask = markers.apply(batch["input_ids"], batch["attention_mask"], "doc")
    assert bool((ids[:, 1] == markers.doc).all()) and mask.sum(1).tolist() == (corpus.lengths[rows] + 1).tolist()
    with torch.no_grad():
        vectors, vmask = model.encode(batch["input_ids"], batch["attention_mask"], "doc")
    assert vectors.shape[1] == batch["input_ids"].shape[1] + 1
    assert vmask.sum(1).tolist() == (corpus.lengths[rows] + 1).tolist()
    assert float(vectors[~vmask].abs().sum()) == 0.0


# ---------------------------------------------------------------------------------------------- persistence
def test_save_load_and_seed(tiny, tmp_path):
    from transformers import AutoModel, BertModel

    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    folder = tmp_path / "teacher"
    model.save(folder, tokenizer=tiny["tok"])
    assert is_colbert(folder) and not is_colbert(tiny["cache"])
    loaded = ColBERT.load(folder).eval()
    assert loaded.markers == model.markers and loaded.dim == DIM
    with torch.no_grad():
        expected = model.score_all(queries.batch(np.arange(3)), corpus.batch(np.arange(10)))
        assert torch.equal(loaded.score_all(queries.batch(np.arange(3)), corpus.batch(np.arange(10))), expected)
    backbone = AutoModel.from_pretrained(folder)
    assert isinstance(backbone, BertModel)
    assert torch.equal(backbone.get_input_embeddings().weight, model.encoder.get_input_embeddings().weight)
    assert "[Q]" in load_tokenizer(folder).get_vocab()

    def fresh(seed):
        return ColBERT.create(tiny["spec"], tokenizer=load_tokenizer(tiny["tokenizer"]), dim=DIM, seed=seed)

    same, other = fresh(SEED).state_dict(), fresh(SEED + 1).state_dict()
    reference = model.state_dict()
    assert same.keys() == reference.keys()
    assert all(torch.equal(same[k], reference[k]) for k in reference)
    assert not torch.equal(other["linear.weight"], reference["linear.weight"])


def test_chunked_and_dict_batches_score_the_same(tiny):
    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    rows = np.arange(0, 200, 5)
    chunks = corpus.chunked(rows, overhead=0)
    assert len(chunks.parts) > 1 and len({p["input_ids"].shape[1] for p in chunks.parts}) > 1
    with torch.no_grad():
        by_block = model.score_all(queries.batch(np.arange(6)), corpus.batch(rows))
        by_chunks = model.score_all(queries.chunked(np.arange(6), granularity=2, overhead=0), chunks)
        none, (d, d_mask) = model(None, chunks)
    assert none is None and torch.allclose(by_chunks, by_block, atol=1e-5, rtol=0)
    assert d_mask.sum(1).tolist() == (corpus.lengths[rows] + 1).tolist()  # rows back in the order given


# ------------------------------------------------------------------------------------------------ re-ranking
def test_rerank_scores_top_depth(tiny):
    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    qids = [queries.row_ids[i] for i in (5, 1, 3, 0, 2)]  # not in cache order
    ranking = shuffled_ranking(corpus, qids, missing="not-in-cache")
    out = rerank(model, queries, corpus, ranking, depth=4, batch_size=2)
    query_row = {q: i for i, q in enumerate(queries.row_ids)}
    doc_row = {d: i for i, d in enumerate(corpus.row_ids)}

    def direct(qid, docids):
        d_rows = np.asarray([doc_row[d] for d in docids])
        with torch.no_grad():
            q, _ = model.encode_batch(queries.batch(np.full(len(d_rows), query_row[qid])), "query")
            d, d_mask = model.encode_batch(corpus.batch(d_rows), "doc")
            return maxsim_pairs(q, d, d_mask).numpy()

    check_reranked(out, ranking, qids, 4, direct, atol=1e-4)
    assert len(out) == 5 * 4 - 1  # the missing document is dropped, not replaced by the 5th
    assert not model.training
    # queries re-ranked a group at a time (each group's candidates encoded once) score as in one group
    grouped = rerank(model, queries, corpus, ranking, depth=4, batch_size=2, query_group=2)
    assert grouped["docid"].to_pylist() == out["docid"].to_pylist()
    assert np.allclose(grouped["score"].to_numpy(), out["score"].to_numpy(), atol=1e-5)

    with pytest.raises(DataError, match="nope"):
        rerank(model, queries, corpus, shuffled_ranking(corpus, [qids[0], "nope"]), depth=4)


def test_a_saved_teacher_scores_a_pool_and_its_positives_by_maxsim(tiny, tmp_path):
    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    model.save(tmp_path / "teacher", tokenizer=tiny["tok"])
    qids = [queries.row_ids[i] for i in (4, 0)]
    ranking = shuffled_ranking(corpus, qids, missing="not-in-cache")
    positive = ranking.filter(pc.equal(ranking["rank"], 2)).to_pylist()[1]  # the second query's rank 2
    qrels = pa.table({"qid": [positive["qid"]], "docid": [positive["docid"]], "relevance": [1]},
                     schema=artifacts.QRELS.schema)
    candidates, positives = score_pool(rerank_scorer(METHOD.rerank), tmp_path / "teacher", queries, corpus, ranking,
                                       qrels, depth=5, batch_size=2, device="cpu")
    assert candidates.num_rows == 2 * 5 - 1 and positive["docid"] not in candidates["docid"].to_pylist()
    with torch.no_grad():
        for table in (candidates, positives):
            q_rows = [queries.row_ids.index(q) for q in table["qid"].to_pylist()]
            d_rows = [corpus.row_ids.index(d) if d in corpus.row_ids else 0 for d in table["docid"].to_pylist()]
            q, _ = model.encode_batch(queries.batch(np.asarray(q_rows)), "query")
            d, d_mask = model.encode_batch(corpus.batch(np.asarray(d_rows)), "doc")
            expected = maxsim_pairs(q, d, d_mask).numpy()
            missing = np.asarray([d == "not-in-cache" for d in table["docid"].to_pylist()])
            got = table["score"].to_numpy(zero_copy_only=False)
            np.testing.assert_allclose(got[~missing], expected[~missing], atol=1e-4)
            assert np.isnan(got[missing]).all()  # a document the cache left out has no teacher score
    assert np.isnan(candidates["score"].to_numpy(zero_copy_only=False)).sum() == 1


class _Favouring(ColBERT):
    """Every query token is e0; the favoured document's tokens are e0, every other document's -e0: the favoured
    one scores the query length, the others tie at minus that."""

    favoured: list

    def encode(self, input_ids, attention_mask, side):
        vectors, mask = super().encode(input_ids, attention_mask, side)
        unit = torch.zeros(self.dim)
        unit[0] = 1.0
        if side == "query":
            return unit.expand_as(vectors).clone(), mask
        n = len(self.favoured)
        hit = (attention_mask.sum(1) == n) & (input_ids[:, :n] == torch.tensor(self.favoured)).all(1)
        sign = torch.where(hit, 1.0, -1.0)
        return sign[:, None, None] * unit * mask[..., None], mask


def test_rerank_puts_the_favoured_document_first_and_keeps_rank_order_in_ties(tiny):
    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    ranking = shuffled_ranking(corpus, [queries.row_ids[0]])
    by_rank = ranking.sort_by("rank")["docid"].to_pylist()
    favoured = by_rank[3]  # rank 4
    row = corpus.row_ids.index(favoured)
    stub = _Favouring(model.encoder, model.markers, dim=DIM)
    stub.favoured = corpus.ids[row, :corpus.lengths[row]].tolist()
    out = rerank(stub, queries, corpus, ranking, depth=5)
    assert out["docid"].to_pylist() == [favoured] + [d for d in by_rank[:5] if d != favoured]
    assert out["score"].to_pylist() == [17.0] + [-17.0] * 4
