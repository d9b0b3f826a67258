"""Dev evaluation during training: RR@10 and RR@100 on a held-out split every few optimiser steps
(``train.dev_every: N``) or at the end of every epoch (``train.dev_every: epoch``).

ANCE-style training curves (effectiveness against steps) need the model's quality while it trains, not only
at the end. :class:`DevEvaluation` is a trainer event: on due steps it encodes the dev queries and the whole
corpus with the current model (eval mode, no gradient; back to train mode afterwards), retrieves each query's
exact inner-product top 100 (Faiss Flat), scores RR@10 and RR@100 with ir-measures
(:func:`hardneg.evaluation.metrics.evaluate`) and writes them into the step's log row as ``dev_rr10`` and ``dev_rr100``
(the Adaptive Batch Scheduling report's curves are dev MRR@100 per epoch). Other steps get NaN, so the columns
are on every row and the Parquet log has one schema. Encoding in eval mode uses no dropout and draws no random
numbers, so training itself
goes on exactly as without the event.

By default the dev queries are not searched in the whole corpus but re-rank a fixed list of candidates each
(``train.dev_search: candidates``, :mod:`hardneg.dense.dev_candidates`): only those documents are encoded at an
evaluation. ``dev_search: corpus`` keeps the exact search over the corpus; ``both`` logs the corpus's values too, as
``dev_corpus_rr10`` and ``dev_corpus_rr100``.

A run that keeps another run's documents fixed (ADORE: only its query encoder trains, against that run's
corpus embeddings) is evaluated as it is searched: its current queries against those fixed embeddings
(``doc_vectors``), never a corpus re-encoded with the model in training. With the default shared encoder,
training the query side changes the document side too, so re-encoding would evaluate documents the run never
searches.
"""

from __future__ import annotations

import logging
import math
import os

import numpy as np
import pyarrow as pa
import torch

from hardneg.dense.dev_candidates import Candidates, DocumentVectors, rerank, top_k
from hardneg.dense.distributed import SINGLE, Replicas
from hardneg.dense.encode import encode_rows
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.errors import ConfigError
from hardneg.evaluation.metrics import evaluate
from hardneg.io import artifacts

log = logging.getLogger(__name__)

COLUMN = "dev_rr10"
COLUMNS = {"RR@10": COLUMN, "RR@100": "dev_rr100"}  # measure → column of the training log
CORPUS_COLUMNS = {"RR@10": "dev_corpus_rr10", "RR@100": "dev_corpus_rr100"}  # dev_search: both, the full search's
SEARCHES = ("candidates", "corpus", "both")
DEPTH = 100  # RR@100 needs the top 100 (top_k's default)


def dev_measures(
    model,
    queries: TokenizedTexts,
    corpus: TokenizedTexts,
    qrels: pa.Table,
    *,
    device="cpu",
    batch_size: int = 128,
    precision: str = "fp32",
    replicas: Replicas = SINGLE,
    doc_vectors: np.ndarray | None = None,
) -> dict[str, float]:
    """Mean RR@10 and RR@100 (keys of :data:`COLUMNS`) of ``model`` on ``queries`` against ``qrels``, exact
    search over all of ``corpus``. Leaves
    the model in eval mode (callers put it back in train mode). ``doc_vectors``: fixed embeddings of the corpus
    rows ([len(corpus), dim], e.g. a memory map of ``corpus.npy``), searched instead of encoding the corpus.

    With several processes each encodes its share of the corpus and finds its share's top 100 of every query;
    the shares' top 100s are gathered and merged into the exact top 100 (every rank returns the same values).
    """
    from hardneg.index import ranking_table  # Faiss: imported only where an index is built or searched

    share = np.arange(len(corpus))[replicas.local(len(corpus))]
    q = encode_rows(
        model, queries, np.arange(len(queries)), "query", batch_size=batch_size, device=device, precision=precision
    )
    if doc_vectors is None:
        d = encode_rows(model, corpus, share, "doc", batch_size=batch_size, device=device, precision=precision)
    else:
        d = np.asarray(doc_vectors[share], dtype=np.float32)
    scores, rows = top_k(q, d)
    rows = np.where(rows >= 0, share[np.maximum(rows, 0)] if len(share) else -1, -1)
    if replicas.distributed:  # one [Q, k] block per rank, merged into the global top k
        where = replicas.device
        scores = replicas.gather(torch.from_numpy(scores)[None].to(where), replicas.world).cpu().numpy()
        rows = replicas.gather(torch.from_numpy(rows)[None].to(where), replicas.world).cpu().numpy()
        scores, rows = np.concatenate(list(scores), axis=1), np.concatenate(list(rows), axis=1)
        best = np.argsort(-scores, axis=1, kind="stable")[:, :DEPTH]
        scores, rows = np.take_along_axis(scores, best, 1), np.take_along_axis(rows, best, 1)
    means, _ = evaluate(ranking_table(scores, rows, queries.row_ids, corpus.row_ids), qrels, list(COLUMNS))
    return {measure: means[measure] for measure in COLUMNS}


def dev_rr10(model, queries: TokenizedTexts, corpus: TokenizedTexts, qrels: pa.Table, **options) -> float:
    """Mean RR@10 of ``model`` on ``queries`` (see :func:`dev_measures`)."""
    return dev_measures(model, queries, corpus, qrels, **options)["RR@10"]


def candidate_measures(
    model,
    queries: TokenizedTexts,
    corpus: TokenizedTexts,
    qrels: pa.Table,
    candidates: Candidates,
    *,
    vectors: DocumentVectors | None = None,
    step: int = 0,
    device="cpu",
    batch_size: int = 128,
    precision: str = "fp32",
) -> dict[str, float]:
    """Mean RR@10 and RR@100 of ``model`` on the queries of ``candidates``, each re-ranking its own candidate
    documents (:mod:`hardneg.dense.dev_candidates`); ``vectors`` keeps the step's document vectors for other events.
    Leaves the model in eval mode."""
    # Faiss: imported only where an index is searched
    from hardneg.index import ranking_table

    encoding = {"batch_size": batch_size, "device": device, "precision": precision}
    vectors = vectors or DocumentVectors(corpus)
    q = encode_rows(model, queries, candidates.query_rows, "query", **encoding)
    d = vectors.get(step, model, candidates.documents(), **encoding)
    scores, rows = rerank(q, d, candidates.doc_rows, DEPTH)
    qids = [queries.row_ids[row] for row in candidates.query_rows]
    means, _ = evaluate(ranking_table(scores, rows, qids, corpus.row_ids), qrels, list(COLUMNS), warn=False)
    return {measure: means[measure] for measure in COLUMNS}


def dev_inputs(cache_dir, qrels_path, split: str) -> tuple[str, str]:
    """The dev split's tokenized queries (name in the cache) and qrels file, which lies beside the training
    qrels. ``ConfigError`` naming ``params.train.dev_split`` and the missing file when either is absent."""
    name = f"queries_{split}"
    qrels = os.path.join(os.path.dirname(os.fspath(qrels_path)), f"{split}.parquet")
    for path in (os.path.join(os.fspath(cache_dir), f"{name}.ids.npy"), qrels):
        if not os.path.exists(path):
            raise ConfigError(
                "params.train.dev_split",
                f"dev evaluation (train.dev_every > 0) needs split {split!r}, but {path} does not exist",
            )
    return name, qrels


class DevEvaluation:
    """Trainer event: ``dev_rr10`` and ``dev_rr100`` every ``every`` optimiser steps, or with ``every="epoch"`` at
    the last step of every epoch, and at the last step; NaN on other steps.

    ``candidates`` (:class:`hardneg.dense.dev_candidates.Candidates` of every dev query): re-rank them rather than
    search the corpus, and with ``search="both"`` also search the corpus (``dev_corpus_*`` columns); None: search
    the corpus. With several processes they share the corpus encoding (see :func:`dev_measures`); the candidates'
    few documents are encoded by every process. Every rank logs the value. ``doc_vectors``: the fixed corpus
    embeddings of a run that searches another run's documents (see the module docstring); one row per row of
    ``corpus``. ``vectors``: the step's document vectors, shared with the memorisation check."""

    def __init__(
        self,
        queries: TokenizedTexts,
        corpus: TokenizedTexts,
        qrels: pa.Table,
        every: int | str,
        *,
        batch_size: int = 128,
        doc_vectors: np.ndarray | None = None,
        candidates: Candidates | None = None,
        search: str = "candidates",
        vectors: DocumentVectors | None = None,
    ):
        if every != "epoch" and (not isinstance(every, int) or every < 1):
            raise ValueError(f"dev evaluation needs every >= 1 or 'epoch', got {every!r}")
        if doc_vectors is not None and len(doc_vectors) != len(corpus):
            raise ValueError(
                f"the fixed document embeddings have {len(doc_vectors)} rows, the tokenized corpus "
                f"{len(corpus)}: they are not embeddings of this corpus"
            )
        if search not in SEARCHES:
            raise ValueError(f"dev search must be one of {', '.join(SEARCHES)}, got {search!r}")
        self.queries, self.corpus, self.qrels, self.every, self.batch_size = queries, corpus, qrels, every, batch_size
        self.doc_vectors, self.candidates = doc_vectors, candidates if search != "corpus" else None
        self.search = "corpus" if self.candidates is None else search
        self.vectors = vectors or DocumentVectors(corpus)

    @classmethod
    def from_split(
        cls, cache_dir, qrels_path, split: str, every: int | str, *, doc_embeddings=None, **options
    ) -> DevEvaluation:
        """The dev split ``split`` of the tokenized cache, its qrels beside the training qrels ``qrels_path``;
        ``doc_embeddings``: the ``.npy`` of fixed corpus embeddings to search (None: encode the corpus)."""
        name, qrels = dev_inputs(cache_dir, qrels_path, split)
        vectors = None if doc_embeddings is None else np.load(doc_embeddings, mmap_mode="r")
        return cls(
            TokenizedTexts(cache_dir, name),
            TokenizedTexts(cache_dir, "corpus"),
            artifacts.read_table(artifacts.QRELS, qrels),
            every,
            doc_vectors=vectors,
            **options,
        )

    def due(self, trainer, step: int) -> bool:
        """Whether ``step`` is evaluated."""
        return step == trainer.total_steps or (
            trainer.epoch_ends if isinstance(self.every, str) else step % self.every == 0  # "epoch" or a step count
        )

    def on_step_end(self, trainer, step: int, row: dict) -> None:
        columns = list(COLUMNS.values()) + (list(CORPUS_COLUMNS.values()) if self.search == "both" else [])
        row.update(dict.fromkeys(columns, math.nan))  # every row has every column: one schema for the log
        if not self.due(trainer, step):
            return
        options = {"device": trainer.device, "batch_size": self.batch_size, "precision": trainer.precision}
        if self.candidates is not None:
            values = candidate_measures(
                trainer.model,
                self.queries,
                self.corpus,
                self.qrels,
                self.candidates,
                vectors=self.vectors,
                step=step,
                **options,
            )
        else:
            values = dev_measures(
                trainer.model,
                self.queries,
                self.corpus,
                self.qrels,
                replicas=trainer.replicas,
                doc_vectors=self.doc_vectors,
                **options,
            )
        if self.search == "both":
            full = dev_measures(
                trainer.model,
                self.queries,
                self.corpus,
                self.qrels,
                replicas=trainer.replicas,
                doc_vectors=self.doc_vectors,
                **options,
            )
            row.update({CORPUS_COLUMNS[measure]: full[measure] for measure in CORPUS_COLUMNS})
            log.info("step %d: dev RR@10 over the whole corpus %.4f, RR@100 %.4f", step, full["RR@10"], full["RR@100"])
        trainer.model.train()
        log.info(
            "step %d: dev RR@10 %.4f, RR@100 %.4f%s",
            step,
            values["RR@10"],
            values["RR@100"],
            " (re-ranking the candidates)" if self.candidates is not None else "",
        )
        row.update({COLUMNS[measure]: values[measure] for measure in COLUMNS})
