"""TCT-ColBERT through the workflow on a tiny config: the ColBERT teacher trains and re-ranks BM25 (a ranking
of its own, evaluated like BM25's), the student starts from the teacher's encoder and distils from it, its
hard-negative variant mines with it and the HN+ teacher continues the first; the teacher's files stay as they
were while students train from them."""

import hashlib
import json

import pyarrow.parquet as pq
import pytest
from transformers import AutoModel

from tests.support.builds import copy_build
from tests.support.configs import DENSE_CONFIG, TINY_DENSE
from tests.support.workflow import snakemake, write_config

pytestmark = pytest.mark.slow

TEACHER = {"model": {**TINY_DENSE["model"], "markers": True, "pooling": "mean", "normalize": False},
           "train": {**TINY_DENSE["train"], "temperature": 1}, "colbert": {"dim": 16, "in_batch": True},
           "rerank": {"depth": 20}}
STUDENT = {"train": {**TINY_DENSE["train"], "temperature": 1}, "encode": TINY_DENSE["encode"],
           "search": TINY_DENSE["search"], "mining": {"depth": 30}}
CONFIG = {
    **{key: DENSE_CONFIG[key] for key in ("seed", "dataset", "datasets")},
    "runs": {
        "bm25": DENSE_CONFIG["runs"]["bm25"],
        "teacher": {"method": "colbert", "inputs": {"candidates": "bm25", "negatives": "bm25"}, "params": TEACHER},
        "tct": {"method": "tct", "inputs": {"init": "teacher", "teacher": "teacher", "negatives": "bm25"},
                "params": STUDENT},
        "teacher_hn": {"method": "colbert", "inputs": {"init": "teacher", "candidates": "bm25", "hard_negatives": "tct"},
                       "params": {"train": TEACHER["train"], "colbert": TEACHER["colbert"], "rerank": TEACHER["rerank"],
                                  "mining": {"depth": 30}}},
        "tct_hnp": {"method": "tct", "inputs": {"init": "tct", "teacher": "teacher_hn", "hard_negatives": "tct"},
                    "params": STUDENT},
    },
}


def digest(folder) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def built(builds):
    """The teacher first, then the students; the teacher's files as they were before the students trained. Built
    in a copy of the session's dense runs (tests/support/builds.py), whose dataset, BM25 run and tokenizer they
    share."""
    def make(workdir):
        copy_build(builds.dense_runs(), workdir)
        write_config(workdir, CONFIG)
        result = snakemake(workdir, "results/teacher/metrics.json")
        assert result.returncode == 0, result.stderr[-4000:]
        teacher_files = digest(workdir / "results" / "teacher" / "model")
        result = snakemake(workdir, "results/tct_hnp/metrics.json", "results/tct/metrics.json")
        assert result.returncode == 0, result.stderr[-4000:]
        return {"teacher_files": teacher_files}

    workdir, made = builds.build("workflow_tct", make)
    return workdir, made["teacher_files"]


def test_the_teacher_re_ranks_bm25s_top_k(built):
    workdir, _ = built
    results = workdir / "results"
    run = pq.read_table(results / "teacher" / "runs" / "test.parquet").to_pandas()
    bm25 = pq.read_table(results / "bm25" / "runs" / "test.parquet").to_pandas()
    for qid, ranked in run.groupby("qid"):
        top = bm25[(bm25.qid == qid) & (bm25["rank"] <= 20)]
        assert set(ranked.docid) == set(top.docid)  # exactly BM25's top 20, re-ordered
        assert ranked.sort_values("rank").score.is_monotonic_decreasing
    metrics = json.loads((results / "teacher" / "metrics.json").read_text())
    assert metrics["num_queries"] == 30 and metrics["pairwise_errors"]["total_is_lower_bound"]
    # a Hugging Face folder: the encoder loads on its own; colbert.json holds the dimension and markers
    assert AutoModel.from_pretrained(results / "teacher" / "model").config.hidden_size == 32
    assert json.loads((results / "teacher" / "model" / "colbert.json").read_text())["dim"] == 16


def test_students_distil_and_the_teacher_is_left_as_it_was(built):
    workdir, teacher_files = built
    results = workdir / "results"
    assert digest(results / "teacher" / "model") == teacher_files
    for run in ("tct", "tct_hnp"):
        meta = json.loads((results / run / "model" / "hardneg.json").read_text())
        assert meta["markers"] is not None and meta["pooling"] == "mean" and not meta["normalize"]
        log = pq.read_table(results / run / "train_log.parquet").to_pandas()
        assert "kd_loss" in log.columns and (log.kd_loss >= 0).all()
        timings = pq.read_table(results / run / "benchmarks" / "train_steps.parquet").to_pandas()
        assert timings.step.tolist() == log.step.tolist() and (timings.teacher > 0).all()
        assert json.loads((results / run / "metrics.json").read_text())["num_queries"] == 30
    assert (results / "tct_hnp" / "hardnegs.parquet").exists() and (results / "teacher_hn" / "hardnegs.parquet").exists()
