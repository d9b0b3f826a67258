"""Live training curves: every numeric column of every step's log row reaches the TensorBoard log while training
runs, only rank 0 writes, a new training drops an earlier attempt's curves, and a resumed attempt replaces the
steps after its checkpoint (what TensorBoard shows, read back with its own EventAccumulator). A real kill and
resume of a training process is checked in tests/integration/test_resume_kill.py."""

import math
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from hardneg.dense.tensorboard import TensorBoardLog, scalars
from hardneg.pipeline.config import validate_params
from hardneg.pipeline.train import train_run
from tests.support.dense import TINY_MODEL, build_tiny
from tests.support.training import assert_same_curves, expected_scalars, read_scalars

SEED = 4


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tensorboard"))


def test_scalars_are_the_finite_numbers_of_a_row():
    row = {"step": 3, "epoch": 0, "loss": 0.5, "lr": 1e-3, "dev_rr10": math.nan, "flag": True, "name": "x",
           "big": float("inf")}
    assert scalars(row) == {"epoch": 0.0, "loss": 0.5, "lr": 1e-3}


def _params(**train):
    return validate_params({"model": {"builtin": TINY_MODEL, "doc_max_length": 64, "query_max_length": 16},
                            "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.002, "checkpoint_every": 0,
                                      **train}})


def _train(tiny, out, **train):
    resolved = {"name": "inbatch", "method": "inbatch", "seed": SEED, "params": _params(**train)}
    train_run(resolved, cache_dir=tiny["cache"], qrels_path=tiny["data"] / "qrels" / "train.parquet",
              model_dir=out / "model", log_path=out / "train_log.parquet", checkpoint_dir=out / "ckpt",
              tokenizer_source=tiny["tokenizer"], tensorboard_dir=out / "tensorboard")


def test_every_step_of_a_training_reaches_the_log(tiny, tmp_path):
    # flushed every 3 steps and at the end; dev RR@10 only on the steps it is evaluated
    _train(tiny, tmp_path, log_every=3, dev_every=3, dev_split="test")
    log = pq.read_table(tmp_path / "train_log.parquet")
    assert {"loss", "lr", "grad_norm", "epoch", "batch_accuracy", "dev_rr10"} <= set(log.column_names)
    got = read_scalars(tmp_path / "tensorboard")
    assert [step for step, _ in got["dev_rr10"]] == [3, 6, 8]
    assert [step for step, _ in got["loss"]] == list(range(1, 9))
    assert_same_curves(got, expected_scalars(log))


def test_switched_off_there_is_no_log(tiny, tmp_path):
    _train(tiny, tmp_path, tensorboard=False)
    assert (tmp_path / "model").exists() and not (tmp_path / "tensorboard").exists()


def _trainer(total_steps, main=True):
    return SimpleNamespace(total_steps=total_steps, replicas=SimpleNamespace(is_main=main))


def _log_steps(log_dir, steps, value, total_steps=10, **options):
    event = TensorBoardLog(log_dir, log_every=1, **options)
    for step in steps:
        event.on_step_end(_trainer(total_steps), step, {"step": step, "loss": value + step})
    event.close()  # as a killed process would have flushed (log_every 1)


def test_a_resumed_attempt_replaces_the_steps_after_its_checkpoint(tmp_path):
    _log_steps(tmp_path, range(1, 7), 0.0)  # the first attempt got to step 6; its checkpoint was at step 4
    _log_steps(tmp_path, range(5, 11), 100.0)  # the resumed attempt: steps 5 to 10
    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 2
    assert read_scalars(tmp_path)["loss"] == [(s, float(s)) for s in range(1, 5)] + \
        [(s, 100.0 + s) for s in range(5, 11)]
    _log_steps(tmp_path, range(1, 4), 50.0)  # a new training from step 1: the earlier curves go
    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 1
    assert read_scalars(tmp_path)["loss"] == [(s, 50.0 + s) for s in range(1, 4)]


def test_only_rank_0_writes(tmp_path):
    event = TensorBoardLog(tmp_path / "tb", log_every=1)
    event.on_step_end(_trainer(3, main=False), 1, {"step": 1, "loss": 1.0})
    assert event.writer is None and not (tmp_path / "tb").exists()
