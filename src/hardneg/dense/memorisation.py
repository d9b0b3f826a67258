"""Memorisation, measured: does the trained model rank its own training queries far better than queries it never
saw?

A model that learns its training queries by heart ranks their positives first while it ranks held-out queries no
better than before; counting queries cannot tell (2,000 synthetic queries are learnt by heart as surely as 150
real ones). :class:`MemorisationCheck` is a trainer event that measures it at the last optimiser step: a seeded
sample of the training queries and of the held-out queries (the dev split, e.g. the one a dataset holds out of its
training split with ``dev_from_train``) are searched in one pool of documents (every relevant document of both
samples, then others drawn at random up to :data:`POOL`; the whole corpus when it is smaller), and each sample's
RR@10 and share of queries with a relevant document ranked first (Success@1) are computed with ir-measures. Both
samples search the same pool, so the two values compare like with like; a pool smaller than the corpus makes both
higher than the full-corpus values. The numbers go into the last row of the training log; the gap
:func:`memorisation_warning` reads is the training RR@10 minus the held-out RR@10.

The check costs one encoding of the pool and of the two samples (at most :data:`POOL` documents and
2 × :data:`SAMPLE` queries, whatever the corpus's size); it draws no number from the training's generators, and
the model is back in train mode afterwards. A run that evaluates dev by re-ranking candidates
(:mod:`hardneg.dense.dev_candidates`) searches the candidates of both samples instead of a random pool: the
documents BM25 and the starting model found for them, every relevant one added; the dev evaluation of the same
step has encoded most of them already, and they are not encoded again.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.dense.dev_candidates import DocumentVectors, top_k
from hardneg.dense.encode import encode_rows
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.evaluation.metrics import evaluate
from hardneg.io import artifacts

log = logging.getLogger(__name__)

SAMPLE = 200  # queries of each split measured (all of them when there are fewer)
POOL = 5_000  # documents the samples are searched in
GAP = 0.2  # training RR@10 this far above the held-out RR@10 is memorisation
MEASURES = {"RR@10": "rr10", "Success@1": "top1"}  # ir-measures name → column suffix
SPLITS = ("train", "heldout")
COLUMNS = [f"memorisation_{split}_{suffix}" for split in SPLITS for suffix in MEASURES.values()]


@dataclass(frozen=True)
class Sample:
    """A split's queries measured: their rows of the tokenized ``queries`` and their judgements (``qrels``, the
    sampled queries' only)."""

    queries: TokenizedTexts
    rows: np.ndarray
    qrels: pa.Table


@dataclass(frozen=True)
class Memorisation:
    """The measurement: per split (``train``, and ``heldout`` when there is one) its measures' means
    (``values[split]["RR@10"]``), the queries measured per split, the documents searched and the held-out split's
    name."""

    values: dict
    queries: dict
    pool: int
    heldout_split: str | None

    @property
    def gap(self) -> float | None:
        """Training RR@10 minus held-out RR@10; None without held-out queries."""
        if "heldout" not in self.values:
            return None
        return self.values["train"]["RR@10"] - self.values["heldout"]["RR@10"]

    def columns(self) -> dict:
        """The values as the training log's columns (:data:`COLUMNS`; NaN for a split not measured)."""
        return {
            f"memorisation_{split}_{suffix}": self.values.get(split, {}).get(measure, math.nan)
            for split in SPLITS
            for measure, suffix in MEASURES.items()
        }


def sample_queries(queries: TokenizedTexts, qrels: pa.Table, corpus_ids: list[str], count: int, seed: int) -> Sample:
    """``count`` queries of ``queries`` drawn with ``seed`` among those with a relevant document in the corpus (all
    of them when there are fewer), in row order, and their judgements."""
    relevant = qrels.filter(pc.greater_equal(qrels["relevance"], 1))
    relevant = relevant.filter(pc.is_in(relevant["docid"], value_set=pa.array(corpus_ids, pa.string())))
    judged = set(relevant["qid"].to_pylist())
    rows = np.array([row for row, qid in enumerate(queries.row_ids) if qid in judged], dtype=np.int64)
    if len(rows) > count:
        rows = np.sort(np.random.default_rng(seed).choice(rows, size=count, replace=False))
    qids = pa.array([queries.row_ids[row] for row in rows], pa.string())
    return Sample(queries, rows, qrels.filter(pc.is_in(qrels["qid"], value_set=qids)))


def relevant_rows(samples: list[Sample], corpus_ids: list[str]) -> set[int]:
    """The corpus rows of every relevant document of the samples."""
    index = {docid: row for row, docid in enumerate(corpus_ids)}
    needed: set[int] = set()
    for sample in samples:
        relevant = sample.qrels.filter(pc.greater_equal(sample.qrels["relevance"], 1))["docid"].to_pylist()
        needed.update(index[docid] for docid in relevant if docid in index)
    return needed


def document_pool(samples: list[Sample], corpus_ids: list[str], size: int, seed: int) -> np.ndarray:
    """The corpus rows searched: every relevant document of the samples, then other rows drawn with ``seed`` up to
    ``size`` rows (every row when the corpus has no more), sorted."""
    needed = relevant_rows(samples, corpus_ids)
    if len(corpus_ids) <= max(size, len(needed)):
        return np.arange(len(corpus_ids), dtype=np.int64)
    others = np.setdiff1d(np.arange(len(corpus_ids), dtype=np.int64), np.fromiter(needed, np.int64, len(needed)))
    drawn = np.random.default_rng(seed).choice(others, size=size - len(needed), replace=False)
    return np.sort(np.concatenate([np.fromiter(needed, np.int64, len(needed)), drawn]))


def measure_memorisation(
    model,
    corpus: TokenizedTexts,
    train: Sample,
    heldout: Sample | None,
    *,
    heldout_split=None,
    pool: int = POOL,
    seed: int = 0,
    device="cpu",
    precision: str = "fp32",
    batch_size: int = 128,
    doc_vectors: np.ndarray | None = None,
    candidates: np.ndarray | None = None,
    vectors: DocumentVectors | None = None,
    step: int = 0,
) -> Memorisation:
    """RR@10 and Success@1 of ``model`` on the training sample and the held-out sample, both searched (exact inner
    product) in one pool of the corpus (:func:`document_pool`). Leaves the model in eval mode.

    :param model: the bi-encoder (:class:`hardneg.dense.model.BiEncoder`).
    :param corpus: the tokenized corpus.
    :param train: the sampled training queries (:func:`sample_queries`).
    :param heldout: the sampled held-out queries, or None.
    :param heldout_split: the held-out split's name, recorded.
    :param pool: documents searched.
    :param seed: the seed of the pool's draw.
    :param doc_vectors: fixed embeddings of the corpus rows, searched instead of encoding the corpus (a run that
        searches another run's documents: ADORE).
    :param candidates: the corpus rows of the candidate documents of both samples' queries, searched with every
        relevant document instead of :func:`document_pool`'s pool.
    :param vectors: the document vectors of ``step``'s model encoded so far (the dev evaluation's), reused.
    :returns: the :class:`Memorisation`.
    """
    from hardneg.index import ranking_table  # Faiss: imported only where an index is built or searched

    samples = {"train": train} | ({"heldout": heldout} if heldout is not None and len(heldout.rows) else {})
    if candidates is not None:
        needed = relevant_rows(list(samples.values()), corpus.row_ids)
        rows = np.union1d(np.asarray(candidates, dtype=np.int64), np.fromiter(needed, np.int64, len(needed)))
    else:
        rows = document_pool(list(samples.values()), corpus.row_ids, pool, seed)
    if doc_vectors is None and vectors is not None:
        docs = vectors.get(step, model, rows, batch_size=batch_size, device=device, precision=precision)
    elif doc_vectors is None:
        docs = encode_rows(model, corpus, rows, "doc", batch_size=batch_size, device=device, precision=precision)
    else:
        docs = np.asarray(doc_vectors[rows], dtype=np.float32)
    values, queries = {}, {}
    for split, sample in samples.items():
        query_vectors = encode_rows(
            model, sample.queries, sample.rows, "query", batch_size=batch_size, device=device, precision=precision
        )
        scores, found = top_k(query_vectors, docs, 10)
        found = np.where(found >= 0, rows[np.maximum(found, 0)], -1)
        ranking = ranking_table(scores, found, [sample.queries.row_ids[r] for r in sample.rows], corpus.row_ids)
        values[split], _ = evaluate(ranking, sample.qrels, list(MEASURES), warn=False)
        queries[split] = len(sample.rows)
    return Memorisation(values, queries, len(rows), heldout_split if "heldout" in samples else None)


def memorisation_advice(
    *, pretrained: bool, epochs: int, queries: int, learning_rate: float, selects: bool = False
) -> list[str]:
    """What a run that memorised its training queries can change, given what it does already: a run of the
    built-in model can start from a pre-trained encoder, one of several epochs train fewer, one that starts from a
    pre-trained encoder fine-tune it more gently, one that keeps its last step keep its best dev checkpoint instead
    (``selects``: it does already); every run can train on more than its ``queries``."""
    advice = (
        []
        if pretrained
        else ["start from a pre-trained encoder (params.model.name: minilm, a local folder or a hub name)"]
    )
    if epochs > 1:
        advice.append(f"train for fewer epochs (params.train.epochs is {epochs})")
    if pretrained:
        advice.append(
            f"fine-tune the pre-trained encoder more gently (params.train.learning_rate is {learning_rate:g})"
        )
    if not selects:
        advice.append("keep the checkpoint with the best dev measure (params.train.dev_every, with train.keep: best)")
    advice.append(f"train on more queries than its {queries:,}")
    return advice


def memorisation_warning(
    name: str, result: Memorisation, gap: float = GAP, *, advice: list[str] | None = None, kept: dict | None = None
) -> str | None:
    """The console warning for run ``name`` when its training queries score ``gap`` or more RR@10 above its
    held-out ones (None otherwise, and without held-out queries), ending with ``advice`` (what the run can change:
    :func:`memorisation_advice`), when given. ``kept``: the training's record of the model it saved
    (:meth:`hardneg.dense.model_selection.ModelSelection.record`); one of an earlier step than the last, which the
    check measures, is said."""
    if result.gap is None or result.gap < gap:
        return None
    train, heldout = result.values["train"], result.values["heldout"]
    text = (
        f"run {name}: after training, {result.queries['train']:,} of its training queries score RR@10 "
        f"{train['RR@10']:.3f} (a relevant document first for {train['Success@1']:.0%}) and "
        f"{result.queries['heldout']:,} held-out '{result.heldout_split}' queries {heldout['RR@10']:.3f} "
        f"({heldout['Success@1']:.0%}), both searched among the same {result.pool:,} documents: it has learnt "
        f"its training queries by heart rather than how to rank ({result.gap:.2f} apart)."
    )
    if kept and kept["step"] != kept["steps"]:
        text += (
            f" The model saved is step {kept['step']}'s, the best dev {kept['measure']}, not the last step's "
            f"measured here."
        )
    if advice:
        text += (
            f"\nFor a model that generalises: {', '.join(advice[:-1])}{' or ' if len(advice) > 1 else ''}{advice[-1]}."
        )
    return text


class MemorisationCheck:
    """Trainer event: at the last optimiser step, :func:`measure_memorisation` on samples of the training split and
    of the held-out split; its values go into that step's log row (:data:`COLUMNS`; NaN on the other rows) and
    into ``result``. Every process measures the same samples (a few thousand texts); only the main one logs."""

    def __init__(
        self,
        corpus: TokenizedTexts,
        train: Sample,
        heldout: Sample | None,
        *,
        heldout_split=None,
        seed: int = 0,
        pool: int = POOL,
        doc_vectors: np.ndarray | None = None,
        batch_size: int = 128,
        candidates: np.ndarray | None = None,
        vectors: DocumentVectors | None = None,
    ):
        self.corpus, self.train, self.heldout, self.heldout_split = corpus, train, heldout, heldout_split
        self.seed, self.pool, self.doc_vectors, self.batch_size = seed, pool, doc_vectors, batch_size
        self.candidates, self.vectors = candidates, vectors  # the samples' candidates; the step's vectors
        self.result: Memorisation | None = None

    @classmethod
    def from_splits(
        cls,
        cache_dir,
        qrels_path,
        train_split: str,
        heldout_split: str | None,
        *,
        seed: int,
        sample: int = SAMPLE,
        doc_embeddings=None,
        **options,
    ) -> MemorisationCheck:
        """The samples of the tokenized cache's ``train_split`` (judgements: ``qrels_path``) and of
        ``heldout_split`` (its qrels beside them), each of ``sample`` queries drawn with ``seed``; no held-out
        sample when that split's tokenized queries or qrels are missing, or it is the training split.
        ``doc_embeddings``: the ``.npy`` of fixed corpus embeddings to search (None: encode the pool)."""
        corpus = TokenizedTexts(cache_dir, "corpus")
        train = sample_queries(
            TokenizedTexts(cache_dir, f"queries_{train_split}"),
            artifacts.read_table(artifacts.QRELS, qrels_path),
            corpus.row_ids,
            sample,
            seed,
        )
        heldout = None
        qrels = os.path.join(os.path.dirname(os.fspath(qrels_path)), f"{heldout_split}.parquet")
        if (
            heldout_split
            and heldout_split != train_split
            and os.path.exists(qrels)
            and os.path.exists(os.path.join(os.fspath(cache_dir), f"queries_{heldout_split}.ids.npy"))
        ):
            heldout = sample_queries(
                TokenizedTexts(cache_dir, f"queries_{heldout_split}"),
                artifacts.read_table(artifacts.QRELS, qrels),
                corpus.row_ids,
                sample,
                seed,
            )
        vectors = None if doc_embeddings is None else np.load(doc_embeddings, mmap_mode="r")
        return cls(
            corpus,
            train,
            heldout,
            heldout_split=heldout_split if heldout is not None else None,
            seed=seed,
            doc_vectors=vectors,
            **options,
        )

    def on_step_end(self, trainer, step: int, row: dict) -> None:
        if step == trainer.total_steps:
            self.result = measure_memorisation(
                trainer.model,
                self.corpus,
                self.train,
                self.heldout,
                heldout_split=self.heldout_split,
                pool=self.pool,
                seed=self.seed,
                device=trainer.device,
                precision=trainer.precision,
                batch_size=self.batch_size,
                doc_vectors=self.doc_vectors,
                candidates=self.candidates,
                vectors=self.vectors,
                step=step,
            )
            trainer.model.train()
            if trainer.replicas.is_main:
                self._log(self.result)
            row.update(self.result.columns())
        else:
            row.update(dict.fromkeys(COLUMNS, math.nan))

    @staticmethod
    def _log(result: Memorisation) -> None:
        for split, values in result.values.items():
            log.info(
                "memorisation check: %d %s queries, RR@10 %.4f, a relevant document first for %.1f%% (among "
                "%d documents)",
                result.queries[split],
                "training" if split == "train" else f"held-out '{result.heldout_split}'",
                values["RR@10"],
                100 * values["Success@1"],
                result.pool,
            )
        if result.gap is None:
            log.info(
                "memorisation check: no held-out queries to compare the training queries with (a dev split, "
                "or the dataset's dev_from_train)"
            )
