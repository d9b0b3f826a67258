"""The mining card: the same inputs give the same bytes (wherever the results folder lies), a changed input is
named (a folder's changed file too), the list's digest is recorded and checked, and the verification's per-query
overlap measures what it says."""

import hashlib
import json
import shutil

import pytest

from hardneg.errors import HardnegError
from hardneg.io import artifacts
from hardneg.mining.card import (build_card, card_text, check_inputs, check_list, folder_digest, list_record,
                                 read_card, write_card)
from hardneg.mining.verify import input_paths, overlap
from tests.support.mining import ranking_table

THREADS = {"torch_intra_op": 2, "faiss_omp": 2}
VERSIONS = {"hardneg": "0.1.0", "torch": "2.0", "faiss": "1.8", "transformers": "4.0", "numpy": "2.0",
            "pyarrow": "16.0"}
HARDNEGS = ranking_table([("q1", "d3", 1, 0.9), ("q1", "d4", 2, 0.8), ("q2", "d1", 1, 0.7)])
SEARCH = {"doc_run": "warmup", "factory": "Flat", "search_params": None, "top_k": 50, "batch_size": 256,
          "device": "auto", "precision": "fp32"}
POOL = {"name": "train_top30", "depth": 30, "bm25": None, "cross_encoder": None, "cross_encoder_method": None,
        "duplicates": False}
POLICY = {"depth": None, "rank_range": None, "exclude_duplicates": False, "margin": None, "relative_margin": None,
          "ce_threshold": None, "ce_margin": None, "keep": 2, "sampling": "top"}


def make_results(root):
    """A results folder with the files a card records: a model folder, a tokenized cache, dataset files, the
    miner's ranking and index, and the list."""
    model = root / "warmup" / "model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"weights")
    (model / "config.json").write_text('{"hidden_size": 32}')
    (model / "1_Pooling" / "config.json").write_text('{"pooling": "mean"}')
    (model / "tokenizer.json").write_text('{"vocab": ["a"]}')
    (model / "tokenizer_config.json").write_text("{}")
    (model / ".snakemake_timestamp").write_text("")
    cache = root / "datasets" / "toy" / "tokenized" / "key"
    cache.mkdir(parents=True)
    for name in ("cache.json", "queries_train.ids.npy", "queries_train.rows.parquet", "queries_test.ids.npy",
                 "corpus.ids.npy"):
        (cache / name).write_bytes(name.encode())
    for name in ("corpus.parquet", "queries/train.parquet", "qrels/train.parquet"):
        (root / "datasets" / "toy" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "datasets" / "toy" / name).write_bytes(name.encode())
    for name in ("rankings/train.parquet", "index/Flat.faiss", "embeddings/corpus.ids.parquet", "embeddings/corpus.npy",
                 "pools/train_top30.parquet", "pools/positives_train.parquet"):
        (root / "warmup" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "warmup" / name).write_bytes(name.encode())
    artifacts.write_table(HARDNEGS, artifacts.HARDNEGS, root / "star" / "hardnegs.parquet")
    return root


INPUTS = {"model": "results/warmup/model", "cache": "results/datasets/toy/tokenized/key",
          "corpus": "results/datasets/toy/corpus.parquet", "queries": "results/datasets/toy/queries/train.parquet",
          "qrels": "results/datasets/toy/qrels/train.parquet", "ranking": "results/warmup/rankings/train.parquet",
          "index": "results/warmup/index/Flat.faiss", "docids": "results/warmup/embeddings/corpus.ids.parquet",
          "corpus_embeddings": "results/warmup/embeddings/corpus.npy",
          "pool": "results/warmup/pools/train_top30.parquet",
          "positives": "results/warmup/pools/positives_train.parquet"}


def card_of(**overrides):
    args = {"run": "star", "miner": "warmup", "dataset": "toy", "split": "train", "inputs": INPUTS,
            "hardnegs": "results/star/hardnegs.parquet", "search": SEARCH, "pool": POOL, "policy": POLICY,
            "policy_name": None, "seed": 3, "threads": THREADS, "versions": VERSIONS, **overrides}
    return build_card(**args)


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the card's paths are relative, as the workflow gives them
    return make_results(tmp_path / "results")


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------- determinism
def test_the_same_inputs_give_the_same_card_bytes_wherever_the_folder_lies(results, tmp_path, monkeypatch):
    first = card_text(card_of())
    assert card_text(card_of()) == first
    write_card(tmp_path / "card.json", card_of())
    assert (tmp_path / "card.json").read_text() == first
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(results, elsewhere / "results")  # new file times, another absolute path: the same card
    monkeypatch.chdir(elsewhere)
    assert card_text(card_of()) == first
    assert str(tmp_path) not in first and json.loads(first) == card_of()
    # the environment, recorded when not given, is the same in one process
    assert card_text(card_of(threads=None, versions=None)) == card_text(card_of(threads=None, versions=None))


def test_the_card_records_what_the_list_was_mined_from(results):
    card = card_of()
    assert set(card["inputs"]) == {"model", "tokenizer", "tokenized_queries", "corpus", "queries", "qrels",
                                   "ranking", "index", "docids", "corpus_embeddings", "pool", "positives"}
    model, tokenizer = card["inputs"]["model"], card["inputs"]["tokenizer"]
    # weights and tokenizer apart, name by name in sorted order; Snakemake's timestamp left out
    assert list(model["files"]) == ["1_Pooling/config.json", "config.json", "model.safetensors"]
    assert list(tokenizer["files"]) == ["tokenizer.json", "tokenizer_config.json"]
    assert model["files"]["model.safetensors"] == hashlib.sha256(b"weights").hexdigest()
    listing = "".join(f"{digest}  {name}\n" for name, digest in model["files"].items())  # sha256sum's lines
    assert model["sha256"] == hashlib.sha256(listing.encode()).hexdigest()
    # the cache: only what encoding the split's queries reads
    assert list(card["inputs"]["tokenized_queries"]["files"]) == ["cache.json", "queries_train.ids.npy",
                                                                  "queries_train.rows.parquet"]
    assert card["inputs"]["corpus"] == {"path": "results/datasets/toy/corpus.parquet",
                                        "sha256": sha256(results / "datasets" / "toy" / "corpus.parquet")}
    assert card["search"] == SEARCH and card["pool"] == POOL and card["seed"] == 3
    assert card["policy"] == {"name": None, "params": POLICY}
    assert card["threads"] == THREADS and card["versions"] == VERSIONS and card["results"] == "results"
    assert set(card_of(threads=None, versions=None)["versions"]) == set(VERSIONS)
    assert set(card_of(threads=None)["threads"]) == {"torch_intra_op", "faiss_omp"}


# ------------------------------------------------------------------------------------------ changed inputs
def test_nothing_changed_is_an_empty_list(results):
    assert check_inputs(card_of()) == [] and check_list(card_of()) is None


def test_a_changed_input_is_named_with_its_digests(results):
    card = card_of()
    corpus = results / "datasets" / "toy" / "corpus.parquet"
    corpus.write_bytes(b"another corpus")
    (changed,) = check_inputs(card)
    assert changed.name == "corpus" and changed.path == "results/datasets/toy/corpus.parquet"
    assert changed.recorded == card["inputs"]["corpus"]["sha256"] and changed.current == sha256(corpus)
    assert str(changed) == (f"corpus results/datasets/toy/corpus.parquet changed since the list was mined (sha256 "
                            f"{changed.recorded[:12]}… → {changed.current[:12]}…)")


def test_a_changed_file_of_a_folder_names_the_folder_and_the_file(results):
    card = card_of()
    (results / "warmup" / "model" / "tokenizer.json").write_text('{"vocab": ["b"]}')
    (results / "datasets" / "toy" / "tokenized" / "key" / "queries_test.ids.npy").write_bytes(b"not read")
    (changed,) = check_inputs(card)  # the weights and the cache's queries of the split are untouched
    assert changed.name == "tokenizer" and changed.files == ("tokenizer.json",)
    assert str(changed).startswith("tokenizer results/warmup/model changed since the list was mined")
    assert str(changed).endswith("; files: tokenizer.json)")
    (results / "warmup" / "model" / "model.safetensors").write_bytes(b"trained again")
    assert [c.name for c in check_inputs(card)] == ["model", "tokenizer"]


def test_a_missing_input_is_named_and_paths_may_be_moved(results, tmp_path):
    card = card_of()
    (results / "warmup" / "index" / "Flat.faiss").unlink()
    (missing,) = check_inputs(card)
    assert missing.name == "index" and missing.current is None and "is missing" in str(missing)
    moved = tmp_path / "moved"
    shutil.copytree(results, moved)
    assert [c.name for c in check_inputs(card, input_paths(card, moved))] == ["index"]
    assert input_paths(card, moved)["corpus"] == moved / "datasets" / "toy" / "corpus.parquet"


# --------------------------------------------------------------------------------------------------- the list
def test_the_lists_digest_rows_and_queries(results):
    path = results / "star" / "hardnegs.parquet"
    assert list_record("results/star/hardnegs.parquet") == {"path": "results/star/hardnegs.parquet", "rows": 3,
                                                            "queries": 2, "sha256": sha256(path)}
    card = card_of()
    assert card["list"]["sha256"] == sha256(path)
    artifacts.write_table(HARDNEGS.slice(0, 2), artifacts.HARDNEGS, path)
    changed = check_list(card)
    assert changed.name == "list" and changed.current == sha256(path)
    assert str(changed).startswith("the hard-negative list results/star/hardnegs.parquet changed (sha256 ")
    assert check_inputs(card) == []  # the list is not an input


def test_folder_digest_and_card_errors_name_the_file(results, tmp_path):
    with pytest.raises(HardnegError, match="no file to record"):
        folder_digest(results / "warmup" / "model", "prefix:nothing")
    with pytest.raises(HardnegError, match=f"{tmp_path / 'none.json'}: no mining card there"):
        read_card(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(HardnegError, match="bad.json: not a mining card, the file is not JSON"):
        read_card(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(HardnegError, match="other.json: not a mining card"):
        read_card(tmp_path / "other.json")
    write_card(tmp_path / "card.json", card_of())
    assert read_card(tmp_path / "card.json") == card_of()


# ------------------------------------------------------------------------------------------------- overlap
def test_overlap_is_per_query_jaccard_and_order_breaks_ties_by_docid():
    stored = ranking_table([("q1", "a", 1, 0.9), ("q1", "b", 2, 0.5), ("q1", "c", 3, 0.5), ("q2", "x", 1, 0.3)])
    same = ranking_table([("q1", "a", 1, 0.9), ("q1", "c", 2, 0.5), ("q1", "b", 3, 0.5), ("q2", "x", 1, 0.3)])
    assert overlap(stored, same) == {"queries": 2, "mean": 1.0, "min": 1.0, "below_one": 0, "same_order": 2}
    other = ranking_table([("q1", "a", 1, 0.9), ("q1", "d", 2, 0.6), ("q3", "y", 1, 0.2)])
    result = overlap(stored, other)  # q1: {a} of {a, b, c, d}; q2 and q3 on one side only
    assert result == {"queries": 3, "mean": pytest.approx(0.25 / 3), "min": 0.0, "below_one": 3, "same_order": 0}
    swapped = ranking_table([("q1", "b", 1, 0.9), ("q1", "a", 2, 0.5), ("q1", "c", 3, 0.5), ("q2", "x", 1, 0.3)])
    assert overlap(stored, swapped)["same_order"] == 1 and overlap(stored, swapped)["mean"] == 1.0
    assert overlap(ranking_table([]), ranking_table([])) == {"queries": 0, "mean": 1.0, "min": 1.0, "below_one": 0,
                                                     "same_order": 0}
