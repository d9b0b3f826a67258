"""Distillation in the plan: a run that distills reads the scores its cross-encoder gave its pool, and the config
check refuses distillation without a scored source, naming the key."""

import copy

import pytest
import yaml

from hardneg.errors import ConfigError
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.plan import Plan
from tests.support import REPO


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def _distilling(raw, *, inputs=None, **params):
    config = copy.deepcopy(raw)
    run = copy.deepcopy(config["runs"]["star"])
    run["inputs"] = {**run["inputs"], "cross_encoder": "crossencoder", **(inputs or {})}
    run["params"] = {**run["params"], "distill": {"loss": "kl", "weight": 0.7}, **params}
    config["runs"]["star_kd"] = run
    return config


def test_a_distilling_run_reads_its_pools_cross_encoder_scores(raw):
    plan = Plan(validate_config(_distilling(raw)))
    pool = "results/warmup/pools/train_top200_bm25-bm25_ce-crossencoder"
    inputs = plan.train_inputs("star_kd")
    assert inputs["teacher_scores"] == f"{pool}.ce_candidates.parquet"
    assert inputs["teacher_positive_scores"] == f"{pool}.ce_positives.parquet"
    assert inputs["hard_negatives"] == "results/star_kd/hardnegs.parquet"
    assert plan.training_slice("star_kd")["params"]["distill"] == {
        "loss": "kl", "weight": 0.7, "teacher_temperature": 1.0, "student_temperature": 1.0}
    assert not {"teacher_scores", "teacher_positive_scores"} & set(plan.train_inputs("star"))  # no scorer, no scores


@pytest.mark.parametrize("change, key, message", [
    (lambda run: run["inputs"].pop("cross_encoder"), "runs.star_kd.params.distill.loss",
     "runs.star_kd.inputs.cross_encoder"),
    (lambda run: run["params"].update(negatives={"per_query": 0}), "runs.star_kd.params.distill.loss",
     "per_query to 1 at least"),
    (lambda run: run["params"]["distill"].update(loss="mse"), "runs.star_kd.params.distill.loss", "mse"),
    (lambda run: run["params"]["distill"].update(weight=2), "runs.star_kd.params.distill.weight", "2"),
])
def test_distillation_without_what_it_needs_is_refused_naming_the_key(raw, change, key, message):
    config = _distilling(raw)
    change(config["runs"]["star_kd"])
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key == key and message in info.value.message


def test_static_hn_distills_too_and_a_warmup_has_no_distill_section(raw):
    config = _distilling(raw)
    config["runs"]["star_kd"]["method"] = "static_hn"
    assert Plan(validate_config(config)).train_inputs("star_kd")["teacher_scores"].endswith(".ce_candidates.parquet")
    config = copy.deepcopy(raw)
    config["runs"]["warmup"]["params"]["distill"] = {"loss": "kl"}
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key == "runs.warmup.params.distill" and "unknown key" in info.value.message
