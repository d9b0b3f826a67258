"""Adaptive Batch Scheduling's similarities: ``s(q_i, p_j)`` between the question of one training instance and
the passage of another (BM25 scores, :class:`SparseSimilarity`, or the dot products of the encoder being trained,
:class:`DenseSimilarity`), the pairs that never count (:class:`Conflicts`) and the hardness of a batch
(:func:`batch_hardness`). See :mod:`hardneg.methods.abs.scheduling` for the algorithm."""

from __future__ import annotations

import logging
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp
from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------- conflicts
class Conflicts:
    """Pairs of instances that share a relevant document, as sorted int64 keys ``i * n + j`` (both orders).

    Memory is O(pairs): a document relevant to g instances adds g(g-1) keys, and few documents are relevant to
    more than a handful of training instances (one query's rows under ``rows: judgement`` share all theirs).
    """

    def __init__(self, n: int, keys: np.ndarray | None = None):
        self.n = int(n)
        self.keys = np.zeros(0, np.int64) if keys is None else np.asarray(keys, dtype=np.int64)
        # the most partners of one instance: how far past k a neighbour search must look to keep k
        first = self.keys // max(self.n, 1)
        self.max_partners = int(np.bincount(first).max()) if len(first) else 0

    @classmethod
    def from_relevant(cls, relevant: list[np.ndarray]) -> Conflicts:
        """From each instance's relevant document rows (``TrainQueries.relevant``)."""
        n = len(relevant)
        sizes = np.fromiter((len(r) for r in relevant), dtype=np.int64, count=n)
        docs = np.concatenate([np.asarray(r, dtype=np.int64) for r in relevant]) if n else np.zeros(0, np.int64)
        owner = np.repeat(np.arange(n, dtype=np.int64), sizes)
        pairs = np.unique(docs * max(n, 1) + owner)  # sorted by document, each (document, instance) once
        docs, owner = pairs // max(n, 1), pairs % max(n, 1)
        # every ordered pair of instances within each document's group: element p of a group of size g pairs
        # with the g elements of its group
        starts = np.flatnonzero(np.r_[True, docs[1:] != docs[:-1]]) if len(docs) else np.zeros(0, np.int64)
        group_size = np.diff(np.append(starts, len(docs)))
        per_element = np.repeat(group_size, group_size)
        group_start = np.repeat(starts, group_size)
        left = np.repeat(owner, per_element)
        offsets = np.arange(int(per_element.sum())) - np.repeat(np.cumsum(per_element) - per_element, per_element)
        right = owner[np.repeat(group_start, per_element) + offsets]
        keep = left != right
        return cls(n, np.unique(left[keep] * n + right[keep]))

    def __len__(self) -> int:
        return len(self.keys) // 2  # unordered pairs

    def contains(self, rows, cols) -> np.ndarray:
        """Elementwise (with broadcasting): do instances ``rows`` and ``cols`` share a relevant document."""
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        if not len(self.keys):
            return np.zeros(np.broadcast_shapes(rows.shape, cols.shape), dtype=bool)
        keys = rows * self.n + cols
        pos = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return self.keys[pos] == keys

    def mask(self, rows, cols) -> np.ndarray:
        """Boolean [len(rows), len(cols)]: pairs that never count (the same instance, or a shared document)."""
        rows, cols = np.asarray(rows, dtype=np.int64)[:, None], np.asarray(cols, dtype=np.int64)[None, :]
        same = rows == cols
        return same | self.contains(rows, cols) if len(self.keys) else same


# ----------------------------------------------------------------------------------------- similarities
class Similarity(Protocol):
    """s(q_i, p_j) between instance i's question and instance j's passage, masked pairs 0."""

    n: int

    def block(self, rows, cols) -> np.ndarray:
        """float64 [len(rows), len(cols)]: s(q_rows, p_cols)."""

    def neighbours(self, k: int, *, index: str = "Flat") -> tuple[np.ndarray, np.ndarray]:
        """int64 [n, k] each, -1 padded, best first: for every instance the instances whose passages score
        highest against its question, and those whose questions score highest against its passage (never
        itself nor a conflicting instance)."""


def small_products():
    """One BLAS thread: the products here are a few thousand rows by one or a batch, and at that size a thread
    pool costs more than it saves (ten times on a busy two-core machine)."""
    return threadpool_limits(limits=1, user_api="blas")


def pair_sums(similarity: Similarity, rows, cols) -> np.ndarray:
    """float64 [len(rows), len(cols)]: s(q_i, p_j) + s(q_j, p_i), what pair (i, j) adds to a batch's hardness
    (by the similarity's own ``pair_sums`` when it has one)."""
    if hasattr(similarity, "pair_sums"):
        return similarity.pair_sums(rows, cols)
    return similarity.block(rows, cols) + similarity.block(cols, rows).T


def batch_hardness(similarity: Similarity, batch) -> float:
    """h(B) = sum over i != j in ``batch`` of s(q_i, p_j), masked pairs left out."""
    batch = np.asarray(batch, dtype=np.int64)
    return float(similarity.block(batch, batch).sum())


def _keep_first(ids: np.ndarray, bad: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` entries of each row of ``ids`` that are not ``bad`` (nor -1), -1 padded."""
    good = ~bad & (ids >= 0)
    rank = np.cumsum(good, axis=1) - 1
    keep = good & (rank < k)
    out = np.full((len(ids), k), -1, dtype=np.int64)
    out[np.nonzero(keep)[0], rank[keep]] = ids[keep]
    return out


def _faiss_search(base: np.ndarray, queries: np.ndarray, k: int, factory: str) -> np.ndarray:
    """Ids [len(queries), k] of the ``base`` rows with the largest inner products (-1 where fewer are found)."""
    import faiss  # Faiss: imported only where an index is built or searched

    base = np.ascontiguousarray(base, dtype=np.float32)
    index = faiss.index_factory(base.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    if factory == "Flat":
        index.add(base)
    else:
        # graph and clustering indexes built on several OpenMP threads depend on their timing: build on one so
        # that a seed gives one schedule
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            if not index.is_trained:
                index.train(base)
            index.add(base)
        finally:
            faiss.omp_set_num_threads(threads)
        if "HNSW" in factory:
            faiss.ParameterSpace().set_index_parameter(index, "efSearch", max(2 * k, 64))
    return index.search(np.ascontiguousarray(queries, dtype=np.float32), k)[1].astype(np.int64)


class DenseSimilarity:
    """s(q_i, p_j) = questions[i] . passages[j] (float32 vectors and products, float64 results)."""

    def __init__(self, questions: np.ndarray, passages: np.ndarray, conflicts: Conflicts | None = None):
        questions, passages = np.asarray(questions), np.asarray(passages)
        if questions.shape != passages.shape or questions.ndim != 2:
            raise ValueError(f"questions {questions.shape} and passages {passages.shape} are not two [n, d] arrays")
        self.n, self.dim = questions.shape
        # one [n, 2d] array, question then passage: the pair sums of a few thousand candidates gather each
        # candidate's two vectors as one contiguous row
        self.vectors = np.concatenate([questions, passages], axis=1).astype(np.float32)
        self.questions, self.passages = self.vectors[:, : self.dim], self.vectors[:, self.dim :]
        self.conflicts = conflicts if conflicts is not None else Conflicts(self.n)

    def block(self, rows, cols) -> np.ndarray:
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        out = (self.questions[rows] @ self.passages[cols].T).astype(np.float64)
        out[self.conflicts.mask(rows, cols)] = 0.0
        return out

    def pair_sums(self, rows, cols) -> np.ndarray:
        """float64 [len(rows), len(cols)]: s(q_i, p_j) + s(q_j, p_i), as one product of [q_i | p_i] and
        [p_j | q_j]."""
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        other = self.vectors[cols]
        other = np.concatenate([other[:, self.dim :], other[:, : self.dim]], axis=1)
        out = (self.vectors[rows] @ other.T).astype(np.float64)
        out[self.conflicts.mask(rows, cols)] = 0.0
        return out

    def neighbours(self, k: int, *, index: str = "Flat") -> tuple[np.ndarray, np.ndarray]:
        """Two Faiss searches (``index`` is a factory string, inner product): questions against the passages and
        passages against the questions. The search looks past ``k`` far enough to drop the instance itself and its
        conflicting partners."""
        wide = min(self.n, k + 1 + self.conflicts.max_partners)
        own = np.arange(self.n, dtype=np.int64)[:, None]
        out = []
        for base, queries in ((self.passages, self.questions), (self.questions, self.passages)):
            ids = _faiss_search(base, queries, wide, index)
            out.append(_keep_first(ids, (ids == own) | self.conflicts.contains(own, ids), k))
        return out[0], out[1]


def _entries(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, which: np.ndarray):
    """The stored entries of compressed rows (or columns) ``which``: (position in ``which``, index, value)."""
    starts = indptr[which]
    lengths = indptr[which + 1] - starts
    owner = np.repeat(np.arange(len(which)), lengths)
    at = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths) + np.repeat(starts, lengths)
    return owner, indices[at], data[at]


def _top_entries(matrix: sp.csr_matrix, k: int) -> np.ndarray:
    """int64 [rows, k]: each row's column indices of its k largest stored entries (ties: smaller index), -1 padded."""
    counts = np.diff(matrix.indptr)
    row = np.repeat(np.arange(matrix.shape[0]), counts)
    order = np.lexsort((matrix.indices, -matrix.data, row))
    rank = np.arange(len(order)) - np.repeat(matrix.indptr[:-1], counts)
    keep = rank < k
    out = np.full((matrix.shape[0], k), -1, dtype=np.int64)
    out[row[keep], rank[keep]] = matrix.indices[order][keep]
    return out


class SparseSimilarity:
    """s(q_i, p_j) = matrix[i, j], absent entries 0 (e.g. BM25 scores: :meth:`from_ranking`).

    Masked pairs are dropped from the matrix once, at construction. :meth:`block` reads the stored entries of
    whichever side has fewer (the rows' in CSR or the columns' in CSC), so a candidate column against a single
    new member touches only that member's entries.
    """

    def __init__(self, matrix, conflicts: Conflicts | None = None):
        coo = sp.coo_matrix(matrix)
        if coo.shape[0] != coo.shape[1]:
            raise ValueError(f"a similarity matrix is square (instances x instances), not {coo.shape}")
        self.n = coo.shape[0]
        self.conflicts = conflicts if conflicts is not None else Conflicts(self.n)
        rows, cols = coo.row.astype(np.int64), coo.col.astype(np.int64)
        keep = (rows != cols) & (coo.data != 0) & ~self.conflicts.contains(rows, cols)
        self.csr = sp.csr_matrix((coo.data[keep].astype(np.float64), (rows[keep], cols[keep])), shape=coo.shape)
        self.csr.sum_duplicates()
        self.csc = self.csr.tocsc()
        self.csc.sort_indices()
        self._row_entries, self._col_entries = np.diff(self.csr.indptr), np.diff(self.csc.indptr)
        self._slot = np.full(self.n, -1, dtype=np.int64)  # scratch: position of an instance in a block's other side

    @classmethod
    def from_ranking(
        cls, ranking: pa.Table, instance_qids: list[str], instance_docids: list[str], conflicts: Conflicts | None = None
    ) -> SparseSimilarity:
        """s(q_i, p_j) = the ``score`` of instance j's docid in the ranking of instance i's qid (a run table: qid,
        docid, rank, score), 0 when not ranked. Instances may share qids and docids; a (qid, docid) ranked twice
        keeps its highest score."""
        n = len(instance_qids)
        qids, q_of = np.unique(np.asarray(instance_qids, dtype=object).astype(str), return_inverse=True)
        docids, d_of = np.unique(np.asarray(instance_docids, dtype=object).astype(str), return_inverse=True)
        q = pc.index_in(ranking["qid"], value_set=pa.array(qids.tolist(), pa.string()))
        d = pc.index_in(ranking["docid"], value_set=pa.array(docids.tolist(), pa.string()))
        known = pc.and_(pc.is_valid(q), pc.is_valid(d))
        q = q.filter(known).to_numpy().astype(np.int64)
        d = d.filter(known).to_numpy().astype(np.int64)
        score = ranking["score"].filter(known).to_numpy().astype(np.float64)
        order = np.lexsort((-score, q * len(docids) + d))
        first = np.r_[True, np.diff((q * len(docids) + d)[order]) != 0] if len(order) else np.zeros(0, bool)
        q, d, score = q[order][first], d[order][first], score[order][first]
        # qid x docid scores, spread to instance x instance by two one-hot matrices (exact: one product per entry)
        by_id = sp.csr_matrix((score, (q, d)), shape=(len(qids), len(docids)))
        questions = sp.csr_matrix((np.ones(n), (np.arange(n), q_of)), shape=(n, len(qids)))
        passages = sp.csr_matrix((np.ones(n), (d_of, np.arange(n))), shape=(len(docids), n))
        return cls(questions @ by_id @ passages, conflicts)

    def block(self, rows, cols) -> np.ndarray:
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        out = np.zeros((len(rows), len(cols)), dtype=np.float64)
        if not len(rows) or not len(cols):
            return out
        via_rows = self._row_entries[rows].sum() <= self._col_entries[cols].sum()
        if via_rows:
            owner, other, value = _entries(self.csr.indptr, self.csr.indices, self.csr.data, rows)
            targets = cols
        else:
            owner, other, value = _entries(self.csc.indptr, self.csc.indices, self.csc.data, cols)
            targets = rows
        slots = np.arange(len(targets))
        self._slot[targets] = slots
        holder = self._slot[targets]  # the slot that gets each target's values: a repeated one's last copy
        pos = self._slot[other]
        self._slot[targets] = -1
        hit = pos >= 0
        if via_rows:
            out[owner[hit], pos[hit]] = value[hit]
        else:
            out[pos[hit], owner[hit]] = value[hit]
        if (holder != slots).any():
            out = out[:, holder] if via_rows else out[holder]
        return out

    def neighbours(self, k: int, *, index: str = "Flat") -> tuple[np.ndarray, np.ndarray]:
        """The top ``k`` stored entries of each row (passages for a question) and each column (questions for a
        passage); instances with fewer are -1 padded. ``index`` is not used (the matrix is its own index)."""
        return _top_entries(self.csr, k), _top_entries(sp.csr_matrix(self.csc.T), k)


def mean_hardness(similarity: Similarity, batches: list[np.ndarray]) -> float:
    """The mean of h(B) over ``batches``."""
    with small_products():
        return float(np.mean([batch_hardness(similarity, b) for b in batches])) if batches else 0.0
