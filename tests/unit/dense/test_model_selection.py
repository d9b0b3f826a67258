"""Model selection on dev (train.keep): the saved model is the evaluated step with the best dev RR@10, the
training log and the model card say which, ties keep the earlier step, and the choice survives a checkpoint."""

import hashlib
import math

import pyarrow.parquet as pq
import pytest
import torch

from hardneg.dense.checkpoint import load_checkpoint, save_checkpoint
from hardneg.dense.model import BiEncoder
from hardneg.dense.model_selection import ModelSelection, resolve_keep
from hardneg.errors import ConfigError
from hardneg.io.train_log import read_kept
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.train import train_run
from tests.support.dense import build_tiny
from tests.support.training import tiny_params


def digest(model) -> str:
    """SHA-256 of a model's weights, key by key."""
    sha = hashlib.sha256()
    for key, tensor in sorted(model.state_dict().items()):
        sha.update(key.encode())
        sha.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return sha.hexdigest()


class Digests:
    """Trainer event: the digest of the model's weights after every optimiser step."""

    def __init__(self):
        self.by_step = {}

    def on_step_end(self, trainer, step, row):
        self.by_step[step] = digest(trainer.model)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("selection"))


def _train(tiny, out, **train):
    """24 steps of in-batch training at a learning rate whose dev RR@10 (the tiny set's test split) peaks at
    step 10 and then falls; dev every 2 steps."""
    digests = Digests()
    params = tiny_params(epochs=3, learning_rate=0.005, dev_every=2, dev_split="test", tensorboard=False, **train)
    train_run({"name": "inbatch", "method": "inbatch", "seed": 11, "params": params}, cache_dir=tiny["cache"],
              qrels_path=tiny["data"] / "qrels" / "train.parquet", model_dir=out / "model",
              log_path=out / "train_log.parquet", checkpoint_dir=out / "ckpt", tokenizer_source=tiny["tokenizer"],
              callbacks=[digests])
    return pq.read_table(out / "train_log.parquet").to_pylist(), digests.by_step


def test_the_saved_model_is_the_checkpoint_where_dev_peaks(tiny, tmp_path):
    rows, digests = _train(tiny, tmp_path)  # keep: auto, which is best for a run evaluating dev
    evaluated = [(row["step"], row["dev_rr10"]) for row in rows if not math.isnan(row["dev_rr10"])]
    best = max(evaluated, key=lambda pair: pair[1])  # max() keeps the first of equal values: the earlier step
    assert best[0] < rows[-1]["step"] and best[1] > evaluated[-1][1]  # dev peaks mid-training
    assert [row["step"] for row in rows if row["kept"]] == [best[0]]
    assert read_kept(tmp_path / "train_log.parquet") == {
        "keep": "best", "step": best[0], "steps": 24, "measure": "RR@10", "value": best[1],
        "last_value": evaluated[-1][1], "best_step": best[0]}
    saved = digest(BiEncoder.load(tmp_path / "model"))
    assert saved == digests[best[0]] and saved != digests[24]
    card = (tmp_path / "model" / "README.md").read_text()
    assert (f"| checkpoint kept | step {best[0]} of 24, the best dev RR@10 ({best[1]:.4f}; the last evaluated "
            f"step's {evaluated[-1][1]:.4f}) |") in card


def test_keep_last_saves_the_last_step(tiny, tmp_path):
    rows, digests = _train(tiny, tmp_path, keep="last")
    assert [row["step"] for row in rows if row["kept"]] == [24]
    assert digest(BiEncoder.load(tmp_path / "model")) == digests[24]
    kept = read_kept(tmp_path / "train_log.parquet")
    assert kept["keep"] == "last" and kept["step"] == 24 and kept["best_step"] < 24
    assert f"the last step's (24; dev RR@10 {kept['last_value']:.4f}; the best evaluated step was " \
           f"{kept['best_step']})" in (tmp_path / "model" / "README.md").read_text()


class _Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(2, 1)


def test_equal_values_keep_the_earlier_step_and_nan_is_no_evaluation():
    trainer, selection = _Trainer(), ModelSelection("RR@10")
    for step, value in [(1, 0.2), (2, math.nan), (3, 0.5), (4, 0.5), (5, 0.1)]:
        with torch.no_grad():
            trainer.model.weight.fill_(step)
        selection.on_step_end(trainer, step, {"dev_rr10": value})
    assert (selection.best_step, selection.best_value, selection.last) == (3, 0.5, (5, 0.1))
    model = torch.nn.Linear(2, 1)
    assert selection.restore(model) and torch.equal(model.weight, torch.full((1, 2), 3.0))
    assert selection.record("best", 6)["step"] == 3 and selection.record("last", 6)["step"] == 6


def test_no_evaluation_keeps_the_last_step_and_restores_nothing():
    selection = ModelSelection("RR@100")
    assert not selection.restore(torch.nn.Linear(2, 1))
    assert selection.record("best", 9) == {"keep": "best", "step": 9, "steps": 9}
    assert resolve_keep("auto", 0) == "last" and resolve_keep("auto", "epoch") == "best"
    with pytest.raises(ValueError, match="RR@5"):
        ModelSelection("RR@5")


def test_the_choice_survives_a_checkpoint(tmp_path):
    trainer, selection = _Trainer(), ModelSelection()
    selection.on_step_end(trainer, 4, {"dev_rr10": 0.3})
    selection.on_step_end(trainer, 8, {"dev_rr10": 0.1})
    save_checkpoint(tmp_path, {"step": 8, "callbacks": [selection.state_dict()]}, fingerprint="f", format=3, step=8)
    resumed = ModelSelection()
    resumed.load_state_dict(load_checkpoint(tmp_path, fingerprint="f", format=3)["callbacks"][0])
    assert (resumed.best_step, resumed.best_value, resumed.last) == (4, 0.3, (8, 0.1))
    assert all(torch.equal(resumed.weights[k], v) for k, v in selection.weights.items())
    fresh = ModelSelection()
    fresh.load_state_dict(ModelSelection().state_dict())
    assert fresh.best_step is None and fresh.best_value == -math.inf and fresh.weights is None


def test_keep_best_without_a_dev_evaluation_is_refused(config_with_run):
    config = config_with_run({"method": "inbatch", "params": {"train": {"keep": "best"}}})
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    assert error.value.key == "runs.probe.params.train.keep"
    assert "evaluates no dev split (set params.train.dev_every, or keep: last)" in str(error.value)


@pytest.fixture
def config_with_run():
    def make(run):
        return {"datasets": {"synthetic": {"adapter": "synthetic", "num_docs": 50,
                                           "num_queries": {"train": 10, "dev": 5, "test": 5}}},
                "runs": {"probe": run}, "targets": ["probe"]}
    return make

