"""Ranking losses over a batch score matrix, and distillation losses from a teacher's scores.

The ranking losses (:data:`LOSSES`) take ``scores`` [B, M] (query i against every document j of the batch),
``positive`` [B] (the column of row i's positive) and ``relevant`` [B, M] (document j is relevant to query i;
such pairs are never negatives).

The distillation losses (:data:`DISTILLATION`) take the student's and the teacher's scores of each row's own
documents, ``student`` and ``teacher`` [B, 1 + K] (column 0 the row's positive, columns 1..K its negatives),
and ``scored`` [B, 1 + K] (the teacher scored that pair; an unscored pair stays out of the term, whatever its
teacher value, NaN included). Both are computed in float32 whatever the inputs and the autocast.
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


def listwise_kl(
    student_scores: torch.Tensor,
    teacher_scores: torch.Tensor,
    *,
    teacher_temperature: float = 0.25,
    student_temperature: float = 1.0,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mean over rows (queries) of KL(P_teacher || P_student), the two distributions being the softmax over
    columns (documents) of ``teacher_scores / teacher_temperature`` and ``student_scores / student_temperature``.

    ``mask`` [B, N] (bool, optional): columns left out of a row, both distributions renormalised over the rest;
    every row must keep at least one. Computed in float32 whatever the inputs and the autocast: a temperature
    below 1 multiplies the scores, which bf16 would round by whole units.
    """
    if student_scores.shape != teacher_scores.shape or student_scores.dim() != 2:
        raise ValueError(
            f"student scores {tuple(student_scores.shape)} and teacher scores "
            f"{tuple(teacher_scores.shape)} must be the same [queries, documents] matrix"
        )
    with torch.autocast(student_scores.device.type, enabled=False):
        student = student_scores.float() / student_temperature
        teacher = teacher_scores.float() / teacher_temperature
        if mask is None:
            log_q, log_p = F.log_softmax(student, dim=1), F.log_softmax(teacher, dim=1)
        else:
            if bool(mask.all(dim=1).any()):
                raise ValueError("listwise_kl: the mask leaves a row without any document")
            # masked columns get log-probability 0 on both sides: their terms are exp(0) * (0 - 0) = 0, no NaN
            log_q = F.log_softmax(student.masked_fill(mask, float("-inf")), dim=1).masked_fill(mask, 0.0)
            log_p = F.log_softmax(teacher.masked_fill(mask, float("-inf")), dim=1).masked_fill(mask, 0.0)
        return F.kl_div(log_q, log_p, log_target=True, reduction="batchmean")  # sum over columns, mean over rows


def _check_own(student: torch.Tensor, teacher: torch.Tensor, scored: torch.Tensor) -> None:
    if student.dim() != 2 or student.shape[1] < 2 or student.shape != teacher.shape or scored.shape != student.shape:
        raise ValueError(
            f"student {tuple(student.shape)}, teacher {tuple(teacher.shape)} and scored "
            f"{tuple(scored.shape)} must be the same [rows, 1 + negatives] matrix, negatives >= 1"
        )


def margin_mse(
    student: torch.Tensor,
    teacher: torch.Tensor,
    scored: torch.Tensor,
    *,
    teacher_temperature: float = 1.0,
    student_temperature: float = 1.0,
) -> torch.Tensor:
    """Margin-MSE (Hofstätter et al. 2020): the mean, over the (row, negative) pairs whose positive and negative
    both have a teacher score, of ((s_pos − s_neg) − (t_pos − t_neg))², in squared score units. Zero (with a
    gradient of zeros) when no pair is scored. The temperatures are :func:`kl_divergence`'s and are not used
    here: margins are compared in the units they come in, as the paper does."""
    _check_own(student, teacher, scored)
    with torch.autocast(student.device.type, enabled=False):
        student, teacher = student.float(), teacher.float().masked_fill(~scored, 0.0)
        pairs = scored[:, :1] & scored[:, 1:]
        gap = (student[:, :1] - student[:, 1:]) - (teacher[:, :1] - teacher[:, 1:])
        return (gap.square() * pairs).sum() / pairs.sum().clamp(min=1)


def kl_divergence(
    student: torch.Tensor,
    teacher: torch.Tensor,
    scored: torch.Tensor,
    *,
    teacher_temperature: float = 1.0,
    student_temperature: float = 1.0,
) -> torch.Tensor:
    """Listwise distillation: :func:`listwise_kl` over each row's positive and its scored negatives (the rows
    whose positive and at least one negative have a teacher score; the other columns left out of both
    softmaxes), the mean over those rows. Zero (with a gradient of zeros) when no row qualifies."""
    _check_own(student, teacher, scored)
    rows = scored[:, 0] & scored[:, 1:].any(dim=1)
    if not bool(rows.any()):
        return student.float().sum() * 0.0
    return listwise_kl(
        student[rows],
        teacher[rows].masked_fill(~scored[rows], 0.0),
        teacher_temperature=teacher_temperature,
        student_temperature=student_temperature,
        mask=~scored[rows],
    )


DISTILLATION = {"margin_mse": margin_mse, "kl": kl_divergence}
