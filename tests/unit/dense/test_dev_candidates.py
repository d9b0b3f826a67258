"""Dev evaluation over fixed candidates: the candidates are the union of their sources in order, re-ranking orders
them by the model's scores (ties keep the candidates' order), with every document as a candidate it gives exactly
the full corpus search's values, and a training run builds them from its ranking inputs and reuses them in the
memorisation check."""

import logging
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.dev_candidates import Candidates, DocumentVectors, build_candidates, merge, rerank
from hardneg.dense.dev_eval import candidate_measures, dev_measures
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.io import artifacts
from hardneg.io.rankings import write_ranking
from hardneg.pipeline.train import train_run
from tests.support.dense import build_tiny
from tests.support.training import tiny_params


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("candidates"))


@pytest.fixture(scope="module")
def model(tiny):
    params = tiny_params()
    tokenizer = load_tokenizer(tiny["tokenizer"])
    return BiEncoder.create(ModelSpec.from_params(params["model"]), vocab_size=len(tokenizer),
                            pad_token_id=tokenizer.pad_token_id, max_length=64, seed=3)


def test_merge_keeps_each_sources_order_and_pads():
    assert merge([[3, 1], [7]], [[1, 4], []]).tolist() == [[3, 1, 4], [7, -1, -1]]
    assert merge([[], []]).shape == (2, 0)


def test_rerank_orders_by_score_and_keeps_the_candidates_order_on_ties():
    doc_rows = np.array([[5, 2, 9], [2, -1, -1]])
    vectors = np.array([[1.0], [1.0], [3.0]], dtype=np.float32)  # rows 2, 5, 9 (sorted)
    scores, rows = rerank(np.array([[1.0], [2.0]], dtype=np.float32), vectors, doc_rows, 4)
    assert rows.tolist() == [[9, 5, 2, -1], [2, -1, -1, -1]]  # 5 and 2 tie: 5 came first
    assert scores[0, :3].tolist() == [3.0, 1.0, 1.0] and math.isinf(scores[1, 1])


def test_every_document_a_candidate_gives_the_corpus_search(tiny, model):
    queries, corpus = TokenizedTexts(tiny["cache"], "queries_test"), TokenizedTexts(tiny["cache"], "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "test.parquet")
    rows = np.arange(len(queries))
    everything = Candidates(rows, np.tile(np.arange(len(corpus)), (len(rows), 1)), ("all",))
    assert candidate_measures(model, queries, corpus, qrels, everything) == pytest.approx(
        dev_measures(model, queries, corpus, qrels), abs=1e-9)
    few = Candidates(rows, np.tile(np.arange(20), (len(rows), 1)), ("20",))
    vectors = DocumentVectors(corpus)
    candidate_measures(model, queries, corpus, qrels, few, vectors=vectors, step=4)
    assert sorted(vectors._vectors) == list(range(20))  # only the candidates were encoded


def _ranking(tiny, tmp_path, split, depth):
    """A ranking of ``split`` whose top ``depth`` are the first documents of the corpus, reversed per query, plus
    a document the corpus does not hold."""
    queries = TokenizedTexts(tiny["cache"], f"queries_{split}").row_ids
    docs = TokenizedTexts(tiny["cache"], "corpus").row_ids[:depth][::-1] + ["not-in-corpus"]
    table = pa.table({"qid": np.repeat(queries, len(docs)), "docid": docs * len(queries),
                      "rank": np.tile(np.arange(1, len(docs) + 1, dtype=np.int32), len(queries)),
                      "score": np.tile(np.linspace(1, 0, len(docs), dtype=np.float32), len(queries))})
    write_ranking(table, tmp_path / f"{split}.parquet", None, "bm25")
    return tmp_path / f"{split}.parquet"


def test_ranking_sources_give_their_top_depth(tiny, tmp_path):
    path = _ranking(tiny, tmp_path, "test", 12)
    queries, corpus = TokenizedTexts(tiny["cache"], "queries_test"), TokenizedTexts(tiny["cache"], "corpus")
    candidates = build_candidates(queries, np.array([0, 2]), corpus, rankings={"bm25": path}, depth=5)
    assert candidates.doc_rows.tolist() == [[11, 10, 9, 8, 7]] * 2 and candidates.sources == ("bm25",)
    assert build_candidates(queries, np.array([0]), corpus) is None


def test_training_re_ranks_its_candidates_and_the_memorisation_check_reuses_them(tiny, tmp_path, caplog):
    inputs = {"dev_lexical": _ranking(tiny, tmp_path, "test", 40), "train_lexical": _ranking(tiny, tmp_path, "train", 40)}
    params = tiny_params(epochs=1, dev_every=4, dev_split="test", dev_depth=25, tensorboard=False)
    with caplog.at_level(logging.INFO, logger="hardneg"):
        train_run({"name": "inbatch", "method": "inbatch", "seed": 5, "params": params}, cache_dir=tiny["cache"],
                  qrels_path=tiny["data"] / "qrels" / "train.parquet", model_dir=tmp_path / "model",
                  log_path=tmp_path / "log.parquet", checkpoint_dir=tmp_path / "ckpt",
                  tokenizer_source=tiny["tokenizer"], inputs=inputs)
    assert "dev candidates of the dev queries: 40 queries, 25.0 candidates a query on average, 25 distinct " \
           "documents" in caplog.text
    assert "(re-ranking the candidates)" in caplog.text
    log = pq.read_table(tmp_path / "log.parquet").to_pylist()
    assert [row["step"] for row in log if not math.isnan(row["dev_rr10"])] == [4, 8]
    # the training sample's candidates are the same 25 documents: the pool is those and every relevant document
    # of the sampled queries (all of them here)
    corpus = TokenizedTexts(tiny["cache"], "corpus").row_ids
    relevant = set()
    for split in ("train", "test"):
        table = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / f"{split}.parquet")
        asked = set(TokenizedTexts(tiny["cache"], f"queries_{split}").row_ids)
        relevant |= {d for q, d, r in zip(*(table[c].to_pylist() for c in ("qid", "docid", "relevance")))
                     if r >= 1 and q in asked and d in set(corpus)}
    pool = len(set(corpus[15:40]) | relevant)  # the top 25 of a ranking of rows 39, 38, ..., 0
    assert f"(among {pool} documents)" in caplog.text and pool < len(corpus)


def test_both_searches_log_both_values_on_every_row(tiny, tmp_path):
    inputs = {"dev_lexical": _ranking(tiny, tmp_path, "test", 40), "train_lexical": _ranking(tiny, tmp_path, "train", 40)}
    params = tiny_params(epochs=1, dev_every=4, dev_split="test", dev_search="both", tensorboard=False)
    train_run({"name": "inbatch", "method": "inbatch", "seed": 5, "params": params}, cache_dir=tiny["cache"],
              qrels_path=tiny["data"] / "qrels" / "train.parquet", model_dir=tmp_path / "model",
              log_path=tmp_path / "log.parquet", checkpoint_dir=tmp_path / "ckpt", tokenizer_source=tiny["tokenizer"],
              inputs=inputs)
    log = pq.read_table(tmp_path / "log.parquet")
    assert {"dev_rr10", "dev_rr100", "dev_corpus_rr10", "dev_corpus_rr100"} <= set(log.column_names)
    rows = log.to_pylist()
    for column in ("dev_rr10", "dev_corpus_rr10"):
        assert [row["step"] for row in rows if not math.isnan(row[column])] == [4, 8]
    # re-ranking 25 candidates is not the corpus search: a query whose relevant documents are all elsewhere scores 0
    assert all(row["dev_rr10"] != row["dev_corpus_rr10"] for row in rows if row["step"] in (4, 8))
