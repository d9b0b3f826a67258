"""`hardneg compare` on the hand-made results folder of tests/support/comparison.py (the table, the changed
queries, --html and its refusals, one-line errors) and `hardneg evaluate --per-query` (trec_eval -q's lines)."""

import pytest

from hardneg.cli import main
from tests.support.comparison import HOSTILE_QUERY, write_results


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return write_results(tmp_path / "results")


def test_compare_prints_the_table_and_the_changed_queries(results, capsys):
    assert main(["compare", "base", "star", "adore", "--top", "1", "--correction", "bonferroni"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[2].split() == ["run", "mean", "RR@10", "Δ", "vs", "base", "wins/ties/losses", "t", "p", "t-test",
                                "p", "rand.", "p", "t-test", "Bonferroni", "p", "rand.", "Bonferroni", "d_z"]
    assert "The 1 queries that changed most" in out and f"1. query q3: {HOSTILE_QUERY}" in out
    assert "2. query" not in out and "Bonferroni's correction over the 2 comparisons" in " ".join(lines)


def test_compare_writes_the_page_only_where_it_may(results, tmp_path, capsys):
    page = tmp_path / "page.html"
    assert main(["compare", "base", "star", "--html", str(page)]) == 0
    assert f"wrote {page}" in capsys.readouterr().out and page.read_text().startswith("<!doctype html>")
    assert main(["compare", "base", "star", "--html", str(page)]) == 2
    assert "already exists (a file): give --force to replace it" in capsys.readouterr().err
    assert main(["compare", "base", "star", "--html", str(page), "--force"]) == 0
    inside = results / "page.html"
    assert main(["compare", "base", "star", "--html", str(inside)]) == 2
    assert "is inside the results folder" in capsys.readouterr().err and not inside.exists()


@pytest.mark.parametrize("argv, message", [
    (["compare", "base", "nosuch"], "run 'nosuch' has no results folder"),
    (["compare", "base", "star", "--measure", "RR@zero"], "measure 'RR@zero'"),
    (["compare", "base"], "a comparison needs at least two runs"),
])
def test_compare_errors_are_one_line(results, capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("hardneg: error: ") and message in err and err.count("\n") == 1


def test_evaluate_per_query_prints_trec_eval_q_lines(results, capsys):
    """base's RR@10 of q1..q4: 1/2, 1, 1/3, 1 (mean 0.7083); P@1: 0, 1, 0, 1 (mean 0.5)."""
    argv = ["evaluate", "results/base/rankings/test.parquet", "results/datasets/toy/qrels/test.parquet"]
    assert main([*argv, "--measures", "RR@10", "P@1", "--per-query"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["RR@10  q1   0.5000", "P@1    q1   0.0000"]
    assert [line.split() for line in lines if line.startswith("RR@10")] == \
        [["RR@10", "q1", "0.5000"], ["RR@10", "q2", "1.0000"], ["RR@10", "q3", "0.3333"], ["RR@10", "q4", "1.0000"],
         ["RR@10", "all", "0.7083"]]
    assert lines[-2:] == ["RR@10  all  0.7083", "P@1    all  0.5000"] and len(lines) == 10
