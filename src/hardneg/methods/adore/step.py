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
import warnings
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


def build_candidates(
    retrieved: np.ndarray, relevant_rows: list[np.ndarray], append_missing: str = "when_none"
) -> Candidates:
    """``retrieved`` [B, k] document rows in rank order (-1 = none); ``relevant_rows[i]`` the relevant rows of
    query i. Relevant documents missing from the top-k are appended with ranks k+1, k+2, ... (in row order):
    for a query none of whose relevant documents was retrieved (``append_missing="when_none"``), or for
    every query (``"all"``). Vectorised over the batch."""
    if append_missing not in APPEND_MISSING:
        raise ValueError(f"append_missing must be one of {APPEND_MISSING}, got {append_missing!r}")
    batch, k = retrieved.shape
    wanted = np.full((batch, max((len(r) for r in relevant_rows), default=0)), np.iinfo(np.int64).max)
    for i, rel in enumerate(relevant_rows):
        wanted[i, : len(rel)] = rel
    wanted.sort(axis=1)  # each query's relevant rows in row order, each once; -2 pads
    wanted[:, 1:][wanted[:, 1:] == wanted[:, :-1]] = np.iinfo(np.int64).max
    wanted.sort(axis=1)
    wanted[wanted == np.iinfo(np.int64).max] = -2
    hits = retrieved[:, :, None] == wanted[:, None, :]  # [B, k, r]
    found = hits.any(1)  # [B, r]: relevant document retrieved
    missing = (wanted >= 0) & ~found
    if append_missing == "when_none":
        missing &= ~found.any(1, keepdims=True)
    extra = missing.sum(1)
    width = k + int(extra.max(initial=0))
    rows = np.full((batch, width), -1, dtype=np.int64)
    rows[:, :k] = retrieved
    first = np.argsort(~missing, axis=1, kind="stable")  # each query's missing ones first, in row order
    appended = np.take_along_axis(wanted, first, 1)[:, : width - k]
    keep = np.arange(width - k)[None, :] < extra[:, None]
    rows[:, k:] = np.where(keep, appended, -1)
    valid = rows >= 0
    ranks = np.broadcast_to(np.arange(1, width + 1, dtype=np.int64), (batch, width)).copy()
    relevant = np.zeros((batch, width), dtype=bool)
    relevant[:, :k] = hits.any(2) & (retrieved >= 0)
    relevant[:, k:] = keep
    return Candidates(rows, relevant, ranks, valid)


def _reciprocal(ranks: torch.Tensor, cut: int) -> torch.Tensor:
    return torch.where(ranks <= cut, 1.0 / ranks.float(), torch.zeros((), device=ranks.device))


def delta_mrr(ranks: torch.Tensor, cut: int) -> torch.Tensor:
    """|ΔMRR@cut| of swapping candidates i and j: |1/r_i − 1/r_j|, with 1/r = 0 for r > cut. [B, C, C]."""
    reciprocal = _reciprocal(ranks, cut)
    return (reciprocal[:, :, None] - reciprocal[:, None, :]).abs()


def lambda_loss(
    scores: torch.Tensor,
    relevant: torch.Tensor,
    ranks: torch.Tensor,
    valid: torch.Tensor,
    *,
    cut: int = 200,
    weighted: bool = True,
    normalize: str = "pairs",
    reduction: str = "mean",
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


GROUP = 4  # queries whose candidate embeddings are gathered together (a few MB, in cache) to score them


def embeddings_tensor(doc_embeddings) -> torch.Tensor:
    """A tensor view (no copy) of fixed document embeddings: a NumPy array or memory map, float32 or float16."""
    if isinstance(doc_embeddings, torch.Tensor):
        return doc_embeddings
    with warnings.catch_warnings():  # a read-only memory map: the view is only ever read
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(np.asarray(doc_embeddings))


class _CandidateScores(torch.autograd.Function):
    """Inner products of query vectors [B, D] with their candidates' fixed embeddings (rows [B, C]), with the
    gradient reaching the queries only, computed where the embeddings are (the small inputs and results move).

    Forward: scores given in ``known`` (not NaN; an exact index has just computed them during the search) are
    taken as they are, the others computed a few queries at a time (:data:`GROUP`), so no [B, C, D] block is
    written out. Backward: the gradient of query b is the sum of its candidates' embeddings weighted by the
    scores' gradients, one ``embedding_bag`` (which reads each embedding once, gathering nothing)."""

    @staticmethod
    def forward(ctx, q, embeddings, rows, known):
        ctx.save_for_backward(rows)
        ctx.embeddings = embeddings
        where = embeddings.device
        queries = q.detach().to(where, torch.float32)
        scores = (
            torch.empty(rows.shape, dtype=torch.float32, device=where) if known is None else known.to(where, copy=True)
        )
        todo = None if known is None else torch.isnan(scores)
        if todo is None or bool(todo.all()):
            for lo in range(0, len(rows), GROUP):
                block = _embeddings_of(embeddings, rows[lo : lo + GROUP])
                scores[lo : lo + GROUP] = (block * queries[lo : lo + GROUP, None, :]).sum(-1)
        elif bool(todo.any()):  # the few candidates the search did not return (appended relevant documents)
            at = todo.nonzero(as_tuple=True)
            scores[at] = (embeddings.index_select(0, rows[at]).float() * queries[at[0]]).sum(-1)
        return scores.to(q.device)

    @staticmethod
    def backward(ctx, grad):
        (rows,) = ctx.saved_tensors
        embeddings = ctx.embeddings
        weights = grad.to(embeddings.device, torch.float32).contiguous()
        if embeddings.dtype == torch.float32:
            grad_q = F.embedding_bag(rows, embeddings, per_sample_weights=weights, mode="sum")
        else:  # float16 embeddings (encode.fp16): summed in float32
            grad_q = torch.empty((len(rows), embeddings.shape[1]), dtype=torch.float32, device=embeddings.device)
            for lo in range(0, len(rows), GROUP):
                block = _embeddings_of(embeddings, rows[lo : lo + GROUP])
                grad_q[lo : lo + GROUP] = torch.bmm(weights[lo : lo + GROUP, None, :], block).squeeze(1)
        return grad_q.to(grad.device), None, None, None


def _embeddings_of(embeddings: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """The float32 embeddings [G, C, D] of a group's candidate rows [G, C]."""
    return embeddings.index_select(0, rows.reshape(-1)).view(*rows.shape, -1).float()


def candidate_scores(
    q: torch.Tensor, doc_embeddings, cand: Candidates, search_scores: np.ndarray | None = None
) -> torch.Tensor:
    """Scores [B, C] of every candidate of ``cand`` against the query vectors ``q`` [B, D] (float32), using the
    fixed ``doc_embeddings`` (padding positions score against row 0; they are masked out of the loss). With
    ``search_scores`` [B, k] from an exact inner-product search of these embeddings, the top-k scores are taken
    from it and only appended candidates are computed."""
    embeddings = embeddings_tensor(doc_embeddings)
    rows = torch.from_numpy(np.maximum(cand.rows, 0)).to(embeddings.device)
    known = None
    if search_scores is not None:
        filled = np.full(cand.rows.shape, np.nan, dtype=np.float32)
        filled[:, : search_scores.shape[1]] = search_scores
        filled[cand.rows < 0] = np.nan  # no result (-1): scored against row 0, finite, and masked out of the loss
        known = torch.from_numpy(filled)
    return _CandidateScores.apply(q, embeddings, rows, known)


def post_search_loss(
    q: torch.Tensor,
    retrieved: np.ndarray,
    relevant_rows: list[np.ndarray],
    doc_embeddings,
    *,
    cut: int,
    weighted: bool,
    normalize: str,
    append_missing: str,
    temperature: float = 1.0,
    search_scores: np.ndarray | None = None,
) -> tuple[torch.Tensor, Candidates]:
    """Everything of an ADORE step after the search: the candidates of each query (``retrieved`` [B, k] rows,
    relevant documents appended by ``append_missing``), their scores against the query vectors ``q`` [B, dim]
    with the fixed ``doc_embeddings`` (any array indexable by rows, e.g. a memory map; no gradient reaches
    them; ``search_scores``: the search's own scores, when it was exact, see :func:`candidate_scores`) divided
    by ``temperature``, and the per-query LambdaLoss [B] (:func:`lambda_loss`, ``reduction="none"``). Returns
    it with the candidates."""
    cand = build_candidates(retrieved, relevant_rows, append_missing)
    with torch.autocast(q.device.type, enabled=False):  # float32 scores under bf16/fp16 autocast too
        scores = candidate_scores(q.float(), doc_embeddings, cand, search_scores) / temperature
    device = q.device
    per_query = lambda_loss(
        scores,
        torch.from_numpy(cand.relevant).to(device),
        torch.from_numpy(cand.ranks).to(device),
        torch.from_numpy(cand.valid).to(device),
        cut=cut,
        weighted=weighted,
        normalize=normalize,
        reduction="none",
    )
    return per_query, cand


class AdoreMethod:
    """The ADORE training step for the shared trainer: queries only in the batch, documents from the index."""

    def __init__(
        self,
        train,
        query_texts,
        doc_embeddings: np.ndarray,
        index,
        *,
        top_k: int,
        cut: int,
        weighted: bool,
        normalize: str,
        append_missing: str,
        temperature: float,
    ):
        self.train, self.query_texts = train, query_texts
        from hardneg.index import is_exact  # Faiss: imported only where an index is built or searched

        self.doc_embeddings, self.index = embeddings_tensor(doc_embeddings), index
        self.exact_index = is_exact(index)  # its search scores are the candidates' scores (no recomputation)
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
        from hardneg.index import search  # Faiss: imported only where an index is built or searched

        started = time.perf_counter()
        mine = queries[replicas.local(len(queries))]
        batch = {k: v.to(device) for k, v in self.query_texts.batch(self.train.query_rows[mine]).items()}
        q, _ = model(queries=batch)
        encoded = time.perf_counter()
        scores, retrieved = search(self.index, q.detach().float().cpu().numpy(), self.top_k)
        searched = time.perf_counter()
        per_query, cand = post_search_loss(
            q,
            retrieved,
            [self.train.relevant[i] for i in mine],
            self.doc_embeddings,
            cut=self.cut,
            weighted=self.weighted,
            normalize=self.normalize,
            append_missing=self.append_missing,
            temperature=self.temperature,
            search_scores=scores if self.exact_index else None,
        )
        loss = replicas.gather(per_query, len(queries)).mean()
        done = time.perf_counter()
        first_relevant = np.where(cand.relevant.any(1), cand.relevant.argmax(1) + 1, 0)
        mrr = np.where((first_relevant > 0) & (first_relevant <= 10), 1.0 / np.maximum(first_relevant, 1), 0.0)
        mrr = replicas.gather(torch.from_numpy(mrr).to(device), len(queries)).cpu().numpy()
        self.step_timings = {"encode": encoded - started, "search": searched - encoded, "loss": done - searched}
        return loss, {"batch_mrr10": float(mrr.mean())}
