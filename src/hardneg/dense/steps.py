"""Training steps: how a batch is built from training queries, and the loss it is scored with.

A method has two operations the trainer calls: ``make_batch(queries, rng)`` (cheap, integer arrays only) and
``loss(model, batch, device, replicas=...)``. Methods that need more inside the step (a teacher model scoring
on the fly, an index searched with the current query encoder) implement the same two operations. A method may
also define the trainer's events (``on_epoch_start``, ``on_step_end``) and ``state_dict`` /
``load_state_dict`` (see :mod:`hardneg.dense.trainer`).

``loss`` calls ``model(queries=..., docs=...)`` once per step: ``model`` is the bi-encoder itself or its
``DistributedDataParallel`` wrapper, which needs exactly one forward per backward. ``batch`` is the *global*
batch; with several processes (``replicas``, see :mod:`hardneg.dense.distributed`) each encodes its share of
the rows and the embeddings are gathered, so the loss is the one of the whole batch, as in one process.

:class:`ContrastiveMethod` is the step of the contrastive methods (warm-up, the baselines, STAR; declared in
:mod:`hardneg.methods`), which differ only in where each row's negatives come from and in the loss.

Every query is scored against every document of the batch (its positive, its negatives, and other rows'
positives and negatives; with ``in_batch`` false only its own positive and negatives); pairs whose document is
relevant to the query are masked.

With a :class:`Distillation`, the step adds a term learnt from a teacher's scores (:data:`hardneg.dense.losses.
DISTILLATION`: ``margin_mse`` or ``kl``) over each row's own positive and own negatives, the pairs the teacher
scored: loss = (1 − weight) × the contrastive loss + weight × the distillation loss. The student's scores in it
are those of the contrastive loss (raw scores divided by ``temperature``). The other rows' documents, in-batch
negatives of the contrastive loss, stay out of the distillation term: the teacher scored each query's own
candidates, not the batch's mix.

Queries and documents reach the encoder in length-homogeneous chunks (:meth:`TokenizedTexts.chunked`), not as
one block padded to the batch's longest text: when lengths vary, most of the padding, and of the time spent
on it, goes away, and the vectors are those of one padded block up to rounding.

With ``grad_cache_chunk`` (``params.train.grad_cache_chunk``) no chunk has more texts than that, and each chunk's
activations are recomputed in the backward pass instead of kept (gradient caching, GradCache): the loss is still
over every query and document of the batch, so a batch of thousands of in-batch negatives trains in the memory
of a small one, for one more forward pass. The gradient is the uncached step's up to rounding (with dropout
on, the masks are drawn per chunk, as for any layout of the chunks).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from hardneg.dense.data import NegativeSource, TeacherScores, TrainQueries
from hardneg.dense.distributed import SINGLE, Replicas
from hardneg.dense.losses import DISTILLATION, LOSSES
from hardneg.dense.tokenized import TokenizedTexts, chunk_overhead


@dataclass
class Batch:
    queries: np.ndarray  # indices into TrainQueries
    query_rows: np.ndarray  # rows of the tokenized queries
    doc_rows: np.ndarray  # rows of the tokenized corpus: the B positives first, then the negatives
    positive: np.ndarray  # [B] column of each row's positive in doc_rows
    relevant: np.ndarray  # [B, len(doc_rows)] document relevant to the query
    teacher: np.ndarray | None = None  # [B, 1 + per_query] teacher scores of each row's own documents, NaN: none


@dataclass(frozen=True)
class Distillation:
    """The distillation term of :class:`ContrastiveMethod`: ``loss`` (a name of
    :data:`hardneg.dense.losses.DISTILLATION`) of the student's scores against ``teacher``'s, mixed in by
    ``weight`` (in [0, 1]); the temperatures divide the two sides' scores in ``kl`` (``margin_mse`` ignores them)."""

    loss: str
    weight: float
    teacher: TeacherScores
    teacher_temperature: float = 1.0
    student_temperature: float = 1.0

    def __post_init__(self):
        if self.loss not in DISTILLATION:
            raise ValueError(f"unknown distillation loss {self.loss!r}; known: {', '.join(DISTILLATION)}")
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"the distillation weight must be within [0, 1], got {self.weight}")
        if self.teacher_temperature <= 0 or self.student_temperature <= 0:
            raise ValueError("distillation temperatures must be positive")


class ContrastiveMethod:
    """The contrastive step. With ``in_batch`` (the default) each query is scored against every document of the
    batch; without it, against its own positive and its own negatives only: the other rows' documents are left
    out of its loss as relevant ones are (ColBERT's triples; STAR's hard negatives without their reuse as other
    rows' negatives, ``static_hn``)."""

    def __init__(
        self,
        train: TrainQueries,
        query_texts: TokenizedTexts,
        doc_texts: TokenizedTexts,
        *,
        negatives: NegativeSource | None,
        per_query: int,
        loss: str,
        temperature: float = 1.0,
        in_batch: bool = True,
        grad_cache_chunk: int = 0,
        distillation: Distillation | None = None,
    ):
        if loss not in LOSSES:
            raise ValueError(f"unknown loss {loss!r}")
        if grad_cache_chunk < 0:
            raise ValueError(f"grad_cache_chunk must be 0 (off) or positive, got {grad_cache_chunk}")
        # texts per encoder pass with gradient caching (0: off): see TokenizedTexts.chunked
        self.grad_cache_rows = grad_cache_chunk or None
        self.train, self.query_texts, self.doc_texts = train, query_texts, doc_texts
        self.negatives, self.per_query, self.loss_name = negatives, per_query if negatives else 0, loss
        self.temperature = temperature  # scores are divided by it (e.g. 0.05 for normalised vectors)
        self.in_batch = in_batch
        if distillation is not None and self.per_query < 1:
            raise ValueError(
                "distillation compares each row's positive with its own negatives: it needs per_query >= 1"
            )
        self.distillation = distillation

    def make_batch(self, queries: np.ndarray, rng: np.random.Generator) -> Batch:
        positives = self.train.sample_positives(queries, rng)
        parts = [positives]
        if self.negatives is not None and self.per_query > 0:
            parts.append(self.negatives.sample(queries, self.per_query, rng).reshape(-1))
        doc_rows = np.concatenate(parts)
        batch = Batch(
            queries=queries,
            query_rows=self.train.query_rows[queries],
            doc_rows=doc_rows,
            positive=np.arange(len(queries)),
            relevant=self.train.relevance_mask(queries, doc_rows),
        )
        if self.distillation is not None:
            own = doc_rows[self.own_columns(len(queries))]
            batch.teacher = self.distillation.teacher.lookup(np.asarray(queries)[:, None], own)
        return batch

    def encode(self, model, batch: Batch, device, replicas: Replicas = SINGLE):
        """The model's outputs for this process's share of the batch's queries and documents (one forward)."""
        query_rows = batch.query_rows[replicas.local(len(batch.query_rows))]
        doc_rows = batch.doc_rows[replicas.local(len(batch.doc_rows))]
        overhead, grad_cache_rows = chunk_overhead(device), self.grad_cache_rows
        return model(
            queries=self.query_texts.chunked(query_rows, overhead=overhead, grad_cache_rows=grad_cache_rows).to(
                device, non_blocking=True
            ),
            docs=self.doc_texts.chunked(doc_rows, overhead=overhead, grad_cache_rows=grad_cache_rows).to(
                device, non_blocking=True
            ),
        )

    def scores(self, model, batch: Batch, device, replicas: Replicas = SINGLE) -> torch.Tensor:
        """Raw scores [B, len(doc_rows)] of every query of the global batch against every document of it (at
        least float32: bf16 rounds big scores by units), not yet divided by the temperature."""
        q, d = self.encode(model, batch, device, replicas)
        q, d = replicas.gather(q, len(batch.query_rows)), replicas.gather(d, len(batch.doc_rows))
        exact = torch.promote_types(q.dtype, torch.float32)
        with torch.autocast(torch.device(device).type, enabled=False):
            return q.to(exact) @ d.to(exact).T

    def loss(self, model, batch: Batch, device, replicas: Replicas = SINGLE) -> tuple[torch.Tensor, dict]:
        """The loss of the global batch (the same value on every rank) and batch statistics."""
        scores = self.scores(model, batch, device, replicas) / self.temperature
        loss, stats = self.contrastive_loss(scores, batch, device)
        if self.distillation is None:
            return loss, stats
        distilled = self.distillation_loss(scores, batch, device)
        weight = self.distillation.weight
        # the contrastive loss is computed for the batch accuracy anyway; weight 1 leaves it out
        loss = weight * distilled + ((1.0 - weight) * loss if weight < 1.0 else 0.0)
        stats["distill_loss"] = float(distilled.detach())
        return loss, stats

    def distillation_loss(self, scores: torch.Tensor, batch: Batch, device) -> torch.Tensor:
        """The distillation term of ``scores`` (the contrastive loss's, divided by the temperature already)
        against the batch's teacher scores, over each row's own positive and negatives."""
        columns = torch.from_numpy(self.own_columns(len(batch.query_rows))).to(device)
        teacher = torch.from_numpy(batch.teacher).to(device)
        scored = ~torch.isnan(teacher)
        distill = self.distillation
        assert distill is not None  # called for a run that distils only
        return DISTILLATION[distill.loss](
            scores.gather(1, columns),
            teacher,
            scored,
            teacher_temperature=distill.teacher_temperature,
            student_temperature=distill.student_temperature,
        )

    def contrastive_loss(self, scores: torch.Tensor, batch: Batch, device) -> tuple[torch.Tensor, dict]:
        """The method's loss of ``scores`` (divided by the temperature already) and the batch accuracy."""
        if not self.in_batch:  # other rows' documents are left out as relevant ones are: never negatives
            batch = dataclasses.replace(batch, relevant=batch.relevant | ~self.own_documents(batch))
        positive = torch.from_numpy(batch.positive).to(device)
        relevant = torch.from_numpy(batch.relevant).to(device)
        loss = LOSSES[self.loss_name](scores, positive, relevant)
        with torch.no_grad():
            best_negative = scores.masked_fill(relevant, float("-inf")).max(dim=1).values
            accuracy = (scores.gather(1, positive[:, None]).squeeze(1) > best_negative).float().mean()
        return loss, {"batch_accuracy": float(accuracy)}

    def own_columns(self, rows: int) -> np.ndarray:
        """[rows, 1 + per_query] int64: the batch columns of each row's own positive, then of its own negatives
        (``make_batch`` lays the B positives out first, then each row's ``per_query`` negatives in row order)."""
        negatives = rows + np.arange(rows)[:, None] * self.per_query + np.arange(self.per_query)[None, :]
        return np.concatenate([np.arange(rows)[:, None], negatives], axis=1).astype(np.int64)

    def own_documents(self, batch: Batch) -> np.ndarray:
        """[B, len(doc_rows)]: each row's own positive and negatives (:meth:`own_columns`)."""
        rows = len(batch.query_rows)
        own = np.zeros((rows, len(batch.doc_rows)), dtype=bool)
        np.put_along_axis(own, self.own_columns(rows), True, axis=1)
        return own
