"""Byte-identical reruns: the tiny chain (dataset, BM25, tokenizer, warm-up, mining, STAR, ADORE, evaluation) run
twice from nothing through Snakemake, in two working directories, gives the same bytes in every artifact (two
trainings with the same seed: tests/unit/dense/test_reproducible.py)."""

import subprocess

import pytest

from tests.support.configs import SYNTHETIC_300
from tests.support.dense import TINY_MODEL
from tests.support.reliability import tree_digests as _digests
from tests.support.workflow import command, write_config

TINY_DENSE = {
    "model": {"vocab_size": 3000, "doc_max_length": 64, "query_max_length": 16, "builtin": TINY_MODEL},
    "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.001},
    "encode": {"shards": 1, "batch_size": 64},
    "search": {"top_k": 100},
}
CONFIG = {
    "seed": 4,
    "dataset": "tiny",
    "datasets": {"tiny": dict(SYNTHETIC_300)},
    "runs": {
        "bm25": {"method": "bm25", "params": {"top_k": 100}},
        "warmup": {"method": "warmup", "inputs": {"negatives": "bm25"}, "params": TINY_DENSE},
        "star": {"method": "star", "inputs": {"init": "warmup", "negatives": "warmup", "bm25": "bm25"},
                 "params": {**TINY_DENSE, "mining": {"depth": 50}}},
        "adore_star": {"method": "adore", "inputs": {"docs": "star"},
                       "params": {"train": TINY_DENSE["train"], "adore": {"top_k": 50, "cut": 50},
                                  "search": {"top_k": 100}}},
    },
}
# ADORE's metrics need the whole chain: BM25 ranks the training split for warm-up negatives, the warm-up model
# mines STAR's hard negatives, STAR's documents and index are what ADORE trains against.
TARGET = "results/adore_star/metrics.json"


@pytest.mark.slow
def test_two_cold_runs_give_byte_identical_artifacts(tmp_path):
    # The two runs go side by side, one core each: separate processes and folders share nothing, and every job
    # gets the same thread count in both.
    workdirs = [tmp_path / "first", tmp_path / "second"]
    runs = []
    for workdir in workdirs:
        write_config(workdir, CONFIG)
        runs.append(subprocess.Popen(command(workdir, TARGET, cores=1), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True))
    for run in runs:
        stderr = run.communicate(timeout=600)[1]
        assert run.returncode == 0, stderr[-4000:]
    first, second = (_digests(workdir / "results") for workdir in workdirs)
    assert first.keys() == second.keys()
    assert [path for path in first if first[path] != second[path]] == []
    # what the comparison covered: every kind of artifact of the chain
    for path in ("datasets/tiny/corpus.parquet", "datasets/tiny/tokenizers/wordpiece-3000/tokenizer.json",
                 "bm25/runs/train.parquet", "warmup/model/model.safetensors", "warmup/train_log.parquet",
                 "warmup/embeddings/corpus.npy", "star/hardnegs.parquet", "star/model/model.safetensors",
                 "star/index/Flat.faiss", "adore_star/model/model.safetensors", "adore_star/train_log.parquet",
                 "adore_star/runs/test.parquet", "adore_star/metrics.json"):
        assert path in first, path
    assert any(path.startswith("datasets/tiny/tokenized/") and path.endswith(".npy") for path in first)
