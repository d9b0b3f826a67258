"""Byte-identical reruns: two trainings with the same seed save the same bytes (every saved weight is seeded),
and the tiny chain (dataset, BM25, tokenizer, warm-up, mining, STAR, ADORE, evaluation) run twice from nothing
through Snakemake, in two working directories, gives the same bytes in every artifact."""

import hashlib
import subprocess
from pathlib import Path

import pytest

from hardneg.pipeline.config import validate_params
from hardneg.pipeline.train import train_run
from tests.support import REPO
from tests.support.dense import TINY_MODEL, build_tiny
from tests.support.workflow import SNAKEMAKE, write_config

TINY_DENSE = {
    "model": {"vocab_size": 3000, "doc_max_length": 64, "query_max_length": 16, "builtin": TINY_MODEL},
    "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.001},
    "encode": {"shards": 1, "batch_size": 64},
    "search": {"top_k": 100},
}
CONFIG = {
    "seed": 4,
    "dataset": "tiny",
    "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 300, "docs_per_cluster": 30, "concept_vocab": 200,
                          "num_queries": {"train": 100, "test": 30}}},
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

# Not artifacts of the runs, or not reproducible by design:
# * logs/ and benchmarks/: each job's log and its time and memory, wall-clock figures by nature;
# * bm25/bm25_index/: Lucene writes a random segment id and the time of writing into its index files; the
#   rankings searched from it (bm25/runs/*) are compared;
# * <run>/tensorboard/: the live training curves, whose event files hold wall-clock times (and the host and
#   process in their names); train_log.parquet, the same numbers, is compared.
EXCLUDED_DIRS = {"logs", "benchmarks", "bm25_index", "tensorboard"}


def _digests(results: Path) -> dict[str, str]:
    return {str(path.relative_to(results)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(results.rglob("*"))
            if path.is_file() and not EXCLUDED_DIRS & set(path.relative_to(results).parts)}


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


@pytest.mark.slow
def test_two_cold_runs_give_byte_identical_artifacts(tmp_path):
    # The two runs go side by side, one core each: separate processes and folders share nothing, and every job
    # gets the same thread count in both.
    workdirs = [tmp_path / "first", tmp_path / "second"]
    runs = []
    for workdir in workdirs:
        write_config(workdir, CONFIG)
        runs.append(subprocess.Popen([SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
                                      "--cores", "1", TARGET], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True))
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
