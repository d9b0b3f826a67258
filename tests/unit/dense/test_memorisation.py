"""Memorisation measured after training (hardneg.dense.memorisation): a model that ranks its training queries'
positives first and held-out queries no better than chance is warned about; one that ranks both alike is not; the
pool holds every relevant document; the trainer event writes the numbers into the last log row only."""

import math
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
import torch

from hardneg.dense.distributed import SINGLE
from hardneg.dense.memorisation import (COLUMNS, GAP, MemorisationCheck, Sample, document_pool,
                                        measure_memorisation, memorisation_advice, memorisation_warning,
                                        sample_queries)

DIM, DOCS, TRAIN, HELD_OUT = 16, 400, 150, 50


class Texts:
    """A stand-in for a tokenized text set: each text is one token, its row number plus ``offset``, so that the
    lookup model below knows which text it encodes."""

    def __init__(self, ids: list[str], offset: int = 0):
        self.row_ids, self.offset = ids, offset
        self.lengths = np.ones(len(ids), dtype=np.int32)

    def __len__(self):
        return len(self.row_ids)

    def batch(self, rows):
        ids = torch.as_tensor(np.asarray(rows, dtype=np.int64) + self.offset)[:, None]
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


class Lookup(torch.nn.Module):
    """A bi-encoder whose vectors are rows of fixed tables: documents by row, queries by row plus offset."""

    def __init__(self, docs: np.ndarray, queries: np.ndarray):
        super().__init__()
        self.dim = docs.shape[1]
        self.tables = {"doc": torch.from_numpy(docs), "query": torch.from_numpy(queries)}

    def encode(self, input_ids, attention_mask, side):
        return self.tables[side][input_ids[:, 0]]


def _qrels(pairs):
    return pa.table({"qid": [q for q, _ in pairs], "docid": [d for _, d in pairs],
                     "relevance": pa.array([1] * len(pairs), pa.int32())})


def _setup(memorising: bool, seed: int = 0):
    """Documents as random unit vectors; training query i is about document i, held-out query j about document
    TRAIN + j. Memorising: each training query is its document's vector, a held-out query a random vector.
    Healthy: every query is its document's vector plus the same amount of noise."""
    rng = np.random.default_rng(seed)
    docs = rng.normal(size=(DOCS, DIM)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    targets = np.arange(TRAIN + HELD_OUT)
    noise = rng.normal(size=(len(targets), DIM)).astype(np.float32)
    if memorising:
        queries = np.concatenate([docs[targets[:TRAIN]], noise[TRAIN:]])
    else:
        queries = docs[targets] + 0.25 * noise
    corpus = Texts([f"d{i}" for i in range(DOCS)])
    train = Texts([f"t{i}" for i in range(TRAIN)])
    heldout = Texts([f"h{j}" for j in range(HELD_OUT)], offset=TRAIN)
    train_qrels = _qrels([(f"t{i}", f"d{i}") for i in range(TRAIN)])
    heldout_qrels = _qrels([(f"h{j}", f"d{TRAIN + j}") for j in range(HELD_OUT)])
    return Lookup(docs, queries.astype(np.float32)), corpus, (train, train_qrels), (heldout, heldout_qrels)


@pytest.mark.parametrize("memorising", [True, False])
def test_the_warning_fires_on_memorisation_only(memorising):
    model, corpus, (train, train_qrels), (heldout, heldout_qrels) = _setup(memorising)
    result = measure_memorisation(model, corpus, sample_queries(train, train_qrels, corpus.row_ids, 100, 0),
                                  sample_queries(heldout, heldout_qrels, corpus.row_ids, 100, 0),
                                  heldout_split="dev", pool=300, seed=0)
    assert result.queries == {"train": 100, "heldout": HELD_OUT} and result.pool == 300
    message = memorisation_warning("star", result)
    if memorising:
        assert result.values["train"]["RR@10"] == 1.0 and result.values["train"]["Success@1"] == 1.0
        assert result.values["heldout"]["RR@10"] < 0.2 and result.gap > GAP
        assert message.startswith("run star: after training, 100 of its training queries score RR@10 1.000 (a "
                                  "relevant document first for 100%) and 50 held-out 'dev' queries ")
        assert "both searched among the same 300 documents: it has learnt its training queries by heart" in message
    else:
        assert abs(result.gap) < GAP / 2 and result.values["heldout"]["RR@10"] > 0.5
        assert message is None


def test_without_held_out_queries_nothing_is_compared():
    model, corpus, (train, train_qrels), _ = _setup(True)
    result = measure_memorisation(model, corpus, sample_queries(train, train_qrels, corpus.row_ids, 20, 0), None)
    assert result.gap is None and result.heldout_split is None and memorisation_warning("s", result) is None
    columns = result.columns()
    assert columns["memorisation_train_rr10"] == 1.0 and math.isnan(columns["memorisation_heldout_rr10"])


def test_the_pool_holds_every_relevant_document_of_the_samples():
    corpus_ids = [f"d{i}" for i in range(1000)]
    train = Sample(None, np.arange(3), _qrels([("a", "d900"), ("b", "d901"), ("c", "nowhere")]))
    heldout = Sample(None, np.arange(1), _qrels([("x", "d999")]))
    pool = document_pool([train, heldout], corpus_ids, 50, 0)
    assert len(pool) == 50 and list(pool) == sorted(pool) and {900, 901, 999} <= set(pool)
    assert list(document_pool([train, heldout], corpus_ids, 50, 0)) == list(pool)  # seeded
    assert list(document_pool([train], corpus_ids[:40], 50, 0)) == list(range(40))  # a small corpus: all of it


def test_sample_queries_keeps_judged_queries_in_the_corpus():
    texts = Texts(["a", "b", "c", "d"])
    qrels = pa.table({"qid": ["a", "b", "c"], "docid": ["d1", "d2", "gone"],
                      "relevance": pa.array([1, 0, 1], pa.int32())})
    sample = sample_queries(texts, qrels, ["d1", "d2"], 10, 0)
    assert list(sample.rows) == [0] and sample.qrels["qid"].to_pylist() == ["a"]
    many = Texts([f"q{i}" for i in range(30)])
    drawn = sample_queries(many, _qrels([(f"q{i}", "d1") for i in range(30)]), ["d1"], 5, 3)
    assert len(drawn.rows) == 5 and list(drawn.rows) == sorted(drawn.rows)


def test_the_event_measures_at_the_last_step_only():
    model, corpus, (train, train_qrels), (heldout, heldout_qrels) = _setup(True)
    check = MemorisationCheck(corpus, sample_queries(train, train_qrels, corpus.row_ids, 50, 0),
                              sample_queries(heldout, heldout_qrels, corpus.row_ids, 50, 0), heldout_split="dev")
    trainer = SimpleNamespace(model=model, total_steps=3, device="cpu", precision="fp32", replicas=SINGLE)
    rows = [{"step": step} for step in (1, 2, 3)]
    for row in rows:
        check.on_step_end(trainer, row["step"], row)
    assert all(math.isnan(rows[0][column]) for column in COLUMNS) and set(COLUMNS) <= set(rows[1])
    assert rows[2]["memorisation_train_rr10"] == 1.0 and rows[2]["memorisation_heldout_rr10"] < 0.2
    assert check.result.gap > GAP and model.training  # back in train mode


@pytest.mark.parametrize("pretrained, epochs, selects, advice", [
    (False, 3, False, "For a model that generalises: start from a pre-trained encoder (params.model.name: minilm, a "
                      "local folder or a hub name), train for fewer epochs (params.train.epochs is 3), keep the "
                      "checkpoint with the best dev measure (params.train.dev_every, with train.keep: best) or train "
                      "on more queries than its 100."),
    (True, 1, False, "For a model that generalises: fine-tune the pre-trained encoder more gently "
                     "(params.train.learning_rate is 2e-05), keep the checkpoint with the best dev measure "
                     "(params.train.dev_every, with train.keep: best) or train on more queries than its 100."),
    (True, 1, True, "For a model that generalises: fine-tune the pre-trained encoder more gently "
                    "(params.train.learning_rate is 2e-05) or train on more queries than its 100."),
])
def test_the_advice_fits_what_the_run_does(pretrained, epochs, selects, advice):
    """A run that starts from a pre-trained encoder is not told to start from one, nor a one-epoch run to train
    fewer epochs, nor a run keeping its best dev checkpoint to keep it; a run whose saved model is an earlier
    step's says so."""
    model, corpus, (train, train_qrels), (heldout, heldout_qrels) = _setup(True)
    result = measure_memorisation(model, corpus, sample_queries(train, train_qrels, corpus.row_ids, 100, 0),
                                  sample_queries(heldout, heldout_qrels, corpus.row_ids, 100, 0),
                                  heldout_split="dev", pool=300, seed=0)
    given = memorisation_advice(pretrained=pretrained, epochs=epochs, queries=100, learning_rate=2e-5,
                                selects=selects)
    kept = {"keep": "best", "step": 40, "steps": 60, "measure": "RR@10"} if selects else None
    message = memorisation_warning("star", result, advice=given, kept=kept)
    assert message.splitlines()[-1] == advice
    assert message.splitlines()[0].endswith("The model saved is step 40's, the best dev RR@10, not the last step's "
                                            "measured here.") is selects
    assert ("pre-trained encoder (params.model.name" in message) is not pretrained
