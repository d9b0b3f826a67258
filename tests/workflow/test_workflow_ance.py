"""ANCE through the workflow on a tiny config: every episode's model, embeddings, index and hard negatives are
artifacts of their own; each episode's list is the right checkpoint's ranking less the positives; a chain killed in
the middle of episode 2 resumes from that episode's checkpoint and ends with the uninterrupted chain's artifacts,
byte for byte (the same seed gives the same episode negatives)."""

import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.support.builds import copy_build
from tests.support.configs import STAR_CONFIG
from tests.support.configs import STAR_DENSE as TINY_DENSE
from tests.support.reliability import PausedRun, digests, temporaries
from tests.support.workflow import output_of, snakemake, snakemake_jobs, write_config

pytestmark = pytest.mark.slow

EPISODES, STEPS = 3, 4
CONFIG = {**STAR_CONFIG, "runs": {
    "bm25": STAR_CONFIG["runs"]["bm25"], "warmup": STAR_CONFIG["runs"]["warmup"],
    "ance": {"method": "ance", "inputs": {"init": "warmup", "bm25": "bm25"},
             "params": {**TINY_DENSE, "mining": {"depth": 30},
                        "ance": {"episodes": EPISODES, "steps_per_episode": STEPS, "lag": 1}}}}}
FINAL = "results/ance/metrics.json"


@pytest.fixture(scope="module")
def whole(builds):
    """The chain run once, uninterrupted: ANCE continuing a copy of the session's tiny chain (the same BM25 and
    warm-up runs, which it finds up to date)."""
    def make(workdir):
        copy_build(builds.star_chain(), workdir)
        write_config(workdir, CONFIG)
        result, jobs = snakemake_jobs(workdir, FINAL, timeout=900)
        assert result.returncode == 0, output_of(result)[-4000:]
        ran = {job["rule"] for job in jobs}
        assert "train_episode" in ran and not ran & {"train_dense", "bm25_search", "tokenize"}, sorted(ran)

    return builds.build("workflow_ance", make)[0]


def test_every_episode_leaves_its_artifacts(whole):
    results = whole / "results" / "ance"
    for index in range(EPISODES):
        episode = results / "episodes" / str(index)
        for name in ("model/config.json", "train_log.parquet", "hardnegs.parquet", "hardnegs_audit.md",
                     "trainer_state/state.json"):
            assert (episode / name).is_file(), f"episode {index}: {name}"
        log = pq.read_table(episode / "train_log.parquet").to_pandas()
        assert list(log["step"]) == list(range(index * STEPS + 1, (index + 1) * STEPS + 1))
    # checkpoint 0 feeds episode 2 (lag 1), so it is encoded, indexed and searched; the last checkpoint feeds none
    assert (results / "episodes" / "0" / "index" / "Flat.faiss").is_file()
    assert (results / "episodes" / "0" / "rankings" / "train.parquet").is_file()
    assert not (results / "episodes" / str(EPISODES - 1) / "embeddings").exists()
    # the run's model is the last episode's; its log is the episodes' end to end
    for name in ("model.safetensors", "config.json"):
        assert (results / "model" / name).read_bytes() == \
            (results / "episodes" / str(EPISODES - 1) / "model" / name).read_bytes()
    log = pq.read_table(results / "train_log.parquet").to_pandas()
    assert list(log["step"]) == list(range(1, EPISODES * STEPS + 1))
    assert list(log["episode"]) == [step // STEPS for step in range(EPISODES * STEPS)]
    assert log["lr"].iloc[-1] == 0.0 and (log["grad_norm"] > 0).all()  # one schedule over all episodes
    costs = pq.read_table(results / "benchmarks" / "refresh_costs.parquet").to_pandas()
    assert list(costs["checkpoint"].fillna(-1)) == [-1, 0, 1, 2]
    assert list(costs["episodes_fed"]) == [2, 1, 0, 0]  # the warm-up feeds episodes 0 and 1, checkpoint 0 episode 2
    assert costs.loc[1, "encode_seconds"] > 0 and costs.loc[1, "train_seconds"] > 0
    assert "| episode 0 |" in (results / "benchmarks" / "refresh_costs.md").read_text()
    assert json.loads((results / "metrics.json").read_text())["measures"]["RR@10"] > 0


def _negatives(path) -> dict[str, set[str]]:
    table = pq.read_table(path).to_pandas()
    return {qid: set(group["docid"]) for qid, group in table.groupby("qid")}


def test_each_episode_trains_on_the_right_checkpoint_s_ranking_without_positives(whole):
    results = whole / "results"
    qrels = pq.read_table(results / "datasets" / "tiny" / "qrels" / "train.parquet").to_pandas()
    positives = {qid: set(group.loc[group["relevance"] > 0, "docid"]) for qid, group in qrels.groupby("qid")}
    sources = {0: "warmup", 1: "warmup", 2: "ance/episodes/0"}  # lag 1: checkpoint e - 2, the warm-up before
    for index, source in sources.items():
        mined = _negatives(results / "ance" / "episodes" / str(index) / "hardnegs.parquet")
        ranking = pq.read_table(results / source / "rankings" / "train.parquet").to_pandas()
        ranking = ranking[ranking["rank"] <= 30]
        expected = {qid: set(group["docid"]) - positives.get(qid, set()) for qid, group in ranking.groupby("qid")}
        assert mined == {qid: docs for qid, docs in expected.items() if docs}, f"episode {index}"
        assert not any(docs & positives.get(qid, set()) for qid, docs in mined.items())
    # the checkpoints differ, so do the lists they mine
    assert _negatives(results / "ance" / "episodes" / "2" / "hardnegs.parquet") != \
        _negatives(results / "ance" / "episodes" / "0" / "hardnegs.parquet")


def test_a_chain_killed_in_episode_2_resumes_there_and_ends_as_the_uninterrupted_one(whole, tmp_path):
    """The other runs' results are copied over, so only ANCE runs again; its episode 2 is killed just after its
    first checkpoint (step 10 of 12), and the re-run resumes from it."""
    workdir = tmp_path / "killed"
    shutil.copytree(whole, workdir, ignore=shutil.ignore_patterns("ance"))
    args = [FINAL]
    with PausedRun(workdir, args, "ance/episodes/2/checkpoints/state.json", after=True) as run:
        run.wait_for_pause(timeout=600)
        run.kill_job()
        code, out = run.finish()
    assert code != 0 and not (workdir / "results" / "ance" / "episodes" / "2" / "model").exists()
    assert (workdir / "results" / "ance" / "episodes" / "1" / "model").is_dir()  # episodes 0 and 1 were done
    result = snakemake(workdir, *args, timeout=900)
    assert result.returncode == 0, output_of(result)[-4000:]
    train_log = (workdir / "results" / "ance" / "episodes" / "2" / "logs" / "train.log").read_text()
    assert "resuming from step 10 of 12" in train_log
    assert "continuing the trainer state" not in train_log.split("resuming from step")[-1]
    assert not temporaries(workdir / "results")
    ance_whole, ance_resumed = digests(whole / "results" / "ance"), digests(workdir / "results" / "ance")
    assert ance_whole == ance_resumed  # models, embeddings, indexes, every episode's negatives: byte-identical
    assert [name for name in ance_whole if name.endswith("hardnegs.parquet")] == \
        [f"episodes/{index}/hardnegs.parquet" for index in range(EPISODES)]
    metrics = [json.loads((root / FINAL).read_text())["measures"] for root in (whole, workdir)]
    for measure, value in metrics[0].items():
        assert metrics[1][measure] == pytest.approx(value, abs=1e-3), measure
    assert np.isfinite(list(metrics[0].values())).all()
