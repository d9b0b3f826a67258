"""Dense retrieval core: tokenizer and cache, bi-encoder, losses, negatives, encoding, trainer."""

import numpy as np
import pyarrow as pa
import pytest
import torch

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.data import RandomNegatives, RankedNegatives, ShuffledBatches, TrainQueries
from hardneg.dense.encode import encode_corpus_shard, encode_rows, gather_shards
from hardneg.dense.losses import ranknet_all_pairs, softmax_cross_entropy
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.io import artifacts
from hardneg.pipeline.config import validate_params
from tests.support.dense import TINY_MODEL, build_tiny


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("dense"))


def _model(tiny, **spec) -> BiEncoder:
    tokenizer = load_tokenizer(tiny["tokenizer"])
    spec = ModelSpec.from_params(validate_params({"model": {"builtin": TINY_MODEL, **spec}})["model"])
    return BiEncoder.create(spec, vocab_size=len(tokenizer),
                            pad_token_id=tokenizer.pad_token_id, max_length=64, seed=3)


def test_tokenized_cache_layout(tiny):
    corpus = TokenizedTexts(tiny["cache"], "corpus")
    queries = TokenizedTexts(tiny["cache"], "queries_train")
    assert len(corpus) == 300 and len(queries) == 120
    assert corpus.ids.shape == (300, 64) and corpus.ids.dtype == np.int32
    assert (corpus.lengths <= 64).all() and (corpus.lengths == 64).any()  # documents are truncated
    tokenizer = load_tokenizer(tiny["tokenizer"])
    first = corpus.ids[0, :corpus.lengths[0]]
    assert first[0] == tokenizer.cls_token_id and first[-1] == tokenizer.sep_token_id
    assert (first == tokenizer.sep_token_id).sum() == 2  # [CLS] title [SEP] text [SEP]
    assert (corpus.ids[0, corpus.lengths[0]:] == tokenizer.pad_token_id).all()
    batch = corpus.batch(np.array([3, 1]))
    assert batch["input_ids"].shape[1] == max(corpus.lengths[3], corpus.lengths[1])
    assert batch["attention_mask"].sum().item() == corpus.lengths[3] + corpus.lengths[1]


def test_token_ids_follow_a_fixed_order(tiny):
    """The WordPiece trainer numbers tokens of equal frequency in hash-map order, which varies between processes;
    the saved ids must not: special tokens first, then every other token in sorted order."""
    vocab = load_tokenizer(tiny["tokenizer"]).get_vocab()
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert [vocab[t] for t in special] == [0, 1, 2, 3, 4]
    others = sorted((i, t) for t, i in vocab.items() if t not in special)
    assert [t for _, t in others] == sorted(t for _, t in others)
    assert [i for i, _ in others] == list(range(5, len(vocab)))


def test_a_loaded_model_saves_the_same_bytes(tiny, tmp_path):
    """No weight is initialised at random on load (BERT's unused pooler is saved as zeros, so AutoModel finds it),
    so a continued model's files depend on its training only."""
    from safetensors import safe_open

    _model(tiny).save(tmp_path / "first", load_tokenizer(tiny["tokenizer"]))
    for name in ("second", "third"):
        BiEncoder.load(tmp_path / "first").save(tmp_path / name)
    with safe_open(str(tmp_path / "second" / "model.safetensors"), "pt") as weights:
        pooler = [weights.get_tensor(key) for key in weights.keys() if "pooler" in key]
        assert len(pooler) == 2 and not any(tensor.any() for tensor in pooler)
    assert (tmp_path / "second" / "model.safetensors").read_bytes() == \
        (tmp_path / "third" / "model.safetensors").read_bytes()


def test_synonyms_are_whole_tokens(tiny):
    import pyarrow.parquet as pq

    tokenizer = load_tokenizer(tiny["tokenizer"])
    words = " ".join(pq.read_table(tiny["data"] / "queries" / "train.parquet")["text"].to_pylist()).split()
    assert np.mean([len(tokenizer.tokenize(w)) == 1 for w in words]) > 0.95


@pytest.mark.parametrize("spec", [dict(pooling="mean"), dict(pooling="cls", projection_dim=16),
                                  dict(shared=False, projection_dim=8)])
def test_model_save_load_round_trip(tiny, tmp_path, spec):
    from transformers import AutoModel

    model = _model(tiny, **spec).eval()
    texts = TokenizedTexts(tiny["cache"], "corpus")
    batch = texts.batch(np.arange(4))
    with torch.no_grad():
        before_q = model.encode(batch["input_ids"], batch["attention_mask"], "query")
        before_d = model.encode(batch["input_ids"], batch["attention_mask"], "doc")
    model.save(tmp_path / "m", load_tokenizer(tiny["tokenizer"]))
    again = BiEncoder.load(tmp_path / "m").eval()
    with torch.no_grad():
        assert torch.allclose(again.encode(batch["input_ids"], batch["attention_mask"], "query"), before_q, atol=1e-6)
        assert torch.allclose(again.encode(batch["input_ids"], batch["attention_mask"], "doc"), before_d, atol=1e-6)
    assert before_q.shape[1] == (spec.get("projection_dim") or 32)
    AutoModel.from_pretrained(tmp_path / "m")  # a standard Hugging Face folder
    load_tokenizer(tmp_path / "m")


@pytest.mark.parametrize("shared", [True, False])
def test_forward_is_queries_then_documents(tiny, shared):
    """One call for DDP, bit for bit the two encodings in order (dropout on: the same random draws too)."""
    model = _model(tiny, shared=shared).train()
    queries = TokenizedTexts(tiny["cache"], "queries_train").batch(np.arange(5))
    docs = TokenizedTexts(tiny["cache"], "corpus").batch(np.arange(7))
    torch.manual_seed(0)
    q, d = model.encode_queries(queries), model.encode_docs(docs)
    torch.manual_seed(0)
    q2, d2 = model(queries=queries, docs=docs)
    assert torch.equal(q, q2) and torch.equal(d, d2)
    assert model(queries=queries)[1] is None and model(docs=docs)[0] is None


def test_separate_encoders_differ(tiny):
    model = _model(tiny, shared=False)
    batch = TokenizedTexts(tiny["cache"], "corpus").batch(np.arange(3))
    with torch.no_grad():
        q = model.encode(batch["input_ids"], batch["attention_mask"], "query")
        d = model.encode(batch["input_ids"], batch["attention_mask"], "doc")
    assert not torch.allclose(q, d)


def test_ranknet_all_pairs_by_hand():
    scores = torch.tensor([[3.0, 1.0, 2.0, 0.5], [0.0, 2.0, 1.0, 4.0]])
    positive = torch.tensor([0, 1])
    relevant = torch.tensor([[True, False, False, False], [False, True, False, True]])  # doc 3 relevant to q1
    expected = [np.log1p(np.exp(1 - 3)), np.log1p(np.exp(2 - 3)), np.log1p(np.exp(0.5 - 3)),
                np.log1p(np.exp(0 - 2)), np.log1p(np.exp(1 - 2))]
    assert ranknet_all_pairs(scores, positive, relevant).item() == pytest.approx(np.mean(expected), rel=1e-6)


def test_cross_entropy_masks_other_relevant_documents():
    scores = torch.tensor([[1.0, 5.0, 0.0]])
    relevant = torch.tensor([[True, True, False]])
    loss = softmax_cross_entropy(scores, torch.tensor([0]), relevant)
    assert loss.item() == pytest.approx(-np.log(np.exp(1) / (np.exp(1) + np.exp(0))), rel=1e-6)


def _train_queries(tiny):
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    return TrainQueries(qrels, TokenizedTexts(tiny["cache"], "queries_train").row_ids,
                        TokenizedTexts(tiny["cache"], "corpus").row_ids), qrels


def test_negatives_are_never_relevant(tiny):
    train, qrels = _train_queries(tiny)
    doc_ids = TokenizedTexts(tiny["cache"], "corpus").row_ids
    # A ranking that puts every relevant document first: the sampler must still skip them.
    rel = qrels.to_pylist()
    ranking = pa.table({"qid": [r["qid"] for r in rel] * 2, "docid": [r["docid"] for r in rel] + doc_ids[:len(rel)],
                        "rank": list(range(1, 2 * len(rel) + 1)), "score": [1.0] * (2 * len(rel))})
    rng = np.random.default_rng(0)
    queries = np.arange(len(train))
    for source in (RandomNegatives(train), RankedNegatives(train, ranking, doc_ids)):
        sample = source.sample(queries, 5, rng)
        assert not train.is_relevant(queries[:, None], sample).any()
    assert train.positives[0].size >= 1 and set(train.positives[0]) <= set(train.relevant[0])


def test_batches_are_seeded_per_epoch():
    sampler = ShuffledBatches(10, 4, seed=1)
    assert [b.tolist() for b in sampler.batches(0)] == [b.tolist() for b in ShuffledBatches(10, 4, 1).batches(0)]
    assert [b.tolist() for b in sampler.batches(0)] != [b.tolist() for b in sampler.batches(1)]
    assert sorted(np.concatenate(sampler.batches(2)).tolist()) == list(range(10))  # last batch of 2 kept


def test_length_sorted_encoding_matches_row_by_row(tiny):
    model = _model(tiny).eval()
    texts = TokenizedTexts(tiny["cache"], "corpus")
    rows = np.array([5, 0, 17, 3])
    fast = encode_rows(model, texts, rows, "doc", batch_size=3)
    with torch.no_grad():
        slow = np.stack([model.encode_docs(texts.batch(np.array([r])))[0].numpy() for r in rows])
    np.testing.assert_allclose(fast, slow, atol=1e-5)
    half = encode_rows(model, texts, rows, "doc", fp16=True)
    assert half.dtype == np.float16 and np.abs(half - fast).max() < 1e-2


def test_sharded_encoding_equals_unsharded(tiny, tmp_path):
    model = _model(tiny)
    model.save(tmp_path / "model", load_tokenizer(tiny["tokenizer"]))
    npys, ids = [], []
    for shard in range(3):
        npys.append(tmp_path / f"s{shard}.npy")
        ids.append(tmp_path / f"s{shard}.parquet")
        encode_corpus_shard(tmp_path / "model", tiny["cache"], shard, 3, npys[-1], ids[-1], batch_size=16)
    gather_shards(npys, ids, tmp_path / "all.npy", tmp_path / "all.parquet")
    encode_corpus_shard(tmp_path / "model", tiny["cache"], 0, 1, tmp_path / "one.npy", tmp_path / "one.parquet",
                        batch_size=64)
    np.testing.assert_allclose(np.load(tmp_path / "all.npy"), np.load(tmp_path / "one.npy"), atol=1e-5)
    assert (artifacts.read_table(artifacts.ROW_IDS, tmp_path / "all.parquet")["id"].to_pylist()
            == TokenizedTexts(tiny["cache"], "corpus").row_ids)


def test_bf16_encoding_is_close_to_fp32(tiny):
    model = _model(tiny).eval()
    texts = TokenizedTexts(tiny["cache"], "corpus")
    rows = np.arange(40)
    full = encode_rows(model, texts, rows, "doc", batch_size=16)
    half = encode_rows(model, texts, rows, "doc", batch_size=16, precision="bf16")
    assert half.dtype == np.float32
    cosine = np.sum(full * half, 1) / np.linalg.norm(full, axis=1) / np.linalg.norm(half, axis=1)
    assert cosine.min() > 0.99
    with pytest.raises(ValueError, match="unknown precision"):
        encode_rows(model, texts, rows, "doc", precision="int8")


def test_precision_falls_back_to_fp32_where_the_device_cannot_run_it(caplog):
    from hardneg.dense import precision

    cpu = torch.device("cpu")
    assert precision.effective(cpu, "fp32") == "fp32"
    with caplog.at_level("WARNING"):
        assert precision.effective(cpu, "fp16") == "fp32"
    assert "fp16 is not supported on cpu" in caplog.text
    bf16 = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    assert precision.effective(cpu, "bf16") == ("bf16" if bf16 else "fp32")
    with precision.autocast(cpu, "bf16"):
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16 and torch.is_autocast_enabled("cpu")
