"""The figures built by the workflow on a tiny config: pairwise errors, training curves and t-SNE, their data what
the runs logged, then nothing left to do (each figure's data and drawing: tests/unit/figures/test_figures.py)."""

import pyarrow.parquet as pq
import pytest

from hardneg.io import artifacts
from hardneg.pipeline.config import load_config_file
from hardneg.pipeline.figures import FIGURES
from hardneg.pipeline.plan import Plan
from tests.support import REPO
from tests.support.dense import TINY_MODEL
from tests.support.workflow import dry_run, output_of, snakemake, write_config

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TINY_DENSE = {
    "model": {"vocab_size": 6000, "doc_max_length": 64, "query_max_length": 16, "builtin": TINY_MODEL},
    "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.001},
    "encode": {"shards": 1},
    "search": {"top_k": 100},
}
WORKFLOW_CONFIG = {
    "seed": 4,
    "dataset": "tiny",
    "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 300, "docs_per_cluster": 30, "concept_vocab": 200,
                          "num_queries": {"train": 100, "dev": 30, "test": 30}}},
    "figures": {"pairwise_errors": {"runs": ["warmup", "adore_w"]},
                "training_curves": {"runs": ["adore_w"], "labels": {"adore_w": "ADORE"}},
                "tsne": {"run": "adore_w", "negatives": 5}},
    "runs": {
        "bm25": {"method": "bm25", "params": {"top_k": 100}},
        "warmup": {"method": "warmup", "inputs": {"negatives": "bm25"}, "params": TINY_DENSE},
        "adore_w": {"method": "adore", "inputs": {"docs": "warmup"},
                    "params": {"train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.0005, "dev_every": 2},
                               "adore": {"top_k": 50, "cut": 50}}},
    },
}
FIGURE_TARGETS = [f"results/figures/{name}.png" for name in ("pairwise_errors", "training_curves", "tsne")]


@pytest.mark.slow
def test_figures_build_in_the_workflow(tmp_path):
    write_config(tmp_path, WORKFLOW_CONFIG)
    result = snakemake(tmp_path, *FIGURE_TARGETS)
    assert result.returncode == 0, result.stderr[-4000:]
    figures = tmp_path / "results" / "figures"
    for target in FIGURE_TARGETS:
        assert (tmp_path / target).read_bytes().startswith(PNG_SIGNATURE)
    distribution = artifacts.read_table(artifacts.FIGURE_DISTRIBUTION, figures / "pairwise_errors.parquet").to_pandas()
    assert set(distribution["run"]) == {"warmup", "adore_w"} and len(distribution) == 2 * 2 * 30
    curve = artifacts.read_table(artifacts.FIGURE_CURVES, figures / "training_curves.parquet").to_pandas()
    log = pq.read_table(tmp_path / "results" / "adore_w" / "train_log.parquet").to_pandas()
    evaluated = log[log["dev_rr10"].notna()]
    assert evaluated["step"].tolist() == list(range(2, len(log) + 1, 2)) + ([len(log)] if len(log) % 2 else [])
    assert curve["dev_rr10"].tolist() == evaluated["dev_rr10"].tolist() and set(curve["label"]) == {"ADORE"}
    points = artifacts.read_table(artifacts.FIGURE_TSNE, figures / "tsne.parquet").to_pandas()
    assert points["kind"].tolist()[:2] == ["query_before", "query_after"]
    assert (points["kind"].str.startswith("negative").sum()) >= 5
    assert not list(figures.glob(".*.tmp"))
    again = snakemake(tmp_path, *FIGURE_TARGETS, "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.slow
def test_every_figure_is_a_rule_of_its_name_in_the_dag(tmp_path):
    """A dry run of `snakemake figures` on the default config: one job of rule figure_<name> per declared figure,
    each with its own inputs (no input function of the loop reading another figure's), outputs, log and
    resources."""
    write_config(tmp_path, (REPO / "config" / "config.yaml").read_text())
    result, planned = dry_run(tmp_path, "figures")
    assert result.returncode == 0, output_of(result)[-3000:]
    jobs = {job["rule"]: job for job in planned}
    assert {rule for rule in jobs if rule.startswith("figure_")} == {f"figure_{name}" for name in FIGURES}
    plan = Plan(load_config_file(REPO / "config" / "config.yaml"))
    for name, figure in FIGURES.items():
        job = jobs[f"figure_{name}"]
        inputs = [path for value in plan.report.figure_inputs(name).values()
                  for path in ([value] if isinstance(value, str) else value)]
        assert job["input"] == inputs, (name, job)
        assert job["output"] == [f"results/figures/{name}.parquet (update)",
                                 f"results/figures/{name}.png (update)"], (name, job)
        assert job["log"] == [f"results/figures/logs/{name}.log"], (name, job)
        assert job["benchmark"] == f"results/figures/benchmarks/{name}.tsv", (name, job)
        assert {key: job["resources"][key] for key in ("runtime", "mem_mb")} == \
            {"runtime": str(figure.runtime), "mem_mb": str(figure.mem_mb)}, (name, job)
    assert FIGURES["tsne"].resources == {"mem_mb": 2000, "runtime": 10}
