"""Training on the tiny dense data (``tests/support/dense.py``): hard negatives for STAR, small runs' params, a
trainer of a few steps, one batch fitted by a method's step, and TensorBoard curves read back."""

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.data import ShuffledBatches, TrainQueries
from hardneg.dense.steps import ContrastiveMethod
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.dense.train_config import TrainConfig
from hardneg.dense.trainer import Trainer
from hardneg.io import artifacts
from hardneg.mining.negatives import mine_hard_negatives
from hardneg.pipeline.config import validate_params
from tests.support.dense import TINY_MODEL, build_tiny


def build_tiny_with_hardnegs(root: Path) -> dict:
    """``build_tiny``, and hard negatives (``hardnegs``) mined from an arbitrary ranking: what matters to the tests
    that use them is STAR's code path."""
    tiny = build_tiny(root)
    docs = TokenizedTexts(tiny["cache"], "corpus").row_ids
    queries = TokenizedTexts(tiny["cache"], "queries_train").row_ids
    rng = np.random.default_rng(0)
    picks = np.stack([rng.choice(len(docs), 30, replace=False) for _ in queries])
    run = pa.table({"qid": np.repeat(queries, 30), "docid": np.asarray(docs)[picks.ravel()],
                    "rank": np.tile(np.arange(1, 31, dtype=np.int32), len(queries)),
                    "score": np.tile(np.linspace(1, 0, 30, dtype=np.float32), len(queries))})
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    artifacts.write_table(mine_hard_negatives(run, qrels, depth=30), artifacts.HARDNEGS, root / "hardnegs.parquet")
    tiny["hardnegs"] = root / "hardnegs.parquet"
    return tiny


def tiny_params(**train) -> dict:
    """The params of a small run of the tiny model, no checkpoints, a log row every step; ``train`` overrides."""
    return validate_params({"model": {"builtin": TINY_MODEL, "doc_max_length": 64, "query_max_length": 16},
                            "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.002, "checkpoint_every": 0,
                                      "log_every": 1, **train}})


def tiny_trainer(tiny, checkpoint_dir, fingerprint="run-a", checkpoint_every=3, window=None):
    """An in-batch trainer of 8 steps (dropout on) with a fresh model, the same every call (``window``: a part of a
    longer schedule, :class:`hardneg.dense.train_config.Window`)."""
    params = validate_params({"model": {"builtin": TINY_MODEL, "doc_max_length": 64, "query_max_length": 16},
                              "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.002, "optimizer": "lamb",
                                        "checkpoint_every": checkpoint_every, "log_every": 1}})
    queries, corpus = TokenizedTexts(tiny["cache"], "queries_train"), TokenizedTexts(tiny["cache"], "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    data = TrainQueries(qrels, queries.row_ids, corpus.row_ids)
    tokenizer = load_tokenizer(tiny["tokenizer"])
    model = BiEncoder.create(ModelSpec.from_params(params["model"]), vocab_size=len(tokenizer),
                             pad_token_id=tokenizer.pad_token_id, max_length=64, seed=7)
    method = ContrastiveMethod(data, queries, corpus, negatives=None, per_query=0, loss="ce", temperature=1.0)
    config = TrainConfig.from_params(params["train"], 7)
    return Trainer(model, method, ShuffledBatches(len(data), 16, 7), config, checkpoint_dir=checkpoint_dir,
                   fingerprint=fingerprint, device="cpu", window=window)


def read_scalars(log_dir) -> dict[str, list[tuple[int, float]]]:
    """tag → [(step, value)] as TensorBoard shows them (purged steps dropped), every event kept."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    accumulator.Reload()
    return {tag: [(event.step, event.value) for event in accumulator.Scalars(tag)]
            for tag in accumulator.Tags()["scalars"]}


def expected_scalars(log) -> dict[str, list[tuple[int, float]]]:
    """The same, from train_log.parquet: every column but step and ``kept`` (the model kept, written after
    training), rows where it is a number (a column with none, such as the held-out memorisation check of a run
    without held-out queries, is no curve)."""
    rows = log.to_pylist()
    curves = {column: [(row["step"], row[column]) for row in rows if not math.isnan(row[column])]
              for column in log.column_names if column not in ("step", "kept")}
    return {column: points for column, points in curves.items() if points}


def assert_same_curves(got: dict, want: dict) -> None:
    assert set(got) == set(want), (sorted(set(got) - set(want)), sorted(set(want) - set(got)))
    for tag, points in want.items():
        assert [step for step, _ in got[tag]] == [step for step, _ in points], tag
        assert [value for _, value in got[tag]] == pytest.approx([value for _, value in points], rel=1e-6), tag


def fit_batch(step, model, batch, steps: int, lr: float = 1e-2) -> list[tuple[float, dict]]:
    """Train ``model`` with AdamW on one batch of a method's training ``step`` for ``steps`` steps, on the CPU:
    the loss and the step's statistics of each step."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    history = []
    for _ in range(steps):
        value, stats = step.loss(model, batch, "cpu")
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
        history.append((float(value.detach()), stats))
    return history
