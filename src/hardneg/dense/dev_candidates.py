"""Dev evaluation at a fraction of its cost: re-ranking a fixed set of candidates instead of searching the corpus.

Evaluating a model in training on the dev queries by exact search means encoding the whole corpus with it at
every evaluation. With ``train.dev_search: candidates`` (the default) each dev query instead keeps a fixed list of
candidate documents, built once per run before training starts: the union of the top ``train.dev_depth`` documents
of the dataset's lexical run (BM25) and of the model training starts from (the ranking of its ``init`` run, or, for
a pre-trained encoder with no run of its own, one exact search of the corpus encoded with it at step 0). At each
evaluation only those documents are encoded, each query's candidates are ordered by the current model's scores,
and RR@10 and RR@100 are computed with ir-measures over that order.

What it measures: how well the model *orders* documents that either BM25 or the starting model already found. A
relevant document neither found scores 0 under both the full and the re-ranking evaluation unless the model in
training brings it up from elsewhere in the corpus, which only the full evaluation sees; and a document neither
found cannot push a relevant one down. The values are therefore not the full-corpus values, but the checkpoints'
order under them is what model selection (``train.keep: best``) needs; ``dev_search: both`` logs the full-corpus
values beside them (``dev_corpus_rr10``, ``dev_corpus_rr100``) to measure how close the two orders are, and
``dev_search: corpus`` keeps the full evaluation.

:class:`DocumentVectors` holds the current step's vectors of the documents encoded so far, so that the dev
evaluation and the memorisation check of the last step encode each candidate document once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from hardneg.dense.encode import encode_rows
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.io.rankings import read_ranking

log = logging.getLogger(__name__)

DEPTH = 30  # documents each source contributes to a query's candidates (train.dev_depth's default)


@dataclass(frozen=True)
class Candidates:
    """Each query's candidate documents: ``doc_rows[i]`` are rows of the tokenized corpus for query row
    ``query_rows[i]`` (of its tokenized query set), unique, padded with -1; ``sources`` names where they came
    from."""

    query_rows: np.ndarray  # int64 [Q]
    doc_rows: np.ndarray  # int64 [Q, n], -1 padded
    sources: tuple[str, ...] = ()

    def documents(self) -> np.ndarray:
        """The distinct corpus rows among all queries' candidates, sorted."""
        return np.unique(self.doc_rows[self.doc_rows >= 0])

    def restricted(self, query_rows: np.ndarray) -> Candidates:
        """The candidates of ``query_rows`` only (each must be one of :attr:`query_rows`)."""
        where = {int(row): i for i, row in enumerate(self.query_rows)}
        picked = [where[int(row)] for row in query_rows]
        return Candidates(np.asarray(query_rows, dtype=np.int64), self.doc_rows[picked], self.sources)

    def describe(self) -> str:
        found = self.doc_rows >= 0
        return (
            f"{len(self.query_rows):,} queries, {found.sum(axis=1).mean() if len(found) else 0:.1f} candidates a "
            f"query on average, {len(self.documents()):,} distinct documents, from {' and '.join(self.sources)}"
        )


def ranking_candidates(
    path, queries: TokenizedTexts, query_rows: np.ndarray, corpus_ids: list[str], depth: int
) -> list[list[int]]:
    """Each query's top ``depth`` documents of the ranking file ``path`` (a RANKING Parquet file), as corpus rows in
    rank order; a document the tokenized corpus does not hold (an empty one left out) is skipped."""
    qids = [queries.row_ids[row] for row in query_rows]
    table = read_ranking(path, filters=[("qid", "in", qids), ("rank", "<=", depth)])
    table = table.sort_by([("qid", "ascending"), ("rank", "ascending")])
    index = {docid: row for row, docid in enumerate(corpus_ids)}
    found: dict[str, list[int]] = {}
    for qid, docid in zip(table["qid"].to_pylist(), table["docid"].to_pylist()):
        if docid in index:
            found.setdefault(qid, []).append(index[docid])
    return [found.get(qid, []) for qid in qids]


def top_k(query_vectors: np.ndarray, doc_vectors: np.ndarray, k: int = 100):
    """Each query's exact inner-product top ``k`` documents (a Faiss ``Flat`` index), best first: (scores
    float32 [Q, k], rows int64 [Q, k]); where there are fewer than ``k`` documents the rest is padded with -inf
    and row -1, so that the shares of several processes stack."""
    from hardneg.index import build_index, search  # Faiss: imported only where an index is built or searched

    scores = np.full((len(query_vectors), k), -np.inf, dtype=np.float32)
    rows = np.full((len(query_vectors), k), -1, dtype=np.int64)
    if len(doc_vectors) and len(query_vectors):
        found_scores, found_rows = search(build_index(doc_vectors, "Flat"), query_vectors, k)
        scores[:, : found_scores.shape[1]], rows[:, : found_rows.shape[1]] = found_scores, found_rows
    return scores, rows


def model_candidates(
    model, queries: TokenizedTexts, query_rows: np.ndarray, doc_vectors: np.ndarray, depth: int, **encoding
) -> list[list[int]]:
    """Each query's exact top ``depth`` corpus rows under ``model``, whose vectors of the corpus's rows are
    ``doc_vectors`` (:func:`corpus_vectors`)."""
    q = encode_rows(model, queries, query_rows, "query", **encoding)
    _, rows = top_k(q, doc_vectors, min(depth, max(len(doc_vectors), 1)))
    return [[int(r) for r in row if r >= 0] for row in rows]


def corpus_vectors(model, corpus: TokenizedTexts, **encoding) -> np.ndarray:
    """The whole corpus encoded with ``model`` (the starting model's, for :func:`model_candidates`)."""
    return encode_rows(model, corpus, np.arange(len(corpus)), "doc", **encoding)


def merge(*lists: list[list[int]]) -> np.ndarray:
    """Per query, the union of its lists in order (the first list's documents first), padded with -1."""
    merged = []
    for parts in zip(*lists):
        seen: dict[int, None] = {}
        for part in parts:
            seen.update(dict.fromkeys(part))
        merged.append(list(seen))
    width = max((len(m) for m in merged), default=0)
    out = np.full((len(merged), width), -1, dtype=np.int64)
    for i, rows in enumerate(merged):
        out[i, : len(rows)] = rows
    return out


def build_candidates(
    queries: TokenizedTexts,
    query_rows: np.ndarray,
    corpus: TokenizedTexts,
    *,
    rankings=(),
    model=None,
    model_vectors: np.ndarray | None = None,
    depth: int = DEPTH,
    **encoding,
) -> Candidates | None:
    """The candidates of ``query_rows``: the top ``depth`` of every ranking file of ``rankings`` (name → path),
    then, when ``model`` is given, its own exact top ``depth`` over the corpus (encoded with it, unless its vectors
    are ``model_vectors``). None when there is no source at all."""
    query_rows = np.asarray(query_rows, dtype=np.int64)
    lists, sources = [], []
    for name, path in dict(rankings).items():
        lists.append(ranking_candidates(path, queries, query_rows, corpus.row_ids, depth))
        sources.append(name)
    if model is not None:
        if model_vectors is None:
            model_vectors = corpus_vectors(model, corpus, **encoding)
        lists.append(model_candidates(model, queries, query_rows, model_vectors, depth, **encoding))
        sources.append("the starting model")
    if not lists:
        return None
    return Candidates(query_rows, merge(*lists), tuple(sources))


class DocumentVectors:
    """The vectors of corpus rows under the model of one optimiser step, encoded at most once each: asking for
    rows at a new step forgets the old vectors."""

    def __init__(self, corpus: TokenizedTexts):
        self.corpus = corpus
        self.step: int | None = None
        self._vectors: dict[int, np.ndarray] = {}

    def get(self, step: int, model, rows: np.ndarray, **encoding) -> np.ndarray:
        """Vectors of ``rows`` (float32 [len(rows), dim]) under ``model`` at ``step``."""
        if step != self.step:
            self.step, self._vectors = step, {}
        missing = np.array([row for row in np.unique(rows) if int(row) not in self._vectors], dtype=np.int64)
        if len(missing):
            vectors = encode_rows(model, self.corpus, missing, "doc", **encoding)
            self._vectors.update(zip(missing.tolist(), vectors))
        if not len(rows):
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._vectors[int(row)] for row in rows]).astype(np.float32, copy=False)


def rerank(query_vectors: np.ndarray, doc_vectors: np.ndarray, doc_rows: np.ndarray, k: int):
    """Each query's candidates ordered by inner product, best first: (scores float32 [Q, k], corpus rows int64
    [Q, k], -inf / -1 where a query has fewer); ``doc_vectors`` holds the vector of every row of ``doc_rows``
    (in :func:`numpy.unique` order of its non-negative rows). Equal scores keep the candidates' order."""
    rows = np.unique(doc_rows[doc_rows >= 0])
    where = np.searchsorted(rows, np.maximum(doc_rows, 0))
    scores = (
        np.einsum("qd,qnd->qn", query_vectors, doc_vectors[where])
        if len(rows)
        else np.zeros(doc_rows.shape, dtype=np.float32)
    )
    scores = np.where(doc_rows >= 0, scores, -np.inf).astype(np.float32)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    out_scores = np.full((len(doc_rows), k), -np.inf, dtype=np.float32)
    out_rows = np.full((len(doc_rows), k), -1, dtype=np.int64)
    width = order.shape[1]
    out_scores[:, :width] = np.take_along_axis(scores, order, 1)
    out_rows[:, :width] = np.where(np.isfinite(out_scores[:, :width]), np.take_along_axis(doc_rows, order, 1), -1)
    return out_scores, out_rows
