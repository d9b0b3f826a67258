"""Training data for bi-encoders: queries with their positives, negative sources, and the batch sampler.

Everything is indexed by rows of the tokenized cache (query rows of ``queries_train``, document rows of
``corpus``), so a batch is a few integer arrays until the model needs tensors. Sampling is driven by a
``numpy.random.Generator`` that the trainer seeds from (seed, epoch, step), so a resumed run draws exactly
the batches an uninterrupted run would have drawn.
"""

from __future__ import annotations

import logging
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

log = logging.getLogger(__name__)


def _row_index(ids: list[str]) -> dict[str, int]:
    return {value: row for row, value in enumerate(ids)}


class TrainQueries:
    """The training rows: queries that have a relevant document, their positives and all their relevant documents.

    ``positives[i]`` are the document rows with the highest relevance grade of row ``i``'s query (the ones sampled
    as the batch positive); every document with relevance >= 1 is *relevant* and is never used as a negative.

    A row is a query (``per_judgement=False``: its positive is sampled among its positives at every batch), or
    with ``per_judgement`` one (query, positive) judgement: a query with three positives is then three rows, each
    with one fixed positive, so an epoch visits every positive once and has as many rows as judgements.
    ``qids``, ``query_rows``, ``relevant`` and ``positives`` are per row either way.

    Judgements naming a document absent from ``doc_ids`` (the tokenized corpus leaves empty documents out under
    ``empty_documents: exclude``) are left out, with a warning; a query left without a relevant document is not
    a training query.
    """

    def __init__(self, qrels: pa.Table, query_ids: list[str], doc_ids: list[str], *, per_judgement: bool = False):
        q_index, d_index = _row_index(query_ids), _row_index(doc_ids)
        rel = qrels.filter(pc.greater_equal(qrels["relevance"], 1))
        qids = rel["qid"].to_pylist()
        missing = sorted({q for q in qids if q not in q_index})
        if missing:
            raise ValueError(
                f"{len(missing)} judged training queries are not in the tokenized queries (e.g. {missing[0]})"
            )
        q_rows = np.fromiter((q_index[q] for q in qids), dtype=np.int64, count=len(qids))
        d_rows = np.fromiter((d_index.get(d, -1) for d in rel["docid"].to_pylist()), dtype=np.int64, count=len(qids))
        grades = rel["relevance"].to_numpy()
        self.skipped_judgements = int((d_rows < 0).sum())
        if self.skipped_judgements:
            absent = rel["docid"].filter(pa.array(d_rows < 0)).unique().slice(0, 5).to_pylist()
            log.warning(
                "%d relevance judgements name documents missing from the tokenized corpus (e.g. %s: empty "
                "documents, left out under empty_documents: exclude); training ignores them",
                self.skipped_judgements,
                ", ".join(absent),
            )
            q_rows, d_rows, grades = q_rows[d_rows >= 0], d_rows[d_rows >= 0], grades[d_rows >= 0]
        order = np.lexsort((-grades, q_rows))
        q_rows, d_rows, grades = q_rows[order], d_rows[order], grades[order]
        self.query_rows, starts = np.unique(q_rows, return_index=True)
        bounds = np.append(starts, len(q_rows))
        self.relevant = [d_rows[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        self.positives = [rows[grades[a:b] == grades[a]] for rows, a, b in zip(self.relevant, bounds[:-1], bounds[1:])]
        self.qids = [query_ids[r] for r in self.query_rows]
        self.num_queries = len(self.query_rows)
        self.num_judgements = int(sum(len(p) for p in self.positives))  # (query, positive) pairs
        self.per_judgement = per_judgement
        if per_judgement:
            owner = np.repeat(np.arange(self.num_queries), [len(p) for p in self.positives])
            fixed = np.concatenate(self.positives) if self.positives else np.zeros(0, np.int64)
            self.query_rows = self.query_rows[owner]
            self.relevant = [self.relevant[i] for i in owner]
            self.positives = [fixed[k : k + 1] for k in range(len(fixed))]
            self.qids = [self.qids[i] for i in owner]
        self.num_docs = len(doc_ids)
        # (row, doc row) pairs encoded as one int64 for vectorised relevance look-ups
        self._relevant_keys = np.sort(
            np.concatenate([i * self.num_docs + rows for i, rows in enumerate(self.relevant)])
            if self.relevant
            else np.zeros(0, np.int64)
        )

    def __len__(self) -> int:
        return len(self.query_rows)

    def is_relevant(self, queries: np.ndarray, doc_rows: np.ndarray) -> np.ndarray:
        """Elementwise (with broadcasting): is ``doc_rows`` relevant to ``queries`` (query indices)."""
        keys = np.asarray(queries, dtype=np.int64) * self.num_docs + np.asarray(doc_rows, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self._relevant_keys, keys), len(self._relevant_keys) - 1)
        return self._relevant_keys[pos] == keys

    def relevance_mask(self, queries: np.ndarray, doc_rows: np.ndarray) -> np.ndarray:
        """Boolean [len(queries), len(doc_rows)]: is document j relevant to query i."""
        return self.is_relevant(np.asarray(queries)[:, None], np.asarray(doc_rows)[None, :])

    def sample_positives(self, queries: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.array([rng.choice(self.positives[i]) for i in queries], dtype=np.int64)


class NegativeSource(Protocol):
    def sample(self, queries: np.ndarray, per_query: int, rng: np.random.Generator) -> np.ndarray:
        """Document rows [len(queries), per_query]."""


class RandomNegatives:
    """Uniformly random corpus documents, re-drawn when relevant to the query."""

    def __init__(self, train: TrainQueries):
        self.train = train

    def sample(self, queries, per_query, rng):
        out = rng.integers(0, self.train.num_docs, size=(len(queries), per_query))
        for _ in range(10):  # relevant documents are rare: a few redraws clear them
            bad = self.train.is_relevant(np.asarray(queries)[:, None], out)
            if not bad.any():
                break
            out[bad] = rng.integers(0, self.train.num_docs, size=int(bad.sum()))
        return out


class RankedNegatives:
    """Negatives drawn uniformly from each query's ranked candidate list (a BM25 run's top ``depth``, or a mined
    hard-negative list), relevant documents removed by id. Queries without candidates fall back to random ones."""

    def __init__(self, train: TrainQueries, ranking: pa.Table, doc_ids: list[str], depth: int | None = None):
        self.train = train
        self.fallback = RandomNegatives(train)
        d_index = _row_index(doc_ids)
        # Candidates are per query; rows of one query (one per judgement) share them.
        names = list(dict.fromkeys(train.qids))
        q_pos = {qid: i for i, qid in enumerate(names)}
        self.query_of = np.fromiter((q_pos[q] for q in train.qids), dtype=np.int64, count=len(train.qids))
        first_row = np.unique(self.query_of, return_index=True)[1]  # each query's first row
        if depth is not None:
            ranking = ranking.filter(pc.less_equal(ranking["rank"], depth))
        ranking = ranking.filter(pc.is_in(ranking["qid"], value_set=pa.array(names, pa.string())))
        q = np.fromiter((q_pos[x] for x in ranking["qid"].to_pylist()), dtype=np.int64, count=ranking.num_rows)
        d = np.fromiter(
            (d_index.get(x, -1) for x in ranking["docid"].to_pylist()), dtype=np.int64, count=ranking.num_rows
        )
        keep = d >= 0
        q, d = q[keep], d[keep]
        is_rel = train.is_relevant(first_row[q], d)
        q, d = q[~is_rel], d[~is_rel]
        order = np.argsort(q, kind="stable")
        q, d = q[order], d[order]
        self.starts = np.searchsorted(q, np.arange(len(names) + 1))
        self.docs = d
        empty = int((np.diff(self.starts) == 0).sum())
        if empty:
            log.warning(
                "%d of %d training queries have no candidate negatives; they get random negatives", empty, len(names)
            )

    def sample(self, queries, per_query, rng):
        out = self.fallback.sample(queries, per_query, rng)
        for k, i in enumerate(queries):
            g = self.query_of[i]
            a, b = self.starts[g], self.starts[g + 1]
            if b > a:
                out[k] = self.docs[a + rng.choice(b - a, per_query, replace=b - a < per_query)]
        return out


class TeacherScores:
    """A teacher's scores of (query, document) pairs, looked up by training row and document row: what the
    distillation losses (:data:`hardneg.dense.losses.DISTILLATION`) learn from.

    Built from tables with ``qid``, ``docid`` and ``score`` columns (the scores of a pool's candidates and of
    the queries' judged positives, say); a pair listed twice keeps its first score, pairs of other queries or of
    documents outside the tokenized corpus are ignored. :meth:`lookup` gives NaN for a pair the tables do not
    score.
    """

    def __init__(self, train: TrainQueries, tables: list[pa.Table], doc_ids: list[str]):
        self.train = train
        # keyed by the query's row in the tokenized queries, so the rows of one query (per judgement) share them
        q_index = dict(zip(train.qids, train.query_rows.tolist()))
        qids, docs = pa.array(list(q_index), pa.string()), pa.array(doc_ids, pa.string())
        query_rows = np.append(np.array(list(q_index.values()), np.int64), -1)  # code -1 (no such query) -> -1
        key_parts: list[np.ndarray] = []
        value_parts: list[np.ndarray] = []
        for table in tables:  # Arrow hash look-ups: a pool of millions of rows never becomes Python strings
            q = query_rows[pc.index_in(table["qid"], value_set=qids).fill_null(-1).to_numpy().astype(np.int64)]
            d = pc.index_in(table["docid"], value_set=docs).fill_null(-1).to_numpy().astype(np.int64)
            known = (q >= 0) & (d >= 0)
            key_parts.append(q[known] * train.num_docs + d[known])
            value_parts.append(table["score"].to_numpy(zero_copy_only=False).astype(np.float32)[known])
        keys = np.concatenate(key_parts or [np.zeros(0, np.int64)])
        values = np.concatenate(value_parts or [np.zeros(0, np.float32)])
        self.keys, first = np.unique(keys, return_index=True)  # sorted; the first score of a repeated pair
        self.values = values[first]

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, queries: np.ndarray, doc_rows: np.ndarray) -> np.ndarray:
        """float32 scores, elementwise (with broadcasting) of training rows ``queries`` and document rows
        ``doc_rows``; NaN where the teacher has no score of the pair."""
        query_rows = self.train.query_rows[np.asarray(queries, np.int64)]
        keys = query_rows * self.train.num_docs + np.asarray(doc_rows, np.int64)
        if not len(self.keys):
            return np.full(keys.shape, np.nan, np.float32)
        pos = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return np.where(self.keys[pos] == keys, self.values[pos], np.float32(np.nan)).astype(np.float32)


class BatchSampler(Protocol):
    """Which training queries form each step's batch, one epoch at a time. Pluggable (e.g. adaptive scheduling).

    The trainer asks ``num_batches`` for every epoch before the first step (the learning-rate schedule needs
    the total number of steps), then asks ``batches`` once per epoch, at the start of that epoch, with the
    model as it is then, so a sampler may re-rank or re-group queries with the current encoder (in eval mode
    and under ``torch.no_grad()``; the trainer puts the model back in train mode). ``batches(epoch, model)``
    must return exactly ``num_batches(epoch)`` arrays of query indices (into ``TrainQueries``), each of at
    least two queries (in-batch negatives need two rows). A sampler with state defines ``state_dict()`` and
    ``load_state_dict(state)``; checkpoints keep it, and with it the current epoch's batches.
    """

    def num_batches(self, epoch: int) -> int: ...

    def batches(self, epoch: int, model=None) -> list[np.ndarray]: ...


class ShuffledBatches:
    """A fresh seeded permutation of the queries each epoch, cut into batches; a last batch of one is dropped
    (in-batch negatives need two rows). It has no state and does not look at the model."""

    def __init__(self, num_queries: int, batch_size: int, seed: int):
        self.num_queries, self.batch_size, self.seed = num_queries, batch_size, seed

    def num_batches(self, epoch: int) -> int:
        full, rest = divmod(self.num_queries, self.batch_size)
        return full + int(rest > 1)

    def batches(self, epoch: int, model=None) -> list[np.ndarray]:
        order = np.random.default_rng([self.seed, epoch]).permutation(self.num_queries)
        cuts = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        return [c for c in cuts if len(c) > 1]
