"""Runs compared query by query (hardneg.evaluation.compare): deltas, wins/ties/losses, the tests and their
correction over the runs, against scipy run directly and answers computed by hand."""

import numpy as np
import pandas as pd
import pytest

from hardneg.errors import HardnegError
from hardneg.evaluation.compare import compare_runs, method_note, outcomes, table_cells

QIDS = ["q1", "q2", "q3", "q4", "q5"]


def series(values, qids=QIDS):
    return pd.Series(np.asarray(values, dtype=np.float64), index=qids)


def test_identical_runs_tie_everywhere():
    values = series([0.1, 1.0, 0.5, 0.0, 0.25])
    comparison = compare_runs({"a": values, "b": values.iloc[::-1]}, "RR@10")  # paired by query id, not order
    row = comparison.rows[0]
    assert (row.wins, row.ties, row.losses) == (0, 5, 0) and row.delta == 0
    assert np.isnan(row.t) and np.isnan(row.p_t) and np.isnan(row.p_t_corrected)
    assert row.p_randomisation == 1.0 and row.p_randomisation_corrected == 1.0 and np.isnan(row.effect_size)
    assert comparison.most_changed(10) == []
    assert table_cells(comparison)[1][1][3:] == ["0/5/0", "–", "–", "1.000", "–", "1.000", "–"]


def test_a_constructed_case():
    """b - a = (+0.5, 0, +0.25, -0.25, +0.5): wins q1, q3, q5, tie q2, loss q4; mean difference 0.2, deviations
    (0.3, -0.2, 0.05, -0.45, 0.3) whose squares sum to 0.425, variance 0.425 / 4 = 0.10625, so
    t = 0.2 / sqrt(0.10625 / 5) = 1.3720 and d_z = 0.2 / sqrt(0.10625) = 0.6136."""
    from scipy.stats import ttest_rel

    a = series([0.5, 1.0, 0.25, 0.5, 0.0])
    b = series([1.0, 1.0, 0.5, 0.25, 0.5])
    comparison = compare_runs({"a": a, "b": b}, "RR@10", correction="none")
    row = comparison.rows[0]
    assert (row.run, row.reference) == ("b", "a")
    assert row.mean == pytest.approx(0.65) and row.reference_mean == pytest.approx(0.45)
    assert row.delta == pytest.approx(0.2) and (row.wins, row.ties, row.losses) == (3, 1, 1)
    assert row.t == pytest.approx(1.37199, abs=1e-5)
    assert row.p_t == pytest.approx(ttest_rel(b, a).pvalue, rel=1e-12) and row.p_t_corrected == row.p_t
    assert row.effect_size == pytest.approx(0.61357, abs=1e-5)
    # The randomisation test flips signs: the non-zero differences are 0.5, 0.25, 0.25, 0.5 in absolute value (sum
    # 1.5); flipping a part F gives the sum 1.5 - 2 sum(F), at least 1 (the observed sum) in absolute value when
    # sum(F) <= 0.25 (nothing, or either 0.25) or sum(F) >= 1.25 (their complements): 6 of 16 patterns, each
    # twice for the sign of q2's 0: 12 of 32.
    assert row.p_randomisation == pytest.approx(12 / 32)
    assert comparison.deltas()["b"].tolist() == pytest.approx([0.5, 0, 0.25, -0.25, 0.5])
    assert comparison.most_changed(2) == ["q1", "q5"]  # |0.5| twice: by query id
    assert comparison.most_changed(10) == ["q1", "q5", "q3", "q4"]  # q2 did not change


def test_p_values_are_corrected_over_the_runs_compared():
    from scipy.stats import ttest_rel

    rng = np.random.default_rng(1)
    base = series(rng.random(5))
    runs = {"base": base, **{f"r{i}": series(np.clip(base + rng.normal(0.1 * i, 0.1, 5), 0, 1)) for i in range(3)}}
    holm = compare_runs(runs, "nDCG@10")
    raw = np.array([ttest_rel(runs[r.run], base).pvalue for r in holm.rows])
    order = np.argsort(raw)  # Holm by hand: (m - j + 1) p_(j), made non-decreasing, capped at 1
    expected = np.empty(3)
    expected[order] = np.minimum(1, np.maximum.accumulate((3 - np.arange(3)) * raw[order]))
    assert [r.p_t_corrected for r in holm.rows] == pytest.approx(expected, rel=1e-12)
    bonferroni = compare_runs(runs, "nDCG@10", correction="bonferroni")
    assert [r.p_t_corrected for r in bonferroni.rows] == pytest.approx(np.minimum(1, 3 * raw), rel=1e-12)
    assert [r.p_randomisation_corrected for r in bonferroni.rows] == \
        pytest.approx([min(1, 3 * r.p_randomisation) for r in bonferroni.rows])
    assert "Holm's step-down correction over the 3 comparisons against base" in method_note(holm)
    assert table_cells(holm)[0][7:9] == ["p t-test Holm", "p rand. Holm"]


def test_fewer_pairwise_errors_win():
    assert outcomes(np.array([3.0, 5.0, 4.0]), np.array([4.0, 4.0, 4.0]), "PairwiseErrors@200") == (1, 1, 1)
    assert outcomes(np.array([3.0, 5.0, 4.0]), np.array([4.0, 4.0, 4.0]), "RR@10") == (1, 1, 1)
    assert outcomes(np.array([3.0, 3.0]), np.array([4.0, 4.0]), "PairwiseErrors") == (2, 0, 0)
    assert outcomes(np.array([3.0, 3.0]), np.array([4.0, 4.0]), "AP@1000") == (0, 0, 2)
    assert outcomes(np.array([0.3]), np.array([0.1 + 0.2]), "RR@10") == (0, 1, 0)  # floating-point noise ties


def test_bad_input():
    with pytest.raises(HardnegError, match="at least two runs"):
        compare_runs({"a": series([1, 0, 0, 0, 0])}, "RR@10")
    with pytest.raises(HardnegError, match=r"runs a \(a.parquet\) and b \(b.parquet\) were evaluated on other "
                                           r"queries \(e.g. 'q5' is in one only\)"):
        compare_runs({"a": series([1, 0, 0, 0, 0]), "b": series([1, 0, 0, 0, 0], QIDS[:4] + ["q9"])}, "RR@10",
                     sources={"a": "a.parquet", "b": "b.parquet"})
    with pytest.raises(ValueError, match="unknown correction"):
        compare_runs({"a": series([1, 0, 0, 0, 0]), "b": series([1, 0, 0, 0, 0])}, "RR@10", correction="fdr")
