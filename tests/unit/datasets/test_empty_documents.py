"""Empty documents (no title, no text) are handled one way everywhere: counted in stats.json, reported by dataset
preparation, and under ``empty_documents: exclude`` left out of the tokenized corpus and so of the corpus
embeddings and their ids, dense rankings, positive scores, mined hard negatives and training judgements; under
``keep`` they are encoded, all with the same vector."""

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from hardneg.datasets.empty_documents import empty_docids, empty_mask, empty_stats, report
from hardneg.datasets.prepare import prepare_dataset
from hardneg.dense.backbone import ModelSpec
from hardneg.dense.data import RankedNegatives, TrainQueries
from hardneg.dense.encode import encode_corpus_shard, gather_shards, load_embeddings
from hardneg.dense.model import BiEncoder
from hardneg.dense.search import build_index_stage, dense_search_split
from hardneg.dense.tokenized import TokenizedTexts, build_cache
from hardneg.dense.tokenizer import load_tokenizer, train_wordpiece
from hardneg.evaluation.pairwise import full_corpus_ranks
from hardneg.io import artifacts
from hardneg.mining.negatives import mine_hard_negatives, positive_scores_stage
from hardneg.pipeline.config import validate_params
from tests.support.files import write_lines
from tests.support.user_data import EMPTY, WORDS
from tests.support.user_data import corpus_lines as _corpus_lines


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A BEIR dataset with two empty documents (e1, e2) judged relevant once in each split, its tokenizer, and
    tokenized caches with the empty documents excluded and kept."""
    root = tmp_path_factory.mktemp("empty")
    beir = root / "beir"
    write_lines(beir / "corpus.jsonl", _corpus_lines())
    queries = [json.dumps({"_id": f"q{i}", "text": f"{WORDS[i % len(WORDS)]} number{i}"}) for i in range(20)]
    queries += [json.dumps({"_id": f"t{i}", "text": f"{WORDS[(i + 5) % len(WORDS)]} number{30 + i}"}) for i in range(6)]
    write_lines(beir / "queries.jsonl", queries)
    write_lines(beir / "qrels" / "train.tsv", ["query-id\tcorpus-id\tscore"] + [f"q{i}\td{i}\t1" for i in range(20)]
                + ["q0\te1\t1", "q1\td21\t1"])
    write_lines(beir / "qrels" / "test.tsv", ["query-id\tcorpus-id\tscore"] + [f"t{i}\td{30 + i}\t1" for i in range(6)]
                + ["t0\te2\t1"])
    data = root / "data"
    stats = prepare_dataset({"adapter": "beir", "path": str(beir), "splits": ["train", "test"]}, data)
    tokenizer = root / "tokenizer"
    train_wordpiece(data / "corpus.parquet", tokenizer, vocab_size=300, query_paths=[data / "queries" / "train.parquet"])
    queries = {s: data / "queries" / f"{s}.parquet" for s in ("train", "test")}
    caches = {}
    for handling in ("exclude", "keep"):
        caches[handling] = root / f"cache_{handling}"
        build_cache(tokenizer, data / "corpus.parquet", queries, caches[handling], doc_max_length=32,
                    query_max_length=16, exclude_empty=handling == "exclude")
    return {"root": root, "data": data, "stats": stats, "tokenizer": tokenizer, "cache": caches}


def test_empty_means_blank_title_and_text():
    table = pa.table({"docid": ["a", "b", "c", "d", "e"], "title": ["", None, " \t", "T", ""],
                      "text": ["", " \n", None, "", "x"]})
    assert empty_mask(table).tolist() == [True, True, True, False, False]


@pytest.mark.parametrize("rows", [1, 2, 3, 100])
def test_the_mask_is_the_same_whatever_the_slices(monkeypatch, rows):
    """Slices of rows, and each column checked only where the earlier ones are blank, change nothing; a batch
    and a table of several chunks read alike."""
    from hardneg.datasets import empty_documents

    titles = ["", None, " \t", "T", "", "", "U", None]
    texts = ["", " \n", None, "", "x", "\u3000", " ", "y"]
    whole = [True, True, True, False, False, True, False, False]
    monkeypatch.setattr(empty_documents, "CHECK_ROWS", rows)
    table = pa.concat_tables([pa.table({"title": titles[:3], "text": texts[:3]}),
                              pa.table({"title": titles[3:], "text": texts[3:]})])
    assert empty_mask(table).tolist() == whole
    assert empty_mask(table.to_batches()[1]).tolist() == whole[3:]
    assert empty_documents.blank_mask(table, ["text"]).tolist() == [True, True, True, True, False, True, True, False]


def test_stats_json_counts_them_and_the_judgements_naming_them(world):
    stats = json.loads((world["data"] / "stats.json").read_text())
    assert stats["num_docs"] == 42
    assert stats["empty_documents"] == {"count": 2, "docids": EMPTY, "relevant_judgements": {"train": 1, "test": 1}}
    assert empty_docids(world["data"] / "corpus.parquet") == EMPTY
    assert empty_stats(pa.table({"docid": ["x"], "title": ["t"], "text": ["y"]}), {}) == \
        {"count": 0, "docids": [], "relevant_judgements": {}}


def test_preparation_report(world):
    stats = world["stats"]
    assert report("mini", stats, "exclude") == (
        "dataset mini: 2 of 42 documents are empty (no title, no text): e1, e2.\n"
        "empty_documents: exclude leaves them out of dense runs (encoding, indexes, rankings, hard negatives, "
        "evaluation candidates); BM25 never indexes them.\n"
        "2 relevance judgements (1 in train, 1 in test) name an empty document as relevant: no ranking can ever "
        "retrieve them.")
    kept = report("mini", stats, "keep")
    assert "empty_documents: keep encodes them in dense runs, where they all share one embedding" in kept
    assert "datasets.mini.empty_documents: exclude leaves them out." in kept
    assert "BM25 can ever retrieve them." in kept
    assert report("mini", {**stats, "empty_documents": {"count": 0, "docids": []}}, "exclude") is None


def test_the_tokenized_corpus_leaves_them_out_under_exclude(world):
    excluded = TokenizedTexts(world["cache"]["exclude"], "corpus")
    kept = TokenizedTexts(world["cache"]["keep"], "corpus")
    assert len(excluded) == 40 and not set(EMPTY) & set(excluded.row_ids)
    assert len(kept) == 42 and set(EMPTY) <= set(kept.row_ids)
    assert excluded.row_ids == [d for d in kept.row_ids if d not in EMPTY]  # corpus order otherwise
    facts = json.loads((world["cache"]["exclude"] / "cache.json").read_text())
    assert facts["empty_documents"] == {"count": 2, "docids": EMPTY, "excluded": True}
    assert json.loads((world["cache"]["keep"] / "cache.json").read_text())["empty_documents"]["excluded"] is False


def _save_model(world, path):
    tokenizer = load_tokenizer(world["tokenizer"])
    spec = ModelSpec.from_params(validate_params({"model": {"builtin": {
        "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}}})["model"])
    BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, max_length=32,
                     seed=1).save(path, tokenizer)
    return path


def _encode_and_search(world, handling, tmp_path):
    """Encode the corpus in two shards, gather, index (Flat) and rank the training queries (every document)."""
    cache, out = world["cache"][handling], tmp_path / handling
    model = _save_model(world, out / "model")
    npys, ids = [out / f"shard{i}.npy" for i in range(2)], [out / f"shard{i}.ids.parquet" for i in range(2)]
    for shard in range(2):
        encode_corpus_shard(model, cache, shard, 2, npys[shard], ids[shard], batch_size=8)
    gather_shards(npys, ids, out / "corpus.npy", out / "corpus.ids.parquet")
    build_index_stage(out / "corpus.npy", "Flat", out / "flat.faiss")
    rows = dense_search_split(model, cache, "train", out / "flat.faiss", out / "corpus.ids.parquet",
                              ranking_path=out / "train.parquet", trec_path=out / "train.trec",
                              query_npy=out / "q.npy", query_ids=out / "q.ids.parquet", top_k=50, batch_size=8)
    run = artifacts.read_table(artifacts.RANKING, out / "train.parquet")
    assert run.num_rows == rows
    return out, run


def test_embeddings_rankings_and_mining_leave_them_out_under_exclude(world, tmp_path, caplog):
    out, run = _encode_and_search(world, "exclude", tmp_path)
    vectors, ids = load_embeddings(out / "corpus.npy", out / "corpus.ids.parquet")
    assert len(vectors) == len(ids) == 40 and not set(EMPTY) & set(ids)
    assert ids == TokenizedTexts(world["cache"]["exclude"], "corpus").row_ids  # row i of corpus.npy = row i of the cache
    assert run.num_rows == 20 * 40 and not set(EMPTY) & set(run["docid"].to_pylist())
    qrels = world["data"] / "qrels" / "train.parquet"
    with caplog.at_level("WARNING"):
        positives = positive_scores_stage(out / "q.npy", out / "q.ids.parquet", out / "corpus.npy",
                                          out / "corpus.ids.parquet", qrels, out / "positives.parquet")
    assert ("q0", "e1") not in set(zip(positives["qid"].to_pylist(), positives["docid"].to_pylist()))
    assert positives.num_rows == 21 and "1 relevant pair(s) name a document without an embedding" in caplog.text
    hardnegs = mine_hard_negatives(run, artifacts.read_table(artifacts.QRELS, qrels), positives, depth=50)
    assert hardnegs.num_rows > 0 and not set(EMPTY) & set(hardnegs["docid"].to_pylist())


def test_under_keep_they_are_encoded_with_one_shared_vector(world, tmp_path):
    out, run = _encode_and_search(world, "keep", tmp_path)
    vectors, ids = load_embeddings(out / "corpus.npy", out / "corpus.ids.parquet")
    assert len(ids) == 42
    e1, e2 = vectors[ids.index("e1")], vectors[ids.index("e2")]
    assert np.allclose(e1, e2)  # "" and whitespace tokenize alike: [CLS] [SEP]
    assert set(EMPTY) <= set(run["docid"].to_pylist())


def test_training_ignores_judgements_of_excluded_documents(world, caplog):
    qrels = artifacts.read_table(artifacts.QRELS, world["data"] / "qrels" / "train.parquet")
    query_ids = TokenizedTexts(world["cache"]["exclude"], "queries_train").row_ids
    with caplog.at_level("WARNING"):
        train = TrainQueries(qrels, query_ids, TokenizedTexts(world["cache"]["exclude"], "corpus").row_ids)
    assert train.skipped_judgements == 1 and "1 relevance judgements name documents missing" in caplog.text
    assert len(train) == train.num_queries == 20 and train.num_judgements == 21
    kept = TrainQueries(qrels, query_ids, TokenizedTexts(world["cache"]["keep"], "corpus").row_ids)
    assert kept.skipped_judgements == 0 and kept.num_judgements == 22


def test_whole_corpus_ranks_place_a_document_without_embedding_last():
    docs = np.eye(3, dtype=np.float32)
    queries = np.array([[1.0, 0.5, 0.0]], dtype=np.float32)
    pairs = pd.DataFrame({"qid": ["q", "q"], "docid": ["b", "gone"]})
    assert full_corpus_ranks(queries, ["q"], docs, ["a", "b", "c"], pairs).tolist() == [2, 4]


def test_rows_per_judgement():
    """A query with three positives is three rows, each with its own fixed positive; relevance and ranked
    candidates are shared by the rows of a query."""
    qrels = pa.table({"qid": ["a", "a", "a", "a", "b"], "docid": ["d0", "d1", "d2", "d3", "d4"],
                      "relevance": pa.array([2, 2, 2, 1, 1], pa.int32())})
    doc_ids = [f"d{i}" for i in range(8)]
    per_query = TrainQueries(qrels, ["a", "b"], doc_ids)
    rows = TrainQueries(qrels, ["a", "b"], doc_ids, per_judgement=True)
    assert len(per_query) == 2 and per_query.num_judgements == 4
    assert len(rows) == 4 and rows.num_queries == 2 and rows.qids == ["a", "a", "a", "b"]
    assert [p.tolist() for p in rows.positives] == [[0], [1], [2], [4]]
    assert rows.query_rows.tolist() == [0, 0, 0, 1]
    assert rows.is_relevant(np.array([0, 1, 2, 3]), np.array([3, 3, 3, 3])).tolist() == [True, True, True, False]
    ranking = pa.table({"qid": ["a"] * 3 + ["b"] * 2, "docid": ["d3", "d5", "d6", "d7", "d4"],
                        "rank": pa.array([1, 2, 3, 1, 2], pa.int32()), "score": pa.array([1.0] * 5, pa.float32())})
    negatives = RankedNegatives(rows, ranking, doc_ids)
    sample = negatives.sample(np.array([0, 1, 2, 3]), 4, np.random.default_rng(0))
    assert set(sample[:3].ravel()) <= {5, 6} and set(sample[3]) == {7}
