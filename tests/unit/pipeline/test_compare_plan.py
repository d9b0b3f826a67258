"""The config's `compare` list: its defaults from the schema, its errors (each naming its key), and what the plan
makes of it (the page, what the page reads, the `paper` target; the default target unchanged)."""

import copy

import pytest
import yaml

from hardneg.errors import ConfigError
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.plan import Plan
from tests.support import REPO


@pytest.fixture(scope="module")
def raw():
    with open(REPO / "config" / "config.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def with_compare(raw, *items, **top):
    config = copy.deepcopy(raw)
    config["compare"] = list(items)
    config.update(top)
    return config


def test_defaults_and_what_the_plan_makes_of_them(raw):
    config = validate_config(with_compare(raw, {"name": "mine", "runs": ["warmup", "star", "adore_star"]},
                                          {"name": "train", "runs": ["bm25", "star"], "measure": "nDCG@10",
                                           "split": "train", "top": 3, "depth": 5, "correction": "bonferroni"},
                                          evaluation={**raw["evaluation"], "extra_splits": ["train"]}))
    assert config["compare"][0] == {"name": "mine", "runs": ["warmup", "star", "adore_star"], "measure": None,
                                    "split": None, "top": 10, "depth": 10, "correction": "holm"}
    plan = Plan(config)
    assert plan.compare.comparisons()["mine"] == {"runs": ["warmup", "star", "adore_star"], "measure": "RR@10",
                                          "split": "test", "top": 10, "depth": 10, "correction": "holm"}
    assert plan.compare.comparisons()["train"]["split"] == "train" and plan.compare.comparisons()["train"]["measure"] == "nDCG@10"
    assert plan.compare.comparison_targets() == ["results/tables/compare_mine.html", "results/tables/compare_train.html"]
    inputs = plan.compare.comparison_inputs("train")
    assert inputs["rankings"] == ["results/bm25/rankings/train.parquet", "results/star/rankings/train.parquet"]
    assert inputs["hardnegs"] == ["results/star/hardnegs.parquet"]  # star trains on a mined list, bm25 on none
    assert inputs["per_query"] == ["results/bm25/per_query.parquet", "results/star/per_query.parquet"]
    assert inputs["queries"] == "results/datasets/synthetic/queries" and inputs["corpus"].endswith("corpus.parquet")
    assert plan.report.paper_targets()[-2:] == plan.compare.comparison_targets()
    assert not set(plan.compare.comparison_targets()) & set(plan.report.targets())  # built only when asked for


def test_the_shipped_config_compares_the_hard_negative_runs(raw):
    plan = Plan(validate_config(copy.deepcopy(raw)))
    assert plan.compare.comparisons()["hard_negatives"]["runs"] == ["warmup", "star", "adore_star"]
    assert "results/tables/compare_hard_negatives.html" in plan.report.paper_targets()


def test_a_comparison_of_a_run_the_config_lacks_is_refused_naming_it(raw):
    """Like the summary and the figures: the page could never be built (Snakemake's "No rule to produce")."""
    config = copy.deepcopy(raw)
    config["compare"] = [{"name": "kept", "runs": ["bm25", "star"]}, {"name": "gone", "runs": ["bm25", "nosuch"]}]
    with pytest.raises(ConfigError, match="no run named 'nosuch'") as error:
        validate_config(config)
    assert error.value.key == "compare.1.runs.1"


@pytest.mark.parametrize("items, key, message", [
    ([{"name": "a", "runs": ["bm25", "bm25"]}], "compare.0.runs.1", "listed twice"),
    ([{"name": "a", "runs": ["bm25"]}], "compare.0.runs", ""),
    ([{"name": "a", "runs": ["bm25", "star"]}, {"name": "a", "runs": ["star", "bm25"]}], "compare.1.name",
     "already the name of compare.0"),
    ([{"name": "a/b", "runs": ["bm25", "star"]}], "compare.0.name", ""),
    ([{"name": "a", "runs": ["bm25", "star"], "measure": "P@5"}], "compare.0.measure", "not one of evaluation"),
    ([{"name": "a", "runs": ["bm25", "star"], "split": "dev"}], "compare.0.split", "not an evaluated split"),
    ([{"name": "a", "runs": ["bm25", "star"], "correction": "fdr"}], "compare.0.correction", ""),
    ([{"name": "a", "runs": ["bm25", "star"], "colour": "red"}], "compare.0.colour", ""),
    ([{"runs": ["bm25", "star"]}], "compare.0.name", ""),
])
def test_errors_name_the_key(raw, items, key, message):
    with pytest.raises(ConfigError) as error:
        validate_config(with_compare(raw, *items))
    assert error.value.key == key and message in error.value.message


def test_compared_runs_share_a_dataset(raw):
    config = with_compare(raw, {"name": "a", "runs": ["bm25", "other"]})
    config["datasets"]["small"] = {**config["datasets"]["synthetic"], "num_docs": 1000}
    config["runs"]["other"] = {**config["runs"]["bm25"], "dataset": "small"}
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    assert error.value.key == "compare.0.runs.1" and "ranks dataset 'small'" in error.value.message
