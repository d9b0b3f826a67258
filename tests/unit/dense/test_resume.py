"""Resume: a STAR training process killed after a checkpoint and started again ends where an uninterrupted one
ends; a resumed trainer gives the uninterrupted weights bit for bit; a checkpoint of another configuration is
not resumed; and a checkpoint never runs code (no pickle is ever loaded)."""

import hashlib
import json
import logging
import os
import pickle
import shlex
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
import torch

from hardneg.dense.checkpoint import STATE
from hardneg.dense.encode import encode_rows
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.trainer import CHECKPOINT_FORMAT
from hardneg.evaluation.metrics import evaluate
from hardneg.io import artifacts
from hardneg.pipeline.config import validate_params
from tests.support.dense import TINY_MODEL, kill_after_checkpoint_and_resume
from tests.support.training import assert_same_curves, build_tiny_with_hardnegs, expected_scalars, read_scalars
from tests.support.training import tiny_trainer as _trainer

DRIVER = """
import json, logging, sys, time
logging.basicConfig(level=logging.INFO)
from hardneg.pipeline.train import train_run
args = json.loads(sys.argv[1])
slow = lambda trainer, step: time.sleep(args["sleep"])
train_run(args["resolved"], cache_dir=args["cache"], qrels_path=args["qrels"], model_dir=args["model"],
          log_path=args["log"], checkpoint_dir=args["checkpoints"], tokenizer_source=args["tokenizer"],
          inputs={"hard_negatives": args["hardnegs"]}, callbacks=[slow], tensorboard_dir=args["tensorboard"])
"""


def _resolved():
    return {"name": "star", "method": "star", "seed": 11, "dataset": {"name": "tiny"}, "params": validate_params({
        "model": {"name": "builtin", "pooling": "mean", "projection_dim": None, "shared": True,
                  "builtin": TINY_MODEL, "doc_max_length": 64, "query_max_length": 16},
        "train": {"split": "train", "epochs": 3, "batch_size": 16, "learning_rate": 0.002, "optimizer": "lamb",
                  "warmup_ratio": 0.1, "checkpoint_every": 4, "log_every": 1, "loss": None, "max_grad_norm": 1.0,
                  "temperature": 1.0},
        "negatives": {"per_query": 2}})}


def _launch(tiny, out, sleep):
    args = {"resolved": _resolved(), "cache": str(tiny["cache"]), "tokenizer": str(tiny["tokenizer"]),
            "qrels": str(tiny["data"] / "qrels" / "train.parquet"), "hardnegs": str(tiny["hardnegs"]),
            "model": str(out / "model"), "log": str(out / "train_log.parquet"), "checkpoints": str(out / "ckpt"),
            "tensorboard": str(out / "tensorboard"), "sleep": sleep}
    return subprocess.Popen([sys.executable, "-c", DRIVER, json.dumps(args)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _test_metrics(tiny, model_dir):
    model = BiEncoder.load(model_dir)
    docs, queries = TokenizedTexts(tiny["cache"], "corpus"), TokenizedTexts(tiny["cache"], "queries_test")
    scores = encode_rows(model, queries, np.arange(len(queries)), "query") @ \
        encode_rows(model, docs, np.arange(len(docs)), "doc").T
    top = np.argsort(-scores, axis=1)[:, :100]
    run = pa.table({"qid": np.repeat(queries.row_ids, 100), "docid": np.asarray(docs.row_ids)[top.ravel()],
                    "rank": np.tile(np.arange(1, 101, dtype=np.int32), len(queries)),
                    "score": np.take_along_axis(scores, top, 1).ravel().astype(np.float32)})
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "test.parquet")
    return evaluate(run, qrels, ["RR@10", "nDCG@10", "R@100"])[0]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    return build_tiny_with_hardnegs(root)


@pytest.mark.slow
def test_killed_and_resumed_training_matches_uninterrupted(tiny, tmp_path):
    whole = _launch(tiny, tmp_path / "whole", 0.0)
    assert whole.wait(timeout=300) == 0, whole.stderr.read()

    kill_after_checkpoint_and_resume(lambda out, sleep: _launch(tiny, out, sleep), tmp_path / "killed")
    assert not list((tmp_path / "killed" / "ckpt").iterdir())  # removed once the model is saved

    import pyarrow.parquet as pq

    log_whole = pq.read_table(tmp_path / "whole" / "train_log.parquet").to_pandas()
    log_resumed = pq.read_table(tmp_path / "killed" / "train_log.parquet").to_pandas()
    assert list(log_whole["step"]) == list(log_resumed["step"])
    np.testing.assert_allclose(log_whole["loss"], log_resumed["loss"], rtol=1e-4)
    # the live TensorBoard log: one event file per attempt, yet every step once, as in the final log
    assert len(list((tmp_path / "killed" / "tensorboard").glob("events.out.tfevents.*"))) == 2
    curves = read_scalars(tmp_path / "killed" / "tensorboard")
    assert [step for step, _ in curves["loss"]] == list(log_resumed["step"])
    assert_same_curves(curves, expected_scalars(pq.read_table(tmp_path / "killed" / "train_log.parquet")))

    whole_metrics, resumed_metrics = _test_metrics(tiny, tmp_path / "whole" / "model"), \
        _test_metrics(tiny, tmp_path / "killed" / "model")
    for measure, value in whole_metrics.items():
        assert resumed_metrics[measure] == pytest.approx(value, abs=1e-3), measure


# ------------------------------------------------------------------------------- checkpoints in one process
def _same_rows(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys() and all(x[k] == y[k] or (x[k] != x[k] and y[k] != y[k]) for k in x), (x, y)


def test_a_resumed_trainer_ends_with_the_uninterrupted_weights(tiny, tmp_path, caplog):
    """The checkpoint left at step 6 (of 8) holds every state: a fresh trainer resumes it and ends bit for bit
    where the uninterrupted run ended (model, optimiser and random-number states round-trip exactly)."""
    whole = _trainer(tiny, tmp_path / "ckpt")
    rows = whole.fit()
    assert len(rows) == 8 and not [key for key in rows[0] if "seconds" in key]  # no wall-clock in the log
    saved = json.loads((tmp_path / "ckpt" / STATE).read_text())
    assert saved["step"] == 6 and saved["format"] == CHECKPOINT_FORMAT
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == [STATE, "tensors-6.safetensors"]
    resumed = _trainer(tiny, tmp_path / "ckpt")
    with caplog.at_level(logging.INFO, logger="hardneg"):
        resumed_rows = resumed.fit()
    assert "resuming from step 6 of 8" in caplog.text
    _same_rows(rows, resumed_rows)
    whole_state, resumed_state = whole.model.state_dict(), resumed.model.state_dict()
    assert whole_state.keys() == resumed_state.keys()
    for key, value in whole_state.items():
        assert torch.equal(value, resumed_state[key]), key
    resumed.discard_checkpoint()
    assert not list((tmp_path / "ckpt").iterdir())


def test_a_checkpoint_of_another_configuration_is_not_resumed(tiny, tmp_path, caplog):
    _trainer(tiny, tmp_path / "ckpt", fingerprint="run-a").fit()
    assert (tmp_path / "ckpt" / STATE).exists()
    fresh = _trainer(tiny, tmp_path / "fresh", checkpoint_every=0).fit()
    with caplog.at_level(logging.INFO, logger="hardneg"):
        rows = _trainer(tiny, tmp_path / "ckpt", fingerprint="run-b", checkpoint_every=0).fit()
    assert "belongs to another configuration" in caplog.text and "resuming" not in caplog.text
    _same_rows(rows, fresh)  # trained from the start


class _RunsCode:
    """Unpickled, it runs a shell command that creates ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(self.marker)}",)


def test_a_crafted_checkpoint_runs_no_code(tiny, tmp_path, caplog):
    """A pickle whose loading runs a command, placed where the trainer looks (as the pickled ``state.pt`` of the
    older format, and as the tensor file a valid-looking ``state.json`` names, with its true SHA-256), is never
    unpickled: the trainer logs why it ignores it and trains from the start."""
    probe = tmp_path / "probe"
    pickle.loads(pickle.dumps(_RunsCode(probe)))
    assert probe.exists()  # the payload is live: loading it with pickle runs the command

    marker = tmp_path / "marker"
    payload = pickle.dumps({"format": CHECKPOINT_FORMAT, "fingerprint": "run-a", "step": 6, "x": _RunsCode(marker)})
    fresh = _trainer(tiny, tmp_path / "fresh", checkpoint_every=0).fit()

    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "state.pt").write_bytes(payload)
    with caplog.at_level(logging.INFO, logger="hardneg"):
        rows = _trainer(tiny, legacy, checkpoint_every=0).fit()
    assert not marker.exists()
    assert "ignoring" in caplog.text and "state.pt" in caplog.text and "resuming" not in caplog.text
    _same_rows(rows, fresh)

    crafted = tmp_path / "crafted"
    crafted.mkdir()
    (crafted / "tensors-6.safetensors").write_bytes(payload)
    (crafted / STATE).write_text(json.dumps({
        "format": CHECKPOINT_FORMAT, "fingerprint": "run-a", "step": 6, "tensors": "tensors-6.safetensors",
        "tensors_sha256": hashlib.sha256(payload).hexdigest(), "state": {"model": {"$tensor": "t0"}}}))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="hardneg"):
        rows = _trainer(tiny, crafted, checkpoint_every=0).fit()
    assert not marker.exists()
    assert "cannot be read" in caplog.text and "resuming" not in caplog.text
    _same_rows(rows, fresh)
