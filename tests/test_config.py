"""Config validation: defaults are filled, and every mistake names its key."""

import copy

import pytest
import yaml

from hardneg.config import config_hash, load_config_file, resolve_run, validate_config
from hardneg.errors import ConfigError
from tests.conftest import REPO


@pytest.fixture
def default_config():
    with open(REPO / "config" / "config.yaml") as handle:
        return yaml.safe_load(handle)


def test_default_config_is_valid_and_defaults_are_filled(default_config):
    config = validate_config(default_config)
    assert config["datasets"]["synthetic"]["subtopics_per_cluster"] == 10  # schema default
    assert config["runs"]["bm25"]["params"]["title_weight"] == 1.0
    resolved = resolve_run(config, "bm25")
    assert resolved["dataset"]["name"] == "synthetic" and resolved["dataset"]["seed"] == 42
    assert resolved["evaluation"]["split"] == "test"


def test_config_hash_is_stable_and_sensitive(default_config):
    config = validate_config(default_config)
    first = config_hash(resolve_run(config, "bm25"))
    assert first == config_hash(resolve_run(validate_config(copy.deepcopy(default_config)), "bm25"))
    config["runs"]["bm25"]["params"]["k1"] = 1.2
    assert config_hash(resolve_run(config, "bm25")) != first


def _mutate(config, path, value):
    node = config
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return config


_DELETE = object()


@pytest.mark.parametrize("path, value, key, message", [
    (["sed"], 1, "sed", "unknown key; allowed keys: dataset, datasets, evaluation, method_modules, pq_matrix, runs, seed, targets"),
    (["runs", "bm25", "params", "k11"], 1.0, "runs.bm25.params.k11", "unknown key; allowed keys: b, fields"),
    (["runs", "bm25", "params", "k1"], "high", "runs.bm25.params.k1", "expected number, got 'high'"),
    (["runs", "bm25", "params", "top_k"], 0, "runs.bm25.params.top_k", "0 is less than the minimum of 1"),
    (["runs", "bm25", "method"], "bm52", "runs.bm25.method", "must be one of adore, bm25, inbatch, randneg, star, warmup, zeroshot; got 'bm52'"),
    (["runs", "bm25", "params", "fields"], "title", "runs.bm25.params.fields", "must be one of flat, multifield"),
    (["datasets", "synthetic", "adapter"], "csv", "datasets.synthetic.adapter", "must be one of synthetic, beir"),
    (["datasets", "synthetic", "num_docs"], "5k", "datasets.synthetic.num_docs", "expected integer, got '5k'"),
    (["datasets", "synthetic", "synonym_rate"], 1.5, "datasets.synthetic.synonym_rate", "greater than the maximum"),
    (["datasets", "synthetic", "num_doc"], 10, "datasets.synthetic.num_doc", "unknown key"),
    (["datasets", "sf"], {"adapter": "beir", "splits": ["test"]}, "datasets.sf.path", "required key is missing"),
    (["runs", "datasets"], {"method": "bm25"}, "runs.datasets", "'datasets' is reserved"),
    (["runs", "bm25", "dataset"], "scifact", "runs.bm25.dataset", "no dataset named 'scifact'"),
    (["dataset"], "msmarco", "dataset", "no dataset named 'msmarco'"),
    (["evaluation", "split"], "validation", "evaluation.split", "has no split 'validation'"),
    (["runs"], _DELETE, "runs", "required key is missing"),
    (["runs", "star", "inputs", "init"], "bm25", "runs.star.inputs.init", "is a bm25 run; this input needs a dense run"),
    (["runs", "star", "inputs", "negatives"], "bm25", "runs.star.inputs.negatives", "needs a dense run"),
    (["runs", "warmup", "inputs", "negatives"], "nowhere", "runs.warmup.inputs.negatives", "no run named 'nowhere'"),
    (["runs", "warmup", "inputs"], {}, "runs.warmup.inputs.negatives", "required key is missing"),
    (["runs", "star", "params", "train", "optimizer"], "sgd", "runs.star.params.train.optimizer",
     "must be one of adamw, lamb"),
    (["runs", "warmup", "params", "negatives", "per_query"], -1, "runs.warmup.params.negatives.per_query",
     "-1 is less than the minimum of 0"),
    (["runs", "warmup", "params", "modle"], {}, "runs.warmup.params.modle", "unknown key; allowed keys: encode, index, model, negatives, search, train"),
    # a method's own parameters belong to that method only
    (["runs", "warmup", "params", "mining"], {}, "runs.warmup.params.mining", "unknown key"),
    (["runs", "star", "params", "adore"], {}, "runs.star.params.adore", "unknown key"),
    (["runs", "star", "params", "mining", "dept"], 5, "runs.star.params.mining.dept", "unknown key"),
    (["runs", "adore_star", "inputs"], {}, "runs.adore_star.inputs.docs", "required key is missing"),
    (["runs", "adore_star", "inputs", "init"], "warmup", "runs.adore_star.inputs.init", "unknown key"),
    (["runs", "adore_star", "inputs", "docs"], "bm25", "runs.adore_star.inputs.docs", "needs a dense run"),
    (["targets"], ["star", "nothing"], "targets.1", "no run named 'nothing'"),
    (["evaluation", "extra_splits"], ["dev", "val"], "evaluation.extra_splits", "has no split 'val'"),
    (["method_modules"], ["no/such/method.py"], "method_modules.0", "no such file"),
    (["method_modules"], ["hardneg_no_such_module"], "method_modules.0", "cannot import 'hardneg_no_such_module'"),
    (["method_modules"], "toy.py", "method_modules", "expected a list"),
])
def test_config_errors_name_the_key(default_config, path, value, key, message):
    config = _mutate(default_config, path, value)
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key == key
    assert message in info.value.message
    assert str(info.value).startswith(f"config key '{key}': ")


def test_cycles_between_runs_are_rejected(default_config):
    default_config["runs"]["warmup"]["inputs"] = {"negatives": "star"}
    with pytest.raises(ConfigError, match="cycle: (warmup -> star -> warmup|star -> warmup -> star)"):
        validate_config(default_config)


def test_unknown_measure_is_a_config_error():
    from hardneg.evaluation import parse_measures

    with pytest.raises(ConfigError, match=r"config key 'evaluation.measures': 'MRR@ten'"):
        parse_measures(["nDCG@10", "MRR@ten"])


def test_invalid_yaml_names_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("seed: 1\nruns:\n  bm25: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml, line 4: invalid YAML"):
        load_config_file(path)
