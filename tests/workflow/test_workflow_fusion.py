"""Fusion runs in the workflow on a tiny config: a hybrid of BM25 and a dense run tunes α on training queries only
and is evaluated like any run; a fusion target ranks only the splits it reads (reciprocal rank fusion and a fixed
α: the evaluated split only)."""

import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from hardneg.fusion import hybrid, sample_queries, tune_weight
from hardneg.io import artifacts
from tests.support.builds import copy_build
from tests.support.configs import FUSION_CONFIG, FUSION_GRID, FUSION_TARGETS
from tests.support.workflow import snakemake, write_config

pytestmark = pytest.mark.slow

GRID, CONFIG, TARGETS = FUSION_GRID, FUSION_CONFIG, FUSION_TARGETS


@pytest.fixture(scope="module")
def built(builds):
    return builds.fusion_chain()


def jobs(result) -> dict:
    """Rule → job count of a dry run with ``--quiet rules``."""
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    return {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
            if len(line.split()) == 2 and line.split()[1].isdigit()}


def read(path, kind=artifacts.RANKING):
    return artifacts.read_table(kind, path)


def fused_tiny(sparse, dense, alpha):
    """The hybrid run's fusion (its params in CONFIG)."""
    return hybrid(sparse, dense, alpha, depth=50, k=60, normalization=False, weight_on_dense=False)


def test_hybrid_is_tuned_on_training_queries_and_evaluated(built):
    results = built / "results"
    tuning = json.loads((results / "hybrid" / "fusion_tuning.json").read_text())
    assert tuning["split"] == "train" and tuning["queries"] == 40 and tuning["measure"] == "RR@10"
    assert [row["alpha"] for row in tuning["grid"]] == GRID and tuning["alpha"] in GRID
    grid = read(results / "hybrid" / "fusion_tuning.parquet", artifacts.FUSION_TUNING)
    assert grid["alpha"].to_pylist() == GRID and grid["value"].to_pylist() == [r["value"] for r in tuning["grid"]]
    assert grid.filter(grid["chosen"])["alpha"].to_pylist() == [tuning["alpha"]]
    # the same grid, recomputed here from the training rankings and qrels of the sampled queries
    qrels = read(results / "datasets" / "tiny" / "qrels" / "train.parquet", artifacts.QRELS)
    sample = pa.array(sample_queries(qrels, 40, seed=5))
    sparse, dense = (read(results / run / "rankings" / "train.parquet") for run in ("bm25", "inbatch"))
    sparse, dense = (run.filter(pc.is_in(run["qid"], value_set=sample)) for run in (sparse, dense))
    qrels = qrels.filter(pc.is_in(qrels["qid"], value_set=sample))
    assert tune_weight(lambda alpha: fused_tiny(sparse, dense, alpha), qrels, GRID, "RR@10").equals(grid)
    # the test ranking is the hybrid of the inputs' test rankings with the chosen α, evaluated like any run
    fused = read(results / "hybrid" / "rankings" / "test.parquet")
    assert fused.equals(fused_tiny(read(results / "bm25" / "rankings" / "test.parquet"),
                                   read(results / "inbatch" / "rankings" / "test.parquet"), tuning["alpha"]))
    metrics = json.loads((results / "hybrid" / "metrics.json").read_text())
    assert metrics["num_queries"] == 30 and 0.0 < metrics["measures"]["RR@10"] <= 1.0
    assert metrics["pairwise_errors"]["total_is_lower_bound"]  # no embeddings behind a fused ranking
    assert (results / "hybrid" / "config.yaml").exists() and (results / "hybrid" / "rankings" / "test.trec").exists()


def test_the_evaluation_rankings_never_reach_the_tuning(built, tmp_path):
    """Changing the inputs' test rankings re-ranks and re-evaluates the hybrid, but does not re-tune it."""
    built = copy_build(built, tmp_path / "wf")
    for run in ("bm25", "inbatch"):
        path = built / "results" / run / "rankings" / "test.parquet"
        table = read(path)
        artifacts.write_table(table.set_column(3, "score", pc.negate(table["score"])), artifacts.RANKING, path)
    planned = jobs(snakemake(built, *TARGETS, "-n", "--quiet", "rules"))
    assert planned["fuse"] == 1 and planned["evaluate"] == 1
    assert "tune_fusion" not in planned


def test_a_fusion_target_ranks_only_the_splits_it_reads(tmp_path):
    write_config(tmp_path, CONFIG)
    tuned = jobs(snakemake(tmp_path, "results/hybrid/metrics.json", "-n", "--quiet", "rules"))
    untuned = jobs(snakemake(tmp_path, "results/fixed/metrics.json", "results/rrf/metrics.json", "-n", "--quiet",
                             "rules"))
    # tuned: both inputs rank train (the tuning) and test (the evaluation); a fixed α and rrf: test only
    assert tuned["bm25_search"] == 2 and tuned["dense_search"] == 2
    assert tuned["tune_fusion"] == 1 and tuned["fuse"] == 1
    assert untuned["bm25_search"] == 1 and untuned["dense_search"] == 1
    assert "tune_fusion" not in untuned and untuned["fuse"] == 2
