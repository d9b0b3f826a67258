"""Numbers in the configuration: NaN and infinity are refused at any key, naming it; seeds are bounded by what
every generator the project seeds accepts."""

import copy
import random

import numpy as np
import pytest
import torch
import yaml

from hardneg.errors import ConfigError
from hardneg.pipeline.config import load_schema, validate_config, validate_params

CONFIG = {
    "seed": 1, "dataset": "tiny", "evaluation": {"split": "test"},
    "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 300, "docs_per_cluster": 20, "concept_vocab": 100,
                          "num_queries": {"train": 20, "dev": 10, "test": 10}}},
    "runs": {"bm25": {"method": "bm25", "params": {"top_k": 10}},
             "bm25b": {"method": "bm25", "params": {"top_k": 10, "k1": 1.2}},
             "hybrid": {"method": "hybrid", "inputs": {"runs": ["bm25", "bm25b"]}, "params": {"alpha": 0.5}}},
}


def _set(config: dict, path: tuple, value) -> dict:
    config = copy.deepcopy(config)
    node = config
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return config


# (where the value goes, the value as a user writes it in YAML, the key the error names, the value it shows)
NON_FINITE = {
    "nan-alpha": (("runs", "hybrid", "params", "alpha"), ".nan", "runs.hybrid.params.alpha", "nan"),
    "infinite-alpha": (("runs", "hybrid", "params", "alpha"), ".inf", "runs.hybrid.params.alpha", "inf"),
    "nan-in-alpha-grid": (("runs", "hybrid", "params"), "{alpha: null, tune: {split: dev}, alpha_grid: [0, .nan]}",
                          "runs.hybrid.params.alpha_grid.1", "nan"),
    "negative-infinite-k1": (("runs", "bm25", "params", "k1"), "-.inf", "runs.bm25.params.k1", "-inf"),
    "overflowing-literal": (("runs", "bm25", "params", "b"), "1.0e+999", "runs.bm25.params.b", "inf"),
    "nan-under-an-unknown-key": (("evaluation", "mystery"), "[1.0, .NaN]", "evaluation.mystery.1", "nan"),
}


@pytest.mark.parametrize("case", list(NON_FINITE), ids=list(NON_FINITE))
def test_a_non_finite_number_at_any_key_is_refused_naming_the_key(case):
    path, text, key, shown = NON_FINITE[case]
    with pytest.raises(ConfigError) as error:
        validate_config(_set(CONFIG, path, yaml.safe_load(f"value: {text}")["value"]))
    assert error.value.key == key and str(error.value) == f"config key '{key}': expected a finite number, got {shown}"


def test_the_same_check_holds_for_params_validated_alone():
    with pytest.raises(ConfigError, match=r"key 'params.train.learning_rate': expected a finite number, got nan"):
        validate_params({"train": {"learning_rate": float("nan")}})


def test_finite_numbers_pass():
    validate_config(_set(CONFIG, ("runs", "hybrid", "params"), {"alpha": None, "tune": {"split": "dev"},
                                                                "alpha_grid": [0.0, 0.5, 1e300]}))


SEED_KEYS = {"global": ("seed",), "run": ("runs", "bm25", "seed"), "dataset": ("datasets", "tiny", "seed")}
LARGEST_SEED = 2**32 - 1


@pytest.mark.parametrize("where", list(SEED_KEYS))
def test_every_seed_key_is_bounded_by_what_the_generators_accept(where):
    validate_config(_set(CONFIG, SEED_KEYS[where], LARGEST_SEED))
    key = ".".join(SEED_KEYS[where])
    for too_large in (LARGEST_SEED + 1, 2**64):
        with pytest.raises(ConfigError) as error:
            validate_config(_set(CONFIG, SEED_KEYS[where], too_large))
        assert str(error.value) == f"config key '{key}': {too_large} is greater than the maximum of {LARGEST_SEED}"


def test_the_seed_bound_is_the_tightest_generator_limit():
    """Training seeds python's random, NumPy's legacy global generator and torch (with seed + 2 too); t-SNE seeds
    a NumPy RandomState. The schema's bound is the largest seed all of them accept."""
    schema = load_schema()
    assert schema["properties"]["seed"]["maximum"] == LARGEST_SEED
    random.Random(LARGEST_SEED)
    np.random.RandomState(LARGEST_SEED)  # np.random.seed's generator
    torch.Generator().manual_seed(LARGEST_SEED + 2)
    with pytest.raises(ValueError, match="Seed must be between 0 and 2\\*\\*32 - 1"):
        np.random.RandomState(LARGEST_SEED + 1)
