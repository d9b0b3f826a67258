"""The summary in the workflow on a tiny config: its runs are those `targets` names, whatever else is evaluated
(asking for it trains no other run); its markers are those of scipy.stats.ttest_rel on the runs' per-query files; the training-time table
reads the training job's benchmark record."""

import csv
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.stats import ttest_rel

from tests.support.builds import copy_build
from tests.support.configs import DENSE_CONFIG
from tests.support.workflow import snakemake, write_config

pytestmark = pytest.mark.slow


# The session's tiny dense runs (tests/support/builds.py, ``dense_runs``): BM25 and in-batch negatives are the
# targets; random negatives, a baseline group of the summary, is evaluated but not a target.
CONFIG = {**DENSE_CONFIG, "targets": ["bm25", "inbatch"],
          "summary": {"groups": [{"marker": "†", "label": "BM25", "runs": ["bm25"]},
                                 {"marker": "‡", "label": "random negatives", "runs": ["randneg"]}]}}
SUMMARY = ["results/summary.md", "results/tables/training_time.md"]


def planned_jobs(workdir, *targets) -> set:
    result = snakemake(workdir, *targets, "-n", "--quiet", "rules")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    return {line.split()[0] for line in out.splitlines() if line.strip() and line.split()[-1].isdigit()}


@pytest.fixture(scope="module")
def built(builds, tmp_path_factory):
    """The summary's plan in an empty working directory; then the summary and the training-time table built in a
    copy of the dense runs, where every run, randneg's evaluation included, is built already."""
    empty = tmp_path_factory.mktemp("summary-plan")
    write_config(empty, CONFIG)
    planned = snakemake(empty, "results/summary.md", "-n")  # nothing built yet
    assert planned.returncode == 0, planned.stderr[-4000:]
    workdir, made = builds.extended(builds.dense_runs(), "workflow_summary", CONFIG, *SUMMARY)
    assert "train run" not in made["output"]
    return workdir, planned.stdout + planned.stderr


def test_the_summary_holds_the_targets_whatever_else_is_evaluated(built):
    workdir, planned = built
    assert "results/inbatch/metrics.json" in planned and "results/randneg" not in planned
    table = pq.read_table(workdir / "results" / "summary.parquet").to_pandas()
    assert table["run"].tolist() == ["bm25", "inbatch"]  # randneg is evaluated, but not a target
    assert (workdir / "results" / "randneg" / "metrics.json").exists()


def test_markers_agree_with_scipy_on_the_per_query_files(built):
    workdir, _ = built
    results = workdir / "results"
    table = pq.read_table(results / "summary.parquet").to_pandas().set_index("run")
    per_query = {run: pq.read_table(results / run / "per_query.parquet").to_pandas()
                 .pivot(index="qid", columns="measure", values="value") for run in ("bm25", "inbatch")}
    # summary.measures is left null: every measure of evaluation.measures, then the pairwise errors
    measures = ["RR@10", "RR@100", "R@100", "R@1000", "nDCG@10", "AP@1000", "PairwiseErrors@200", "PairwiseErrors"]
    lower_bound = bool(table.loc["inbatch", "total_is_lower_bound"])
    for measure in measures:
        run, base = per_query["inbatch"][measure], per_query["bm25"][measure].reindex(per_query["inbatch"].index)
        result = ttest_rel(run, base)
        better = run.mean() < base.mean() if measure.startswith("PairwiseErrors") else run.mean() > base.mean()
        significant = better and result.pvalue < 0.05 and not (measure == "PairwiseErrors" and lower_bound)
        assert table.loc["inbatch", f"{measure} markers"] == ("†" if significant else ""), measure
        assert table.loc["inbatch", measure] == pytest.approx(run.mean())
    assert (table.loc["bm25", [f"{m} markers" for m in measures]] == "").all()
    assert bool(table.loc["bm25", "total_is_lower_bound"])  # BM25's ranking stops at 100 documents
    markdown = (results / "summary.md").read_text()
    assert ("| run | method | MRR@10 | MRR@100 | R@100 | R@1000 | NDCG@10 | MAP@1000 | top-200 pairwise errors | "
            "total pairwise errors |") in markdown
    assert "- ‡ random negatives (randneg): no run of this group is in the summary; it marks nothing" in markdown
    tests = pq.read_table(results / "summary_tests.parquet").to_pandas()
    assert set(tests["run"]) == {"inbatch"} and set(tests["baseline"]) == {"bm25"} and len(tests) == len(measures)


def test_training_time_comes_from_the_benchmark_record(built):
    workdir, _ = built
    results = workdir / "results"
    table = pq.read_table(results / "tables" / "training_time.parquet").to_pandas()
    assert table["run"].tolist() == ["inbatch"]  # bm25 does not train
    with open(results / "inbatch" / "benchmarks" / "train.tsv", newline="") as handle:
        seconds = float(next(csv.DictReader(handle, delimiter="\t"))["s"])
    steps = int(np.max(pq.read_table(results / "inbatch" / "train_log.parquet")["step"].to_numpy()))
    assert table["seconds"].iloc[0] == seconds > 0 and table["steps"].iloc[0] == steps > 0
    assert table["seconds_per_step"].iloc[0] == pytest.approx(seconds / steps)
    assert "No run of method `ance`" in (results / "tables" / "training_time.md").read_text()


def test_rerun_is_a_no_op_whatever_else_is_on_disk(built, tmp_path):
    """Run again, with the run outside the targets deleted: the summary is up to date (it never read that run)."""
    workdir = copy_build(built[0], tmp_path / "wf")
    shutil.rmtree(workdir / "results" / "randneg")
    result = snakemake(workdir, *SUMMARY)
    assert result.returncode == 0 and "Nothing to be done" in result.stdout + result.stderr
