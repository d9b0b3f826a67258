"""Stages run by hand (python -m hardneg.stage) get the job Snakemake would run: same inputs, same outputs."""

import subprocess
import sys

import pytest

from tests.support.configs import DENSE_CONFIG, TINY
from tests.support.workflow import snakemake, write_config

pytestmark = pytest.mark.slow


def stage(workdir, *args):
    return subprocess.run([sys.executable, "-m", "hardneg.stage", *args, "--directory", str(workdir)],
                          capture_output=True, text=True)


def test_a_stage_by_hand_writes_what_the_workflow_writes(tmp_path):
    by_hand, by_workflow = tmp_path / "hand", tmp_path / "workflow"
    for workdir in (by_hand, by_workflow):
        write_config(workdir, TINY)
    result = stage(by_hand, "prepare_dataset", "--dataset", "tiny")
    assert result.returncode == 0, result.stderr
    assert "prepared 400 documents" in (by_hand / "results/datasets/tiny/logs/prepare_dataset.log").read_text()
    result = stage(by_hand, "bm25_index", "--run", "bm25", "--console")
    assert result.returncode == 0, result.stderr
    assert "bm25" in result.stderr.lower()  # --console: the log goes to the terminal
    result = stage(by_hand, "bm25_search", "--run", "bm25", "--split", "test")
    assert result.returncode == 0, result.stderr
    assert snakemake(by_workflow, "results/bm25/rankings/test.parquet").returncode == 0
    for rel in ("datasets/tiny/corpus.parquet", "datasets/tiny/qrels/test.parquet", "bm25/rankings/test.parquet"):
        assert (by_hand / "results" / rel).read_bytes() == (by_workflow / "results" / rel).read_bytes(), rel


def test_a_stage_names_what_is_missing(tmp_path):
    write_config(tmp_path, TINY)
    result = stage(tmp_path, "bm25_search", "--run", "bm25", "--split", "test")
    assert result.returncode == 2
    assert "lacks inputs" in result.stderr and "index: results/bm25/bm25_index" in result.stderr
    result = stage(tmp_path, "bm25_search", "--run", "bm25")
    assert result.returncode == 2 and "needs --split" in result.stderr
    result = stage(tmp_path, "bm25_search", "--run", "bm25", "--split", "test", "--shard", "1")
    assert result.returncode == 2 and "takes no --shard" in result.stderr
    result = stage(tmp_path, "train_everything", "--run", "bm25")
    assert result.returncode == 2 and "no stage 'train_everything'; stages: " in result.stderr


def test_a_search_by_hand_is_the_runs_own_unless_another_index_is_named(tmp_path):
    """dense_search and evaluate serve a run's own index and another's (the wildcard by_index): without --index
    the stage is the run's own, with it the other index's."""
    write_config(tmp_path, DENSE_CONFIG)
    own = stage(tmp_path, "dense_search", "--run", "star", "--split", "test")
    assert own.returncode == 2 and "index: results/star/index/Flat.faiss" in own.stderr
    other = stage(tmp_path, "dense_search", "--run", "star", "--split", "test", "--index", "PQ8")
    assert other.returncode == 2 and "index: results/star/index/PQ8.faiss" in other.stderr
    evaluated = stage(tmp_path, "evaluate", "--run", "star", "--index", "PQ8")
    assert evaluated.returncode == 2
    assert "rankings: results/star/by_index/PQ8/rankings/test.parquet" in evaluated.stderr
