"""A method added in a module of its own (config key method_modules) is planned by the workflow with no other file
changed, its parameters checked before any job, and it trains and is evaluated: the training job imports the module
again. The same holds for the method of the "Adding a method" walkthrough in docs/architecture.md (the registry itself:
tests/unit/methods/test_registry.py)."""

import json
import textwrap

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support.docs import method_walkthrough
from tests.support.workflow import output_of, snakemake, write_config

# The tiny model, training and dataset of the runs these tests train.
TINY_PARAMS = {"model": {"vocab_size": 3000, "doc_max_length": 32, "query_max_length": 16,
                         "builtin": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                                     "intermediate_size": 64}},
               "train": {"epochs": 1, "batch_size": 16}, "encode": {"shards": 1}, "search": {"top_k": 50}}
TINY_DATASET = {"adapter": "synthetic", "num_docs": 200, "docs_per_cluster": 20,
                "num_queries": {"train": 48, "test": 20}}

TOY_METHOD = '''
"""A toy method for the test: in-batch negatives with a margin of its own."""
from dataclasses import dataclass

from hardneg.methods import DENSE, Method, Role


@dataclass(frozen=True)
class ToyParams:
    toy: dict


def build_step(ctx):
    from hardneg.dense.steps import ContrastiveMethod

    return ContrastiveMethod(ctx.train, ctx.query_texts, ctx.doc_texts, negatives=None, per_query=0, loss="ce",
                             temperature=ctx.params["train"]["temperature"] * ctx.params["toy"]["scale"])


METHOD = Method(name="toy", kind=DENSE, summary="a test method",
                roles={"init": Role("model", required=False), "negatives": Role("ranking", required=False)},
                schema={"toy": {"type": "object", "default": {}, "additionalProperties": False,
                                "properties": {"scale": {"type": "number", "default": 1.0}}}},
                params=ToyParams, training_sections=("model", "train", "toy"), build_step=build_step)
'''


def test_a_method_in_its_own_module_is_planned_with_no_other_file_changed(tmp_path):
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "toy_method.py").write_text(textwrap.dedent(TOY_METHOD))
    config = {
        "dataset": "tiny", "method_modules": ["extra/toy_method.py"],
        "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 300, "num_queries": {"train": 50, "test": 20}}},
        "runs": {"bm25": {"method": "bm25"},
                 "toy": {"method": "toy", "inputs": {"negatives": "bm25"}, "params": {"toy": {"scale": 2.0}}}},
        "targets": ["toy"],
    }
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "-n", "--quiet", "rules", cores=None)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    jobs = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
            if len(line.split()) == 2 and line.split()[1].isdigit()}
    for rule in ("train_dense", "encode_corpus_shard", "gather_embeddings", "build_faiss_index", "dense_search",
                 "evaluate", "tokenize", "bm25_search"):
        assert jobs.get(rule, 0) >= 1, (rule, out)
    assert jobs["dense_search"] == 1 and jobs["bm25_search"] == 1  # the toy test split; bm25's train split

    # an unknown parameter of the toy method is refused with its key, before any job
    config["runs"]["toy"]["params"]["toy"]["scael"] = 1
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "-n", cores=None)
    assert result.returncode != 0 and "config key 'runs.toy.params.toy.scael': unknown key" in \
        result.stdout + result.stderr


@pytest.mark.slow
def test_a_method_of_its_own_module_trains_and_is_evaluated(tmp_path):
    """The training job is a process of its own: it imports the run's method module again."""
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "toy_method.py").write_text(textwrap.dedent(TOY_METHOD))
    config = {
        "dataset": "tiny", "method_modules": ["extra/toy_method.py"], "targets": ["toy"],
        "datasets": {"tiny": dict(TINY_DATASET)},
        "runs": {"toy": {"method": "toy", "params": {**TINY_PARAMS, "toy": {"scale": 2.0}}}},
    }
    write_config(tmp_path, config)
    result = snakemake(tmp_path)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    metrics = json.loads((tmp_path / "results" / "toy" / "metrics.json").read_text())
    assert metrics["num_queries"] == 20 and 0.0 <= metrics["measures"]["RR@10"] <= 1.0
    assert pq.read_table(tmp_path / "results" / "toy" / "train_log.parquet").num_rows == 3  # 48 queries / 16
    resolved = yaml.safe_load((tmp_path / "results" / "toy" / "config.yaml").read_text())
    assert resolved["params"]["toy"] == {"scale": 2.0}


@pytest.mark.slow
def test_the_walkthrough_method_is_planned_trained_and_evaluated(tmp_path):
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "bandneg.py").write_text(method_walkthrough())
    config = {
        "dataset": "tiny", "method_modules": ["extra/bandneg.py"], "targets": ["bandneg"],
        "datasets": {"tiny": dict(TINY_DATASET)},
        "runs": {"bm25": {"method": "bm25"},
                 "bandneg": {"method": "bandneg", "inputs": {"negatives": "bm25"},
                             "params": {**TINY_PARAMS, "band": {"skip": 5}}}},
    }
    write_config(tmp_path, config)
    planned = snakemake(tmp_path, "-n", "--quiet", "rules")
    assert planned.returncode == 0, output_of(planned)[-3000:]
    assert "train_dense" in output_of(planned)
    result = snakemake(tmp_path)
    assert result.returncode == 0, output_of(result)[-3000:]
    metrics = json.loads((tmp_path / "results" / "bandneg" / "metrics.json").read_text())
    assert metrics["num_queries"] == 20 and 0.0 <= metrics["measures"]["RR@10"] <= 1.0
    resolved = yaml.safe_load((tmp_path / "results" / "bandneg" / "config.yaml").read_text())
    assert resolved["params"]["band"] == {"skip": 5} and resolved["inputs"]["negatives"]["method"] == "bm25"
    config["runs"]["bandneg"]["params"]["band"]["skp"] = 3  # a misspelt key of the new method is refused by name
    write_config(tmp_path, config)
    refused = snakemake(tmp_path, "-n")
    assert refused.returncode != 0 and "config key 'runs.bandneg.params.band.skp': unknown key" in output_of(refused)
