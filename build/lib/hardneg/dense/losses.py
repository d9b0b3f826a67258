"""Ranking losses over a batch score matrix.

All take ``scores`` [B, M] (query i against every document j of the batch), ``positive`` [B] (the column of
row i's positive) and ``relevant`` [B, M] (document j is relevant to query i; such pairs are never negatives).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _negatives(relevant: torch.Tensor) -> torch.Tensor:
    return ~relevant


def softmax_cross_entropy(scores: torch.Tensor, positive: torch.Tensor, relevant: torch.Tensor) -> torch.Tensor:
    """-log softmax of the positive among the positive and every non-relevant batch document."""
    own = F.one_hot(positive, scores.shape[1]).bool()
    masked = scores.masked_fill(relevant & ~own, float("-inf"))
    return F.cross_entropy(masked, positive)


def ranknet_all_pairs(scores: torch.Tensor, positive: torch.Tensor, relevant: torch.Tensor) -> torch.Tensor:
    """Mean RankNet loss log(1 + exp(s_neg - s_pos)) over every (query, non-relevant batch document) pair:
    its own hard negatives, other rows' positives and other rows' hard negatives (STAR's reuse)."""
    pos = scores.gather(1, positive[:, None])
    pairs = F.softplus(scores - pos)
    negative = _negatives(relevant)
    return (pairs * negative).sum() / negative.sum().clamp(min=1)


LOSSES = {"ce": softmax_cross_entropy, "ranknet": ranknet_all_pairs}
