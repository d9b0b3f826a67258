"""Adaptive Batch Scheduling's batch sampler for the trainer (:class:`hardneg.dense.data.BatchSampler`): each
epoch's batches from BM25 scores first, then from the dot products of the model being trained."""

from __future__ import annotations

import logging
import time

import numpy as np
import pyarrow as pa

from hardneg.dense.encode import encode_rows
from hardneg.methods.abs.scheduling import (
    ORDERS,
    SEARCHES,
    SIMILARITIES,
    adaptive_batches,
    num_batches,
    random_batches,
    sequential_batches,
)
from hardneg.methods.abs.similarity import Conflicts, DenseSimilarity, Similarity, SparseSimilarity, mean_hardness

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------- the sampler
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

    def __init__(
        self,
        train,
        query_texts,
        doc_texts,
        *,
        batch_size: int,
        seed: int,
        order: str,
        similarity: str,
        ranking: pa.Table | None = None,
        search: str = "greedy",
        beam: int = 3,
        candidates: int = 100,
        max_swaps: int | None = None,
        index: str = "Flat",
        encode_batch_size: int = 128,
        device: str = "cpu",
    ):
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
            assert similarity is not None  # adaptive batches have the BM25 ranking at least (checked in __init__)
            batches = adaptive_batches(
                similarity,
                self.batch_size,
                rng,
                search=self.search,
                beam=self.beam,
                candidates=self.candidates,
                max_swaps=self.max_swaps,
                index=self.index,
                report=report,
            )
        stats = {
            "epoch": epoch,
            "order": self.order,
            "similarity": name,
            "batches": len(batches),
            "swaps": report.get("swaps", 0),
            "mean_hardness": None,
            "random_mean_hardness": None,
        }
        if similarity is not None:
            random = random_batches(n, self.batch_size, np.random.default_rng([self.seed, epoch, 1]))
            stats["mean_hardness"] = mean_hardness(similarity, batches)
            stats["random_mean_hardness"] = mean_hardness(similarity, random)
        stats["seconds"] = time.perf_counter() - started
        self.last_stats = stats
        if similarity is not None:
            log.info(
                "epoch %d: %s batches under %s similarity, mean h(B) %.4g (random batches %.4g), %d swaps, %.1f s",
                epoch,
                self.order,
                name,
                stats["mean_hardness"],
                stats["random_mean_hardness"],
                stats["swaps"],
                stats["seconds"],
            )
        else:
            log.info(
                "epoch %d: %s batches (no similarity to measure them), %.1f s", epoch, self.order, stats["seconds"]
            )
        return batches
