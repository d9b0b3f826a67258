"""Mine once, select by policy, in the plan: a run's policy (named or its own keys), the checks of the config's
policies, and the pools mining runs share."""

import copy

import pytest
import yaml

from hardneg.errors import ConfigError
from hardneg.mining.policies import Policy
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.plan import Plan
from tests.support import REPO


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def _with(raw, policies=None, **mining):
    config = copy.deepcopy(raw)
    config["policies"] = {**config["policies"], **(policies or {})}  # the config's named policies stay in use
    config["runs"]["star"].setdefault("params", {}).setdefault("mining", {}).update(mining)
    return config


def test_a_run_selects_with_its_own_keys_or_a_named_policy(raw):
    plan = Plan(validate_config(_with(raw, keep=8, relative_margin=0.05)))
    assert plan.mining.policy("star") == Policy(keep=8, relative_margin=0.05)
    assert plan.mining.policy_params("star")["keep"] == 8 and plan.mining.policy_params("star")["rank_range"] is None
    named = {"percpos": {"relative_margin": 0.05, "keep": 4, "rank_range": [2, 100]}}
    plan = Plan(validate_config(_with(raw, named, policy="percpos")))
    assert plan.mining.policy("star") == Policy(relative_margin=0.05, keep=4, rank_range=(2, 100))
    assert plan.mining.policy_params("star")["rank_range"] == [2, 100]  # plain YAML for the job


@pytest.mark.parametrize("policies, mining, key, message", [
    ({}, {"policy": "nope"}, "runs.star.params.mining.policy", "no policy 'nope'"),
    ({"p": {"keep": 2}}, {"policy": "p", "keep": 3}, "runs.star.params.mining.keep", "set keep in policies.p"),
    ({"p": {"depth": 500}}, {"policy": "p", "depth": 200}, "policies.p.depth", "deeper than the pool of run star"),
    ({"p": {"rank_range": [5, 2]}}, {}, "policies.p.rank_range", "rank_range"),
    ({}, {"rank_range": [5, 2]}, "runs.star.params.mining.rank_range", "rank_range"),
    ({"p": {"min_score": 0.5, "max_score": 0.25}}, {}, "policies.p.min_score", "min_score 0.5 is above max_score"),
    ({}, {"min_score": 0.5, "max_score": 0.25}, "runs.star.params.mining.min_score", "is above max_score 0.25"),
])
def test_policy_errors_name_the_key(raw, policies, mining, key, message):
    with pytest.raises(ConfigError) as info:
        validate_config(_with(raw, policies, **mining))
    assert info.value.key == key and message in info.value.message


def test_a_scorer_must_score_pairs(raw):
    config = copy.deepcopy(raw)
    config["runs"]["star"].setdefault("inputs", {})["cross_encoder"] = "warmup"
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key == "runs.star.inputs.cross_encoder" and "scores no pairs" in info.value.message


def test_a_second_policy_on_the_same_pool_adds_a_selection_not_a_pool(raw):
    config = copy.deepcopy(raw)
    config["runs"]["star_margin"] = copy.deepcopy(config["runs"]["star"])
    config["runs"]["star_margin"].setdefault("params", {}).setdefault("mining", {})["margin"] = 0.05
    before, after = Plan(validate_config(copy.deepcopy(raw))), Plan(validate_config(config))
    assert after.mining.pools == before.mining.pools
    assert after.mining.pool_path("star_margin") == after.mining.pool_path("star")
    assert after.mining.policy("star_margin") != after.mining.policy("star")


def test_the_defaults_star_percpos_selects_from_stars_pool_by_a_named_policy(raw):
    plan = Plan(validate_config(copy.deepcopy(raw)))
    assert plan.mining.pool_path("star_percpos") == plan.mining.pool_path("star") == \
        "results/warmup/pools/train_top200_bm25-bm25.parquet"
    assert plan.mining.policy("star_percpos") == Policy(relative_margin=0.05, keep=8) != plan.mining.policy("star")
    assert plan.init_run("star_percpos") == "warmup"
