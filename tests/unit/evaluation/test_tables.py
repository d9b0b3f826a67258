"""README's results tables take their runs and labels from the config's ``tables`` section."""

import json

import yaml

from hardneg.cli import main
from hardneg.evaluation.tables import abs_table, available_rows, runs_table, table_rows
from hardneg.pipeline.config import load_config_file
from tests.support import REPO


def write_metrics(results, run, rr10, errors=(3.0, 9.0)):
    path = results / run / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"measures": {"RR@10": rr10, "RR@100": rr10 + 0.01, "nDCG@10": 0.5, "R@100": 0.9},
                                "pairwise_errors": {"top200_pairwise_errors": errors[0],
                                                    "total_pairwise_errors": errors[1],
                                                    "total_is_lower_bound": False}}))


def test_the_default_config_lists_readme_tables():
    tables = load_config_file(REPO / "config" / "config.yaml")["tables"]
    rows = table_rows(tables["results"])
    assert rows[0] == ("bm25", "bm25") and ("warmup", "warmup (BM25 Neg)") in rows and rows[-1][0] == "rrf_adore_star"
    assert [row["run"] for row in tables["abs"]["rows"]][0] == "abs_sequential"
    assert [block["prefix"] for block in tables["abs"]["pretraining"]] == ["", "condenser_"]


def test_rows_with_metrics_in_the_config_order(tmp_path):
    results = tmp_path / "results"
    write_metrics(results, "b", 0.25)
    write_metrics(results, "a", 0.5)
    tables = {"results": [{"run": "a", "label": "A (first)"}, {"run": "missing", "label": None},
                          {"run": "b", "label": None}], "distillation": []}
    assert available_rows(results, tables) == [("a", "A (first)"), ("b", "b")]
    assert available_rows(results, tables, ["b", "other"]) == [("b", "b"), ("other", "other")]
    text = runs_table(results, available_rows(results, tables))
    assert text.splitlines()[2].startswith("| A (first) | 0.500 | 0.500 | 0.900 | 3.0 | 9.0 |")


def test_abs_table_blocks_by_prefix(tmp_path):
    results = tmp_path / "results"
    for run, value in (("s", 0.1), ("p_s", 0.2)):
        write_metrics(results, run, value)
    section = {"rows": [{"run": "s", "label": "Schedule"}], "pretraining": [{"prefix": "", "label": "none"},
                                                                            {"prefix": "p_", "label": "P"}]}
    lines = abs_table(results, section).splitlines()[2:]
    assert lines == ["| Schedule (`s`) | none | 0.100 | 0.110 | 0.900 |", "| Schedule (`p_s`) | P | 0.200 | 0.210 | 0.900 |"]


def test_hardneg_table_reads_the_given_config(tmp_path, capsys):
    write_metrics(tmp_path / "results", "star", 0.3)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["tables"]["results"] = [{"run": "star", "label": "STAR (ours)"}]
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
    assert main(["table", "--config", str(tmp_path / "my.yaml"), "--results", str(tmp_path / "results")]) == 0
    assert "| STAR (ours) | 0.300 |" in capsys.readouterr().out


def test_a_run_over_seeds_is_one_row_of_mean_and_standard_deviation(tmp_path):
    results = tmp_path / "results"
    for run, rr10, errors in (("star", 0.3, (3.0, 9.0)), ("star_seed2", 0.4, (5.0, 11.0)),
                              ("star_seed3", 0.5, (4.0, 10.0)), ("bm25", 0.2, (6.0, 12.0))):
        write_metrics(results, run, rr10, errors)
    groups = {"star": ["star", "star_seed2", "star_seed3"]}
    lines = runs_table(results, [("bm25", "BM25"), ("star", "STAR")], groups).splitlines()[2:]
    assert lines == ["| BM25 | 0.200 | 0.500 | 0.900 | 6.0 | 12.0 |",
                     "| STAR (3 seeds) | 0.400 ± 0.100 | 0.500 ± 0.000 | 0.900 ± 0.000 | 4.0 ± 1.0 | 10.0 ± 1.0 |"]
    (results / "star_seed3" / "metrics.json").unlink()  # a seed not built yet: said, not hidden
    assert runs_table(results, [("star", "STAR")], groups).splitlines()[2].startswith(
        "| STAR (2 of 3 seeds) | 0.350 ± 0.071 |")


def test_hardneg_table_shows_a_run_with_seeds_over_them(tmp_path, capsys):
    for run, rr10 in (("star", 0.3), ("star_seed43", 0.5)):
        write_metrics(tmp_path / "results", run, rr10)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["runs"]["star"]["seeds"] = [42, 43]
    config["tables"]["results"] = [{"run": "star", "label": "STAR"}]
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
    assert main(["table", "--config", str(tmp_path / "my.yaml"), "--results", str(tmp_path / "results")]) == 0
    assert "| STAR (2 seeds) | 0.400 ± 0.141 |" in capsys.readouterr().out


def write_per_query(results, run, values):
    import pyarrow as pa

    from hardneg.io import artifacts

    table = pa.table({"qid": [f"q{i}" for i in range(len(values))], "measure": ["RR@10"] * len(values),
                      "value": [float(v) for v in values]})
    artifacts.write_table(table, artifacts.PER_QUERY_METRICS, results / run / "per_query.parquet")


def test_a_baseline_column_gives_the_difference_its_p_and_the_smallest_detectable(tmp_path, capsys):
    """Six queries: STAR is +0.1 above BM25 on four of them, equal on two; differences (0.1, 0.1, 0.1, 0.1, 0, 0):
    mean 0.0667, sd 0.0516, t 3.162 (p 0.025), detectable (t(0.975, 5) + t(0.8, 5)) × sd/√6
    = (2.5706 + 0.9195) × 0.02108 = 0.0736."""
    from scipy.stats import ttest_rel

    results = tmp_path / "results"
    base, star = [0.5, 0.2, 0.0, 1.0, 0.3, 0.1], [0.6, 0.3, 0.1, 1.1, 0.3, 0.1]
    for run, values in (("bm25", base), ("star", star)):
        write_metrics(results, run, sum(values) / len(values))
        write_per_query(results, run, values)
    p = ttest_rel(star, base).pvalue
    lines = runs_table(results, [("bm25", "BM25"), ("star", "STAR")], baseline="bm25").splitlines()
    assert lines[0].endswith("| MRR@10 vs bm25: Δ (p; smallest detectable) |")
    assert lines[2].endswith("| – |") and lines[3].endswith(f"| +0.067 (p {p:.3f}; ≥ 0.074) |")
    assert f"{p:.3f}" == "0.025"
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["tables"]["results"] = [{"run": "bm25"}, {"run": "star"}]
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
    assert main(["table", "--config", str(tmp_path / "my.yaml"), "--results", str(results), "--baseline",
                 "bm25"]) == 0
    assert "| +0.067 (p 0.025; ≥ 0.074) |" in capsys.readouterr().out
    assert main(["table", "--config", str(tmp_path / "my.yaml"), "--results", str(results), "--baseline",
                 "nope"]) == 2
    assert "has no run 'nope' to compare with (--baseline)" in capsys.readouterr().err
