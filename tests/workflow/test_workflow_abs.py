"""Adaptive Batch Scheduling and Condenser through the workflow on a tiny config: a condenser run pre-trains on the
corpus and leaves a bi-encoder folder that an ABS run continues; ABS runs train on BM25-scheduled and encoded
batches, evaluate dev MRR@100 at the end of each epoch, and the figure epoch_curves draws them."""

import json

import pyarrow.parquet as pq
import pytest
from transformers import AutoModel

from tests.support.configs import DENSE_CONFIG, TINY_DENSE

pytestmark = pytest.mark.slow

MODEL = {**TINY_DENSE["model"], "builtin": {**TINY_DENSE["model"]["builtin"], "num_hidden_layers": 2}}
ABS = {"model": MODEL, "encode": TINY_DENSE["encode"], "search": TINY_DENSE["search"],
       # the report's epoch curves: dev over the whole corpus and the last step's model, as config.yaml's ABS runs
       "train": {**TINY_DENSE["train"], "epochs": 2, "dev_every": "epoch", "dev_split": "dev", "dev_search": "corpus",
                 "keep": "last"}}
CONFIG = {
    "seed": 4, "dataset": "tiny",
    "datasets": {"tiny": {**DENSE_CONFIG["datasets"]["tiny"], "num_queries": {"train": 100, "dev": 20, "test": 30}}},
    "runs": {
        "bm25": DENSE_CONFIG["runs"]["bm25"],
        "abs_random": {"method": "abs", "params": {**ABS, "abs": {"order": "random"}}},
        "abs_encode": {"method": "abs", "inputs": {"bm25": "bm25"},
                       "params": {**ABS, "abs": {"order": "adaptive", "similarity": "encode", "candidates": 20}}},
        "condenser": {"method": "condenser",
                      "params": {"model": MODEL, "encode": TINY_DENSE["encode"], "search": TINY_DENSE["search"],
                                 "train": {**TINY_DENSE["train"], "batch_size": 32},
                                 "condenser": {"early_layers": 1, "head_layers": 1, "contrastive": True}}},
        "condenser_abs_beam": {"method": "abs", "inputs": {"init": "condenser", "bm25": "bm25"},
                               "params": {**{k: v for k, v in ABS.items() if k != "model"},
                                          "abs": {"order": "adaptive", "search": "beam", "candidates": 20}}},
    },
    "figures": {"epoch_curves": {"runs": ["abs_random", "abs_encode", "condenser_abs_beam"],
                                 "labels": {"abs_random": "Non-ABS-Random"}}},
}
RUNS = ("abs_random", "abs_encode", "condenser_abs_beam")


@pytest.fixture(scope="module")
def built(builds):
    return builds.workflow(CONFIG, *[f"results/{run}/metrics.json" for run in RUNS],
                           "results/figures/epoch_curves.png")


def test_the_condenser_leaves_a_backbone_that_an_abs_run_continues(built):
    results = built / "results"
    model = results / "condenser" / "model"
    encoder, info = AutoModel.from_pretrained(model, output_loading_info=True)
    assert encoder.config.num_hidden_layers == 2 and not info["missing_keys"] and not info["unexpected_keys"]
    assert json.loads((model / "hardneg.json").read_text())["pooling"] == "mean"
    log = pq.read_table(results / "condenser" / "train_log.parquet").to_pandas()
    assert {"mlm_late", "mlm_head", "contrastive"} <= set(log.columns)
    assert len(log) == -(-300 // 32)  # one epoch of batches of corpus documents, not of training queries
    assert "initialised from results/condenser/model" in (results / "condenser_abs_beam" / "logs" / "train.log").read_text()


def test_abs_runs_evaluate_each_epoch_and_train_on_scheduled_batches(built):
    results = built / "results"
    for run in RUNS:
        log = pq.read_table(results / run / "train_log.parquet").to_pandas()
        ends = log.groupby("epoch").tail(1)
        assert len(ends) == 2 and ends["dev_rr100"].notna().all() and (ends["dev_rr100"] >= ends["dev_rr10"]).all()
        assert log.drop(ends.index)["dev_rr100"].isna().all()  # only the epochs' last steps are evaluated
        assert json.loads((results / run / "metrics.json").read_text())["measures"]["RR@10"] > 0
    text = (results / "abs_encode" / "logs" / "train.log").read_text()
    assert "bm25" in text.lower() and "encode" in text.lower()  # epoch 0 from BM25, epoch 1 from the model


def test_the_epoch_curves_figure(built):
    data = pq.read_table(built / "results" / "figures" / "epoch_curves.parquet").to_pandas()
    assert list(dict.fromkeys(data["run"])) == list(RUNS)
    assert data.groupby("run").size().tolist() == [2, 2, 2] and data["epoch"].tolist()[:2] == [1, 2]
    assert data.loc[data["run"] == "abs_random", "label"].iloc[0] == "Non-ABS-Random"
    assert (built / "results" / "figures" / "epoch_curves.png").stat().st_size > 5000
