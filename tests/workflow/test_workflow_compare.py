"""A comparison of the config's `compare` list in the workflow, on a tiny config: its page is built when asked for
(not by the default target), by rule compare through its script, with its log and benchmark, from the runs'
files (STAR's hard negatives included); the `paper` target plans it; `hardneg compare` gives the same numbers."""

import pytest

from hardneg.cli import main
from tests.support.builds import copy_build
from tests.support.configs import DENSE_CONFIG
from tests.support.workflow import dry_run, snakemake

pytestmark = pytest.mark.slow

# The session's tiny dense runs (tests/support/builds.py, ``dense_runs``), with a comparison of three of them.
CONFIG = {**DENSE_CONFIG, "targets": ["bm25"],
          "compare": [{"name": "hard_negatives", "runs": ["warmup", "star", "bm25"], "top": 3, "depth": 5}]}
PAGE = "results/tables/compare_hard_negatives.html"


@pytest.fixture(scope="module")
def built(builds):
    """A copy of the dense runs, where the page is then built: the runs it compares are up to date already."""
    return builds.extended(builds.dense_runs(), "workflow_compare", CONFIG, PAGE)


def test_the_page_is_built_from_the_runs_files(built):
    workdir, made = built
    assert "the comparison hard_negatives (log: results/tables/logs/compare_hard_negatives.log)" in made["output"]
    assert "Job " in made["output"] and "train run" not in made["output"]  # the compared runs were not built again
    page = (workdir / PAGE).read_text(encoding="utf-8")
    assert "Comparison of runs: warmup, star, bm25" in page and page.count('<section class="query"') == 3
    assert "results/star/hardnegs.parquet" in page and "over the 2 comparisons against warmup" in page
    assert (workdir / "results" / "tables" / "benchmarks" / "compare_hard_negatives.tsv").exists()
    assert (workdir / "results" / "tables" / "logs" / "compare_hard_negatives.log").exists()


def test_the_page_is_built_only_when_asked_for(built, tmp_path):
    workdir, _ = built
    result, jobs = dry_run(workdir)  # the default target: bm25 only, nothing to do
    assert result.returncode == 0 and "compare" not in {job["rule"] for job in jobs}
    result, jobs = dry_run(workdir, "paper", "--forceall")
    assert result.returncode == 0, result.stderr[-2000:]
    compare = [job for job in jobs if job["rule"] == "compare"]
    assert len(compare) == 1 and compare[0]["resources"]["mem_mb"] == "2000"


def test_the_report_holds_the_page_with_its_caption(built, tmp_path):
    workdir = copy_build(built[0], tmp_path / "wf")
    result = snakemake(workdir, PAGE, "--report", "results/report.html")
    assert result.returncode == 0, result.stderr[-4000:]
    report = (workdir / "results" / "report.html").read_text(encoding="utf-8")
    assert PAGE in report and "Comparisons" in report
    caption = report.split('"caption": "<p>Comparison ', 1)[1].split("</p>", 1)[0]  # rendered from the .rst
    assert caption.startswith('<tt class=\\"docutils literal\\">hard_negatives</tt>: runs')
    assert "RR&#64;10</tt> over" in caption and "mailto:" not in caption and "``" not in caption  # as written


def test_the_command_agrees_with_the_page(built, capsys, monkeypatch):
    workdir, _ = built
    monkeypatch.chdir(workdir)
    assert main(["compare", "warmup", "star", "bm25", "--top", "3", "--depth", "5", "--html", "page.html"]) == 0
    capsys.readouterr()
    assert (workdir / "page.html").read_bytes() == (workdir / PAGE).read_bytes()
