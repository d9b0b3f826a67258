"""The significance markers of the summary (:mod:`hardneg.evaluation.summary`): the baseline groups that award
them, the paired t-test of a run against a baseline run, every test behind the markers, and the markers each run's
values earn.

A run's value carries a group's marker when a two-sided paired t-test (:func:`scipy.stats.ttest_rel` over the
queries of the evaluation split, paired by query id) finds it better than every run of the group that is in the
summary, the run itself aside: a corrected p below ``summary.p_value`` and a better mean (higher, or for pairwise
errors lower). The p-values are corrected for the number of tests (``summary.correction``, Holm's step-down method
by default; :func:`hardneg.evaluation.significance.correct`) over the tests of each measure: one per pair of a run
and a baseline run it is tested against. A group none of whose runs is in the summary marks nothing, and the
legend says so. A total of pairwise errors that is a lower bound (a ranking cut before some relevant document)
never carries a marker: the true count may be higher.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hardneg.errors import DataError
from hardneg.evaluation.significance import correct, detectable_difference
from hardneg.evaluation.summary_measures import lower_is_better
from hardneg.io import artifacts

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Group:
    """A baseline group: its marker, its name in the legend and its runs."""

    marker: str
    label: str
    runs: tuple[str, ...]


@dataclass(frozen=True)
class PairedTest:
    """A two-sided paired t-test of a run against a baseline over the queries both were evaluated on."""

    num_queries: int
    run_mean: float
    baseline_mean: float
    t: float
    p: float

    def better(self, measure: str) -> bool:
        if lower_is_better(measure):
            return self.run_mean < self.baseline_mean
        return self.run_mean > self.baseline_mean


def paired_t_test(run: pd.Series, baseline: pd.Series) -> PairedTest:
    """Paired t-test of two per-query series (index: query id; the same queries in any order) with
    :func:`scipy.stats.ttest_rel`. Identical series (or a single query) give t and p NaN: never significant."""
    from scipy.stats import ttest_rel  # scipy: slow to import, needed only here

    if set(run.index) != set(baseline.index):
        raise ValueError("a paired test needs the same queries on both sides")
    baseline = baseline.reindex(run.index)
    with warnings.catch_warnings():  # near-identical values: scipy warns of precision loss, the result stands
        warnings.simplefilter("ignore", RuntimeWarning)
        result = ttest_rel(run.to_numpy(np.float64), baseline.to_numpy(np.float64))
    return PairedTest(
        len(run), float(run.mean()), float(baseline.mean()), float(result.statistic), float(result.pvalue)
    )


def significance_tests(
    per_query: dict[str, pd.DataFrame],
    measures: list[str],
    groups: tuple[Group, ...],
    p_value: float,
    lower_bounds: dict[str, set] | None = None,
    sources: dict[str, str] | None = None,
    correction: str = "holm",
) -> pd.DataFrame:
    """Every test behind the markers: each run of ``per_query`` (run → frame indexed by query id, a column per
    measure) against each run of each group that is in ``per_query``, itself aside, for each measure.

    ``lower_bounds`` maps a run to the measures whose values are lower bounds (such a run is never significantly
    better in them). ``sources`` (run → file) names the files when two runs' queries differ. ``correction``
    (:data:`hardneg.evaluation.significance.CORRECTIONS`) corrects the p-values over the tests of each measure:
    one per (run, baseline run) pair, however many groups hold the baseline. A test is significant when the run is
    better and its corrected p is below ``p_value``. Returns one row per test (and group) with the columns of
    :data:`hardneg.io.artifacts.SUMMARY_TESTS`.
    """
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    rows: list[dict] = []
    lower_bounds, sources = lower_bounds or {}, sources or {}
    for run, values in per_query.items():
        for group in groups:
            for baseline in (b for b in group.runs if b in per_query and b != run):
                for measure in measures:
                    try:
                        test = paired_t_test(values[measure], per_query[baseline][measure])
                    except ValueError:
                        raise DataError(
                            sources.get(run, run),
                            None,
                            f"run {run!r} was evaluated on other queries than run {baseline!r} "
                            f"({sources.get(baseline, baseline)}); a paired test of the two needs the "
                            f"same queries (summary.groups marker {group.marker})",
                        ) from None
                    differences = values[measure] - per_query[baseline][measure].reindex(values[measure].index)
                    rows.append(
                        {
                            "run": run,
                            "marker": group.marker,
                            "baseline": baseline,
                            "measure": measure,
                            "num_queries": test.num_queries,
                            "run_mean": test.run_mean,
                            "baseline_mean": test.baseline_mean,
                            "mean_difference": test.run_mean - test.baseline_mean,
                            "t": test.t,
                            "p": test.p,
                            "better": test.better(measure),
                            "detectable": detectable_difference(differences.to_numpy(np.float64), p_value),
                        }
                    )
    for measure in measures:  # one family per measure: each (run, baseline) pair once
        pairs = list(dict.fromkeys((row["run"], row["baseline"]) for row in rows if row["measure"] == measure))
        raw = {(row["run"], row["baseline"]): row["p"] for row in rows if row["measure"] == measure}
        corrected = dict(zip(pairs, correct([raw[pair] for pair in pairs], correction)))
        for row in (row for row in rows if row["measure"] == measure):
            row["p_corrected"] = float(corrected[(row["run"], row["baseline"])])
            row["significant"] = bool(
                row["better"] and row["p_corrected"] < p_value and measure not in lower_bounds.get(row["run"], ())
            )
    return pd.DataFrame(rows, columns=artifacts.SUMMARY_TESTS.schema.names)


def markers(tests: pd.DataFrame, runs: list[str], measures: list[str], groups: tuple[Group, ...]) -> dict:
    """(run, measure) → the markers, in group order, of the groups whose every test of that run and measure
    is significant (a group the run was not tested against, having no other run in the summary, marks
    nothing)."""
    found = {(run, measure): "" for run in runs for measure in measures}
    for group in groups:
        mine = tests[tests["marker"] == group.marker]
        for (run, measure), rows in mine.groupby(["run", "measure"], sort=False):
            if len(rows) and bool(rows["significant"].all()):
                found[(run, measure)] += group.marker
    return found
