"""The paired t-test behind the summary's markers (hardneg.evaluation.summary_markers): identical runs are never
significant; and the measures' column titles (hardneg.evaluation.summary_measures)."""

import numpy as np
import pandas as pd

from hardneg.evaluation.summary_markers import paired_t_test
from hardneg.evaluation.summary_measures import measure_label


def test_identical_runs_are_not_significant():
    same_values = pd.Series([0.1, 0.5, 0.2], index=["q1", "q2", "q3"])
    test = paired_t_test(same_values, same_values.iloc[::-1])
    assert np.isnan(test.p) and not test.better("RR@10")
    assert [
        measure_label(m) for m in ("RR@10", "nDCG@10", "AP@1000", "R@100", "PairwiseErrors@200", "PairwiseErrors")
    ] == ["MRR@10", "NDCG@10", "MAP@1000", "R@100", "top-200 pairwise errors", "total pairwise errors"]
