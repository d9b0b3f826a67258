"""The cross-encoder's training step: each training query with its positive, ``per_query`` negatives and the
positives of ``in_batch`` other rows of the batch, every pair scored jointly, and a pointwise or a listwise loss."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from hardneg.dense.data import NegativeSource, TrainQueries
from hardneg.dense.distributed import SINGLE, Replicas
from hardneg.dense.tokenized import chunk_overhead
from hardneg.methods.crossencoder.model import pair_batch

LOSSES = ("bce", "listwise")


@dataclass
class PairRows:
    """One batch: ``doc_rows`` [B, 1 + n + k] holds each query's positive (column 0), its ``n`` negatives, then the
    positives of the ``k`` rows after it (cyclically); ``relevant`` marks the documents judged relevant to the row's
    query (column 0 always)."""

    queries: np.ndarray  # indices into TrainQueries
    query_rows: np.ndarray  # [B] rows of the tokenized queries
    doc_rows: np.ndarray  # [B, 1 + n + k] rows of the tokenized corpus
    relevant: np.ndarray  # [B, 1 + n + k] bool


class CrossEncoderStep:
    """The training step of :mod:`hardneg.methods.crossencoder`.

    Negatives: ``per_query`` from ``negatives`` (a ranking's top, a mined list, or random documents), and the
    positives of the ``in_batch`` rows after each row (row ``i`` gets those of rows ``i + 1 .. i + in_batch``,
    cyclically). The latter make every positive of a batch a negative of ``in_batch`` other queries, so that being a
    training positive (a property of the document alone, which otherwise tells every positive from its ranked
    negatives) is not a label by itself. It still tells something: a document that is no training query's positive
    appears only as a negative, and a model that can tell documents apart (by their distinctive words) can learn
    which ones were positives.

    ``loss``: ``bce`` (binary cross-entropy of every pair, label 1 for a relevant document and 0 otherwise, the
    mean over the batch's pairs: sigmoid(logit) estimates a probability of relevance, calibrated to the training
    mix of one positive to ``per_query + in_batch`` negatives) or ``listwise`` (softmax cross-entropy of the
    positive among the row's negatives: the logits rank but are not probabilities). A negative that is judged
    relevant to the row's query is labelled 1 by ``bce`` and left out of the softmax by ``listwise``.

    With several processes each encodes its share of the batch's pairs and the logits are gathered
    (:class:`hardneg.dense.distributed.Replicas`), so the loss is that of the whole batch."""

    def __init__(
        self,
        train: TrainQueries,
        query_texts,
        doc_texts,
        *,
        negatives: NegativeSource,
        per_query: int,
        loss: str = "bce",
        in_batch: int = 0,
    ):
        if loss not in LOSSES:
            raise ValueError(f"unknown cross-encoder loss {loss!r}; known: {', '.join(LOSSES)}")
        if per_query < 0 or in_batch < 0 or per_query + in_batch < 1:
            raise ValueError(
                f"the cross-encoder trains on negatives: per_query ({per_query}) and in_batch "
                f"({in_batch}) must not be negative and give one at least"
            )
        self.train, self.query_texts, self.doc_texts = train, query_texts, doc_texts
        self.negatives, self.per_query, self.loss_name, self.in_batch = negatives, per_query, loss, in_batch

    def make_batch(self, queries: np.ndarray, rng: np.random.Generator) -> PairRows:
        queries = np.asarray(queries)
        positives = self.train.sample_positives(queries, rng)
        columns = [positives[:, None]]
        if self.per_query:
            columns.append(np.asarray(self.negatives.sample(queries, self.per_query, rng), dtype=np.int64))
        shifts = range(1, min(self.in_batch, len(queries) - 1) + 1)  # never a row's own positive
        columns += [np.roll(positives, -shift)[:, None] for shift in shifts]
        doc_rows = np.concatenate(columns, axis=1)
        relevant = self.train.is_relevant(queries[:, None], doc_rows)
        relevant[:, 0] = True
        return PairRows(
            queries=queries, query_rows=self.train.query_rows[queries], doc_rows=doc_rows, relevant=relevant
        )

    def logits(self, model, batch: PairRows, device, replicas: Replicas = SINGLE) -> torch.Tensor:
        """Logits [B, 1 + n] of every pair of the global batch (float32), this process's share with its gradient."""
        rows, width = batch.doc_rows.shape
        query_rows = np.repeat(batch.query_rows, width)
        doc_rows = batch.doc_rows.reshape(-1)
        share = replicas.local(len(doc_rows))
        core = model.module if hasattr(model, "module") else model  # DistributedDataParallel wraps the model
        pairs = pair_batch(
            self.query_texts,
            self.doc_texts,
            query_rows[share],
            doc_rows[share],
            max_length=core.max_length,
            overhead=chunk_overhead(device),
        )
        local = model(pairs.to(device, non_blocking=True))
        return replicas.gather(local.float(), len(doc_rows)).view(rows, width)

    def loss(self, model, batch: PairRows, device, replicas: Replicas = SINGLE) -> tuple[torch.Tensor, dict]:
        """The loss of the global batch and its statistics: ``batch_accuracy`` (share of queries whose positive
        outscores every non-relevant negative) and ``pair_accuracy`` (share of pairs on the right side of
        probability 1/2)."""
        logits = self.logits(model, batch, device, replicas)
        relevant = torch.from_numpy(batch.relevant).to(logits.device)
        with torch.autocast(torch.device(device).type, enabled=False):
            if self.loss_name == "bce":
                loss = F.binary_cross_entropy_with_logits(logits, relevant.float())
            else:
                others_relevant = relevant.clone()
                others_relevant[:, 0] = False
                masked = logits.masked_fill(others_relevant, float("-inf"))
                loss = F.cross_entropy(masked, torch.zeros(len(logits), dtype=torch.long, device=logits.device))
        with torch.no_grad():
            best_negative = logits.masked_fill(relevant, float("-inf")).max(dim=1).values
            batch_accuracy = (logits[:, 0] > best_negative).float().mean()
            pair_accuracy = ((logits > 0) == relevant).float().mean()
        return loss, {"batch_accuracy": float(batch_accuracy), "pair_accuracy": float(pair_accuracy)}
