"""TCT-ColBERT's student step (Lin, Yang and Lin, "In-Batch Negatives for Knowledge Distillation with
Tightly-Coupled Teachers for Dense Retrieval", RepL4NLP 2021).

A bi-encoder student (mean pooling over ColBERT's input format) learns from a frozen ColBERT teacher scoring the
same batch on the fly: the teacher's late interaction is cheap next to the student's backward, so its scores of
every (query, document) pair of the batch come at a fraction of a step (the paper: +33% training time), which
precomputed scores could not give for in-batch pairs that change every step.

The batch is :class:`hardneg.dense.steps.ContrastiveMethod`'s (each row's query, its positive and
``per_query`` negatives from a :class:`hardneg.dense.data.NegativeSource`; every query against all the batch's
documents). The loss is ``kd_weight`` times :func:`kd_loss` of the student's scores against the teacher's,
plus ``1 - kd_weight`` times the contrastive loss of the student (:data:`hardneg.dense.losses.LOSSES`); without
a teacher it is the contrastive loss alone (the paper's hard-negative variant without distillation).

The distillation runs over *all* the batch's documents, relevant or not (the paper's 2B in-batch documents):
the teacher's distribution says how much more the query's own positive is worth than another row's
positive that happens to be relevant too, which masking would throw away. :func:`kd_loss` takes a mask for
whoever wants otherwise.

With several processes (:mod:`hardneg.dense.distributed`) the student's vectors are gathered as in
:class:`ContrastiveMethod`, and every rank scores the whole global batch with its own copy of the teacher: the
teacher is frozen and cheap, every rank then holds the same scores, and no token-level vectors (queries x
tokens x dim, far bigger than the pooled ones) ever cross between processes.
"""

from __future__ import annotations

import time

import torch

from hardneg.dense.data import NegativeSource, TrainQueries
from hardneg.dense.distributed import SINGLE, Replicas
from hardneg.dense.losses import listwise_kl as kd_loss  # the KL of every in-batch document
from hardneg.dense.maxsim import ColBERT, maxsim
from hardneg.dense.steps import Batch, ContrastiveMethod
from hardneg.dense.tokenized import TokenizedTexts, chunk_overhead


def freeze(teacher: torch.nn.Module) -> torch.nn.Module:
    """``teacher`` in eval mode (no dropout: its scores are targets) with no parameter asking for a gradient."""
    teacher.eval()
    teacher.requires_grad_(False)
    return teacher


def load_teacher(path, device) -> torch.nn.Module:
    """A saved ColBERT model (:meth:`hardneg.dense.maxsim.ColBERT.load`) on ``device``, frozen "
    "(:func:`freeze`)."""
    return freeze(ColBERT.load(path).to(device))


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class TctMethod(ContrastiveMethod):
    """The TCT-ColBERT step: :class:`ContrastiveMethod`'s batches, the student distilled from ``teacher`` (a
    frozen :class:`hardneg.dense.maxsim.ColBERT`; None: the contrastive loss alone). See the module docstring.

    The teacher is never the trainer's model, so the optimiser (built over the student's parameters) never sees
    it; it is moved to the training device at the first step. ``step_timings`` (the trainer's wall-clock
    record: the job's log and ``benchmarks/train_steps.parquet``) holds the seconds of the latest step's student
    encoding, teacher scoring (``teacher``) and loss; the statistics hold only values the seed reproduces
    (``batch_accuracy``, and
    ``kd_loss`` with a teacher).
    """

    def __init__(
        self,
        train: TrainQueries,
        query_texts: TokenizedTexts,
        doc_texts: TokenizedTexts,
        *,
        negatives: NegativeSource | None,
        per_query: int,
        teacher: torch.nn.Module | None = None,
        teacher_temperature: float = 0.25,
        kd_weight: float = 1.0,
        loss: str = "ce",
        temperature: float = 1.0,
        grad_cache_chunk: int = 0,
    ):
        super().__init__(
            train,
            query_texts,
            doc_texts,
            negatives=negatives,
            per_query=per_query,
            loss=loss,
            temperature=temperature,
            grad_cache_chunk=grad_cache_chunk,
        )
        if not 0.0 <= kd_weight <= 1.0:
            raise ValueError(f"kd_weight must be within [0, 1], got {kd_weight}")
        if teacher_temperature <= 0 or temperature <= 0:
            raise ValueError("temperatures must be positive")
        self.teacher = freeze(teacher) if teacher is not None else None
        self.teacher_temperature, self.kd_weight = teacher_temperature, kd_weight
        self.step_timings: dict[str, float] = {}

    def teacher_scores(self, batch: Batch, device) -> torch.Tensor:
        """The teacher's scores [B, len(doc_rows)] of every query of the global ``batch`` against every document
        of it: one forward over the queries and documents (length-homogeneous chunks), then MaxSim in float32.
        A plain tensor (not an inference tensor), so autograd may read it."""
        device = torch.device(device)
        teacher = self.teacher
        assert teacher is not None  # asked for with a teacher only
        if next(teacher.parameters()).device != device:
            teacher.to(device)
        if teacher.training:  # someone called train() on it
            teacher.eval()
        overhead = chunk_overhead(device)
        queries = self.query_texts.chunked(batch.query_rows, overhead=overhead).to(device, non_blocking=True)
        docs = self.doc_texts.chunked(batch.doc_rows, overhead=overhead).to(device, non_blocking=True)
        with torch.inference_mode():
            (q, _), (d, d_mask) = teacher(queries=queries, docs=docs)
            with torch.autocast(device.type, enabled=False):
                scores = maxsim(q.float(), d.float(), d_mask)
        return scores.clone()  # outside inference mode: a normal tensor

    def loss(self, model, batch: Batch, device, replicas: Replicas = SINGLE) -> tuple[torch.Tensor, dict]:
        """The loss of the global batch (the same value on every rank) and batch statistics."""
        device = torch.device(device)
        timings = {}
        teacher = None
        if self.teacher is not None:
            _synchronize(device)
            started = time.perf_counter()
            teacher = self.teacher_scores(batch, device)
            _synchronize(device)
            timings["teacher"] = time.perf_counter() - started
        started = time.perf_counter()
        raw = self.scores(model, batch, device, replicas)  # the KD loss divides by the temperature itself
        encoded = time.perf_counter()
        loss, stats = self.contrastive_loss(raw / self.temperature, batch, device)
        if teacher is not None:
            distilled = kd_loss(
                raw, teacher, teacher_temperature=self.teacher_temperature, student_temperature=self.temperature
            )
            # the contrastive loss is computed for the batch accuracy anyway; kd_weight 1 leaves it out
            loss = self.kd_weight * distilled + ((1.0 - self.kd_weight) * loss if self.kd_weight < 1.0 else 0.0)
            stats["kd_loss"] = float(distilled.detach())
        self.step_timings = {"encode": encoded - started, **timings, "loss": time.perf_counter() - encoded}
        return loss, stats


__all__ = ["TctMethod", "freeze", "kd_loss", "load_teacher"]
