"""A synthetic retrieval benchmark generated offline from a seed.

It is built to behave like a real benchmark, not like noise:

* **Topical clusters.** Documents belong to clusters of ``docs_per_cluster``. A cluster's topic words, and
  inside it the words of each of its ``subtopics_per_cluster`` subtopics, are drawn from a global pool of
  ``concept_vocab`` concept words, so documents of one cluster share vocabulary and the other documents of
  a query's cluster are true hard negatives.
* **Distinctive terms.** Each document also draws ``specific_per_doc`` words from its cluster's own pool of
  ``specific_pool`` words; the combination narrows the candidates down to a few documents.
* **Vocabulary mismatch.** Every concept word has one synonym that never occurs in any document. A query
  paraphrases its target document, replacing each concept word by its synonym with probability
  ``synonym_rate``. BM25 cannot match a synonym; a dense model can learn the mapping from the train split,
  because concepts recur across clusters, so each synonym recurs across training queries (the mapping is
  global and fixed). Distinctive words are kept as they are.
* **Several relevant documents, graded labels.** A share ``multi_relevant_rate`` of queries is about a
  subtopic rather than one document: the target document gets relevance 2 and the other documents of its
  subtopic relevance 1. All other queries have exactly one relevant document (relevance 2).

Words are pseudo-words made of syllables, so no natural-language resource is needed. Generation is
vectorised and done in chunks, so 1,000,000 documents take minutes, not hours, and bounded memory.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, fields

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.datasets.adapter_declaration import Adapter
from hardneg.datasets.canonical import Dataset, Source, table_from_rows
from hardneg.errors import ConfigError
from hardneg.io import artifacts
from hardneg.schema.validation import validate_dataset
from hardneg.schema.values import section_values

log = logging.getLogger(__name__)

_ONSETS = [
    "b",
    "c",
    "d",
    "f",
    "g",
    "h",
    "j",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "t",
    "v",
    "w",
    "z",
    "br",
    "cr",
    "dr",
    "fr",
    "gr",
    "kr",
    "pr",
    "tr",
    "st",
    "sk",
    "pl",
    "bl",
    "gl",
    "sl",
    "ch",
    "sh",
    "th",
]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ei", "ou", "ia", "io"]
_CODAS = ["", "n", "r", "l", "m", "x", "k"]

# Token categories of document text, with their shares.
_BACKGROUND, _TOPIC, _SUBTOPIC, _SPECIFIC = 0, 1, 2, 3
_TEXT_MIX = np.array([0.45, 0.25, 0.15, 0.15])
_TITLE_MIX = np.array([0.0, 0.4, 0.3, 0.3])


@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of the generator: exactly the keys of a ``synthetic`` dataset's config (their meaning and
    defaults are in the schema, ``$defs/dataset``; there is no second copy here). Build it from a config entry
    with :meth:`from_config`."""

    seed: int
    num_docs: int
    num_queries: dict
    docs_per_cluster: int
    subtopics_per_cluster: int
    background_vocab: int
    concept_vocab: int
    topic_words: int
    subtopic_words: int
    specific_pool: int
    specific_per_doc: int
    doc_length: tuple
    title_length: tuple
    synonym_rate: float
    multi_relevant_rate: float
    chunk_size: int

    @classmethod
    def from_config(cls, cfg: dict, *, where: str = "dataset") -> SyntheticSpec:
        """From a ``synthetic`` dataset entry (``adapter: synthetic`` and its keys); missing keys get the schema's
        defaults but ``seed``, which the workflow fills from the global seed. Errors name ``<where>.<key>``."""
        cfg = validate_dataset(cfg, where=where)
        # keys of every adapter, not the generator's
        shared = ("adapter", "empty_documents", "dev_from_train", "hide_positives")
        values = section_values({k: v for k, v in cfg.items() if k not in shared}, [f.name for f in fields(cls)], where)
        spec = cls(
            **{**values, "doc_length": tuple(values["doc_length"]), "title_length": tuple(values["title_length"])}
        )
        width = spec.topic_words + spec.subtopics_per_cluster * spec.subtopic_words
        if width > spec.concept_vocab:
            raise ConfigError(
                f"{where}.concept_vocab",
                f"{spec.concept_vocab} concept words cannot give a cluster its {width} distinct topic and "
                f"subtopic words (topic_words {spec.topic_words} + subtopics_per_cluster "
                f"{spec.subtopics_per_cluster} × subtopic_words {spec.subtopic_words}); raise it to at "
                f"least {width} or lower those",
            )
        return spec

    @property
    def num_clusters(self) -> int:
        return math.ceil(self.num_docs / self.docs_per_cluster)


class _Layout:
    """Word ids: background words, concept words, each cluster's specific words, then one synonym per concept.

    Which concepts a cluster's topic and each subtopic use is drawn once from the seed (``topic_table``,
    ``subtopic_table``)."""

    def __init__(self, spec: SyntheticSpec, rng: np.random.Generator):
        c = spec.num_clusters
        self.spec = spec
        self.concept0 = spec.background_vocab
        self.spec0 = self.concept0 + spec.concept_vocab
        self.base = self.spec0 + c * spec.specific_pool
        self.size = self.base + spec.concept_vocab
        width = spec.topic_words + spec.subtopics_per_cluster * spec.subtopic_words  # <= concept_vocab (from_config)
        # A cluster's topic and subtopic words are distinct from each other, shared with other clusters.
        table = np.argsort(rng.random((c, spec.concept_vocab)), axis=1)[:, :width] + self.concept0
        self.topic_table = table[:, : spec.topic_words]
        self.subtopic_table = table[:, spec.topic_words :].reshape(c, spec.subtopics_per_cluster, spec.subtopic_words)

    def synonym(self, ids: np.ndarray) -> np.ndarray:
        """Synonyms of concept words; other words are returned unchanged."""
        ids = np.asarray(ids)
        concept = (ids >= self.concept0) & (ids < self.spec0)
        return np.where(concept, self.base + (ids - self.concept0), ids)

    def topic(self, cluster, j):
        return self.topic_table[cluster, j]

    def subtopic(self, cluster, sub, j):
        return self.subtopic_table[cluster, sub, j]

    def specific(self, cluster, j):
        return self.spec0 + cluster * self.spec.specific_pool + j


def make_vocabulary(size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` distinct pseudo-words of equal syllable count, in random order."""
    syllables = np.array([o + v + c for o in _ONSETS for v in _VOWELS for c in _CODAS])
    n_syl, length = len(syllables), 2
    while n_syl**length < 4 * size:  # keep the code space sparse so few draws collide
        length += 1
    words = np.empty(0, dtype=syllables.dtype)
    while len(words) < size:
        codes = rng.integers(0, n_syl**length, size=2 * size, dtype=np.int64)
        joined = syllables[codes % n_syl]
        for _ in range(length - 1):
            codes //= n_syl
            joined = np.char.add(joined, syllables[codes % n_syl])
        # Different syllable sequences can spell the same word ("a"+"in" = "ai"+"n"): dedupe strings.
        words = np.unique(np.concatenate([words, joined]))
    rng.shuffle(words)
    return words[:size].astype(object)


def _zipf_cdf(n: int, exponent: float, offset: float) -> np.ndarray:
    weights = 1.0 / (np.arange(n) + offset) ** exponent
    return np.cumsum(weights) / weights.sum()


class SyntheticGenerator:
    def __init__(self, spec: SyntheticSpec):
        self.spec = spec
        root = np.random.default_rng(spec.seed)
        self.vocab_rng, self.doc_rng, self.query_rng, id_rng, layout_rng = (
            np.random.default_rng(s) for s in root.spawn(5)
        )
        self.layout = _Layout(spec, layout_rng)
        self.vocab = make_vocabulary(self.layout.size, self.vocab_rng)
        # Document ids are a permutation so that id order reveals nothing about clusters.
        # An Arrow array ("D" and the number), not Python strings: 8.8M ids take 100 MB, not 600
        self.docids = pc.binary_join_element_wise(
            "D", pa.array(id_rng.permutation(spec.num_docs)).cast(pa.string()), ""
        )
        self.bg_cdf = _zipf_cdf(spec.background_vocab, 1.0, 2.7)
        self.topic_cdf = _zipf_cdf(spec.topic_words, 0.8, 1.0)
        self.specific_sets = np.empty((spec.num_docs, spec.specific_per_doc), dtype=np.int32)  # word ids

    # ----------------------------------------------------------------------------------------- documents
    def cluster_of(self, docs: np.ndarray) -> np.ndarray:
        return docs // self.spec.docs_per_cluster

    def subtopic_of(self, docs: np.ndarray) -> np.ndarray:
        return (docs % self.spec.docs_per_cluster) % self.spec.subtopics_per_cluster

    def _draw_tokens(self, docs, lengths, mix, rng) -> np.ndarray:
        spec, lay = self.spec, self.layout
        n, width = len(docs), int(lengths.max())
        cat = np.searchsorted(np.cumsum(mix), rng.random((n, width)), side="right").clip(0, 3)
        cluster = self.cluster_of(docs)[:, None]
        sub = self.subtopic_of(docs)[:, None]
        bg = np.searchsorted(self.bg_cdf, rng.random((n, width)))
        topic = lay.topic(cluster, np.searchsorted(self.topic_cdf, rng.random((n, width))))
        subw = lay.subtopic(cluster, sub, rng.integers(0, spec.subtopic_words, (n, width)))
        pick = rng.integers(0, spec.specific_per_doc, (n, width))
        specific = np.take_along_axis(self.specific_sets[docs], pick, axis=1)
        return np.choose(cat, [bg, topic, subw, specific])

    def _render(self, tokens: np.ndarray, lengths: np.ndarray) -> list[str]:
        words = self.vocab[tokens]
        return [" ".join(row[:length]) for row, length in zip(words, lengths)]

    def documents(self):
        """Yield corpus tables chunk by chunk (and fill each document's specific-word set)."""
        spec, rng = self.spec, self.doc_rng
        for lo in range(0, spec.num_docs, spec.chunk_size):
            docs = np.arange(lo, min(lo + spec.chunk_size, spec.num_docs))
            pool_order = np.argsort(rng.random((len(docs), spec.specific_pool)), axis=1)[:, : spec.specific_per_doc]
            self.specific_sets[docs] = self.layout.specific(self.cluster_of(docs)[:, None], pool_order)
            text_len = rng.integers(spec.doc_length[0], spec.doc_length[1] + 1, len(docs))
            title_len = rng.integers(spec.title_length[0], spec.title_length[1] + 1, len(docs))
            text = self._render(self._draw_tokens(docs, text_len, _TEXT_MIX, rng), text_len)
            title = self._render(self._draw_tokens(docs, title_len, _TITLE_MIX, rng), title_len)
            yield table_from_rows(artifacts.CORPUS, {"docid": self.docids.take(docs), "title": title, "text": text})
            log.info("synthetic corpus: %d / %d documents", docs[-1] + 1, spec.num_docs)

    # ------------------------------------------------------------------------------------------- queries
    def _siblings(self, doc: int) -> np.ndarray:
        spec = self.spec
        start = (doc // spec.docs_per_cluster) * spec.docs_per_cluster
        members = np.arange(start, min(start + spec.docs_per_cluster, spec.num_docs))
        return members[
            (members % spec.docs_per_cluster) % spec.subtopics_per_cluster == self.subtopic_of(np.array([doc]))[0]
        ]

    def _query_words(self, doc: int, multi: bool, rng) -> np.ndarray:
        spec, lay = self.spec, self.layout
        cluster, sub = doc // spec.docs_per_cluster, self.subtopic_of(np.array([doc]))[0]
        n_topic = rng.integers(1, 3)
        n_sub = rng.integers(2, 4) if multi else 2
        n_spec = rng.integers(0, 2) if multi else 1
        topic = lay.topic(cluster, np.unique(np.searchsorted(self.topic_cdf, rng.random(n_topic))))
        subw = lay.subtopic(cluster, sub, rng.choice(spec.subtopic_words, n_sub, replace=False))
        specific = rng.choice(self.specific_sets[doc], n_spec, replace=False)
        content = np.concatenate([topic, subw, specific])
        swap = rng.random(len(content)) < spec.synonym_rate
        content = np.where(swap, lay.synonym(content), content)
        # A little function-word noise from the head of the background distribution.
        filler = np.searchsorted(self.bg_cdf, rng.random(rng.integers(0, 3)) * self.bg_cdf[49])
        words = np.concatenate([content, filler])
        rng.shuffle(words)
        return words

    def queries(self):
        """Return {split: (queries table, qrels table)} and per-split counts of multi-relevant queries."""
        spec, rng = self.spec, self.query_rng
        total = sum(spec.num_queries.values())
        targets = rng.choice(spec.num_docs, total, replace=total > spec.num_docs)
        out, multi_counts, cursor = {}, {}, 0
        for split, count in spec.num_queries.items():
            qids, texts, r_qid, r_doc, r_rel = [], [], [], [], []
            multi_counts[split] = 0
            for _ in range(count):
                doc = int(targets[cursor])
                qid = f"Q{cursor}"
                cursor += 1
                multi = bool(rng.random() < spec.multi_relevant_rate)
                qids.append(qid)
                texts.append(" ".join(self.vocab[self._query_words(doc, multi, rng)]))
                r_qid.append(qid)
                r_doc.append(self.docids[doc].as_py())
                r_rel.append(2)
                if multi:
                    siblings = [s for s in self._siblings(doc) if s != doc]
                    multi_counts[split] += bool(siblings)
                    r_qid.extend([qid] * len(siblings))
                    r_doc.extend(self.docids.take(np.asarray(siblings, dtype=np.int64)).to_pylist())
                    r_rel.extend([1] * len(siblings))
            out[split] = (
                table_from_rows(artifacts.QUERIES, {"qid": qids, "text": texts}),
                table_from_rows(artifacts.QRELS, {"qid": r_qid, "docid": r_doc, "relevance": r_rel}),
            )
        return out, multi_counts


def generate(spec: SyntheticSpec) -> Dataset:
    """Generate the whole dataset in memory (documents in chunks, then queries)."""
    gen = SyntheticGenerator(spec)
    corpus = pa.concat_tables(list(gen.documents()))
    splits, multi_counts = gen.queries()
    layout = gen.layout
    extra = {
        "generator": "synthetic",
        "spec": asdict(spec),
        "num_clusters": spec.num_clusters,
        "docs_per_cluster": spec.docs_per_cluster,
        "subtopics_per_cluster": spec.subtopics_per_cluster,
        "vocabulary": {
            "document_words": layout.base,
            "concepts": spec.concept_vocab,
            "synonyms": layout.size - layout.base,
        },
        "multi_relevant_queries": multi_counts,
    }
    return Dataset(
        corpus=corpus,
        queries={s: q for s, (q, _) in splits.items()},
        qrels={s: r for s, (_, r) in splits.items()},
        corpus_source=Source("<synthetic corpus>"),
        queries_source={s: Source(f"<synthetic queries {s}>") for s in splits},
        qrels_source={s: Source(f"<synthetic qrels {s}>") for s in splits},
        extra_stats=extra,
    )


def _check(cfg: dict, where: str) -> None:
    """The sizes of an entry must fit together (the generator's own checks, :meth:`SyntheticSpec.from_config`)."""
    SyntheticSpec.from_config(cfg, where=where)


ADAPTER = Adapter(
    "synthetic",
    splits=lambda cfg: list(cfg["num_queries"]),
    load=lambda cfg: generate(SyntheticSpec.from_config(cfg)),
    seeded=True,
    check=_check,
    num_docs=lambda cfg: cfg.get("num_docs"),
)
