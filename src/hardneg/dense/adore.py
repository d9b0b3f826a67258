"""ADORE (Zhan et al., SIGIR 2021, section 6.2): train the query encoder against a fixed document index.

Each step encodes a batch of training queries, retrieves their top-k documents from the index with the
current query encoder (the real, dynamic hard negatives), labels them with the qrels and scores the
candidates with the fixed document embeddings. A query none of whose relevant documents was retrieved gets
them appended after rank k, so it has pairs to learn from (``append_missing="when_none"``, what the authors'
code does; ``"all"`` appends every unretrieved relevant document). The loss is a LambdaLoss: the RankNet loss
of every (relevant, non-relevant) candidate pair weighted by |ΔM|, the change of the target metric
M = MRR@cut when the two swap ranks (zero beyond the cut); without the weight it is plain RankNet (the paper's
ablation ADORE\\L). As in the authors' code, a query's loss is the mean over its pairs and the batch's loss
the mean over queries (``normalize="pairs"``; ``"sum"`` sums each query's pairs, so queries with many pairs
weigh more). Everything is vectorised over the batch.

With several processes each one encodes and searches its own share of the batch's queries, computes their
per-query losses and gathers them (:meth:`hardneg.dense.distributed.Replicas.gather`); the loss is the mean
over the whole batch, as in one process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from hardneg.dense.distributed import SINGLE, Replicas


@dataclass
class Candidates:
    """Per query: candidate document rows, their labels and current ranks (1-based), padded to one width."""

    rows: np.ndarray  # int64 [B, C], -1 where padded
    relevant: np.ndarray  # bool [B, C]
    ranks: np.ndarray  # int64 [B, C]
    valid: np.ndarray  # bool [B, C]


APPEND_MISSING = ("when_none", "all")
NORMALIZE = ("pairs", "sum")


def build_candidates(retrieved: np.ndarray, relevant_rows: list[np.ndarray], append_missing: str = "when_none"
                     ) -> Candidates:
    """``retrieved`` [B, k] document rows in rank order (-1 = none); ``relevant_rows[i]`` the relevant rows of
    query i. Relevant documents missing from the top-k are appended with ranks k+1, k+2, ...: for a query none
    of whose relevant documents was retrieved (``append_missing="when_none"``), or for every query (``"all"``)."""
    if append_missing not in APPEND_MISSING:
        raise ValueError(f"append_missing must be one of {APPEND_MISSING}, got {append_missing!r}")
    batch, k = retrieved.shape
    missing = [np.setdiff1d(rel, retrieved[i], assume_unique=False) for i, rel in enumerate(relevant_rows)]
    if append_missing == "when_none":
        missing = [extra if len(extra) == len(np.unique(rel)) else extra[:0]
                   for extra, rel in zip(missing, relevant_rows)]
    width = k + max((len(m) for m in missing), default=0)
    rows = np.full((batch, width), -1, dtype=np.int64)
    rows[:, :k] = retrieved
    for i, extra in enumerate(missing):
        rows[i, k:k + len(extra)] = extra
    valid = rows >= 0
    ranks = np.broadcast_to(np.arange(1, width + 1, dtype=np.int64), (batch, width)).copy()
    relevant = np.zeros((batch, width), dtype=bool)
    for i, rel in enumerate(relevant_rows):
        relevant[i] = np.isin(rows[i], rel) & valid[i]
    return Candidates(rows, relevant, ranks, valid)


def _reciprocal(ranks: torch.Tensor, cut: int) -> torch.Tensor:
    return torch.where(ranks <= cut, 1.0 / ranks.float(), torch.zeros((), device=ranks.device))


def delta_mrr(ranks: torch.Tensor, cut: int) -> torch.Tensor:
    """|ΔMRR@cut| of swapping candidates i and j: |1/r_i − 1/r_j|, with 1/r = 0 for r > cut. [B, C, C]."""
    reciprocal = _reciprocal(ranks, cut)
    return (reciprocal[:, :, None] - reciprocal[:, None, :]).abs()


def lambda_loss(scores: torch.Tensor, relevant: torch.Tensor, ranks: torch.Tensor, valid: torch.Tensor, *,
                cut: int = 200, weighted: bool = True, normalize: str = "pairs", reduction: str = "mean"
                ) -> torch.Tensor:
    """Per query, over its (relevant i, non-relevant j) pairs, the mean (``normalize="pairs"``) or the sum
    (``"sum"``) of w_ij · log(1 + exp(s_j − s_i)); then the mean over queries (``reduction="mean"``) or the
    per-query values, [B] (``reduction="none"``: what processes gather). A query without pairs gives 0.

    ``w_ij`` = |ΔMRR@cut| with ``weighted``, else 1 (plain RankNet). All inputs are [B, C]. Queries have few
    relevant candidates, so the pairs are laid out as [B, P, C] with P the most relevant candidates of any
    query, not as a [B, C, C] matrix.
    """
    relevant = relevant & valid
    width = max(int(relevant.sum(1).max()), 1)
    positive = torch.topk(relevant.to(scores.dtype), width, dim=1).indices  # [B, P]; padding where fewer
    positive_ok = relevant.gather(1, positive)
    pairs = positive_ok[:, :, None] & (~relevant & valid)[:, None, :]
    losses = F.softplus(scores[:, None, :] - scores.gather(1, positive)[:, :, None])
    if weighted:
        reciprocal = _reciprocal(ranks, cut)
        losses = losses * (reciprocal.gather(1, positive)[:, :, None] - reciprocal[:, None, :]).abs()
    per_query = (losses * pairs).sum(dim=(1, 2))
    if normalize == "pairs":
        per_query = per_query / pairs.sum(dim=(1, 2)).clamp(min=1).to(per_query.dtype)
    elif normalize != "sum":
        raise ValueError(f"normalize must be one of {NORMALIZE}, got {normalize!r}")
    if reduction == "none":
        return per_query
    if reduction != "mean":
        raise ValueError(f"unknown reduction {reduction!r}")
    return per_query.mean()


def post_search_loss(q: torch.Tensor, retrieved: np.ndarray, relevant_rows: list[np.ndarray], doc_embeddings, *,
                     cut: int, weighted: bool, normalize: str, append_missing: str, temperature: float = 1.0
                     ) -> tuple[torch.Tensor, Candidates]:
    """Everything of an ADORE step after the search: the candidates of each query (``retrieved`` [B, k] rows,
    relevant documents appended by ``append_missing``), their fixed embeddings gathered from ``doc_embeddings``
    (any array indexable by rows, e.g. a memory map; no gradient reaches them), the scores against the query
    vectors ``q`` [B, dim] divided by ``temperature``, and the per-query LambdaLoss [B] (:func:`lambda_loss`,
    ``reduction="none"``). Returns it with the candidates."""
    cand = build_candidates(retrieved, relevant_rows, append_missing)
    docs = torch.from_numpy(np.asarray(doc_embeddings[np.maximum(cand.rows, 0).ravel()], dtype=np.float32))
    docs = docs.view(*cand.rows.shape, -1).to(q.device)
    scores = torch.einsum("bd,bcd->bc", q.float(), docs) / temperature
    device = q.device
    per_query = lambda_loss(scores, torch.from_numpy(cand.relevant).to(device), torch.from_numpy(cand.ranks).to(device),
                            torch.from_numpy(cand.valid).to(device), cut=cut, weighted=weighted, normalize=normalize,
                            reduction="none")
    return per_query, cand


class AdoreMethod:
    """The ADORE training step for the shared trainer: queries only in the batch, documents from the index."""

    def __init__(self, train, query_texts, doc_embeddings: np.ndarray, index, *, top_k: int, cut: int,
                 weighted: bool, normalize: str, append_missing: str, temperature: float):
        self.train, self.query_texts = train, query_texts
        self.doc_embeddings, self.index = doc_embeddings, index
        self.top_k, self.cut, self.weighted, self.temperature = top_k, cut, weighted, temperature
        self.normalize, self.append_missing = normalize, append_missing
        self.step_timings: dict[str, float] = {}  # wall-clock seconds of the latest loss call, for the job's log

    def make_batch(self, queries: np.ndarray, rng: np.random.Generator):
        return queries

    def loss(self, model, queries: np.ndarray, device, replicas: Replicas = SINGLE) -> tuple[torch.Tensor, dict]:
        """The mean LambdaLoss of the global batch ``queries`` (each process searches its own share) and
        statistics of the whole batch (``batch_mrr10``). The wall-clock seconds this process spent encoding,
        searching and computing the loss go to ``step_timings`` (the job's log), not to the statistics (the
        training log, which the same seed reproduces byte for byte)."""
        from hardneg.index import search

        started = time.perf_counter()
        mine = queries[replicas.local(len(queries))]
        batch = {k: v.to(device) for k, v in self.query_texts.batch(self.train.query_rows[mine]).items()}
        q, _ = model(queries=batch)
        encoded = time.perf_counter()
        _, retrieved = search(self.index, q.detach().float().cpu().numpy(), self.top_k)
        searched = time.perf_counter()
        per_query, cand = post_search_loss(
            q, retrieved, [self.train.relevant[i] for i in mine], self.doc_embeddings, cut=self.cut,
            weighted=self.weighted, normalize=self.normalize, append_missing=self.append_missing,
            temperature=self.temperature)
        loss = replicas.gather(per_query, len(queries)).mean()
        done = time.perf_counter()
        first_relevant = np.where(cand.relevant.any(1), cand.relevant.argmax(1) + 1, 0)
        mrr = np.where((first_relevant > 0) & (first_relevant <= 10), 1.0 / np.maximum(first_relevant, 1), 0.0)
        mrr = replicas.gather(torch.from_numpy(mrr).to(device), len(queries)).cpu().numpy()
        self.step_timings = {"encode": encoded - started, "search": searched - encoded, "loss": done - searched}
        return loss, {"batch_mrr10": float(mrr.mean())}
