"""Fusion of rankings: the TCT-ColBERT hybrid and reciprocal rank fusion on hand-made runs against hand-computed
scores, and the tuning of α on sampled queries (the hybrid against Pyserini's own HybridSearcher:
tests/integration/test_pyserini_hybrid.py)."""

import json
import logging

import numpy as np
import pyarrow as pa
import pytest

from hardneg.errors import DataError
from hardneg.fusion import ranked, reciprocal_rank_fusion, sample_queries, tune_weight
from hardneg.io import artifacts
from hardneg.pipeline.fuse import fuse_split, read_tuned_alpha, tune_fusion
from tests.support.rankings import by_query, hybrid, ranking_table


def assert_ranking(actual, expected):
    assert [d for d, _ in actual] == [d for d, _ in expected]
    assert [s for _, s in actual] == pytest.approx([s for _, s in expected], rel=1e-6)


# q1 is in both runs, d3 only in the sparse one, d4 only in the dense one; q2 only in the sparse run, q3 only in the
# dense run.
SPARSE = ranking_table({"q1": [("d1", 10.0), ("d2", 8.0), ("d3", 6.0)], "q2": [("d5", 4.0), ("d6", 2.0)]})
DENSE = ranking_table({"q1": [("d2", 0.9), ("d4", 0.7), ("d1", 0.5)], "q3": [("d7", 0.25)]})


def test_hybrid_of_hand_made_rankings():
    fused = by_query(hybrid(SPARSE, DENSE, 0.5, depth=3, k=10))
    # α·sparse + dense; d3 gets the dense minimum of q1 (0.5), d4 the sparse minimum (6)
    assert_ranking(fused["q1"], [("d1", 0.5 * 10 + 0.5), ("d2", 0.5 * 8 + 0.9), ("d4", 0.5 * 6 + 0.7),
                                 ("d3", 0.5 * 6 + 0.5)])
    # a query one run does not answer: that list counts as 0 (Pyserini's range 0 to 1 of an empty list)
    assert_ranking(fused["q2"], [("d5", 2.0), ("d6", 1.0)])
    assert_ranking(fused["q3"], [("d7", 0.25)])


def test_hybrid_depth_k_weight_on_dense_and_normalisation():
    # depth 2: only d1, d2 of the sparse run (minimum 8) and d2, d4 of the dense run (minimum 0.7)
    shallow = by_query(hybrid(SPARSE, DENSE, 0.5, depth=2, k=2))
    assert_ranking(shallow["q1"], [("d1", 0.5 * 10 + 0.7), ("d2", 0.5 * 8 + 0.9)])  # d4 (4.7) cut by k = 2
    on_dense = by_query(hybrid(SPARSE, DENSE, 0.5, depth=3, k=10, weight_on_dense=True))
    assert_ranking(on_dense["q1"], [("d1", 10 + 0.5 * 0.5), ("d2", 8 + 0.5 * 0.9), ("d4", 6 + 0.5 * 0.7),
                                    ("d3", 6 + 0.5 * 0.5)])
    # normalised: sparse (s - 8) / 4, dense (s - 0.7) / 0.4 over q1's lists; d1 and d2 tie at 0.5: docid order
    normalised = by_query(hybrid(SPARSE, DENSE, 2.0, depth=3, k=10, normalization=True))
    assert_ranking(normalised["q1"], [("d1", 2 * 0.5 - 0.5), ("d2", 2 * 0.0 + 0.5), ("d4", 2 * -0.5 + 0.0),
                                      ("d3", 2 * -0.5 - 0.5)])
    # q2's dense list is empty (range 0 to 1: every document at -0.5); a one-document list has width 0: 0
    assert_ranking(normalised["q2"], [("d5", 2 * 0.5 - 0.5), ("d6", 2 * -0.5 - 0.5)])
    assert_ranking(normalised["q3"], [("d7", 2 * -0.5 + 0.0)])


def test_alpha_zero_is_the_dense_ranking_and_ties_break_by_docid():
    dense = by_query(hybrid(SPARSE, DENSE, 0.0, depth=3, k=10))["q1"]
    assert [d for d, _ in dense] == ["d2", "d4", "d1", "d3"]  # d1 and d3 tie at the dense minimum 0.5
    table = ranked(pa.array(["b", "a", "a", "a"]), pa.array(["x", "z", "y", "w"]), np.array([1.0, 2.0, 2.0, 3.0]), 2)
    assert table.to_pylist() == [{"qid": "a", "docid": "w", "rank": 1, "score": 3.0},
                                 {"qid": "a", "docid": "y", "rank": 2, "score": 2.0},
                                 {"qid": "b", "docid": "x", "rank": 1, "score": 1.0}]


def test_reciprocal_rank_fusion_of_hand_made_rankings():
    a = ranking_table({"q1": [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)]})
    b = ranking_table({"q1": [("d2", 0.9), ("d4", 0.8)]})
    c = ranking_table({"q1": [("d4", 5.0), ("d3", 4.0)], "q2": [("d9", 1.0)]})
    fused = by_query(reciprocal_rank_fusion([a, b], rrf_k=60, depth=3, k=10))
    assert_ranking(fused["q1"], [("d2", 1 / 62 + 1 / 61), ("d1", 1 / 61), ("d4", 1 / 62), ("d3", 1 / 63)])
    # depth 2 leaves a's d3 out; three runs; a query of one run only
    fused = by_query(reciprocal_rank_fusion([a, b, c], rrf_k=10, depth=2, k=3))
    assert_ranking(fused["q1"], [("d2", 1 / 12 + 1 / 11), ("d4", 1 / 11 + 1 / 12), ("d1", 1 / 11)])  # a tie: docids
    assert_ranking(fused["q2"], [("d9", 1 / 11)])


def test_tuning_picks_the_best_alpha_and_the_smallest_of_equal_values():
    qrels = pa.table({"qid": ["q1"], "docid": ["d3"], "relevance": [1]}, schema=artifacts.QRELS.schema)
    # d3 is first in the sparse run, last in the dense one: only a large enough α ranks it first
    sparse = ranking_table({"q1": [("d3", 20.0), ("d1", 10.0), ("d2", 5.0)]})
    dense = ranking_table({"q1": [("d1", 0.9), ("d2", 0.8), ("d3", 0.1)]})
    grid = tune_weight(lambda alpha: hybrid(sparse, dense, alpha), qrels, [1.0, 0.0, 0.01, 0.5, 0.1], "RR@10")
    assert grid["alpha"].to_pylist() == [0.0, 0.01, 0.1, 0.5, 1.0]
    # d3 − d1 = 10α − 0.8: first from α = 0.1 on (α = 0.08 ties); α = 0.01 still ranks it third
    assert grid["value"].to_pylist() == pytest.approx([1 / 3, 1 / 3, 1.0, 1.0, 1.0])
    assert grid["chosen"].to_pylist() == [False, False, True, False, False]
    assert grid.schema == artifacts.FUSION_TUNING.schema


def test_sampled_queries_are_judged_seeded_and_all_when_fewer():
    qrels = pa.table({"qid": [f"q{i}" for i in range(50)] + ["unjudged"], "docid": ["d"] * 51,
                      "relevance": [1] * 50 + [0]}, schema=artifacts.QRELS.schema)
    first = sample_queries(qrels, 10, seed=3)
    assert len(first) == 10 and first == sorted(first) and "unjudged" not in first
    assert sample_queries(qrels, 10, seed=3) == first and sample_queries(qrels, 10, seed=4) != first
    assert sample_queries(qrels, 100, seed=3) == sorted(f"q{i}" for i in range(50))


HYBRID = {"alpha": None, "alpha_grid": [0.0, 0.1, 1.0], "depth": 1000, "k": 1000, "normalization": False,
          "weight_on_dense": False, "tune": {"split": "train", "queries": 2, "measure": "RR@10", "min_queries": 1}}


def test_tuning_and_fusion_stages(tmp_path):
    """The tuning reads only the sampled queries' rows and records the grid; the fused ranking uses its α."""
    sparse = ranking_table({f"q{i}": [("d3", 20.0), ("d1", 10.0), ("d2", 5.0)] for i in range(4)})
    dense = ranking_table({f"q{i}": [("d1", 0.9), ("d2", 0.8), ("d3", 0.1)] for i in range(4)})
    qrels = pa.table({"qid": [f"q{i}" for i in range(4)], "docid": ["d3"] * 4, "relevance": [1] * 4},
                     schema=artifacts.QRELS.schema)
    for name, table, kind in (("sparse", sparse, artifacts.RANKING), ("dense", dense, artifacts.RANKING),
                              ("qrels", qrels, artifacts.QRELS)):
        artifacts.write_table(table, kind, tmp_path / f"{name}.parquet")
    paths = [tmp_path / "sparse.parquet", tmp_path / "dense.parquet"]
    record = tune_fusion("hybrid", HYBRID, 7, paths, tmp_path / "qrels.parquet", tmp_path / "tuning.json",
                         tmp_path / "tuning.parquet")
    assert record == json.loads((tmp_path / "tuning.json").read_text())
    assert record["queries"] == 2 and record["split"] == "train" and record["measure"] == "RR@10"
    assert record["grid"] == [{"alpha": 0.0, "value": pytest.approx(1 / 3)}, {"alpha": 0.1, "value": 1.0},
                              {"alpha": 1.0, "value": 1.0}]
    assert record["alpha"] == 0.1
    grid = artifacts.read_table(artifacts.FUSION_TUNING, tmp_path / "tuning.parquet")
    assert grid["chosen"].to_pylist() == [False, True, False]
    fused = fuse_split("hybrid", HYBRID, paths, tmp_path / "fused.parquet", tmp_path / "fused.trec", tag="h",
                       tuning_path=tmp_path / "tuning.json")
    assert by_query(fused)["q0"][0] == ("d3", pytest.approx(0.1 * 20 + 0.1))
    assert (tmp_path / "fused.trec").read_text().splitlines()[0] == "q0 Q0 d3 1 2.100000 h"
    assert artifacts.read_table(artifacts.RANKING, tmp_path / "fused.parquet").equals(fused)


def test_a_weight_tuned_on_too_few_queries_is_warned_about(tmp_path, caplog):
    paths = _tuning_inputs(tmp_path)
    params = {**HYBRID, "tune": {**HYBRID["tune"], "queries": 1000, "min_queries": 50}}
    with caplog.at_level(logging.WARNING):
        tune_fusion("hybrid", params, 7, paths, tmp_path / "qrels.parquet", tmp_path / "tuning.json",
                    tmp_path / "tuning.parquet", run="minilm_hybrid")
    grid = [row["value"] for row in json.loads((tmp_path / "tuning.json").read_text())["grid"]]
    assert caplog.messages == [
        f"run minilm_hybrid: alpha is tuned on 4 judged queries of split 'train', fewer than params.tune.min_queries "
        f"(50) (across the grid of α the tuned measure goes from {min(grid):.3f} to {max(grid):.3f}): on so few "
        f"queries the chosen value may be chance. Reciprocal rank fusion (method rrf) tunes no weight; more held-out "
        f"queries (a larger dev_from_train share) make the choice firmer."]
    caplog.clear()
    params["tune"]["min_queries"] = 4
    with caplog.at_level(logging.WARNING):
        tune_fusion("hybrid", params, 7, paths, tmp_path / "qrels.parquet", tmp_path / "tuning.json",
                    tmp_path / "tuning.parquet", run="minilm_hybrid")
    assert caplog.messages == []


# ------------------------------------------------------------------------------------ numbers that are not finite
def _tuning_inputs(tmp_path, dense_scores=(0.9, 0.8, 0.1)):
    sparse = ranking_table({f"q{i}": [("d3", 20.0), ("d1", 10.0), ("d2", 5.0)] for i in range(4)})
    dense = ranking_table({f"q{i}": list(zip(("d1", "d2", "d3"), dense_scores)) for i in range(4)})
    qrels = pa.table({"qid": [f"q{i}" for i in range(4)], "docid": ["d3"] * 4, "relevance": [1] * 4},
                     schema=artifacts.QRELS.schema)
    for name, table, kind in (("sparse", sparse, artifacts.RANKING), ("dense", dense, artifacts.RANKING),
                              ("qrels", qrels, artifacts.QRELS)):
        artifacts.write_table(table, kind, tmp_path / f"{name}.parquet")
    return [tmp_path / "sparse.parquet", tmp_path / "dense.parquet"]


@pytest.mark.parametrize("alpha", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
def test_hybrid_refuses_a_weight_that_is_not_finite(alpha):
    with pytest.raises(ValueError, match="alpha must be a finite number"):
        hybrid(SPARSE, DENSE, alpha)


def test_tuning_with_nan_in_the_grid_writes_nothing(tmp_path):
    paths = _tuning_inputs(tmp_path)
    params = {**HYBRID, "alpha_grid": [0.0, float("nan")]}
    with pytest.raises(ValueError, match="alpha must be a finite number"):
        tune_fusion("hybrid", params, 7, paths, tmp_path / "qrels.parquet", tmp_path / "tuning.json",
                    tmp_path / "tuning.parquet")
    assert not (tmp_path / "tuning.json").exists() and not (tmp_path / "tuning.parquet").exists()


def test_tuning_record_is_strict_json(tmp_path):
    paths = _tuning_inputs(tmp_path)
    tune_fusion("hybrid", HYBRID, 7, paths, tmp_path / "qrels.parquet", tmp_path / "tuning.json",
                tmp_path / "tuning.parquet")

    def refuse(name):
        raise AssertionError(f"{name} in fusion_tuning.json")

    record = json.loads((tmp_path / "tuning.json").read_text(), parse_constant=refuse)
    assert record["alpha"] == 0.1


def test_an_input_ranking_with_a_nan_score_names_its_row(tmp_path):
    paths = _tuning_inputs(tmp_path, dense_scores=(0.9, float("nan"), 0.1))
    with pytest.raises(DataError, match=r"dense\.parquet: row 2: score nan is not a finite number"):
        tune_fusion("hybrid", HYBRID, 7, paths, tmp_path / "qrels.parquet", tmp_path / "tuning.json",
                    tmp_path / "tuning.parquet")
    with pytest.raises(DataError, match=r"dense\.parquet: row 2: score nan is not a finite number"):
        fuse_split("hybrid", {**HYBRID, "alpha": 0.5}, paths, tmp_path / "fused.parquet", None, tag="h")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dense.parquet", "qrels.parquet", "sparse.parquet"]


@pytest.mark.parametrize("text", ['{"alpha": NaN}', '{"alpha": Infinity}', '{"alpha": -1}', '{"alpha": "0.1"}',
                                  '{"grid": []}', "not json"],
                         ids=["nan", "infinity", "negative", "string", "missing", "not-json"])
def test_a_tuned_alpha_that_is_not_a_finite_number_is_refused(tmp_path, text):
    (tmp_path / "fusion_tuning.json").write_text(text)
    with pytest.raises(DataError, match=r"fusion_tuning\.json: "):
        read_tuned_alpha(tmp_path / "fusion_tuning.json")
