"""Trainer events and state: dev RR@10 and the pre-clip gradient norm in the log (a stateful sampler and a dev
evaluation that survive a kill and a resume exactly: tests/integration/test_trainer_kill.py)."""

import copy
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.data import ShuffledBatches, TrainQueries
from hardneg.dense.dev_eval import COLUMN, DevEvaluation
from hardneg.dense.steps import ContrastiveMethod
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.dense.train_config import TrainConfig
from hardneg.dense.trainer import Trainer
from hardneg.errors import ConfigError
from hardneg.io import artifacts
from hardneg.pipeline.train import train_run
from tests.support.dense import build_tiny
from tests.support.training import tiny_params as _params

SEED = 4


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("events"))


def _setup(tiny, **train):
    """Model, in-batch method and config of a small run on the tiny data."""
    params = _params(**train)
    queries, corpus = TokenizedTexts(tiny["cache"], "queries_train"), TokenizedTexts(tiny["cache"], "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    data = TrainQueries(qrels, queries.row_ids, corpus.row_ids)
    tokenizer = load_tokenizer(tiny["tokenizer"])
    model = BiEncoder.create(ModelSpec.from_params(params["model"]), vocab_size=len(tokenizer),
                             pad_token_id=tokenizer.pad_token_id, max_length=64, seed=SEED)
    method = ContrastiveMethod(data, queries, corpus, negatives=None, per_query=0, loss="ce",
                               temperature=params["train"]["temperature"])
    return model, method, data, TrainConfig.from_params(params["train"], SEED)


def _reference_rr10(model, tiny) -> float:
    """RR@10 by hand: plain torch encoding, a full sort, the first relevant rank."""
    queries, corpus = TokenizedTexts(tiny["cache"], "queries_test"), TokenizedTexts(tiny["cache"], "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "test.parquet").to_pylist()
    relevant = {}
    for row in qrels:
        if row["relevance"] >= 1:
            relevant.setdefault(row["qid"], set()).add(row["docid"])
    model.eval()
    with torch.no_grad():
        q = model.encode_queries(queries.batch(np.arange(len(queries)))).numpy()
        d = model.encode_docs(corpus.batch(np.arange(len(corpus)))).numpy()
    model.train()
    position = {qid: i for i, qid in enumerate(queries.row_ids)}
    values = []
    for qid, docs in relevant.items():
        ranking = np.argsort(-(q[position[qid]] @ d.T), kind="stable")[:10]
        hits = [rank for rank, row in enumerate(ranking, 1) if corpus.row_ids[row] in docs]
        values.append(1.0 / hits[0] if hits else 0.0)
    return float(np.mean(values))


class _Reference:
    """Event after DevEvaluation: on evaluated steps, the independent RR@10 of the same model."""

    def __init__(self, tiny):
        self.tiny, self.pairs = tiny, []

    def on_step_end(self, trainer, step, row):
        if not math.isnan(row[COLUMN]):
            self.pairs.append((step, row[COLUMN], _reference_rr10(trainer.model, self.tiny)))


def test_dev_rr10_equals_an_independent_computation(tiny, tmp_path):
    model, method, data, config = _setup(tiny)
    dev = DevEvaluation.from_split(tiny["cache"], tiny["data"] / "qrels" / "train.parquet", "test", every=3)
    reference = _Reference(tiny)
    trainer = Trainer(model, method, ShuffledBatches(len(data), config.batch_size, SEED), config,
                      checkpoint_dir=tmp_path, fingerprint="f", device="cpu", callbacks=[dev, reference])
    rows = trainer.fit()
    assert len(rows) == 8
    assert [r["step"] for r in rows if not math.isnan(r[COLUMN])] == [3, 6, 8]  # every 3 steps and the last
    assert [step for step, _, _ in reference.pairs] == [3, 6, 8]
    for step, logged, expected in reference.pairs:
        assert logged == pytest.approx(expected, abs=1e-9), step
    assert len({round(v, 9) for _, v, _ in reference.pairs}) > 1  # the model moved between evaluations


def test_dev_evaluation_at_each_epoch_s_end_gives_rr10_and_rr100(tiny, tmp_path):
    model, method, data, config = _setup(tiny, epochs=2)
    dev = DevEvaluation.from_split(tiny["cache"], tiny["data"] / "qrels" / "train.parquet", "test", every="epoch")
    reference = _Reference(tiny)
    rows = Trainer(model, method, ShuffledBatches(len(data), config.batch_size, SEED), config,
                   checkpoint_dir=tmp_path, fingerprint="f", device="cpu", callbacks=[dev, reference]).fit()
    assert len(rows) == 16 and [r["epoch"] for r in rows] == [0] * 8 + [1] * 8
    assert [r["step"] for r in rows if not math.isnan(r["dev_rr100"])] == [8, 16]  # the epochs' last steps
    for step, logged, expected in reference.pairs:
        assert logged == pytest.approx(expected, abs=1e-9), step
    for row in rows[7], rows[15]:
        assert row["dev_rr100"] >= row[COLUMN] > 0  # RR@100 counts every hit RR@10 counts, and more
    with pytest.raises(ValueError, match="every >= 1 or 'epoch'"):
        DevEvaluation.from_split(tiny["cache"], tiny["data"] / "qrels" / "train.parquet", "test", every=0)


class _OneBatch:
    """The first 16 training queries, one batch per epoch."""

    def num_batches(self, epoch):
        return 1

    def batches(self, epoch, model=None):
        return [np.arange(16)]


@pytest.mark.parametrize("max_grad_norm", [None, 0.01])
def test_grad_norm_is_the_pre_clip_norm(tiny, tmp_path, max_grad_norm):
    model, method, _, config = _setup(tiny, max_grad_norm=max_grad_norm)
    reference = copy.deepcopy(model).train()
    rows = Trainer(model, method, _OneBatch(), config, checkpoint_dir=tmp_path, fingerprint="f",
                   device="cpu").fit()
    torch.manual_seed(SEED)  # as the trainer does before its first step: the same dropout masks
    batch = method.make_batch(np.arange(16), np.random.default_rng([SEED, 0, 0]))
    loss, _ = method.loss(reference, batch, torch.device("cpu"))
    loss.backward()
    norm = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in reference.parameters() if p.grad is not None))
    assert rows[0]["loss"] == pytest.approx(float(loss.detach()), rel=1e-6)
    assert rows[0]["grad_norm"] == pytest.approx(norm, rel=1e-5)
    if max_grad_norm:
        assert norm > 10 * max_grad_norm  # the logged norm is the one before clipping


def _train_run(tiny, out, **train):
    resolved = {"name": "inbatch", "method": "inbatch", "seed": SEED, "params": _params(**train)}
    return train_run(resolved, cache_dir=tiny["cache"], qrels_path=tiny["data"] / "qrels" / "train.parquet",
                     model_dir=out / "model", log_path=out / "log.parquet", checkpoint_dir=out / "ckpt",
                     tokenizer_source=tiny["tokenizer"])


def test_train_run_logs_dev_rr10_and_grad_norm_on_every_row(tiny, tmp_path):
    _train_run(tiny, tmp_path, dev_every=3, dev_split="test")
    log = pq.read_table(tmp_path / "log.parquet").to_pandas()
    assert log.loc[log[COLUMN].notna(), "step"].tolist() == [3, 6, 8]
    assert (log["grad_norm"] > 0).all()


def test_a_missing_dev_split_is_a_config_error(tiny, tmp_path):
    with pytest.raises(ConfigError) as error:
        _train_run(tiny, tmp_path, dev_every=3, dev_split="dev")
    assert error.value.key == "params.train.dev_split"
    assert "queries_dev.ids.npy" in error.value.message
    assert not (tmp_path / "model").exists()
