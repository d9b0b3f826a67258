"""Byte-identical reruns: the tiny chain (dataset, BM25, tokenizer, warm-up, mining, STAR, ADORE, evaluation) run
twice from nothing through Snakemake, in two working directories at two times, gives the same bytes in every
artifact (two trainings with the same seed: tests/unit/dense/test_reproducible.py). The first run is the session's
build of the chain (tests/support/builds.py, ``star_chain``), the second is made here with the same command line,
so every job gets the same thread count in both."""

import pytest

from tests.support.configs import STAR_CONFIG, STAR_TARGETS
from tests.support.reliability import tree_digests as _digests
from tests.support.workflow import output_of, snakemake, write_config


@pytest.mark.slow
def test_two_cold_runs_give_byte_identical_artifacts(builds, tmp_path):
    first = builds.star_chain()
    write_config(tmp_path, STAR_CONFIG)
    second = snakemake(tmp_path, *STAR_TARGETS, timeout=900)
    assert second.returncode == 0, output_of(second)[-4000:]
    first, second = (_digests(workdir / "results") for workdir in (first, tmp_path))
    assert first.keys() == second.keys()
    assert [path for path in first if first[path] != second[path]] == []
    # what the comparison covered: every kind of artifact of the chain
    for path in ("datasets/tiny/corpus.parquet", "datasets/tiny/tokenizers/wordpiece-2000/tokenizer.json",
                 "bm25/runs/train.parquet", "warmup/model/model.safetensors", "warmup/train_log.parquet",
                 "warmup/embeddings/corpus.npy", "star/hardnegs.parquet", "star/model/model.safetensors",
                 "star/index/Flat.faiss", "adore_star/model/model.safetensors", "adore_star/train_log.parquet",
                 "adore_star/runs/test.parquet", "adore_star/metrics.json"):
        assert path in first, path
    assert any(path.startswith("datasets/tiny/tokenized/") and path.endswith(".npy") for path in first)
