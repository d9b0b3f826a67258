"""Resume: a STAR training process killed after a checkpoint and started again ends where an uninterrupted one
ends, its live TensorBoard log holding every step once (resuming in one process, and checkpoints that are not
resumed: tests/unit/dense/test_resume.py)."""

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from hardneg.dense.encode import encode_rows
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.evaluation.metrics import evaluate
from hardneg.io import artifacts
from hardneg.pipeline.config import validate_params
from tests.support.dense import TINY_MODEL, kill_after_checkpoint_and_resume
from tests.support.training import assert_same_curves, build_tiny_with_hardnegs, expected_scalars, read_scalars


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_with_hardnegs(tmp_path_factory.mktemp("resume"))


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
