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

import numpy as np

from hardneg.methods.abs.similarity import Similarity, pair_sums, small_products

log = logging.getLogger(__name__)

ORDERS = ("sequential", "random", "adaptive")
SIMILARITIES = ("bm25", "encode")
SEARCHES = ("greedy", "beam")
SWAPS_PER_MEMBER = 4  # default max_swaps = SWAPS_PER_MEMBER x batch size: room to replace every member a few times


# ------------------------------------------------------------------------------------------- schedulers
def num_batches(n: int, batch_size: int) -> int:
    """Batches of an epoch of ``n`` instances: all of ``batch_size`` but the last, which takes the rest, or joins
    the one before when it would hold a single instance."""
    if batch_size < 2 or n < 2:
        raise ValueError(
            f"in-batch negatives need batches of two or more and two instances or more "
            f"(batch_size {batch_size}, {n} instances)"
        )
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
    picked = np.concatenate([above, np.flatnonzero(values == kth)[: k - len(above)]])
    return picked[np.lexsort((picked, -values[picked]))]


class _Improver:
    """Swaps members of one batch at a time for better outsiders (see :func:`improve_batch`).

    Per batch it keeps the candidates (instances on a current member's neighbour lists, with the number of
    such listings in ``refs``), ``pairs`` [candidates, batch size] (their pair sums with each member's slot)
    with its row sums, and ``inner`` [batch size, batch size] (the members' pair sums). A swap recomputes
    the slot's column and the new member's row, and appends rows for the candidates it brings.
    """

    # the state of the batch being improved, set by improve()
    batch: np.ndarray
    inner: np.ndarray
    count: int
    ids: np.ndarray
    refs: np.ndarray
    eligible: np.ndarray
    rowsum: np.ndarray
    pairs: np.ndarray

    def __init__(
        self,
        similarity: Similarity,
        neighbours: tuple[np.ndarray, np.ndarray],
        excluded: np.ndarray,
        *,
        search: str = "greedy",
        beam: int = 3,
        max_swaps: int | None = None,
    ):
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
        pairs[: self.count] = self.pairs[: self.count]
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
            self.pairs[at] = pair_sums(self.similarity, new, self.batch)
            self.rowsum[at] = self.pairs[at].sum(axis=1)
            self.count += len(new)
            rows = np.concatenate([rows[known], at])
        self._refresh(rows)

    def _unlist(self, members) -> None:
        ids, counts = self._listed(members)
        rows = self.slot_of[ids]  # all listed before, when the member joined
        self.refs[rows] -= counts
        self._refresh(rows)
        if (self.refs[: self.count] == 0).sum() > max(self.count // 2, 256):
            self._compact()

    def _compact(self) -> None:
        """Drop candidates no current member lists (a later listing adds them back with fresh pair sums)."""
        keep = np.flatnonzero(self.refs[: self.count] > 0)
        self.slot_of[self.ids[: self.count]] = -1
        for name in ("ids", "refs", "eligible", "rowsum", "pairs"):
            array = getattr(self, name)
            array[: len(keep)] = array[keep]
        self.count = len(keep)
        self.slot_of[self.ids[: self.count]] = np.arange(self.count)

    # ------------------------------------------------------------------------------------- the search
    def _choose(self) -> tuple[int, int] | None:
        """(member slot, candidate row) of the best swap, or None when no swap raises h."""
        if not self.count:
            return None
        contribution = self.inner.sum(axis=1)  # c_r
        live = self.eligible[: self.count]
        if self.search == "greedy":
            r = int(np.argmin(contribution))
            gain = np.where(live, self.rowsum[: self.count] - self.pairs[: self.count, r], -np.inf)  # g_a(r)
            a = int(np.argmax(gain))
            return (r, a) if gain[a] - contribution[r] > 0 else None
        best, choice = -np.inf, None
        for r in _top(-contribution, self.beam):  # the smallest contributions, lowest slot first on ties
            gain = np.where(live, self.rowsum[: self.count] - self.pairs[: self.count, r], -np.inf)
            adds = _top(gain, self.beam)
            delta = gain[adds] - contribution[r]  # h after the swap minus h now
            k = int(np.argmax(delta))
            if delta[k] > best:
                best, choice = delta[k], (int(r), int(adds[k]))
        return choice if best > 0 else None

    def _swap(self, r: int, row: int) -> None:
        leaving, joining = int(self.batch[r]), int(self.ids[row])
        column = pair_sums(self.similarity, self.ids[: self.count], [joining])[:, 0]
        self.rowsum[: self.count] += column - self.pairs[: self.count, r]
        self.pairs[: self.count, r] = column
        self.batch[r] = joining
        self.in_batch[leaving], self.in_batch[joining] = False, True
        inner = pair_sums(self.similarity, self.batch, [joining])[:, 0]
        self.inner[r, :], self.inner[:, r] = inner, inner
        touched = [row] + ([self.slot_of[leaving]] if self.slot_of[leaving] >= 0 else [])
        self._refresh(np.array(touched, dtype=np.int64))
        self._unlist([leaving])
        self._list([joining])

    def improve(self, batch: np.ndarray) -> tuple[np.ndarray, list[float]]:
        self.batch = np.array(batch, dtype=np.int64)
        b = len(self.batch)
        self.in_batch[self.batch] = True
        self.inner = pair_sums(self.similarity, self.batch, self.batch)
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
        self.slot_of[self.ids[: self.count]] = -1
        self.in_batch[self.batch] = False
        return self.batch, history


def improve_batch(
    similarity: Similarity,
    batch,
    neighbours: tuple[np.ndarray, np.ndarray],
    *,
    excluded: np.ndarray | None = None,
    search: str = "greedy",
    beam: int = 3,
    max_swaps: int | None = None,
) -> tuple[np.ndarray, list[float]]:
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
    with small_products():
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
        return np.sort(self.ids[: self.size])


def adaptive_batches(
    similarity: Similarity,
    batch_size: int,
    rng: np.random.Generator,
    *,
    search: str = "greedy",
    beam: int = 3,
    candidates: int = 100,
    max_swaps: int | None = None,
    index: str = "Flat",
    report: dict | None = None,
) -> list[np.ndarray]:
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
    with small_products():
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
    log.info(
        "adaptive batches (%s) of %d instances: %d batches, %d swaps, %.1f s (neighbour search %.1f s)",
        search,
        n,
        count,
        improver.swaps,
        seconds,
        searched - started,
    )
    if report is not None:
        report.update(swaps=improver.swaps, neighbour_seconds=searched - started, seconds=seconds)
    return batches
