"""The Snakemake workflow end to end on a tiny synthetic config: outputs, no-op re-runs, selective re-runs,
config errors before any job, and byte-identical artifacts for the same config and seed."""

import json

import pytest
import yaml

from tests.support.builds import copy_build
from tests.support.configs import TINY
from tests.support.workflow import snakemake, write_config

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def built(builds):
    return builds.workflow(TINY, "results/bm25/metrics.json")


def test_outputs(built):
    results = built / "results"
    metrics = json.loads((results / "bm25" / "metrics.json").read_text())
    assert metrics["split"] == "test" and metrics["num_queries"] == 30 and metrics["dataset"] == "tiny"
    assert set(metrics["measures"]) == {"RR@10", "RR@100", "R@100", "R@1000", "nDCG@10", "AP@1000"}
    assert 0.0 < metrics["measures"]["RR@10"] < 1.0
    assert metrics["provenance"]["seed"] == 3
    stats = json.loads((results / "datasets" / "tiny" / "stats.json").read_text())
    assert stats["num_docs"] == 400 and stats["num_clusters"] == 20
    line = (results / "bm25" / "rankings" / "test.trec").read_text().splitlines()[0].split()
    assert line[1] == "Q0" and line[3] == "1" and line[5] == "bm25"
    resolved = yaml.safe_load((results / "bm25" / "config.yaml").read_text())
    assert resolved["params"]["top_k"] == 100 and resolved["dataset"]["num_docs"] == 400
    assert (results / "bm25" / "rankings" / "test.parquet").exists()
    assert not (results / "bm25" / "rankings" / "train.parquet").exists()  # metrics.json ranks only what it reports
    assert (results / "bm25" / "logs" / "bm25_index.log").read_text().strip()
    assert (results / "bm25" / "benchmarks" / "evaluate.tsv").exists()


def test_second_invocation_has_nothing_to_do(built, tmp_path):
    built = copy_build(built, tmp_path / "wf")
    result = snakemake(built, "results/bm25/metrics.json")
    assert result.returncode == 0
    assert "Nothing to be done" in result.stdout + result.stderr


def test_changing_a_search_parameter_reruns_only_search_and_later(built, tmp_path):
    built = copy_build(built, tmp_path / "wf")
    config = json.loads(json.dumps(TINY))
    config["runs"]["bm25"]["params"]["k1"] = 1.2
    write_config(built, config)
    try:
        result = snakemake(built, "results/bm25/metrics.json", "-n", "--quiet", "rules")
    finally:
        write_config(built, TINY)
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert "bm25_search" in out and "evaluate" in out
    assert "prepare_dataset" not in out and "bm25_index" not in out


def test_config_typo_fails_before_any_job(tmp_path):
    config = json.loads(json.dumps(TINY))
    config["runs"]["bm25"]["params"]["k11"] = 1.0
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "results/bm25/metrics.json")
    assert result.returncode != 0
    assert "config key 'runs.bm25.params.k11': unknown key" in result.stderr + result.stdout
    assert not (tmp_path / "results").exists()


def test_rankings_in_their_old_folder_stop_the_workflow_before_any_job(tmp_path):
    """An earlier version's results/<run>/runs/: Snakemake stops while it reads the workflow, naming the folder and
    the way on, rather than plan the rankings again with everything made from them."""
    write_config(tmp_path, TINY)
    old = tmp_path / "results" / "bm25" / "runs"
    old.mkdir(parents=True)
    (old / "test.parquet").write_bytes(b"PAR1")
    result = snakemake(tmp_path, "results/bm25/metrics.json")
    out = result.stdout + result.stderr
    assert result.returncode != 0 and "results/bm25/runs" in out
    assert "a run's rankings are now in <run>/rankings/, not <run>/runs/" in out and "--touch" in out
    assert sorted(path.name for path in (tmp_path / "results").iterdir()) == ["bm25"]  # nothing was run


def test_same_config_same_artifacts(built, tmp_path):
    write_config(tmp_path, TINY)
    result = snakemake(tmp_path, "results/bm25/metrics.json")
    assert result.returncode == 0, result.stderr[-3000:]
    for rel in ("datasets/tiny/corpus.parquet", "datasets/tiny/qrels/test.parquet", "bm25/rankings/test.parquet",
                "bm25/rankings/test.trec", "bm25/per_query.parquet", "bm25/metrics.json", "bm25/config.yaml"):
        assert (tmp_path / "results" / rel).read_bytes() == (built / "results" / rel).read_bytes(), rel
