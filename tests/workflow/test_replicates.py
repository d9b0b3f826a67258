"""A run repeated over seeds, as Snakemake plans it: the tiny STAR → ADORE chain with ``seeds`` on both, where
every replicate is a training of its own and ADORE's replicate of seed 6 reads STAR's replicate of seed 6; the
run itself plans the same jobs as without seeds."""

import copy

import pytest

from tests.support.configs import STAR_CONFIG
from tests.support.workflow import dry_run, output_of, write_config

pytestmark = pytest.mark.slow


def _planned(workdir, config, *targets) -> set:
    write_config(workdir, config)
    result, jobs = dry_run(workdir, *targets)
    assert result.returncode == 0, output_of(result)[-3000:]
    return jobs


def _seeded() -> dict:
    config = copy.deepcopy(STAR_CONFIG)
    for run in ("star", "adore_star"):
        config["runs"][run]["seeds"] = [5, 6]
    return config


def test_each_seed_trains_its_own_chain(tmp_path):
    jobs = _planned(tmp_path / "seeded", _seeded(), "results/adore_star/metrics.json",
                    "results/adore_star_seed6/metrics.json")
    trained = sorted(job["wildcards"]["run"] for job in jobs if job["rule"] == "train_dense")
    assert trained == ["adore_star", "adore_star_seed6", "star", "star_seed6", "warmup"]  # one warm-up
    adore6 = next(job for job in jobs if job["rule"] == "train_dense" and job["wildcards"]["run"] == "adore_star_seed6")
    assert any(path.startswith("results/star_seed6/") for path in adore6["input"]), adore6["input"]
    assert not any(path.startswith("results/star/") for path in adore6["input"]), adore6["input"]


def test_the_run_itself_plans_as_without_seeds(tmp_path):
    def plan(name, config):
        return sorted((job["rule"], tuple(sorted(job["wildcards"].items())), tuple(job["output"]))
                      for job in _planned(tmp_path / name, config, "results/adore_star/metrics.json"))

    assert plan("seeded", _seeded()) == plan("plain", copy.deepcopy(STAR_CONFIG))
