"""The synthetic benchmark: deterministic, clustered, with vocabulary mismatch and graded multi-relevance."""

import numpy as np
import pyarrow.compute as pc
import pytest

from hardneg.datasets.canonical import statistics, validate
from hardneg.datasets.synthetic import SyntheticGenerator, SyntheticSpec, generate

SMALL = SyntheticSpec.from_config({"adapter": "synthetic", "seed": 7, "num_docs": 600,
                                   "num_queries": {"train": 150, "test": 50}, "docs_per_cluster": 30})


@pytest.fixture(scope="module")
def small():
    return generate(SMALL)


def test_sizes_and_validity(small):
    validate(small)
    assert small.corpus.num_rows == 600
    assert {s: small.queries[s].num_rows for s in small.splits} == {"train": 150, "test": 50}
    assert small.extra_stats["num_clusters"] == 20


def test_same_seed_same_data_other_seed_other_data(small):
    again = generate(SMALL)
    assert again.corpus.equals(small.corpus)
    assert all(again.queries[s].equals(small.queries[s]) and again.qrels[s].equals(small.qrels[s]) for s in small.splits)
    other = generate(SyntheticSpec(**{**SMALL.__dict__, "seed": 8}))
    assert not other.corpus.equals(small.corpus)


def _words(texts):
    return [set(t.split()) for t in texts]


def test_documents_of_a_cluster_share_vocabulary():
    gen = SyntheticGenerator(SMALL)
    corpus = next(gen.documents())
    words = _words(corpus["text"].to_pylist())
    clusters = gen.cluster_of(np.arange(SMALL.num_docs))
    rng = np.random.default_rng(0)
    same, other = [], []
    for _ in range(400):
        a, b = rng.integers(0, SMALL.num_docs, 2)
        if a == b:
            continue
        jaccard = len(words[a] & words[b]) / len(words[a] | words[b])
        (same if clusters[a] == clusters[b] else other).append(jaccard)
    for a in range(0, SMALL.num_docs, 30):  # make sure the same-cluster sample is not empty
        b = a + 1
        same.append(len(words[a] & words[b]) / len(words[a] | words[b]))
    assert np.mean(same) > 2 * np.mean(other)


def test_queries_use_synonyms_absent_from_the_corpus(small):
    corpus_vocab = set()
    for text in small.corpus["title"].to_pylist() + small.corpus["text"].to_pylist():
        corpus_vocab.update(text.split())
    query_words = [w for t in small.queries["train"]["text"].to_pylist() for w in t.split()]
    unseen = np.mean([w not in corpus_vocab for w in query_words])
    # Content words are swapped with probability 0.75; filler words always occur in documents.
    assert 0.4 < unseen < 0.8


def test_queries_paraphrase_their_target_document(small):
    qrels = small.qrels["test"]
    targets = dict(zip(*(qrels.filter(pc.equal(qrels["relevance"], 2))[c].to_pylist() for c in ("qid", "docid"))))
    docs = dict(zip(small.corpus["docid"].to_pylist(), _words(small.corpus["text"].to_pylist())))
    overlaps = [len(set(text.split()) & docs[targets[qid]])
                for qid, text in zip(small.queries["test"]["qid"].to_pylist(), small.queries["test"]["text"].to_pylist())]
    random_doc = docs[small.corpus["docid"][0].as_py()]
    assert np.mean(overlaps) > 1.0
    assert np.mean(overlaps) > 2 * np.mean([len(set(t.split()) & random_doc) for t in small.queries["test"]["text"].to_pylist()])


def test_graded_multi_relevant_queries(small):
    stats = statistics(small)
    train = stats["splits"]["train"]
    assert train["relevance_grades"]["2"] == 150  # one target per query
    assert train["relevance_grades"]["1"] > 0  # subtopic siblings
    assert train["relevant_per_query"]["max"] > 1
    share = small.extra_stats["multi_relevant_queries"]["train"] / 150
    assert 0.15 < share < 0.45  # multi_relevant_rate = 0.3


def test_a_multi_relevant_query_without_siblings_has_its_target_alone():
    """A document alone in its subtopic (here: two documents a cluster, two subtopics) has no sibling to judge: its multi-relevant
    queries keep their one target."""
    spec = SyntheticSpec.from_config({"adapter": "synthetic", "seed": 1, "num_docs": 40,
                                      "num_queries": {"train": 20}, "docs_per_cluster": 2,
                                      "subtopics_per_cluster": 2,
                                      "multi_relevant_rate": 1.0})
    dataset = generate(spec)
    validate(dataset)
    assert dataset.qrels["train"]["relevance"].to_pylist() == [2] * 20
    assert dataset.extra_stats["multi_relevant_queries"]["train"] == 0
