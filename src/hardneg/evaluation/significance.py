"""Paired significance tests of two runs over the same queries, their effect size, and the correction of p-values
for the number of tests made.

Two runs evaluated on the same queries give one difference per query (run minus baseline). On those differences:

* the paired t-test, :func:`scipy.stats.ttest_rel` (two-sided);
* the randomisation test of IR evaluation (Fisher's, as Smucker, Allan and Carterette, 2007, recommend):
  :func:`scipy.stats.permutation_test` with ``permutation_type="samples"``, which swaps the two runs' values
  within a query, i.e. flips the sign of each difference, and compares the observed mean difference with the
  means of the resampled ones (two-sided). It is exact (every one of the 2^n sign patterns) when 2^n is at most
  the number of resamples, else drawn at random from a seeded generator, so the same inputs give the same p;
* the effect size Cohen's d_z for paired samples: the mean of the differences divided by their standard
  deviation (``ddof=1``);
* Holm's step-down correction (Holm, 1979) or Bonferroni's, over the p-values of a family of tests
  (:func:`correct`; scipy has neither);
* the smallest difference the queries could detect (:func:`detectable_difference`): the mean difference a
  two-sided paired t-test at level α finds with 80% probability, given the spread of the per-query differences,
  ``(t(1 − α/2, n − 1) + t(0.8, n − 1)) · sd / √n`` (Student's t quantiles, :func:`scipy.stats.t.ppf`; the usual
  approximation of the t-test's power). A few dozen test queries whose differences spread over ±0.3 cannot show a
  step of +0.01: the detectable difference says so before anyone reads a p-value.

Identical runs (every difference 0) give t and its p NaN, a randomisation p of 1 and d_z NaN: never significant.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

RESAMPLES = 10_000  # resamples of the randomisation test; below 2^n queries it is drawn at random
SEED = 0  # the seed of those draws
_BATCH = 500  # resamples scipy evaluates at once: memory of batch x queries float64 values

# The corrections of a family of p-values, by name: what the outputs call each.
CORRECTIONS = {"holm": "Holm-Bonferroni (step-down)", "bonferroni": "Bonferroni", "none": "none"}


@dataclass(frozen=True)
class PairedTests:
    """The tests of one run against a baseline over the queries both were evaluated on.

    ``mean_difference`` is run - baseline; ``t`` and ``p_t`` are those of the paired t-test, ``p_randomisation``
    that of the randomisation test (both two-sided); ``effect_size`` is Cohen's d_z."""

    num_queries: int
    mean_difference: float
    t: float
    p_t: float
    p_randomisation: float
    effect_size: float


def effect_size(differences: np.ndarray) -> float:
    """Cohen's d_z of paired samples: mean(differences) / std(differences, ddof=1).

    :param differences: the per-query differences, run - baseline.
    :returns: d_z; NaN when there are fewer than two differences or all are 0, ±inf when they are all the same
        non-zero value (no spread, a consistent shift).
    """
    differences = np.asarray(differences, dtype=np.float64)
    if len(differences) < 2:
        return float("nan")
    spread = float(np.std(differences, ddof=1))
    mean = float(np.mean(differences))
    if spread == 0.0:
        return float("nan") if mean == 0.0 else float(np.copysign(np.inf, mean))
    return mean / spread


POWER = 0.8  # the probability of detecting a difference that detectable_difference reports


def detectable_difference(differences, alpha: float = 0.05, power: float = POWER) -> float:
    """The smallest mean difference a two-sided paired t-test at level ``alpha`` detects with probability
    ``power`` over queries whose differences spread as ``differences`` do (see the module docstring).

    :param differences: the per-query differences, run - baseline.
    :param alpha: the test's level (the summary's ``p_value``).
    :param power: the probability of detecting it.
    :returns: the difference, in the measure's units; NaN for fewer than two queries, 0 when every difference
        is the same.
    """
    from scipy.stats import t  # scipy: slow to import, needed only here

    differences = np.asarray(differences, dtype=np.float64)
    n = len(differences)
    if n < 2:
        return float("nan")
    spread = float(np.std(differences, ddof=1))
    return float((t.ppf(1 - alpha / 2, n - 1) + t.ppf(power, n - 1)) * spread / math.sqrt(n))


def queries_needed(difference: float, spread: float, alpha: float = 0.05, power: float = POWER) -> int:
    """The fewest queries whose detectable difference (:func:`detectable_difference`) is at most ``difference``
    when their per-query differences have the standard deviation ``spread``.

    >>> queries_needed(0.05, 0.25)
    199
    """
    from scipy.stats import t  # scipy: slow to import, needed only here

    if difference <= 0 or spread < 0:
        raise ValueError("queries_needed needs a positive difference and a spread of at least 0")

    def detectable(n: int) -> float:
        return (t.ppf(1 - alpha / 2, n - 1) + t.ppf(power, n - 1)) * spread / math.sqrt(n)

    low, high = 2, 2
    while detectable(high) > difference:
        low, high = high, high * 2
    while low < high:  # the detectable difference falls as n grows: the first n at or below it
        middle = (low + high) // 2
        low, high = (middle + 1, high) if detectable(middle) > difference else (low, middle)
    return low


def _mean_difference(run: np.ndarray, baseline: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(run - baseline, axis=axis)


def randomisation_test(run: np.ndarray, baseline: np.ndarray, *, resamples: int = RESAMPLES, seed: int = SEED) -> float:
    """Two-sided p of the paired randomisation test of the mean difference, by
    :func:`scipy.stats.permutation_test` (``permutation_type="samples"``: the two values of a query are swapped).

    :param run: the run's per-query values.
    :param baseline: the baseline's values of the same queries, in the same order.
    :param resamples: the resamples drawn when 2^n exceeds them; otherwise every sign pattern is enumerated.
    :param seed: the seed of the draws.
    :returns: the p-value (1 when every difference is 0); NaN for no query.
    """
    from scipy.stats import permutation_test  # scipy: slow to import, needed only here

    run, baseline = np.asarray(run, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if len(run) == 0:
        return float("nan")
    result = permutation_test(
        (run, baseline),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        batch=_BATCH,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return float(result.pvalue)


def paired_tests(run, baseline, *, resamples: int = RESAMPLES, seed: int = SEED) -> PairedTests:
    """The paired t-test, the randomisation test and d_z of ``run`` against ``baseline``.

    :param run: the run's per-query values (an array, or a sequence of floats).
    :param baseline: the baseline's values of the same queries, in the same order.
    :param resamples: see :func:`randomisation_test`.
    :param seed: see :func:`randomisation_test`.
    :returns: the tests (see :class:`PairedTests`).
    :raises ValueError: the two hold different numbers of values.
    """
    from scipy.stats import ttest_rel  # scipy: slow to import, needed only here

    run, baseline = np.asarray(run, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if run.shape != baseline.shape:
        raise ValueError(f"a paired test needs one value per query on both sides ({len(run)} and {len(baseline)})")
    differences = run - baseline
    with warnings.catch_warnings():  # identical or near-identical values: scipy warns; NaN or the value stands
        warnings.simplefilter("ignore", RuntimeWarning)
        t = ttest_rel(run, baseline) if len(run) >= 2 else None
    return PairedTests(
        num_queries=len(run),
        mean_difference=float(np.mean(differences)) if len(run) else float("nan"),
        t=float(t.statistic) if t is not None else float("nan"),
        p_t=float(t.pvalue) if t is not None else float("nan"),
        p_randomisation=randomisation_test(run, baseline, resamples=resamples, seed=seed),
        effect_size=effect_size(differences),
    )


def p_text(p: float | None) -> str:
    """A p-value as tables show it: three decimals, or two significant digits below 0.001; ``–`` for NaN (a
    test that could not be made: every difference 0)."""
    if p is None or math.isnan(p):
        return "–"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def correct(p_values, method: str = "holm") -> np.ndarray:
    """The p-values of a family of tests corrected for their number.

    Of m p-values (NaN ones, from tests that could not be made, are left NaN and not counted in m):

    * ``holm``: sorted increasingly p_(1) <= ... <= p_(m), the corrected p_(i) is
      min(1, max over j <= i of (m - j + 1) p_(j)); it rejects what Holm's sequentially rejective procedure
      rejects at any level;
    * ``bonferroni``: min(1, m p);
    * ``none``: the p-values as they are.

    :param p_values: the raw p-values, in any order.
    :param method: ``holm``, ``bonferroni`` or ``none`` (:data:`CORRECTIONS`).
    :returns: the corrected p-values, in the order given.
    :raises ValueError: an unknown method.
    """
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; one of {', '.join(CORRECTIONS)}")
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    m = len(tested)
    if method == "none" or m == 0:
        out[tested] = p[tested]
    elif method == "bonferroni":
        out[tested] = np.minimum(1.0, m * p[tested])
    else:
        order = tested[np.argsort(p[tested], kind="stable")]
        scaled = (m - np.arange(m)) * p[order]  # (m - j + 1) p_(j) for j = 1..m
        out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out
