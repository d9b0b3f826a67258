"""A stateful sampler and dev evaluation survive a training process killed after a checkpoint and resumed: the
resumed run's log, sampler state and weights are the uninterrupted run's (the trainer's events in one process:
tests/unit/dense/test_trainer_events.py)."""

import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from hardneg.dense.dev_eval import COLUMN
from tests.support.dense import build_tiny, kill_after_checkpoint_and_resume
from tests.support.training import tiny_params as _params

SEED = 4  # as tests/unit/dense/test_trainer_events.py


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("events"))


DRIVER = """
import json, logging, sys, time
import numpy as np
logging.basicConfig(level=logging.INFO)
from hardneg.io import artifacts
from hardneg.schema.files import config_hash
from hardneg.dense.data import ShuffledBatches, TrainQueries
from hardneg.dense.dev_eval import DevEvaluation
from hardneg.dense.backbone import ModelSpec
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.pipeline.train import build_method, write_train_log
from hardneg.dense.train_config import TrainConfig
from hardneg.dense.trainer import Trainer


class ReorderingSampler(ShuffledBatches):
    '''Shuffled batches in an order drawn from a generator kept in its state; counts the epochs it was asked.
    Asked again for an epoch after a resume, it would draw another order: only restored state and the
    checkpoint's batch list give the uninterrupted run's batches.'''

    def __init__(self, *args):
        super().__init__(*args)
        self.asked, self.rng = 0, np.random.default_rng(99)

    def batches(self, epoch, model=None):
        self.asked += 1
        batches = super().batches(epoch)
        return [batches[i] for i in self.rng.permutation(len(batches))]

    def state_dict(self):
        return {"asked": self.asked, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state):
        self.asked, self.rng.bit_generator.state = state["asked"], state["rng"]


args = json.loads(sys.argv[1])
resolved = args["resolved"]
params = resolved["params"]
config = TrainConfig.from_params(params["train"], resolved["seed"])
queries, corpus = TokenizedTexts(args["cache"], "queries_train"), TokenizedTexts(args["cache"], "corpus")
train = TrainQueries(artifacts.read_table(artifacts.QRELS, args["qrels"]), queries.row_ids, corpus.row_ids)
tokenizer = load_tokenizer(args["tokenizer"])
model = BiEncoder.create(ModelSpec.from_params(params["model"]), vocab_size=len(tokenizer),
                         pad_token_id=tokenizer.pad_token_id, max_length=64, seed=resolved["seed"])
sampler = ReorderingSampler(len(train), config.batch_size, config.seed)
dev = DevEvaluation.from_split(args["cache"], args["qrels"], config.dev_split, config.dev_every)
slow = lambda trainer, step: time.sleep(args["sleep"])
trainer = Trainer(model, build_method(resolved, train, queries, corpus, {}), sampler, config,
                  checkpoint_dir=args["checkpoints"], fingerprint=config_hash(resolved), device="cpu",
                  callbacks=[dev, slow])
rows = trainer.fit()
model.save(args["model"], tokenizer)
write_train_log(rows, args["log"])
with open(args["sampler"], "w") as handle:
    json.dump(sampler.state_dict(), handle)
trainer.discard_checkpoint()
"""


def _launch(tiny, out, sleep):
    resolved = {"name": "inbatch", "method": "inbatch", "seed": SEED,
                "params": _params(epochs=3, checkpoint_every=5, dev_every=4, dev_split="test")}
    args = {"resolved": resolved, "cache": str(tiny["cache"]), "tokenizer": str(tiny["tokenizer"]),
            "qrels": str(tiny["data"] / "qrels" / "train.parquet"), "model": str(out / "model"),
            "log": str(out / "log.parquet"), "checkpoints": str(out / "ckpt"), "sampler": str(out / "sampler.json"),
            "sleep": sleep}
    return subprocess.Popen([sys.executable, "-c", DRIVER, json.dumps(args)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _weights(model_dir):
    from safetensors.torch import load_file

    return {f"{path.name}/{key}": value for path in sorted(model_dir.rglob("*.safetensors"))
            for key, value in load_file(str(path)).items()}


@pytest.mark.slow
def test_stateful_sampler_and_dev_evaluation_survive_kill_and_resume(tiny, tmp_path):
    whole = _launch(tiny, tmp_path / "whole", 0.0)
    assert whole.wait(timeout=300) == 0, whole.stderr.read()

    kill_after_checkpoint_and_resume(lambda out, sleep: _launch(tiny, out, sleep), tmp_path / "killed")

    whole_log = pq.read_table(tmp_path / "whole" / "log.parquet").to_pandas()
    resumed_log = pq.read_table(tmp_path / "killed" / "log.parquet").to_pandas()
    assert list(whole_log.columns) == list(resumed_log.columns)
    assert {COLUMN, "grad_norm", "loss", "lr", "batch_accuracy"} <= set(whole_log.columns)
    assert whole_log.loc[whole_log[COLUMN].notna(), "step"].tolist() == [4, 8, 12, 16, 20, 24]
    for column in whole_log.columns:
        if not column.endswith("seconds"):
            np.testing.assert_array_equal(whole_log[column].to_numpy(), resumed_log[column].to_numpy(), column)
    whole_state = json.loads((tmp_path / "whole" / "sampler.json").read_text())
    assert whole_state["asked"] == 3
    assert json.loads((tmp_path / "killed" / "sampler.json").read_text()) == whole_state
    whole_weights, resumed_weights = _weights(tmp_path / "whole" / "model"), _weights(tmp_path / "killed" / "model")
    assert whole_weights.keys() == resumed_weights.keys() and whole_weights
    for key, value in whole_weights.items():
        assert torch.equal(value, resumed_weights[key]), key
