"""Runs repeated over seeds (a run's ``seeds``: hardneg.pipeline.replicates): one run per seed in the DAG, each
replicate's inputs the replicates of its own seed, the run itself unchanged (same resolved config, same hash),
and what is refused, naming the key."""

import copy

import pytest

from hardneg.errors import ConfigError
from hardneg.schema.files import config_hash
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.plan import Plan
from hardneg.pipeline.replicates import replicates, with_replicates
from hardneg.pipeline.resolution import resolve_run
from hardneg.schema.names import replicate_name, replicate_seed

def dense(**more) -> dict:
    return {"train": {"epochs": 1, "batch_size": 8}, **more}


CONFIG = {
    "seed": 7, "dataset": "tiny",
    "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 100, "num_queries": {"train": 20, "test": 10}}},
    "runs": {
        "bm25": {"method": "bm25"},
        "warmup": {"method": "warmup", "inputs": {"negatives": "bm25"}, "params": dense()},
        "star": {"method": "star", "inputs": {"init": "warmup", "negatives": "warmup", "bm25": "bm25"},
                 "params": dense(mining={"depth": 50})},
        "adore_star": {"method": "adore", "inputs": {"docs": "star"}, "params": dense()},
    },
    "targets": ["adore_star"],
}


def with_seeds(**seeds) -> dict:
    config = copy.deepcopy(CONFIG)
    for run, chosen in seeds.items():
        config["runs"][run]["seeds"] = chosen
    return config


def test_each_seed_is_a_run_whose_inputs_are_the_replicates_of_its_seed():
    config = validate_config(with_seeds(star=[7, 8, 9], adore_star=[7, 8, 9]))
    runs = config["runs"]
    assert replicates(config) == {"star": ["star", "star_seed8", "star_seed9"],
                                  "adore_star": ["adore_star", "adore_star_seed8", "adore_star_seed9"]}
    assert [runs[name]["seed"] for name in replicates(config)["star"]] == [7, 8, 9]
    assert runs["adore_star_seed8"]["inputs"] == {"docs": "star_seed8"}
    assert runs["adore_star"]["inputs"] == {"docs": "star"}
    # warm-up and BM25 have one seed: every STAR replicate continues the same warm-up
    assert runs["star_seed9"]["inputs"] == {"init": "warmup", "negatives": "warmup", "bm25": "bm25"}
    assert "seeds" not in runs["star_seed8"] and runs["star_seed8"]["params"] == runs["star"]["params"]
    assert Plan(config).report.targets() == [f"results/{run}/metrics.json"
                                      for run in ("adore_star", "adore_star_seed8", "adore_star_seed9")]
    assert with_replicates(config, ["bm25", "adore_star"]) == ["bm25", "adore_star", "adore_star_seed8",
                                                               "adore_star_seed9"]


def test_a_seed_the_input_lacks_continues_the_input_run_itself():
    runs = validate_config(with_seeds(star=[7, 8], adore_star=[7, 8, 9]))["runs"]
    assert runs["adore_star_seed8"]["inputs"] == {"docs": "star_seed8"}
    assert runs["adore_star_seed9"]["inputs"] == {"docs": "star"}


def test_the_run_itself_keeps_its_resolved_config_and_hash():
    plain, seeded = validate_config(copy.deepcopy(CONFIG)), validate_config(with_seeds(star=[7, 8]))
    for run in ("warmup", "star", "adore_star"):
        assert resolve_run(seeded, run) == resolve_run(plain, run)
        assert config_hash(resolve_run(seeded, run)) == config_hash(resolve_run(plain, run))
    assert resolve_run(seeded, "star_seed8")["seed"] == 8
    assert config_hash(resolve_run(seeded, "star_seed8")) != config_hash(resolve_run(seeded, "star"))


def test_a_validated_config_validates_again_to_itself():
    once = validate_config(with_seeds(star=[7, 8]))
    assert validate_config(copy.deepcopy(once)) == once


@pytest.mark.parametrize("edit, key, message", [
    ({"star": {"seeds": [7]}}, "runs.star.seeds", ""),
    ({"star": {"seeds": [7, 7]}}, "runs.star.seeds", "non-unique"),
    ({"star": {"seeds": [7, -1]}}, "runs.star.seeds.1", ""),
    ({"star": {"seeds": [8, 9], "seed": 7}}, "runs.star.seed", "is not the first of its seeds"),
    ({"star": {"seeds": [7, 8]}, "star_seed8": {"method": "bm25"}}, "runs.star_seed8", "replicate of run 'star'"),
])
def test_bad_seeds_are_refused_naming_the_key(edit, key, message):
    config = copy.deepcopy(CONFIG)
    for run, entry in edit.items():
        config["runs"][run] = {**config["runs"].get(run, {}), **entry}
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    assert error.value.key == key and message in error.value.message, (error.value.key, error.value.message)


def test_replicate_names_and_seeds():
    assert replicate_name("star", 43) == "star_seed43"
    assert replicate_seed("star_seed43", "star") == 43
    assert replicate_seed("star_seed43", "sta") is None and replicate_seed("star_seedx", "star") is None
    assert replicate_seed("star_seed043", "star") is None  # not a name replicate_name gives
    assert replicate_seed("adore_star_seed4", "star") is None


def test_a_replicate_inherits_the_model_of_the_run_it_continues():
    config = with_seeds(star=[7, 8], adore_star=[7, 8])
    config["runs"]["warmup"]["params"]["model"] = {"doc_max_length": 48, "builtin": {"hidden_size": 32}}
    runs = validate_config(config)["runs"]
    assert runs["star_seed8"]["params"]["model"] == runs["star"]["params"]["model"] == \
        runs["warmup"]["params"]["model"]
    assert runs["adore_star_seed8"]["params"]["model"]["builtin"]["hidden_size"] == 32


def test_pq_matrix_seeds_repeat_its_runs_each_over_the_docs_replicate_of_its_seed():
    from hardneg.experiments import pq_matrix

    config = with_seeds(star=[7, 8])
    config["pq_matrix"] = {"docs": "star", "indexes": ["Flat", "HNSW8"], "seeds": [7, 8, 9]}
    config = validate_config(config)
    runs = config["runs"]
    assert replicates(config)["adore_pq_Flat"] == ["adore_pq_Flat", "adore_pq_Flat_seed8", "adore_pq_Flat_seed9"]
    assert [runs[run]["seed"] for run in replicates(config)["adore_pq_HNSW8"]] == [7, 8, 9]
    assert runs["adore_pq_Flat_seed8"]["inputs"] == {"docs": "star_seed8"}
    assert runs["adore_pq_Flat_seed9"]["inputs"] == {"docs": "star"}  # STAR has no seed 9: its own run
    assert runs["adore_pq_HNSW8"]["inputs"] == {"docs": "star"}
    cells = {(a, b): paths for a, b, paths in pq_matrix.cells(Plan(config))}
    assert cells[("HNSW8", "Flat")] == [f"results/{run}/by_index/Flat/metrics.json"
                                      for run in ("adore_pq_HNSW8", "adore_pq_HNSW8_seed8", "adore_pq_HNSW8_seed9")]
    without = copy.deepcopy(CONFIG)
    without["pq_matrix"] = {"docs": "star", "indexes": ["Flat"]}
    assert [paths for *_, paths in pq_matrix.cells(Plan(validate_config(without)))] == [
        ["results/adore_pq_Flat/by_index/Flat/metrics.json"]]
