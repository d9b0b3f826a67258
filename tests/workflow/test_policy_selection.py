"""Mine once, select by policy, through the workflow: on the tiny STAR chain, a second STAR run selecting from the
warm-up's pool with another policy plans its selection, its training and its own evaluation, and nothing of the
miner's (no encoding, search, positive scores, pool or duplicate search); built, its list is its policy applied to
the same pool file."""

import copy
import json

import pyarrow.parquet as pq
import pytest

from tests.support.builds import copy_build
from tests.support.configs import STAR_CONFIG
from tests.support.workflow import dry_run, output_of, snakemake, write_config

pytestmark = pytest.mark.slow

POOL = "results/warmup/pools/train_top30_bm25-bm25.parquet"


def _config():
    config = copy.deepcopy(STAR_CONFIG)
    config["policies"] = {"skip_top": {"rank_range": [3, 30], "keep": 5}}
    second = copy.deepcopy(config["runs"]["star"])
    second.setdefault("params", {}).setdefault("mining", {})["policy"] = "skip_top"
    config["runs"]["star_skip"] = second
    return config


def test_a_second_policy_reruns_only_selection_training_and_its_evaluation(builds, tmp_path):
    workdir = copy_build(builds.star_chain(), tmp_path / "work")
    write_config(workdir, _config())
    pool_bytes = (workdir / POOL).read_bytes()

    result, jobs = dry_run(workdir, "results/star_skip/metrics.json")
    assert result.returncode == 0, output_of(result)[-3000:]
    planned = {job["rule"] for job in jobs}
    assert {"select_hard_negatives", "train_dense", "evaluate"} <= planned
    assert not planned & {"candidate_pool", "positive_scores", "near_duplicates", "train_tokenizer", "tokenize",
                          "bm25_search"}, planned
    # encoding and search happen for the new run's own evaluation only, never for the miner
    assert {job["wildcards"].get("run") for job in jobs if job["rule"] in
            ("encode_corpus_shard", "gather_embeddings", "build_faiss_index", "dense_search")} == {"star_skip"}
    selection = next(job for job in jobs if job["rule"] == "select_hard_negatives")
    assert selection["input"] == [POOL]

    built = snakemake(workdir, "results/star_skip/hardnegs.parquet")
    assert built.returncode == 0, output_of(built)[-3000:]
    assert (workdir / POOL).read_bytes() == pool_bytes  # the pool was read, not made again
    record = json.loads((workdir / "results" / "star_skip" / "hardnegs_selection.json").read_text())
    assert record["name"] == "skip_top" and record["pool"] == POOL
    assert record["removed"]["rank_range"] > 0 and record["kept"] <= 5 * record["queries"]
    first = pq.read_table(workdir / "results" / "star" / "hardnegs.parquet")
    second = pq.read_table(workdir / "results" / "star_skip" / "hardnegs.parquet")
    assert second.num_rows == record["kept"] < first.num_rows
