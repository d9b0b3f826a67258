"""README.md's results tables, made from the ``metrics.json`` files under ``results/``: one row per run (MRR@10,
nDCG@10, R@100 and the pairwise errors of Table 1 of the STAR/ADORE paper) and the Adaptive Batch Scheduling
table (each schedule without and with Condenser pre-training).

``hardneg table`` prints the first for the runs that have metrics; ``benchmarks/synthetic_results.py`` builds every
run of the default config and prints both. A test builds the main target from nothing and finds its rows in
README.md as printed, so the numbers there are what the code at that commit gives.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hardneg.errors import HardnegError

# The rows of README.md's table, in its order: run name and the label shown.
ROWS = [("bm25", "bm25"), ("randneg", "randneg"), ("inbatch", "inbatch"), ("warmup", "warmup (BM25 Neg)"),
        ("star", "star"), ("ance", "ance"), ("adore_randneg", "adore_randneg"), ("adore_inbatch", "adore_inbatch"),
        ("adore_warmup", "adore_warmup"), ("adore_star", "adore_star"),
        ("hybrid_adore_star", "hybrid_adore_star (α·BM25 + adore_star)"), ("rrf_adore_star", "rrf_adore_star (RRF)")]
TCT_ROWS = [("colbert_teacher", "colbert_teacher (re-ranks BM25's top 100)"), ("tct", "tct"), ("tct_hn", "tct_hn"),
            ("tct_tct_hn", "tct_tct_hn"), ("colbert_teacher_hn", "colbert_teacher_hn"), ("tct_hnp", "tct_hnp (HN+)")]
MEASURES = [("RR@10", "MRR@10"), ("nDCG@10", "nDCG@10"), ("R@100", "R@100")]
ABS_ROWS = [("abs_sequential", "Non-ABS-Sequential"), ("abs_random", "Non-ABS-Random"), ("abs_bm25", "ABS-BM25"),
            ("abs_encode", "ABS-Encode"), ("abs_beam", "ABS-BeamSearch")]
ABS_PRETRAINING = [("", "none"), ("condenser_", "Condenser (coCondenser loss)")]
ABS_MEASURES = [("RR@10", "MRR@10"), ("RR@100", "MRR@100"), ("R@100", "R@100")]


def _metrics(results: str | os.PathLike, run: str) -> dict:
    path = Path(results) / run / "metrics.json"
    if not path.is_file():
        raise HardnegError(f"run {run} has no metrics: {path} is missing; build it with snakemake {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def runs_table(results: str | os.PathLike, rows: list[tuple[str, str]]) -> str:
    """The Markdown table of ``rows`` (run, label): the evaluation split's MRR@10, nDCG@10, R@100, and the
    pairwise errors per query in the top 200 and over the whole corpus (marked ≥ where the ranking stops short, so
    the count is a lower bound)."""
    lines = ["| run | " + " | ".join(label for _, label in MEASURES) + " | top-200 pairwise errors | total pairwise errors |",
             "|---|" + "---|" * (len(MEASURES) + 2)]
    for run, label in rows:
        metrics = _metrics(results, run)
        errors = metrics["pairwise_errors"]
        bound = " (≥)" if errors["total_is_lower_bound"] else ""
        lines.append(f"| {label} | " + " | ".join(f"{metrics['measures'][m]:.3f}" for m, _ in MEASURES)
                     + f" | {errors['top200_pairwise_errors']:.1f} | {errors['total_pairwise_errors']:.1f}{bound} |")
    return "\n".join(lines) + "\n"


def abs_table(results: str | os.PathLike) -> str:
    """The ten runs of the ABS report's tables: each batch schedule without and with Condenser pre-training."""
    lines = ["| batches | pre-training | " + " | ".join(label for _, label in ABS_MEASURES) + " |",
             "|---|---|" + "---|" * len(ABS_MEASURES)]
    for prefix, pretraining in ABS_PRETRAINING:
        for run, label in ABS_ROWS:
            measures = _metrics(results, f"{prefix}{run}")["measures"]
            lines.append(f"| {label} (`{prefix}{run}`) | {pretraining} | "
                         + " | ".join(f"{measures[m]:.3f}" for m, _ in ABS_MEASURES) + " |")
    return "\n".join(lines) + "\n"


def available_rows(results: str | os.PathLike, runs: list[str] | None = None) -> list[tuple[str, str]]:
    """The rows to show: ``runs`` (README's label where it has one), or else every run of README's table, TCT rows
    included, that has metrics under ``results``, in the table's order."""
    labels = dict(ROWS + TCT_ROWS)
    if runs:
        return [(run, labels.get(run, run)) for run in runs]
    return [(run, label) for run, label in ROWS + TCT_ROWS if (Path(results) / run / "metrics.json").is_file()]
