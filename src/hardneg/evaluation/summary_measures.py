"""What the summary knows of a measure: which way it is better (pairwise errors count mistakes, so fewer is
better; every ir-measures measure of the summary is better higher) and the column title the paper gives it (MRR@10
for RR@10, top-200 pairwise errors for PairwiseErrors@200).

The summary's markers (:mod:`hardneg.evaluation.summary_markers`) and its Markdown table
(:mod:`hardneg.evaluation.summary`) read a measure so, and so does every other table of measures that stands beside
the summary (runs compared query by query, the experiments' tables).
"""

from __future__ import annotations

from hardneg.evaluation.pairwise import TOTAL_MEASURE


def lower_is_better(measure: str) -> bool:
    """Pairwise errors (``PairwiseErrors@<depth>``, ``PairwiseErrors``) count mistakes: fewer is better. Every
    ir-measures measure of the summary is better higher."""
    return measure == TOTAL_MEASURE or measure.startswith(f"{TOTAL_MEASURE}@")


def measure_label(measure: str) -> str:
    """A measure's column title as the paper writes it: MRR@10 (RR@10), NDCG@10, MAP@1000, R@100, and the pairwise
    errors."""
    if measure == TOTAL_MEASURE:
        return "total pairwise errors"
    if measure.startswith(f"{TOTAL_MEASURE}@"):
        return f"top-{measure.split('@', 1)[1]} pairwise errors"
    for name, label in (("RR", "MRR"), ("nDCG", "NDCG"), ("AP", "MAP")):
        if measure.startswith(f"{name}@") or measure == name:
            return label + measure[len(name) :]
    return measure
