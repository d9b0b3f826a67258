"""The dense part of the workflow on a tiny config: warm-up, baselines and STAR each get metrics, re-running is
a no-op, and a STAR hyper-parameter change re-runs STAR and what follows it, nothing before."""

import json
import stat

import pyarrow.parquet as pq
import pytest

from tests.support.builds import copy_build
from tests.support.configs import DENSE_CONFIG as CONFIG
from tests.support.configs import DENSE_TARGETS as TARGETS
from tests.support.configs import TINY_DENSE
from tests.support.workflow import snakemake, write_config

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def built(builds):
    """The runs built under umask 002 (a group's shared project folder), which every artifact keeps: the session's
    build (tests/support/builds.py), which other tests extend in copies of their own."""
    return builds.dense_runs()


def test_every_artifact_keeps_the_users_umask(built):
    """Under umask 002 files are 0664 and folders 0775 (models, indexes, embeddings, the tokenized cache, runs,
    logs): nothing is left private to its writer, so a group can share the results."""
    wrong = []
    for path in [built / "results", *(built / "results").rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        expected = 0o775 if path.is_dir() else 0o664
        if not path.is_symlink() and mode != expected:
            wrong.append(f"{path.relative_to(built)}: {oct(mode)}")
    assert not wrong, wrong[:20]
    assert len(list((built / "results").rglob("*"))) > 100


def test_every_dense_run_has_metrics_and_artifacts(built):
    results = built / "results"
    for run in ("warmup", "randneg", "inbatch", "star"):
        metrics = json.loads((results / run / "metrics.json").read_text())
        assert metrics["num_queries"] == 30 and 0.0 <= metrics["measures"]["RR@10"] <= 1.0
        log = pq.read_table(results / run / "train_log.parquet").to_pandas()
        assert {"step", "loss", "lr"} <= set(log.columns) and log["step"].tolist() == list(range(1, len(log) + 1))
        assert (results / run / "model" / "config.json").exists()
        assert not (results / run / "checkpoints" / "state.json").exists()
        assert not (results / run / "embeddings" / "shards").exists() or \
            not list((results / run / "embeddings" / "shards").iterdir())  # temporary shards removed
    hardnegs = pq.read_table(results / "star" / "hardnegs.parquet")
    qrels = pq.read_table(results / "datasets" / "tiny" / "qrels" / "train.parquet").to_pandas()
    positives = set(zip(qrels.loc[qrels.relevance >= 1, "qid"], qrels.loc[qrels.relevance >= 1, "docid"]))
    assert hardnegs.num_rows > 0
    assert not positives & set(zip(hardnegs["qid"].to_pylist(), hardnegs["docid"].to_pylist()))
    assert "Suspected false negatives" in (results / "star" / "hardnegs_audit.md").read_text() or \
        "suspected" in (results / "star" / "hardnegs_audit.md").read_text().lower()


def test_rerun_is_a_no_op(built, tmp_path):
    built = copy_build(built, tmp_path / "wf")
    result = snakemake(built, *TARGETS)
    assert result.returncode == 0 and "Nothing to be done" in result.stdout + result.stderr


def test_star_hyperparameter_change_reruns_only_star(built, tmp_path):
    built = copy_build(built, tmp_path / "wf")
    config = json.loads(json.dumps(CONFIG))
    config["runs"]["star"]["params"]["train"] = {**TINY_DENSE["train"], "learning_rate": 0.0005}
    write_config(built, config)
    try:
        result = snakemake(built, *TARGETS, "-n", "--quiet", "rules")
    finally:
        write_config(built, CONFIG)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    jobs = {line.split()[0] for line in out.splitlines() if line.strip() and line.split()[-1].isdigit()}
    assert "train_dense" in jobs and "evaluate" in jobs and "dense_search" in jobs
    for upstream in ("prepare_dataset", "bm25_index", "bm25_search", "tokenize", "train_tokenizer",
                     "candidate_pool", "select_hard_negatives", "positive_scores", "near_duplicates"):
        assert upstream not in jobs, upstream
    assert "train_dense        1" in out or "train_dense              1" in out or \
        any(line.split()[:2] == ["train_dense", "1"] for line in out.splitlines())


def test_job_logs_hold_no_library_chatter(built):
    """Faiss's loader lines, transformers' weight-loading bars and load reports stay out of the job logs; hardneg's
    own lines (training steps, encoding progress) are there."""
    logs = {path: path.read_text() for path in (built / "results").rglob("logs/*.log")}
    assert any("hardneg.dense.trainer: step" in text for text in logs.values())
    for path, text in logs.items():
        for chatter in ("INFO faiss", "Loading weights", "LOAD REPORT", "it/s]"):
            assert chatter not in text, f"{path.relative_to(built)}: {chatter!r}"
