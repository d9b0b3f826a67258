"""The GPU paths: training in bf16 and fp16 autocast, encoding on CUDA, and two training processes over NCCL.

Marked ``gpu`` and skipped where no CUDA device is present (two processes need two devices)."""

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.encode import encode_rows
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.pipeline.config import validate_params
from hardneg.pipeline.train import train_run
from tests.support.dense import TINY_MODEL, build_tiny

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]
NO_DROPOUT = {**TINY_MODEL, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("gpu"))


def _train(tiny, out, **train):
    params = validate_params({
        "model": {"builtin": NO_DROPOUT, "doc_max_length": 64, "query_max_length": 16},
        "train": {"epochs": 2, "batch_size": 16, "learning_rate": 0.002, "checkpoint_every": 0, "log_every": 1,
                  "loss": "ranknet", **train}}, method="inbatch")
    resolved = {"name": "inbatch", "method": "inbatch", "seed": 3, "params": params}
    return train_run(resolved, cache_dir=tiny["cache"], qrels_path=tiny["data"] / "qrels" / "train.parquet",
                     model_dir=out / "model", log_path=out / "log.parquet", checkpoint_dir=out / "ckpt",
                     tokenizer_source=tiny["tokenizer"], inputs={})


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_low_precision_training_on_cuda_follows_fp32(tiny, tmp_path, precision, caplog):
    with caplog.at_level("WARNING"):
        low = _train(tiny, tmp_path / precision, device="cuda", precision=precision)
    assert "not supported" not in caplog.text  # it really trained in that precision
    full = _train(tiny, tmp_path / "fp32", device="cuda", precision="fp32")
    low_loss, full_loss = np.array([r["loss"] for r in low]), np.array([r["loss"] for r in full])
    assert np.isfinite(low_loss).all() and len(low_loss) == len(full_loss) == 16
    assert low_loss[-4:].mean() < low_loss[:4].mean()  # it learns
    np.testing.assert_allclose(low_loss, full_loss, rtol=0.1, atol=0.02)


def test_encoding_on_cuda_matches_cpu(tiny):
    tokenizer = load_tokenizer(tiny["tokenizer"])
    spec = ModelSpec.from_params(validate_params({"model": {"builtin": NO_DROPOUT}})["model"])
    model = BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, max_length=64,
                             seed=1)
    texts = TokenizedTexts(tiny["cache"], "corpus")
    rows = np.arange(len(texts))
    cpu = encode_rows(model, texts, rows, "doc", device="cpu")
    cuda = encode_rows(model, texts, rows, "doc", device="cuda")
    np.testing.assert_allclose(cuda, cpu, atol=1e-4)
    for precision in ("bf16", "fp16"):
        low = encode_rows(model, texts, rows, "doc", device="cuda", precision=precision)
        cosine = np.sum(low * cpu, 1) / np.linalg.norm(low, axis=1) / np.linalg.norm(cpu, axis=1)
        assert cosine.min() > 0.99, precision


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="two processes over NCCL need two CUDA devices")
def test_two_processes_over_nccl_train_like_one(tiny, tmp_path):
    one = _train(tiny, tmp_path / "one", device="cuda", processes=1)
    two = _train(tiny, tmp_path / "two", device="cuda", processes=2, gpus=2)
    logs = [pq.read_table(tmp_path / name / "log.parquet").to_pandas() for name in ("one", "two")]
    assert len(one) == len(two) == 16
    np.testing.assert_allclose(logs[0]["loss"], logs[1]["loss"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(logs[0]["grad_norm"], logs[1]["grad_norm"], rtol=1e-3)
