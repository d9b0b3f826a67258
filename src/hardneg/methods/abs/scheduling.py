"""Adaptive batch scheduling (ABS): training instances grouped so that in-batch negatives are hard.

With in-batch negatives every other row's positive passage is a row's negative, so what a batch teaches depends
on which instances share it. ABS (Choi et al., IEEE Access 2021; Zhao, Yang and Cui, "Condenser and Adaptive
Batch Scheduling for OpenQA Passage Retrieval") builds each batch from random instances, then swaps its weakest
member for the outside instance that makes the batch hardest, as long as that helps.

An *instance* i is a training row: its question q_i and its passage p_i (the row's first positive). ``s(q_i, p_j)``
is a similarity (BM25 scores, :class:`SparseSimilarity`, or the dot products of the encoder being trained,
:class:`DenseSimilarity`) and the hardness of a batch is

    h(B) = sum over i != j in B of s(q_i, p_j).

Pairs that may never count (the same instance, or two instances with a relevant document in common, which the
loss never uses as each other's negatives: :class:`Conflicts`) have s = 0 everywhere. A swap of member r for an
outsider a changes h by ``g_a(r) - c_r``: ``c_r`` sums the pair sums ``s(q_r, p_j) + s(q_j, p_r)`` over the
other members, ``g_a(r)`` those of a over the members but r. Outsiders come only from the members' neighbour
lists (the instances closest to their questions and passages, found once per epoch), and each batch keeps a
[candidates, batch size] matrix of pair sums that a swap updates by one column and a few rows: after the
neighbour search (exact Faiss ``Flat``: O(N^2 d); a graph index such as ``HNSW32`` for large N), a swap costs
O(candidates x batch size x d), never a scan of all instances.

Every scheduler returns one epoch's batches as a partition of the instances, :func:`num_batches` of them: all
of ``batch_size`` but the last, which takes the rest and is one larger when a single instance would be left
(in-batch negatives need two rows). :class:`AdaptiveBatchSampler` is the trainer's sampler
(:class:`hardneg.dense.data.BatchSampler`).
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp
from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

log = logging.getLogger(__name__)

ORDERS = ("sequential", "random", "adaptive")
SIMILARITIES = ("bm25", "encode")
SEARCHES = ("greedy", "beam")
SWAPS_PER_MEMBER = 4  # default max_swaps = SWAPS_PER_MEMBER x batch size: room to replace every member a few times


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
    def from_relevant(cls, relevant: list[np.ndarray]) -> "Conflicts":
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


def _small_products():
    """One BLAS thread: the products here are a few thousand rows by one or a batch, and at that size a thread
    pool costs more than it saves (ten times on a busy two-core machine)."""
    return threadpool_limits(limits=1, user_api="blas")


def _pair_sums(similarity: Similarity, rows, cols) -> np.ndarray:
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
    import faiss

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
        self.questions, self.passages = self.vectors[:, :self.dim], self.vectors[:, self.dim:]
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
        other = np.concatenate([other[:, self.dim:], other[:, :self.dim]], axis=1)
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
    def from_ranking(cls, ranking: pa.Table, instance_qids: list[str], instance_docids: list[str],
                     conflicts: Conflicts | None = None) -> "SparseSimilarity":
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


# ------------------------------------------------------------------------------------------- schedulers
def num_batches(n: int, batch_size: int) -> int:
    """Batches of an epoch of ``n`` instances: all of ``batch_size`` but the last, which takes the rest, or joins
    the one before when it would hold a single instance."""
    if batch_size < 2 or n < 2:
        raise ValueError(f"in-batch negatives need batches of two or more and two instances or more "
                         f"(batch_size {batch_size}, {n} instances)")
    full, rest = divmod(n, batch_size)
    return max(full + int(rest > 1), 1)


def _cut(order: np.ndarray, batch_size: int) -> list[np.ndarray]:
    count = num_batches(len(order), batch_size)
    bounds = [k * batch_size for k in range(count)] + [len(order)]
    return [order[a:b].astype(np.int64) for a, b in zip(bounds[:-1], bounds[1:])]


def sequential_batches(n: int, batch_size: int) -> list[np.ndarray]:
    """The instances in data order, cut into :func:`num_batches` batches."""
    return _cut(np.arange(n, dtype=np.int64), batch_size)


def random_batches(n: int, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """A permutation drawn from ``rng``, cut into :func:`num_batches` batches."""
    return _cut(rng.permutation(n).astype(np.int64), batch_size)


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``values``, largest first, ties to the smaller index (so ``_top(v, 1)`` is
    ``argmax(v)``: a beam of one makes the greedy choices)."""
    if k >= len(values):
        return np.argsort(-values, kind="stable")
    kth = values[np.argpartition(-values, k - 1)[k - 1]]
    above = np.flatnonzero(values > kth)
    picked = np.concatenate([above, np.flatnonzero(values == kth)[:k - len(above)]])
    return picked[np.lexsort((picked, -values[picked]))]


class _Improver:
    """Swaps members of one batch at a time for better outsiders (see :func:`improve_batch`).

    Per batch it keeps the candidates (instances on a current member's neighbour lists, with the number of
    such listings in ``refs``), ``pairs`` [candidates, batch size] (their pair sums with each member's slot)
    with its row sums, and ``inner`` [batch size, batch size] (the members' pair sums). A swap recomputes
    the slot's column and the new member's row, and appends rows for the candidates it brings.
    """

    def __init__(self, similarity: Similarity, neighbours: tuple[np.ndarray, np.ndarray], excluded: np.ndarray,
                 *, search: str = "greedy", beam: int = 3, max_swaps: int | None = None):
        if search not in SEARCHES:
            raise ValueError(f"search is one of {SEARCHES}, not {search!r}")
        if beam < 1:
            raise ValueError(f"beam must be at least 1, not {beam}")
        self.similarity, self.search, self.beam, self.max_swaps = similarity, search, beam, max_swaps
        self.lists = np.concatenate(neighbours, axis=1)  # [n, 2k]: both neighbour lists of each instance
        self.excluded = excluded  # bool [n]: may never join (emitted in an earlier batch); the caller updates it
        self.slot_of = np.full(similarity.n, -1, dtype=np.int64)  # candidate row of an instance, -1: none
        self.in_batch = np.zeros(similarity.n, dtype=bool)
        self.swaps = 0  # over all batches, for the log

    # ---------------------------------------------------------------------------- candidate bookkeeping
    def _grow(self, rows: int) -> None:
        if self.count + rows <= len(self.ids):
            return
        size = max(2 * len(self.ids), self.count + rows)
        self.ids = np.resize(self.ids, size)
        self.refs = np.resize(self.refs, size)
        self.eligible = np.resize(self.eligible, size)
        self.rowsum = np.resize(self.rowsum, size)
        pairs = np.empty((size, self.pairs.shape[1]))
        pairs[:self.count] = self.pairs[:self.count]
        self.pairs = pairs

    def _listed(self, members) -> tuple[np.ndarray, np.ndarray]:
        """Distinct instances on the neighbour lists of ``members`` that may join, and how often each is listed."""
        ids = self.lists[members].ravel()
        ids = ids[ids >= 0]
        return np.unique(ids[~self.excluded[ids]], return_counts=True)

    def _refresh(self, rows: np.ndarray) -> None:
        self.eligible[rows] = (self.refs[rows] > 0) & ~self.in_batch[self.ids[rows]]

    def _list(self, members) -> None:
        ids, counts = self._listed(members)
        rows = self.slot_of[ids]
        known = rows >= 0
        self.refs[rows[known]] += counts[known]
        new = ids[~known]
        if len(new):
            self._grow(len(new))
            at = np.arange(self.count, self.count + len(new))
            self.ids[at], self.refs[at], self.slot_of[new] = new, counts[~known], at
            self.pairs[at] = _pair_sums(self.similarity, new, self.batch)
            self.rowsum[at] = self.pairs[at].sum(axis=1)
            self.count += len(new)
            rows = np.concatenate([rows[known], at])
        self._refresh(rows)

    def _unlist(self, members) -> None:
        ids, counts = self._listed(members)
        rows = self.slot_of[ids]  # all listed before, when the member joined
        self.refs[rows] -= counts
        self._refresh(rows)
        if (self.refs[:self.count] == 0).sum() > max(self.count // 2, 256):
            self._compact()

    def _compact(self) -> None:
        """Drop candidates no current member lists (a later listing adds them back with fresh pair sums)."""
        keep = np.flatnonzero(self.refs[:self.count] > 0)
        self.slot_of[self.ids[:self.count]] = -1
        for name in ("ids", "refs", "eligible", "rowsum", "pairs"):
            array = getattr(self, name)
            array[:len(keep)] = array[keep]
        self.count = len(keep)
        self.slot_of[self.ids[:self.count]] = np.arange(self.count)

    # ------------------------------------------------------------------------------------- the search
    def _choose(self) -> tuple[int, int] | None:
        """(member slot, candidate row) of the best swap, or None when no swap raises h."""
        if not self.count:
            return None
        contribution = self.inner.sum(axis=1)  # c_r
        live = self.eligible[:self.count]
        if self.search == "greedy":
            r = int(np.argmin(contribution))
            gain = np.where(live, self.rowsum[:self.count] - self.pairs[:self.count, r], -np.inf)  # g_a(r)
            a = int(np.argmax(gain))
            return (r, a) if gain[a] - contribution[r] > 0 else None
        best, choice = -np.inf, None
        for r in _top(-contribution, self.beam):  # the smallest contributions, lowest slot first on ties
            gain = np.where(live, self.rowsum[:self.count] - self.pairs[:self.count, r], -np.inf)
            adds = _top(gain, self.beam)
            delta = gain[adds] - contribution[r]  # h after the swap minus h now
            k = int(np.argmax(delta))
            if delta[k] > best:
                best, choice = delta[k], (int(r), int(adds[k]))
        return choice if best > 0 else None

    def _swap(self, r: int, row: int) -> None:
        leaving, joining = int(self.batch[r]), int(self.ids[row])
        column = _pair_sums(self.similarity, self.ids[:self.count], [joining])[:, 0]
        self.rowsum[:self.count] += column - self.pairs[:self.count, r]
        self.pairs[:self.count, r] = column
        self.batch[r] = joining
        self.in_batch[leaving], self.in_batch[joining] = False, True
        inner = _pair_sums(self.similarity, self.batch, [joining])[:, 0]
        self.inner[r, :], self.inner[:, r] = inner, inner
        touched = [row] + ([self.slot_of[leaving]] if self.slot_of[leaving] >= 0 else [])
        self._refresh(np.array(touched, dtype=np.int64))
        self._unlist([leaving])
        self._list([joining])

    def improve(self, batch: np.ndarray) -> tuple[np.ndarray, list[float]]:
        self.batch = np.array(batch, dtype=np.int64)
        b = len(self.batch)
        self.in_batch[self.batch] = True
        self.inner = _pair_sums(self.similarity, self.batch, self.batch)
        self.count = 0
        self.ids, self.refs = np.zeros(0, np.int64), np.zeros(0, np.int64)
        self.eligible, self.rowsum, self.pairs = np.zeros(0, bool), np.zeros(0), np.zeros((0, b))
        self._list(self.batch)
        history = [float(self.inner.sum()) / 2]  # h(B): each unordered pair's sum counts s both ways
        limit = SWAPS_PER_MEMBER * b if self.max_swaps is None else self.max_swaps
        for _ in range(limit):
            choice = self._choose()
            if choice is None:
                break
            self._swap(*choice)
            history.append(float(self.inner.sum()) / 2)
        self.swaps += len(history) - 1
        self.slot_of[self.ids[:self.count]] = -1
        self.in_batch[self.batch] = False
        return self.batch, history


def improve_batch(similarity: Similarity, batch, neighbours: tuple[np.ndarray, np.ndarray], *,
                  excluded: np.ndarray | None = None, search: str = "greedy", beam: int = 3,
                  max_swaps: int | None = None) -> tuple[np.ndarray, list[float]]:
    """Swap members of ``batch`` for outsiders while h strictly rises; return the batch and h after each swap.

    ``neighbours`` are ``similarity.neighbours(k)``; outsiders are the instances on the members' lists that are
    not ``excluded`` (bool [n], default none) nor in the batch. Greedy: the member r with the smallest
    contribution c_r leaves, the outsider a with the largest gain g_a(r) joins, when g_a(r) > c_r. Beam: the
    ``beam`` members with the smallest contributions, each with its ``beam`` best outsiders, and the best of
    those beam^2 swaps. At most ``max_swaps`` swaps (default :data:`SWAPS_PER_MEMBER` x batch size). The history
    starts with h of ``batch`` and never falls.
    """
    excluded = np.zeros(similarity.n, dtype=bool) if excluded is None else np.asarray(excluded, dtype=bool)
    improver = _Improver(similarity, neighbours, excluded, search=search, beam=beam, max_swaps=max_swaps)
    with _small_products():
        return improver.improve(batch)


class _Pool:
    """The instances not yet in a batch, drawn uniformly without replacement; O(1) removal by swap with the last."""

    def __init__(self, n: int):
        self.ids = np.arange(n, dtype=np.int64)
        self.where = np.arange(n, dtype=np.int64)
        self.size = n

    def draw(self, count: int, rng: np.random.Generator) -> np.ndarray:
        picked = self.ids[rng.choice(self.size, size=count, replace=False)]
        self.remove(picked)
        return picked

    def remove(self, ids) -> None:
        for i in ids:
            at, last = self.where[i], self.ids[self.size - 1]
            self.ids[at], self.where[last] = last, at
            self.size -= 1

    def add(self, ids) -> None:
        for i in ids:
            self.ids[self.size], self.where[i] = i, self.size
            self.size += 1

    def rest(self) -> np.ndarray:
        return np.sort(self.ids[:self.size])


def adaptive_batches(similarity: Similarity, batch_size: int, rng: np.random.Generator, *, search: str = "greedy",
                     beam: int = 3, candidates: int = 100, max_swaps: int | None = None, index: str = "Flat",
                     report: dict | None = None) -> list[np.ndarray]:
    """One epoch of ABS batches: each starts from ``batch_size`` random remaining instances and is improved by
    :func:`improve_batch` against the remaining ones (``candidates`` neighbours per list, found once with
    ``similarity.neighbours(candidates, index=index)``); the last takes what is left.

    The same ``rng`` state gives the same batches (Faiss ``Flat`` search is exact; other indexes are built on one
    thread). ``report``, when given, receives the number of swaps and the seconds of the neighbour search and
    of the whole schedule.
    """
    started = time.perf_counter()
    n = similarity.n
    count = num_batches(n, batch_size)
    neighbours = similarity.neighbours(min(candidates, n - 1), index=index)
    searched = time.perf_counter()
    done = np.zeros(n, dtype=bool)
    improver = _Improver(similarity, neighbours, done, search=search, beam=beam, max_swaps=max_swaps)
    pool = _Pool(n)
    batches = []
    with _small_products():
        for _ in range(count - 1):
            seeds = pool.draw(batch_size, rng)
            batch, _ = improver.improve(seeds)
            # the members swapped out go back to the pool; those swapped in leave it
            pool.add(np.setdiff1d(seeds, batch))
            pool.remove(np.setdiff1d(batch, seeds))
            done[batch] = True
            batches.append(batch)
    batches.append(pool.rest())
    seconds = time.perf_counter() - started
    log.info("adaptive batches (%s) of %d instances: %d batches, %d swaps, %.1f s (neighbour search %.1f s)",
             search, n, count, improver.swaps, seconds, searched - started)
    if report is not None:
        report.update(swaps=improver.swaps, neighbour_seconds=searched - started, seconds=seconds)
    return batches


# ------------------------------------------------------------------------------------------- the sampler
def mean_hardness(similarity: Similarity, batches: list[np.ndarray]) -> float:
    """The mean of h(B) over ``batches``."""
    with _small_products():
        return float(np.mean([batch_hardness(similarity, b) for b in batches])) if batches else 0.0


class AdaptiveBatchSampler:
    """The trainer's sampler (:class:`hardneg.dense.data.BatchSampler`) over the rows of a run's ``TrainQueries``.

    ``order``: ``sequential`` (data order), ``random`` or ``adaptive`` (:func:`adaptive_batches`). ``similarity``:
    ``bm25``, the scores of ``ranking`` (the training split's BM25 run: qid, docid, rank, score) in every epoch,
    or ``encode``: BM25 in epoch 0, then the dot products of the model being trained, whose questions and
    passages are encoded again at the start of each later epoch (on ``device``; the model goes back where it
    was). Instance i is row i's question (``query_texts`` row ``train.query_rows[i]``) and its first positive
    (``doc_texts`` row ``train.positives[i][0]``); rows sharing a relevant document are never counted together.

    Epoch e draws from ``np.random.default_rng([seed, epoch])`` and nothing else, so the sampler has no state.
    Each epoch it logs, and keeps in :attr:`last_stats`, the similarity, the mean h(B) of its batches and of a
    random batching of the same instances (from ``default_rng([seed, epoch, 1])``), and the seconds taken. The
    sequential and random orders measure under BM25 when a ranking is given (encoding the training set only to
    measure would cost what ABS's encoding costs) and skip the measure otherwise.
    """

    def __init__(self, train, query_texts, doc_texts, *, batch_size: int, seed: int, order: str, similarity: str,
                 ranking: pa.Table | None = None, search: str = "greedy", beam: int = 3, candidates: int = 100,
                 max_swaps: int | None = None, index: str = "Flat", encode_batch_size: int = 128,
                 device: str = "cpu"):
        if order not in ORDERS:
            raise ValueError(f"order is one of {ORDERS}, not {order!r}")
        if similarity not in SIMILARITIES:
            raise ValueError(f"similarity is one of {SIMILARITIES}, not {similarity!r}")
        if search not in SEARCHES:
            raise ValueError(f"search is one of {SEARCHES}, not {search!r}")
        if order == "adaptive" and ranking is None:
            raise ValueError("adaptive batches need the BM25 ranking of the training split (epoch 0 uses it)")
        num_batches(len(train), batch_size)  # a set too small for two-row batches fails here, not mid-training
        self.train, self.query_texts, self.doc_texts = train, query_texts, doc_texts
        self.batch_size, self.seed, self.order, self.similarity = batch_size, seed, order, similarity
        self.ranking, self.search, self.beam, self.candidates = ranking, search, beam, candidates
        self.max_swaps, self.index = max_swaps, index
        self.encode_batch_size, self.device = encode_batch_size, device
        self.question_rows = np.asarray(train.query_rows, dtype=np.int64)
        self.passage_rows = np.array([p[0] for p in train.positives], dtype=np.int64)
        self.conflicts = Conflicts.from_relevant(train.relevant)
        self._bm25: SparseSimilarity | None = None
        self.last_stats: dict | None = None

    def num_batches(self, epoch: int) -> int:
        return num_batches(len(self.train), self.batch_size)

    def bm25(self) -> SparseSimilarity:
        """The BM25 similarity of the instances (built once)."""
        if self._bm25 is None:
            docids = [self.doc_texts.row_ids[r] for r in self.passage_rows]
            self._bm25 = SparseSimilarity.from_ranking(self.ranking, self.train.qids, docids, self.conflicts)
        return self._bm25

    def _encode(self, model, texts, rows: np.ndarray, side: str) -> np.ndarray:
        from hardneg.dense.encode import encode_rows

        unique, inverse = np.unique(rows, return_inverse=True)  # rows shared by instances are encoded once
        vectors = encode_rows(model, texts, unique, side, batch_size=self.encode_batch_size, device=self.device)
        return vectors[inverse]

    def encoded(self, model) -> DenseSimilarity:
        """The dot-product similarity of ``model``'s vectors of the instances."""
        model = getattr(model, "module", model)  # DistributedDataParallel holds the model as .module
        parameter = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
        home = parameter.device if parameter is not None else None
        try:
            questions = self._encode(model, self.query_texts, self.question_rows, "query")
            passages = self._encode(model, self.doc_texts, self.passage_rows, "doc")
        finally:
            if home is not None:
                model.to(home)  # encode_rows moved it to self.device; the trainer's optimiser expects it here
        return DenseSimilarity(questions, passages, self.conflicts)

    def _measure(self, epoch: int, model) -> tuple[str | None, Similarity | None]:
        if self.similarity == "encode" and epoch > 0 and self.order == "adaptive":
            if model is not None:
                return "encode", self.encoded(model)
            log.warning("epoch %d: no model to encode with; adaptive batches use BM25", epoch)
        if self.ranking is None:
            return None, None
        return "bm25", self.bm25()

    def batches(self, epoch: int, model=None) -> list[np.ndarray]:
        started = time.perf_counter()
        n, rng = len(self.train), np.random.default_rng([self.seed, epoch])
        name, similarity = self._measure(epoch, model)
        report: dict = {}
        if self.order == "sequential":
            batches = sequential_batches(n, self.batch_size)
        elif self.order == "random":
            batches = random_batches(n, self.batch_size, rng)
        else:
            batches = adaptive_batches(similarity, self.batch_size, rng, search=self.search, beam=self.beam,
                                       candidates=self.candidates, max_swaps=self.max_swaps, index=self.index,
                                       report=report)
        stats = {"epoch": epoch, "order": self.order, "similarity": name, "batches": len(batches),
                 "swaps": report.get("swaps", 0), "mean_hardness": None, "random_mean_hardness": None}
        if similarity is not None:
            random = random_batches(n, self.batch_size, np.random.default_rng([self.seed, epoch, 1]))
            stats["mean_hardness"] = mean_hardness(similarity, batches)
            stats["random_mean_hardness"] = mean_hardness(similarity, random)
        stats["seconds"] = time.perf_counter() - started
        self.last_stats = stats
        if similarity is not None:
            log.info("epoch %d: %s batches under %s similarity, mean h(B) %.4g (random batches %.4g), %d swaps, "
                     "%.1f s", epoch, self.order, name, stats["mean_hardness"], stats["random_mean_hardness"],
                     stats["swaps"], stats["seconds"])
        else:
            log.info("epoch %d: %s batches (no similarity to measure them), %.1f s", epoch, self.order,
                     stats["seconds"])
        return batches
