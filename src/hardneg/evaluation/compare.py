"""Runs compared query by query on one measure: each run against the first (the reference), as ``hardneg compare``
and the comparison pages of the report show them.

For every run after the first, over the queries of the split (paired by query id): its mean, the difference of
the means (run - reference), the queries it wins, ties and loses (better, equal within :data:`TIE_TOLERANCE`,
worse; better is higher, but fewer pairwise errors), the paired t-test and randomisation test with Cohen's d_z
(:mod:`hardneg.evaluation.significance`), and both p-values corrected over the comparisons made (one test of
each kind per run after the first; Holm's correction by default). The queries that changed most are those with
the largest absolute difference against the reference, in any run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hardneg.errors import HardnegError
from hardneg.evaluation.significance import CORRECTIONS, RESAMPLES, SEED, correct, p_text, paired_tests
from hardneg.evaluation.summary_measures import lower_is_better

if TYPE_CHECKING:
    import pandas as pd

TIE_TOLERANCE = 1e-9  # per-query values closer than this are a tie (floating-point noise of the same ranking)


@dataclass(frozen=True)
class RunComparison:
    """One run against the reference run on one measure (see the module docstring). ``delta`` = ``mean`` -
    ``reference_mean``; the ``*_corrected`` p-values are corrected over the comparison's runs."""

    run: str
    reference: str
    mean: float
    reference_mean: float
    delta: float
    wins: int
    ties: int
    losses: int
    t: float
    p_t: float
    p_randomisation: float
    p_t_corrected: float
    p_randomisation_corrected: float
    effect_size: float


@dataclass(frozen=True)
class Comparison:
    """Runs compared on ``measure``: ``values`` (index: query id, sorted; one column per run, the reference
    first), one :class:`RunComparison` per run after the first, and the settings of the tests."""

    measure: str
    values: pd.DataFrame
    rows: tuple[RunComparison, ...]
    correction: str
    resamples: int
    seed: int

    @property
    def runs(self) -> list[str]:
        return list(self.values.columns)

    @property
    def reference(self) -> str:
        return self.values.columns[0]

    @property
    def num_queries(self) -> int:
        return len(self.values)

    def deltas(self) -> pd.DataFrame:
        """Per-query differences against the reference: index query id, one column per run after the first."""
        return self.values.iloc[:, 1:].sub(self.values.iloc[:, 0], axis=0)

    def most_changed(self, top: int) -> list[str]:
        """The ``top`` queries whose value changed most against the reference in any run (the largest absolute
        difference first, then by query id); queries no run changed are left out."""
        largest = self.deltas().abs().max(axis=1)
        changed = largest[largest > TIE_TOLERANCE]
        order = sorted(changed.index, key=lambda qid: (-changed[qid], qid))
        return order[:top]


def outcomes(values: np.ndarray, reference: np.ndarray, measure: str) -> tuple[int, int, int]:
    """(wins, ties, losses) of ``values`` against ``reference`` query by query: better, equal within
    :data:`TIE_TOLERANCE`, worse (better is higher, but lower for pairwise errors)."""
    differences = np.asarray(values, dtype=np.float64) - np.asarray(reference, dtype=np.float64)
    if lower_is_better(measure):
        differences = -differences
    ties = int(np.sum(np.abs(differences) <= TIE_TOLERANCE))
    wins = int(np.sum(differences > TIE_TOLERANCE))
    return wins, ties, len(differences) - wins - ties


def compare_runs(
    values: Mapping[str, pd.Series],
    measure: str,
    *,
    correction: str = "holm",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    sources: Mapping[str, str] | None = None,
) -> Comparison:
    """Compare runs query by query on ``measure``: each run after the first against the first.

    :param values: run → its per-query values of ``measure`` (index: query id), the reference run first; at least
        two runs, evaluated on the same queries.
    :param measure: the measure's name (decides whether higher or lower is better).
    :param correction: how the p-values are corrected over the runs compared (``holm``, ``bonferroni``,
        ``none``: :data:`hardneg.evaluation.significance.CORRECTIONS`).
    :param resamples: resamples of the randomisation test.
    :param seed: seed of the randomisation test.
    :param sources: run → the file its values come from, named in errors.
    :returns: the comparison.
    :raises HardnegError: fewer than two runs, a run named twice, or two runs evaluated on different queries.
    :raises ValueError: an unknown correction.
    """
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; one of {', '.join(CORRECTIONS)}")
    runs = list(values)
    if len(runs) < 2:
        raise HardnegError("a comparison needs at least two runs")
    sources = sources or {}
    reference = runs[0]
    queries = sorted(values[reference].index)
    for run in runs[1:]:
        if set(values[run].index) != set(queries):
            only = sorted(set(values[run].index) ^ set(queries))
            raise HardnegError(
                f"runs {reference} ({sources.get(reference, reference)}) and {run} "
                f"({sources.get(run, run)}) were evaluated on other queries (e.g. {only[0]!r} is in "
                f"one only): a paired comparison needs the same queries"
            )
    frame = pd.DataFrame(
        {run: values[run].reindex(queries).to_numpy(np.float64) for run in runs}, index=pd.Index(queries, name="qid")
    )
    base = frame[reference].to_numpy()
    tests = {run: paired_tests(frame[run].to_numpy(), base, resamples=resamples, seed=seed) for run in runs[1:]}
    p_t = correct([tests[run].p_t for run in runs[1:]], correction)
    p_rand = correct([tests[run].p_randomisation for run in runs[1:]], correction)
    rows = []
    for i, run in enumerate(runs[1:]):
        test = tests[run]
        mean, reference_mean = float(frame[run].mean()), float(frame[reference].mean())
        rows.append(
            RunComparison(
                run,
                reference,
                mean,
                reference_mean,
                mean - reference_mean,
                *outcomes(frame[run].to_numpy(), base, measure),
                test.t,
                test.p_t,
                test.p_randomisation,
                float(p_t[i]),
                float(p_rand[i]),
                test.effect_size,
            )
        )
    return Comparison(measure, frame, tuple(rows), correction, resamples, seed)


# ------------------------------------------------------------------------------------------------ text
def number_text(value: float, measure: str, signed: bool = False) -> str:
    """A value of ``measure``: three decimals (one for pairwise errors, which count documents); ``–`` for NaN."""
    if value is None or math.isnan(value):
        return "–"
    if math.isinf(value):
        return ("+" if value > 0 else "-") + "inf"
    digits = 1 if lower_is_better(measure) else 3
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def table_cells(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """The comparison as a table: the header and one row of cells per run (the reference's first, its tests
    empty), as the terminal and the page show it: the mean, Δ, wins/ties/losses, t, the two p-values raw and
    corrected (p rand.: the randomisation test), d_z."""
    name = {"holm": "Holm", "bonferroni": "Bonferroni", "none": "uncorrected"}[comparison.correction]
    header = [
        "run",
        f"mean {comparison.measure}",
        f"Δ vs {comparison.reference}",
        "wins/ties/losses",
        "t",
        "p t-test",
        "p rand.",
        f"p t-test {name}",
        f"p rand. {name}",
        "d_z",
    ]
    first = comparison.values[comparison.reference]
    rows = [[comparison.reference, number_text(float(first.mean()), comparison.measure)] + [""] * (len(header) - 2)]
    for row in comparison.rows:
        rows.append(
            [
                row.run,
                number_text(row.mean, comparison.measure),
                number_text(row.delta, comparison.measure, signed=True),
                f"{row.wins}/{row.ties}/{row.losses}",
                "–" if math.isnan(row.t) else f"{row.t:.3f}",
                p_text(row.p_t),
                p_text(row.p_randomisation),
                p_text(row.p_t_corrected),
                p_text(row.p_randomisation_corrected),
                "–" if math.isnan(row.effect_size) else f"{row.effect_size:+.3f}",
            ]
        )
    return header, rows


def method_note(comparison: Comparison) -> str:
    """One paragraph saying what the table's tests are, as the terminal and the page print it under the table."""
    better = "fewer is better" if lower_is_better(comparison.measure) else "higher is better"
    correction = {
        "holm": "Holm's step-down correction",
        "bonferroni": "Bonferroni's correction",
        "none": "no correction",
    }[comparison.correction]
    tests = len(comparison.rows)
    return (
        f"{comparison.num_queries} queries, paired by query id; Δ = run - {comparison.reference} ({better}); "
        f"wins/ties/losses count the queries where the run is better than, equal to (within "
        f"{TIE_TOLERANCE:g}) or worse than {comparison.reference}. Two-sided tests of the per-query differences: "
        f"the paired t-test (scipy.stats.ttest_rel) and the randomisation test (p rand.; "
        f"scipy.stats.permutation_test, sign flips of the differences, {comparison.resamples} resamples with "
        f"seed {comparison.seed}, exact "
        f"when 2^queries is fewer). Corrected p-values: {correction} over the {tests} "
        f"comparison{'s' if tests != 1 else ''} against {comparison.reference}, each kind of test apart. "
        f"d_z = mean difference / standard deviation of the differences (Cohen's d for paired samples). "
        f"– : no test (every difference 0)."
    )
