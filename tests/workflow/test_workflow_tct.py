"""TCT-ColBERT through the workflow on a tiny config: the ColBERT teacher trains and re-ranks BM25 (a ranking
of its own, evaluated like BM25's), the student starts from the teacher's encoder and distils from it, its
hard-negative variant mines with it and the HN+ teacher continues the first; the teacher's files stay as they
were while students train from them; a STAR run distils from the teacher's scores of its pool."""

import hashlib
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from transformers import AutoModel

from hardneg.dense.tokenized import TokenizedTexts
from hardneg.io import artifacts
from hardneg.dense.maxsim import ColBERT, rerank
from tests.support.builds import copy_build
from tests.support.configs import DENSE_CONFIG, TINY_DENSE
from tests.support.workflow import output_of, snakemake, snakemake_jobs, write_config

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
    run = pq.read_table(results / "teacher" / "rankings" / "test.parquet").to_pandas()
    bm25 = pq.read_table(results / "bm25" / "rankings" / "test.parquet").to_pandas()
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


def test_a_star_run_distils_from_the_colbert_teacher_s_scores_of_its_pool(built, tmp_path):
    """``inputs.teacher``: the ColBERT teacher scores the STAR run's pool of tct's ranking (rule
    teacher_pool_scores, once) as it re-ranks, and the run learns from those scores alone (distill.weight 1)."""
    workdir = copy_build(built[0], tmp_path / "distilled")
    star = {"method": "star", "inputs": {"init": "tct", "negatives": "tct", "teacher": "teacher"},
            "params": {**STUDENT, "distill": {"loss": "margin_mse", "weight": 1.0}}}
    write_config(workdir, {**CONFIG, "runs": {**CONFIG["runs"], "star_colbert": star}})
    result, jobs = snakemake_jobs(workdir, "results/star_colbert/train_log.parquet", timeout=900)
    assert result.returncode == 0, output_of(result)[-4000:]
    rules = [job["rule"] for job in jobs]
    assert rules.count("teacher_pool_scores") == 1 and rules.count("train_dense") == 1, rules
    scoring = next(job for job in jobs if job["rule"] == "teacher_pool_scores")
    assert scoring["wildcards"]["run"] == "tct" and scoring["wildcards"]["teacher"] == "teacher"
    path = scoring["output"][0].split(" ")[0]  # the candidates' scores; the logger marks update() outputs
    stored = artifacts.read_table(artifacts.RANKING, workdir / path).to_pandas()
    # the scores are the teacher's MaxSim, as it re-ranks: the pairs of three queries re-ranked here give them
    inputs = [path.split(" ")[0] for path in scoring["input"]]
    cache = next(workdir / path for path in inputs if "/tokenized/" in path)
    ranking = next(workdir / path for path in inputs if path.endswith("rankings/train.parquet"))
    qids = sorted(set(stored.qid))[:3]
    mine = stored[stored.qid.isin(qids)]
    table = artifacts.read_table(artifacts.RANKING, ranking)
    table = table.filter(np.isin(table["qid"].to_numpy(zero_copy_only=False), qids))
    again = rerank(ColBERT.load(workdir / "results" / "teacher" / "model"),
                   TokenizedTexts(cache, "queries_train"), TokenizedTexts(cache, "corpus"), table,
                   depth=int(mine["rank"].max())).to_pandas()
    joined = mine.merge(again, on=["qid", "docid"], suffixes=("", "_again"))
    assert len(joined) == len(mine) > 0
    assert np.abs(joined.score - joined.score_again).max() < 1e-4
    log = pq.read_table(workdir / "results" / "star_colbert" / "train_log.parquet").to_pandas()
    assert (log.distill_loss > 0).all() and np.allclose(log.loss, log.distill_loss)
