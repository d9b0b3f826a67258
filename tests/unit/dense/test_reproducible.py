"""Two trainings with the same seed save the same bytes: every saved weight is seeded (the whole tiny chain built
twice from nothing through Snakemake: tests/reliability/test_reliability_kills.py)."""

from hardneg.pipeline.config import validate_params
from hardneg.pipeline.train import train_run
from tests.support.dense import TINY_MODEL, build_tiny
from tests.support.reliability import digests as _digests


def test_two_trainings_with_one_seed_save_the_same_bytes(tmp_path):
    """Separate query and document encoders with projection heads: every weight of a fresh model (both
    backbones, both heads) and every training step (dropout) come from the seed."""
    tiny = build_tiny(tmp_path / "tiny")
    params = validate_params({"model": {"builtin": TINY_MODEL, "doc_max_length": 64, "query_max_length": 16,
                                        "shared": False, "projection_dim": 8},
                              "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.002, "checkpoint_every": 0}})
    for name in ("first", "second"):
        train_run({"name": "inbatch", "method": "inbatch", "seed": 9, "params": params}, cache_dir=tiny["cache"],
                  qrels_path=tiny["data"] / "qrels" / "train.parquet", model_dir=tmp_path / name / "model",
                  log_path=tmp_path / name / "train_log.parquet", checkpoint_dir=tmp_path / name / "ckpt",
                  tokenizer_source=tiny["tokenizer"])
    first, second = _digests(tmp_path / "first"), _digests(tmp_path / "second")
    assert {"model/model.safetensors", "model/doc_encoder/model.safetensors", "model/head.safetensors",
            "train_log.parquet"} <= first.keys()
    assert first == second
