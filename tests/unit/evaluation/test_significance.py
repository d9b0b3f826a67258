"""Paired tests, effect size and corrections: against scipy run directly, and on answers computed by hand (a
constructed t, the exact randomisation p of a sign pattern, Holm's textbook example)."""

import numpy as np
import pytest
from scipy.stats import permutation_test, ttest_rel

from hardneg.evaluation.significance import (correct, detectable_difference, effect_size, paired_tests,
                                           queries_needed, randomisation_test)

BASE = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
STEP = 0.01 * np.arange(1, 6)  # differences 0.01 .. 0.05


def test_a_constructed_case_with_a_known_t_and_exact_randomisation_p():
    """Differences 0.01 x (1..5): mean 0.03, standard deviation sqrt(2.5) x 0.01, so t = 0.03 / (0.0158 / sqrt(5))
    = 3 / sqrt(0.5) = 4.2426 (p 0.01324 at 4 degrees of freedom) and d_z = 3 / sqrt(2.5) = 1.897. Of the 2^5 = 32
    sign patterns only the observed one and its mirror reach |mean| 0.03: the exact two-sided p is 2/32."""
    tests = paired_tests(BASE + STEP, BASE)
    assert tests.num_queries == 5 and tests.mean_difference == pytest.approx(0.03)
    assert tests.t == pytest.approx(3 / np.sqrt(0.5), rel=1e-9)
    assert tests.p_t == pytest.approx(0.013236, abs=1e-6)
    assert tests.p_randomisation == pytest.approx(2 / 32, rel=1e-12)
    assert tests.effect_size == pytest.approx(3 / np.sqrt(2.5), rel=1e-9)
    mirrored = paired_tests(BASE, BASE + STEP)  # the other way round: the signs flip, the p-values stay
    assert mirrored.t == pytest.approx(-tests.t) and mirrored.effect_size == pytest.approx(-tests.effect_size)
    assert mirrored.p_randomisation == tests.p_randomisation


def test_two_queries_by_hand():
    """Differences 0.3 and -0.1: the four sign patterns have means 0.1, 0.2, -0.2, -0.1, each at least as far
    from 0 as the observed 0.1: p = 1."""
    assert randomisation_test(np.array([0.4, 0.1]), np.array([0.1, 0.2])) == pytest.approx(1.0)


def test_identical_runs_are_never_significant():
    tests = paired_tests(BASE, BASE.copy())
    assert tests.mean_difference == 0 and np.isnan(tests.t) and np.isnan(tests.p_t)
    assert tests.p_randomisation == 1.0 and np.isnan(tests.effect_size)


def test_a_constant_shift_has_an_unbounded_effect_size():
    assert effect_size(np.full(4, 0.2)) == np.inf and effect_size(np.full(4, -0.2)) == -np.inf
    assert np.isnan(effect_size(np.array([0.5])))  # one difference: no spread to divide by


def test_the_tests_are_scipys_run_directly():
    rng = np.random.default_rng(3)
    base = rng.random(40)
    run = np.clip(base + rng.normal(0.03, 0.1, 40), 0, 1)  # 2^40 sign patterns: drawn, not enumerated
    tests = paired_tests(run, base, resamples=2000, seed=11)
    direct = ttest_rel(run, base)
    assert tests.t == pytest.approx(direct.statistic, rel=1e-12) and tests.p_t == pytest.approx(direct.pvalue, rel=1e-12)
    resampled = permutation_test((run, base), lambda a, b, axis: np.mean(a - b, axis=axis), vectorized=True,
                                 permutation_type="samples", n_resamples=2000, rng=np.random.default_rng(11))
    assert tests.p_randomisation == pytest.approx(resampled.pvalue, rel=1e-12)
    differences = run - base
    assert tests.effect_size == pytest.approx(differences.mean() / differences.std(ddof=1), rel=1e-12)
    # seeded: the same p again, another p with another seed (2000 draws out of 2^40 patterns)
    assert paired_tests(run, base, resamples=2000, seed=11).p_randomisation == tests.p_randomisation
    assert paired_tests(run, base, resamples=2000, seed=12).p_randomisation != tests.p_randomisation


def test_holm_on_the_textbook_example():
    """p = (0.01, 0.04, 0.03, 0.005), m = 4. Sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06,
    0.04 x 1 = 0.04, raised to the 0.06 before it. At 0.05 Holm rejects the hypotheses of 0.005 and 0.01 only
    (0.03 is not below 0.05 / 2)."""
    p = [0.01, 0.04, 0.03, 0.005]
    assert correct(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02], rel=1e-12)
    assert correct(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.02], rel=1e-12)
    assert list(correct(p, "none")) == p
    assert correct([0.3, 0.6], "holm") == pytest.approx([0.6, 0.6])  # 0.3 x 2 = 0.6; 0.6 x 1 raised to 0.6
    assert correct([0.5, 0.9, 0.7], "bonferroni") == pytest.approx([1.0, 1.0, 1.0])  # capped at 1


def test_tests_not_made_are_left_out_of_the_count():
    corrected = correct([0.01, np.nan, 0.04], "holm")
    assert corrected[0] == pytest.approx(0.02) and np.isnan(corrected[1]) and corrected[2] == pytest.approx(0.04)
    assert np.isnan(correct([np.nan], "bonferroni")).all() and correct([], "holm").size == 0
    with pytest.raises(ValueError, match="unknown correction 'sidak'"):
        correct([0.1], "sidak")


def test_holm_is_never_below_the_raw_p_and_never_above_bonferroni():
    p = np.random.default_rng(5).random(30) ** 3
    holm, bonferroni = correct(p, "holm"), correct(p, "bonferroni")
    assert (holm >= p).all() and (holm <= bonferroni + 1e-15).all()
    order = np.argsort(p)
    assert (np.diff(holm[order]) >= 0).all()  # the corrected p-values keep the order of the raw ones


@pytest.mark.parametrize("n", [30, 200])
def test_the_detectable_difference_is_found_four_times_in_five(n):
    """The power of the two-sided paired t-test at the detectable difference, from the noncentral t distribution
    (scipy.stats.nct): 80%, up to the approximation the formula makes (a few tenths of a percent at 30 queries)."""
    from scipy.stats import nct, t

    differences = np.random.default_rng(n).normal(0.0, 0.25, n)
    delta = detectable_difference(differences, alpha=0.05)
    nc = delta / (np.std(differences, ddof=1) / np.sqrt(n))
    critical = t.ppf(0.975, n - 1)
    power = 1 - nct.cdf(critical, n - 1, nc) + nct.cdf(-critical, n - 1, nc)
    assert power == pytest.approx(0.8, abs=0.01)
    assert detectable_difference(differences[: n // 4]) > delta  # fewer queries detect only larger differences


def test_the_detectable_difference_of_too_few_or_constant_differences():
    assert np.isnan(detectable_difference([0.1]))
    assert detectable_difference([0.2, 0.2, 0.2]) == pytest.approx(0.0, abs=1e-12)


def _with_spread(n, spread):
    z = np.random.default_rng(n).normal(size=n)
    return (z - z.mean()) / np.std(z, ddof=1) * spread


@pytest.mark.parametrize("difference, spread", [(0.01, 0.3), (0.05, 0.25), (0.1, 0.4)])
def test_queries_needed_is_the_first_count_that_detects_the_difference(difference, spread):
    n = queries_needed(difference, spread)
    assert detectable_difference(_with_spread(n, spread)) <= difference < \
        detectable_difference(_with_spread(n - 1, spread))
    with pytest.raises(ValueError, match="positive difference"):
        queries_needed(0, spread)
