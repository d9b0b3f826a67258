"""Measures are checked where they are parsed (a cutoff must be a positive integer), a run that answers few of
the judged queries is warned about, and metrics.json never holds NaN."""

import logging
import math

import pyarrow as pa
import pytest

from hardneg.errors import ConfigError
from hardneg.evaluation.metrics import evaluate, parse_measures, write_metrics
from hardneg.io import artifacts

BAD_CUTOFFS = {"P@0": "cutoff 0", "nDCG@0": "cutoff 0", "P(rel=2)@0": "cutoff 0", "R@1.5": "cutoff 1.5",
               "RR@3000000000": "cutoff 3000000000", "P@True": "cutoff True"}


@pytest.mark.parametrize("name", list(BAD_CUTOFFS), ids=list(BAD_CUTOFFS))
def test_a_cutoff_that_is_not_a_positive_integer_is_refused(name):
    with pytest.raises(ConfigError) as error:
        parse_measures(["RR@10", name])
    assert error.value.key == "evaluation.measures"
    assert error.value.message.startswith(f"{name!r} has {BAD_CUTOFFS[name]}: a cutoff")
    assert "must be a positive integer" in error.value.message


def test_good_measures_parse():
    assert [str(m) for m in parse_measures(["RR@10", "nDCG@10", "AP", "P(rel=2)@5", "R@2147483647"])] == [
        "RR@10", "nDCG@10", "AP", "P(rel=2)@5", "R@2147483647"]


QRELS = pa.table({"qid": ["q1", "q2", "q3", "q4", "q5"], "docid": ["d1"] * 5, "relevance": [1, 1, 1, 1, 0]},
                 schema=artifacts.QRELS.schema)


def _ranking(qids):
    return pa.table({"qid": qids, "docid": ["d1"] * len(qids), "rank": [1] * len(qids),
                     "score": [1.0] * len(qids)}, schema=artifacts.RANKING.schema)


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_ranking_sharing_no_query_with_its_qrels_is_warned_about(caplog):
    with caplog.at_level(logging.WARNING):
        means, _ = evaluate(_ranking(["x1", "x2", "q5"]), QRELS, ["RR@10"], label="rankings/test.trec")
    assert means == {"RR@10": 0.0}
    assert _warnings(caplog) == ["rankings/test.trec answers none of the 4 judged queries of the qrels: every mean is "
                                 "0; are the ranking and the qrels of the same dataset and split?"]


def test_a_ranking_answering_under_half_of_the_judged_queries_is_warned_about(caplog):
    with caplog.at_level(logging.WARNING):
        evaluate(_ranking(["q1", "x2"]), QRELS, ["RR@10"])
    assert _warnings(caplog) == ["the ranking answers only 1 of the 4 judged queries of the qrels (under half): a query "
                                 "it does not answer scores 0 in every mean; are the ranking and the qrels of the same "
                                 "dataset and split?"]


def test_a_run_answering_half_or_more_is_not_warned_about(caplog):
    with caplog.at_level(logging.WARNING):
        means, _ = evaluate(_ranking(["q1", "q2"]), QRELS, ["RR@10"])
        evaluate(_ranking(["x1"]), QRELS, ["RR@10"], warn=False)
    assert means == {"RR@10": 0.5} and _warnings(caplog) == []


def test_qrels_without_a_relevant_document_are_warned_about(caplog):
    with caplog.at_level(logging.WARNING):
        evaluate(_ranking(["q1"]), QRELS.filter(pa.array([False] * 4 + [True])), ["RR@10"])
    assert _warnings(caplog) == ["the qrels judge no document relevant (relevance >= 1): every mean of the ranking is 0"]


def test_metrics_json_refuses_nan_and_leaves_no_file(tmp_path):
    path = tmp_path / "metrics.json"
    with pytest.raises(ValueError):
        write_metrics(path, run_name="r", dataset="d", split="test", num_queries=1, measures={"RR@10": math.nan},
                      provenance={})
    assert list(tmp_path.iterdir()) == []
