"""`hardneg init` on a collection of the size users bring: 1,400 SciFact documents and 150 training queries as a
BEIR folder. The config it writes keeps its results in a folder of its own, beside the default config's, is plain YAML without an absolute
path, passes `hardneg check-config`, holds a dev split out of the training queries, and no training run of it
makes too few optimiser steps: the training's own warning (hardneg.pipeline.train.training_warnings) says nothing
for the rows the prepared data gives."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pytest
import yaml

from hardneg import methods
from hardneg.datasets.adapters import load_dataset
from hardneg.dense.data import TrainQueries
from hardneg.pipeline.config import load_config_files
from hardneg.pipeline.resolution import resolve_run
from hardneg.pipeline.train import train_config, training_warnings
from hardneg.pipeline.train_steps import optimiser_steps, too_few_steps
from tests.support import REPO

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
DOCS, TRAIN_QUERIES, TEST_QUERIES = 1_400, 150, 50


def _qrels(path: Path) -> list[list[str]]:
    return [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def subset(scifact: Path, root: Path) -> Path:
    """A BEIR folder of SciFact's first 150 training and 50 test queries (in qrels order), every document they judge,
    and the corpus's first other documents up to 1,400."""
    train, test = _qrels(scifact / "qrels" / "train.tsv"), _qrels(scifact / "qrels" / "test.tsv")
    train_ids = list(dict.fromkeys(row[0] for row in train))[:TRAIN_QUERIES]
    test_ids = list(dict.fromkeys(row[0] for row in test))[:TEST_QUERIES]
    rows = {"train": [r for r in train if r[0] in set(train_ids)], "test": [r for r in test if r[0] in set(test_ids)]}
    judged = {row[1] for split in rows.values() for row in split}
    lines = (scifact / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    others = [line for line in lines if json.loads(line)["_id"] not in judged][:DOCS - len(judged)]
    kept = judged | {json.loads(line)["_id"] for line in others}
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(line + "\n" for line in lines if json.loads(line)["_id"] in kept))
    wanted = set(train_ids) | set(test_ids)
    queries = (scifact / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    (root / "queries.jsonl").write_text("".join(q + "\n" for q in queries if json.loads(q)["_id"] in wanted))
    for split, split_rows in rows.items():
        (root / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join("\t".join(row) + "\n" for row in split_rows))
    return root


def hardneg(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "hardneg"), *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def collection(scifact, tmp_path_factory):
    work = tmp_path_factory.mktemp("init")
    subset(scifact, work / "scifact_1400")
    assert sum(1 for _ in open(work / "scifact_1400" / "corpus.jsonl")) == DOCS
    return work


@pytest.mark.parametrize("model", ["builtin", "minilm"])
def test_init_writes_a_config_it_stands_behind(collection, model):
    out = f"{model}.yaml"
    done = hardneg("init", "--beir", "scifact_1400", "--model", model, "--output", out, cwd=collection)
    assert done.returncode == 0, done.stderr
    text = (collection / out).read_text()
    assert "&" not in text and not re.search(r"\*id\d+", text)  # no YAML anchors or aliases
    assert not re.search(r"(^|[\s:'\"])/", text), "an absolute path"
    checked = hardneg("check-config", out, cwd=collection)
    assert checked.returncode == 0 and f"{out}: valid" in checked.stdout, checked.stderr

    config = load_config_files(collection / out)
    default = load_config_files(REPO / "config" / "config.yaml")
    assert config["runs"] and config["results"] == "results/mydata" != default["results"]  # a folder of its own
    assert not {f"{config['results']}/{run}" for run in config["runs"]} & {f"results/{run}" for run in default["runs"]}
    dataset_entry = config["datasets"][config["dataset"]]
    assert dataset_entry["dev_from_train"] == {"share": 0.2, "seed": 0}

    prepared = load_dataset({**dataset_entry, "path": str(collection / dataset_entry["path"])})
    train_qrels, dev_qrels = prepared.qrels["train"], prepared.qrels["dev"]
    held_out = set(dev_qrels["qid"].to_pylist())
    assert len(held_out) == 30 and not held_out & set(train_qrels["qid"].to_pylist())
    trained = [run for run, spec in config["runs"].items() if methods.get(spec["method"]).trains]
    assert len(trained) == 3
    for run in trained:
        resolved = resolve_run(config, run)
        settings = train_config(resolved)
        judged = train_qrels.filter(pc.greater_equal(train_qrels["relevance"], 1))
        rows = TrainQueries(train_qrels, prepared.queries["train"]["qid"].to_pylist(),
                            prepared.corpus["docid"].to_pylist(), per_judgement=settings.rows == "judgement")
        assert rows.num_queries == len(set(judged["qid"].to_pylist())) == TRAIN_QUERIES - 30
        assert training_warnings(resolved, settings, rows) == [], run  # the training's own warning: silent
        steps = optimiser_steps(len(rows), batch_size=settings.batch_size,
                                grad_accumulation=settings.grad_accumulation, epochs=settings.epochs)
        assert not too_few_steps(*steps), (run, steps)
    assert yaml.safe_load(text)["runs"][trained[0]]["params"]["model"]["name"] == model  # the warm-up's
