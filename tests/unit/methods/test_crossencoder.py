"""The cross-encoder: joined pairs, the model's shapes, persistence, training steps with both losses, pair scoring
(library and stage) and re-ranking."""

import numpy as np
import pyarrow as pa
import pytest
import torch

from hardneg import methods
from hardneg.dense.data import RandomNegatives, TrainQueries
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.errors import ConfigError, DataError
from hardneg.io import artifacts
from hardneg.methods.crossencoder import new_model, scoring
from hardneg.methods.crossencoder.model import (CrossEncoder, exact_matches, is_crossencoder, pair_batch, pair_inputs,
                                                soft_matches)
from hardneg.methods.crossencoder.scoring import rerank, score_pairs, score_pairs_stage
from hardneg.methods.crossencoder.step import CrossEncoderStep
from hardneg.pipeline.config import validate_config
from tests.support.dense import tiny_reranker
from tests.support.rankings import check_reranked, shuffled_ranking
from tests.support.training import fit_batch

SEED = 3


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_reranker(tmp_path_factory.mktemp("crossencoder"),
                         lambda spec, tokenizer: CrossEncoder.create(spec, tokenizer=tokenizer, seed=SEED))


def _row(texts, row):
    return texts.ids[row, :texts.lengths[row]].tolist()


# --------------------------------------------------------------------------------------------------- pairs
def test_a_pair_is_the_query_row_then_the_document_row_without_its_cls(tiny):
    queries, corpus, tokenizer = tiny["queries"], tiny["corpus"], tiny["tok"]
    q_rows, d_rows = np.array([0, 3, 3]), np.array([5, 0, 7])
    block = pair_inputs(queries, corpus, q_rows, d_rows, max_length=512)
    lengths = queries.lengths[q_rows] + corpus.lengths[d_rows] - 1
    assert block["input_ids"].shape == (3, lengths.max())
    assert block["attention_mask"].sum(1).tolist() == lengths.tolist()
    for i, (q, d) in enumerate(zip(q_rows, d_rows)):
        query, doc = _row(queries, q), _row(corpus, d)
        n = len(query) + len(doc) - 1
        assert block["input_ids"][i, :n].tolist() == query + doc[1:]
        assert set(block["input_ids"][i, n:].tolist()) <= {corpus.pad_token_id}
        assert block["token_type_ids"][i].tolist() == [0] * len(query) + [1] * (len(doc) - 1) + [0] * (
            block["input_ids"].shape[1] - n)
        assert query[0] == tokenizer.cls_token_id and query[-1] == doc[-1] == tokenizer.sep_token_id
    # past the encoder's positions the document is cut, the query kept whole, and [SEP] still ends the pair
    cut = pair_inputs(queries, corpus, q_rows, d_rows, max_length=24)
    assert cut["input_ids"].shape == (3, 24) and bool(cut["attention_mask"].all())
    for i, q in enumerate(q_rows):
        query = _row(queries, q)
        assert cut["input_ids"][i, :len(query)].tolist() == query
        assert cut["input_ids"][i, len(query):23].tolist() == _row(corpus, d_rows[i])[1:24 - len(query)]
        assert int(cut["input_ids"][i, 23]) == tokenizer.sep_token_id


def test_shapes_and_length_chunked_batches_score_as_one_block(tiny):
    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    q_rows, d_rows = np.arange(40) % 7, np.arange(0, 200, 5)
    batch = pair_batch(queries, corpus, q_rows, d_rows, max_length=model.max_length, overhead=0)
    assert len(batch) == 40 and len(batch.parts) > 1
    assert len({part["input_ids"].shape[1] for part in batch.parts}) > 1
    with torch.no_grad():
        chunked = model(batch)
        block = model(pair_inputs(queries, corpus, q_rows, d_rows, max_length=model.max_length))
    assert chunked.shape == block.shape == (40,)
    assert torch.allclose(chunked, block, atol=1e-5)
    assert model.max_length == 512 and model.head.out_features == 1
    assert model.encoder.pooler is None  # [CLS]'s hidden state feeds the head, not BERT's pooler


# ----------------------------------------------------------------------------------------------- persistence
def test_save_load_round_trip_gives_identical_scores(tiny, tmp_path):
    from transformers import AutoModel, BertModel

    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    folder = tmp_path / "ce"
    model.save(folder, tokenizer=tiny["tok"])
    assert is_crossencoder(folder) and not is_crossencoder(tiny["cache"])
    loaded = CrossEncoder.load(folder).eval()
    assert (loaded.query_max_length, loaded.doc_max_length) == (16, 64)
    block = pair_inputs(queries, corpus, np.arange(6), np.arange(10, 16), max_length=512)
    with torch.no_grad():
        assert torch.equal(loaded(block), model(block))
    assert isinstance(AutoModel.from_pretrained(folder), BertModel)  # the encoder is a Hugging Face folder
    assert load_tokenizer(folder).get_vocab() == tiny["tok"].get_vocab()

    def fresh(seed):
        return CrossEncoder.create(tiny["spec"], tokenizer=tiny["tok"], seed=seed).state_dict()

    same, other, reference = fresh(SEED), fresh(SEED + 1), model.state_dict()
    assert same.keys() == reference.keys() and all(torch.equal(same[k], reference[k]) for k in reference)
    assert not torch.equal(other["head.weight"], reference["head.weight"])


def test_exact_matches_mark_the_tokens_both_texts_share():
    # [CLS]=1 a b [SEP]=2 | c a [SEP] d b b [SEP] pad
    ids = torch.tensor([[1, 5, 6, 2, 7, 5, 2, 8, 6, 6, 2, 0]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0]])
    mask = torch.tensor([[1] * 11 + [0]])
    assert exact_matches(ids, mask, types).tolist() == [[0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0]]
    # a query token found only among the query's own tokens, or only in the padding, is not marked
    ids = torch.tensor([[1, 5, 5, 2, 7, 2, 5]])
    assert exact_matches(ids, torch.tensor([[1, 1, 1, 1, 1, 1, 0]]),
                         torch.tensor([[0, 0, 0, 0, 1, 1, 1]])).tolist() == [[0, 0, 0, 1, 0, 1, 0]]


def test_exact_match_marks_start_at_zero_are_learnt_and_saved(tiny, tmp_path):
    """Zero at first (the same scores as without marks), a gradient once trained, the same scores after a save
    and load, and a continued run must keep them."""
    plain = tiny["model"]
    marked = CrossEncoder.create(tiny["spec"], tokenizer=tiny["tok"], seed=SEED, exact_match=True).eval()
    queries, corpus = tiny["queries"], tiny["corpus"]
    block = pair_inputs(queries, corpus, np.arange(8), np.arange(20, 28), max_length=512)
    assert exact_matches(block["input_ids"], block["attention_mask"], block["token_type_ids"])[:, 1:].sum() > 8
    with torch.no_grad():
        assert torch.equal(marked(block), plain(block))
    marked(block).sum().backward()
    assert marked.match.weight.grad.abs().sum() > 0
    with torch.no_grad():
        marked.match.weight.normal_()
        moved = marked(block)
    assert not torch.allclose(moved, plain(block).detach())
    marked.save(tmp_path / "marked", tokenizer=tiny["tok"])
    loaded = CrossEncoder.load(tmp_path / "marked").eval()
    with torch.no_grad():
        assert torch.equal(loaded(block), moved)
    resolved = {"name": "ce2", "seed": SEED, "params": {"crossencoder": {"exact_match": False, "soft_match": 0}}}
    with pytest.raises(ValueError, match="exact_match: true and soft_match: 0; a run continuing it"):
        new_model(tiny["spec"], tiny["tok"], resolved, str(tmp_path / "marked"))
    resolved["params"]["crossencoder"] = {"exact_match": True, "soft_match": 4}
    with pytest.raises(ValueError, match="this run: exact_match: true, soft_match: 4"):
        new_model(tiny["spec"], tiny["tok"], resolved, str(tmp_path / "marked"))
    plain.save(tmp_path / "plain", tokenizer=tiny["tok"])
    continued = new_model(tiny["spec"], tiny["tok"], resolved, str(tmp_path / "plain"))
    assert (continued.exact_match, continued.soft_match, continued.match.weight.shape[0]) == (True, 4, 6)


def test_soft_matches_bin_the_cosine_to_the_nearest_content_token_of_the_other_text():
    # [CLS]=1 a=5 b=6 [SEP]=2 | c=7 a=5 [SEP] d=8 [SEP] pad
    ids = torch.tensor([[1, 5, 6, 2, 7, 5, 2, 8, 2, 0]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1, 1, 0]])
    mask = torch.tensor([[1] * 9 + [0]])
    vectors = torch.zeros(10, 3)
    vectors[1] = vectors[2] = torch.tensor([1.0, 1.0, 1.0])  # [CLS] and [SEP] near everything: never read
    vectors[5] = torch.tensor([1.0, 0.0, 0.0])
    vectors[6] = torch.tensor([0.0, 1.0, 0.0])
    vectors[7] = torch.tensor([0.6, 0.75, 0.0])  # cos 0.62 to a, 0.78 to b
    vectors[8] = torch.tensor([0.0, -1.0, 0.1])  # below 0 to a and b
    bins = soft_matches(ids, mask, types, vectors, 10)
    # a: itself in the document (cos 1, last bin); b: c at 0.78; c: b at 0.78; the document's a: 1; d: none
    assert bins.tolist() == [[0, 10, 8, 0, 8, 10, 0, 0, 0, 0]]
    assert soft_matches(ids, mask, types, vectors, 4).tolist() == [[0, 4, 4, 0, 4, 4, 0, 0, 0, 0]]
    # marks: a shared token is exact (row 1), others are row 1 + bin; without exact marks, shared is the last bin
    assert CrossEncoder._mark_rows(bins, exact_matches(ids, mask, types)).tolist() == [
        [0, 1, 9, 1, 9, 1, 1, 0, 1, 0]]
    assert CrossEncoder._mark_rows(bins, None).tolist() == [
        [0, 11, 9, 0, 9, 11, 0, 0, 0, 0]]


def test_soft_match_marks_start_at_zero_read_the_models_own_embeddings_and_are_saved(tiny, tmp_path):
    plain = tiny["model"]
    marked = CrossEncoder.create(tiny["spec"], tokenizer=tiny["tok"], seed=SEED, exact_match=True,
                                 soft_match=5).eval()
    block = pair_inputs(tiny["queries"], tiny["corpus"], np.arange(8), np.arange(20, 28), max_length=512)
    with torch.no_grad():
        assert torch.equal(marked(block), plain(block))
        marked.match.weight.normal_()
        moved = marked(block)
    rows = marked.marks(block["input_ids"], block["attention_mask"], block["token_type_ids"])
    assert int(rows.max()) > 1  # some soft bins in use besides the exact mark
    marked(block).sum().backward()
    assert marked.encoder.get_input_embeddings().weight.grad is not None  # through the input only
    marked.save(tmp_path / "soft", tokenizer=tiny["tok"])
    loaded = CrossEncoder.load(tmp_path / "soft").eval()
    assert (loaded.exact_match, loaded.soft_match) == (True, 5)
    with torch.no_grad():
        assert torch.equal(loaded(block), moved)
        torch.manual_seed(SEED)  # other vectors: other cosines, other marks
        loaded.encoder.get_input_embeddings().weight.normal_()
        assert not torch.equal(loaded.marks(block["input_ids"], block["attention_mask"], block["token_type_ids"]),
                               rows)


def test_an_init_continues_a_cross_encoder_or_starts_from_a_dense_runs_encoder(tiny, tmp_path):
    resolved = {"name": "ce2", "seed": SEED, "params": {"crossencoder": {"exact_match": False, "soft_match": 0}}}
    tiny["model"].save(tmp_path / "ce", tokenizer=tiny["tok"])
    continued = new_model(tiny["spec"], tiny["tok"], resolved, str(tmp_path / "ce"))
    assert isinstance(continued, CrossEncoder)
    assert torch.equal(continued.head.weight, tiny["model"].head.weight)
    spec = tiny["spec"]
    dense = BiEncoder.create(spec, vocab_size=len(tiny["tok"]), pad_token_id=tiny["tok"].pad_token_id,
                             max_length=spec.query_max_length + spec.doc_max_length, seed=SEED + 5)
    dense.save(tmp_path / "dense", tokenizer=tiny["tok"])
    started = new_model(tiny["spec"], tiny["tok"], resolved, str(tmp_path / "dense"))
    for name, weight in dense.query_encoder.state_dict().items():
        assert torch.equal(started.encoder.state_dict()[name], weight), name  # the bi-encoder's encoder
    fresh = new_model(tiny["spec"], tiny["tok"], resolved, None)
    assert torch.equal(started.head.weight, fresh.head.weight)  # a new head, drawn from the run's seed


def test_the_config_checks_negatives_and_the_loss():
    def config(**params):
        run = {"method": "crossencoder", "inputs": {"candidates": "bm25", "negatives": "bm25"}, "params": params}
        return {"dataset": "tiny", "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 100,
                                                         "num_queries": {"train": 10, "test": 5}}},
                "runs": {"bm25": {"method": "bm25"}, "ce": run}}

    run = validate_config(config(crossencoder={"loss": "listwise"}))["runs"]["ce"]
    defaults = {"exact_match": False, "soft_match": 0}
    assert run["params"]["crossencoder"] == {"loss": "listwise", "in_batch": 1, **defaults}
    assert run["params"]["rerank"] == {"depth": 100, "batch_size": 64}
    assert validate_config(config())["runs"]["ce"]["params"]["crossencoder"] == {"loss": "bce", "in_batch": 1,
                                                                                 **defaults}
    validate_config(config(negatives={"per_query": 0}))  # in-batch negatives only
    for params, key in (({"negatives": {"per_query": 0}, "crossencoder": {"in_batch": 0}},
                         "runs.ce.params.negatives.per_query"),
                        ({"train": {"loss": "ce"}}, "runs.ce.params.train.loss")):
        with pytest.raises(ConfigError) as info:
            validate_config(config(**params))
        assert info.value.key == key
    assert methods.get("crossencoder").kind == methods.RERANK


# ------------------------------------------------------------------------------------------------- training
@pytest.mark.parametrize("loss", ["bce", "listwise"])
def test_training_steps_decrease_the_loss(tiny, loss):
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    queries, corpus = tiny["train_queries"], tiny["corpus"]
    train = TrainQueries(qrels, queries.row_ids, corpus.row_ids)
    step = CrossEncoderStep(train, queries, corpus, negatives=RandomNegatives(train), per_query=1, loss=loss,
                            in_batch=1)
    batch = step.make_batch(np.arange(8), np.random.default_rng(0))
    again = step.make_batch(np.arange(8), np.random.default_rng(0))
    assert np.array_equal(batch.doc_rows, again.doc_rows)  # the same generator, the same batch
    assert batch.doc_rows.shape == (8, 3) and batch.relevant[:, 0].all()
    torch.manual_seed(0)
    model = CrossEncoder.create(tiny["spec"], tokenizer=tiny["tok"], seed=SEED).eval()  # no dropout: a steady descent
    history = fit_batch(step, model, batch, 20)
    losses = [loss for loss, _ in history]
    assert all(set(stats) == {"batch_accuracy", "pair_accuracy"} for _, stats in history)
    assert max(losses[-3:]) < 0.75 * losses[0], losses
    with pytest.raises(ValueError, match="unknown cross-encoder loss"):
        CrossEncoderStep(train, queries, corpus, negatives=RandomNegatives(train), per_query=1, loss="ce")


def test_in_batch_negatives_are_the_next_rows_positives(tiny):
    """Row i also meets the positives of rows i+1 .. i+in_batch (cyclically): every positive of the batch is a
    negative as often as it is a positive, so a document's being a training positive predicts no label."""
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    queries, corpus = tiny["train_queries"], tiny["corpus"]
    train = TrainQueries(qrels, queries.row_ids, corpus.row_ids)
    rows = np.arange(5)
    step = CrossEncoderStep(train, queries, corpus, negatives=RandomNegatives(train), per_query=1, in_batch=2)
    batch = step.make_batch(rows, np.random.default_rng(4))
    positives = batch.doc_rows[:, 0]
    assert batch.doc_rows.shape == (5, 4)
    assert batch.doc_rows[:, 2].tolist() == np.roll(positives, -1).tolist()
    assert batch.doc_rows[:, 3].tolist() == np.roll(positives, -2).tolist()
    assert np.array_equal(batch.relevant, train.is_relevant(rows[:, None], batch.doc_rows))
    two = step.make_batch(rows[:2], np.random.default_rng(4))  # never a row's own positive again
    assert two.doc_rows.shape == (2, 3) and two.doc_rows[:, 2].tolist() == two.doc_rows[::-1, 0].tolist()
    only = CrossEncoderStep(train, queries, corpus, negatives=None, per_query=0, in_batch=1)
    assert only.make_batch(rows, np.random.default_rng(4)).doc_rows.shape == (5, 2)
    with pytest.raises(ValueError, match="one at least"):
        CrossEncoderStep(train, queries, corpus, negatives=None, per_query=0, in_batch=0)


def test_the_listwise_loss_leaves_relevant_negatives_out_and_bce_labels_them_relevant(tiny):
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    queries, corpus = tiny["train_queries"], tiny["corpus"]
    train = TrainQueries(qrels, queries.row_ids, corpus.row_ids)
    logits = torch.tensor([[2.0, 1.0, 5.0]])
    batch = CrossEncoderStep(train, queries, corpus, negatives=RandomNegatives(train), per_query=2)\
        .make_batch(np.arange(1), np.random.default_rng(0))
    batch.relevant[0, 2] = True  # the second negative is judged relevant
    for loss, expected in (("listwise", -torch.log_softmax(torch.tensor([2.0, 1.0]), 0)[0]),
                           ("bce", torch.nn.functional.binary_cross_entropy_with_logits(
                               logits, torch.tensor([[1.0, 0.0, 1.0]])))):
        step = CrossEncoderStep(train, queries, corpus, negatives=RandomNegatives(train), per_query=2, loss=loss)
        step.logits = lambda model, batch, device, replicas=None: logits  # the model's logits, fixed
        value, stats = step.loss(None, batch, "cpu")
        assert torch.allclose(value, expected)
        assert stats["batch_accuracy"] == 1.0  # 2 beats 1; the relevant 5 is no negative


# ------------------------------------------------------------------------------------------------- scoring
def test_score_pairs_gives_probabilities_in_the_order_given(tiny, tmp_path):
    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    folder = tmp_path / "ce"
    model.save(folder, tokenizer=tiny["tok"])
    q_rows, d_rows = np.array([0, 1, 2, 0, 1, 0]), np.array([4, 9, 30, 4, 77, 120])
    pairs = pa.table({"qid": [queries.row_ids[r] for r in q_rows], "docid": [corpus.row_ids[r] for r in d_rows]})
    scores = score_pairs(folder, queries, corpus, pairs, batch_size=4)
    assert scores.dtype == np.float32 and scores.shape == (6,)
    assert np.all((scores >= 0) & (scores <= 1)) and scores[0] == scores[3]  # a pair repeated scores the same
    with torch.no_grad():
        direct = torch.sigmoid(model(pair_inputs(queries, corpus, q_rows, d_rows, max_length=512))).numpy()
    assert np.allclose(scores, direct, atol=1e-6)
    declared = methods.get("crossencoder").score_pairs  # what a mining run's scorer role calls
    assert np.array_equal(declared(folder, queries, corpus, pairs, batch_size=4, device="cpu"), scores)
    shuffled = score_pairs(model, queries, corpus, pairs.take([5, 4, 3, 2, 1, 0]), batch_size=1)
    assert np.allclose(shuffled, scores[::-1], atol=1e-6)
    assert score_pairs(model, queries, corpus, pairs.slice(0, 0)).shape == (0,)
    missing = pa.table({"qid": [queries.row_ids[0]], "docid": ["not-in-cache"]})
    with pytest.raises(DataError, match="not-in-cache"):
        score_pairs(model, queries, corpus, missing)


def test_scoring_logs_its_progress(tiny, monkeypatch, caplog):
    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    monkeypatch.setattr(scoring, "PROGRESS_SECONDS", -1)  # a line after every batch
    rows = np.arange(10)
    with caplog.at_level("INFO", logger=scoring.__name__):
        scoring.pair_logits(model, queries, corpus, rows % 3, rows, batch_size=4)
    lines = [r.getMessage() for r in caplog.records if r.name == scoring.__name__]
    assert [line.split(" (")[0] for line in lines[:-1]] == ["scored 4 / 10 pairs", "scored 8 / 10 pairs",
                                                            "scored 10 / 10 pairs"]
    assert lines[-1].startswith("scored 10 pairs at ") and lines[-1].endswith(" per second")


def test_the_stage_tokenizes_raw_texts_as_the_cache_and_writes_a_ranking(tiny, tmp_path):
    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    folder = tmp_path / "ce"
    model.save(folder, tokenizer=tiny["tok"])
    qids = [queries.row_ids[r] for r in (2, 0, 2, 0, 2)]
    docids = [corpus.row_ids[r] for r in (10, 11, 12, 13, 14)]
    pairs = pa.table({"qid": qids, "docid": docids, "rank": pa.array([1, 1, 2, 2, 3], pa.int32()),
                      "score": pa.array([0.0] * 5, pa.float32())})
    artifacts.write_table(pairs, artifacts.RANKING, tmp_path / "pairs.parquet")
    out = score_pairs_stage(folder, tiny["data"] / "queries" / "test.parquet", tiny["data"] / "corpus.parquet",
                            tmp_path / "pairs.parquet", tmp_path / "scored.parquet", batch_size=2)
    assert artifacts.read_table(artifacts.RANKING, tmp_path / "scored.parquet").equals(out)
    expected = dict(zip(zip(qids, docids), score_pairs(model, queries, corpus, pairs)))
    assert out["qid"].to_pylist() == [qids[0]] * 3 + [qids[1]] * 2  # queries in order of first appearance
    for qid, docid, score in zip(out["qid"].to_pylist(), out["docid"].to_pylist(), out["score"].to_pylist()):
        assert score == pytest.approx(float(expected[qid, docid]), abs=1e-6)  # the cache's tokens, from raw text
    assert out["rank"].to_pylist() == [1, 2, 3, 1, 2]
    for qid in set(qids):
        assert np.all(np.diff(out.filter(pa.compute.equal(out["qid"], qid))["score"].to_numpy()) <= 0)


def test_rerank_orders_each_querys_top_depth_by_logit(tiny):
    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    qids = [queries.row_ids[i] for i in (5, 1, 3, 0, 2)]  # not in cache order
    ranking = shuffled_ranking(corpus, qids, missing="not-in-cache")
    out = rerank(model, queries, corpus, ranking, depth=4, batch_size=3)
    assert len(out) == 5 * 4 - 1  # the missing document is dropped
    query_row = {q: i for i, q in enumerate(queries.row_ids)}
    doc_row = {d: i for i, d in enumerate(corpus.row_ids)}

    def direct(qid, docids):  # the score is the logit
        d_rows = np.asarray([doc_row[d] for d in docids])
        with torch.no_grad():
            return model(pair_inputs(queries, corpus, np.full(len(d_rows), query_row[qid]), d_rows,
                                     max_length=512)).numpy()

    check_reranked(out, ranking, qids, 4, direct, atol=1e-5)
    assert not model.training
    with pytest.raises(DataError, match="nope"):
        rerank(model, queries, corpus, shuffled_ranking(corpus, [qids[0], "nope"]), depth=4)


class _Favouring(CrossEncoder):
    """Logit 1 for the favoured document, 0 for every other: ties keep the candidates' rank order."""

    favoured: list

    def logits(self, input_ids, attention_mask, token_type_ids=None):
        doc = [row[types.bool()].tolist() for row, types in zip(input_ids, token_type_ids)]
        return torch.tensor([float(d == self.favoured) for d in doc])


def test_rerank_puts_the_favoured_document_first_and_keeps_rank_order_in_ties(tiny):
    model, queries, corpus = tiny["model"], tiny["queries"], tiny["corpus"]
    ranking = shuffled_ranking(corpus, [queries.row_ids[0]])
    by_rank = ranking.sort_by("rank")["docid"].to_pylist()
    favoured = by_rank[3]  # rank 4
    row = corpus.row_ids.index(favoured)
    stub = _Favouring(model.encoder, query_max_length=16, doc_max_length=64)
    stub.favoured = _row(corpus, row)[1:]
    out = rerank(stub, queries, corpus, ranking, depth=5, batch_size=2)
    assert out["docid"].to_pylist() == [favoured] + [d for d in by_rank[:5] if d != favoured]
    assert out["score"].to_pylist() == [1.0] + [0.0] * 4


def test_the_model_fits_a_batch(tiny):
    """Every part learns: a fresh model fits a batch of 16 pairs with arbitrary labels to a loss near zero."""
    model = CrossEncoder.create(tiny["spec"], tokenizer=tiny["tok"], seed=SEED).train()
    queries, corpus = tiny["train_queries"], tiny["corpus"]
    rows = np.arange(16)
    pairs = pair_inputs(queries, corpus, rows % len(queries.row_ids), rows * 3 % len(corpus.row_ids),
                        max_length=model.max_length)
    labels = torch.tensor((rows % 2).astype(np.float32))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.manual_seed(0)
    for _ in range(150):
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(pairs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05
